"""The judging room: runs and the statistics below -> supported, rejected, faithful, how many seeds.

Imports the statistics room and the loading modules (analysis/load.py, groups.py), never the writing room.

    hypotheses.py  parsed hypotheses (optbench.specs.hypothesis_spec) -> supported / rejected / inconclusive, with
                   the numbers
    verdicts.py    one verdict per hypothesis and scope: the settings of the study that tests it, the sequential
                   decision where it ran until decided; tables/verdicts.csv
    ladder_runs.py  fidelity ladders (settings differing only in budget): which runs form one, the study's rungs,
                   seed sets, failed and missing runs named, the planned top
    fidelity.py    a ladder judged rung by rung against the top: orders reproduced, resolution, tau-b, cost, the
                   cheapest faithful rung or why none, the seeds it takes; tuned values per budget
    seed_planner.py  how many seeds a hypothesis needs, from pilot runs (`study.py --plan-seeds`)
    tuning_report.py  tuning-<study>.json files: the runs they set aside, cost, winners, edge warnings per optimizer
"""
