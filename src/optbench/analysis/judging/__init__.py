"""The judging room: runs and the statistics below -> the tables of tests and aggregates over runs; supported,
rejected, faithful, how many seeds.

Imports the statistics room and the loading modules (analysis/load.py, groups.py), never the writing room.

    hypotheses.py  parsed hypotheses (optbench.specs.hypothesis_spec) -> supported / rejected / inconclusive, with
                   the numbers: each one's family of runs, its checks, its verdict (`hypothesis_verdict`)
    hypothesis_checks.py  the three kinds of test: every required comparison (setting x optimizer) as a Check
    hypothesis_rule.py  the verdict rule over the checks: intersection-union for supported, Holm for rejected
    verdicts.py    one verdict per hypothesis and scope: the settings of the study that tests it, the sequential
                   decision where it ran until decided; tables/verdicts.csv
    ladder_runs.py  fidelity ladders (settings differing only in budget): which runs form one, the study's rungs,
                   seed sets, failed and missing runs named, the planned top
    fidelity.py    a ladder judged rung by rung against the top: order kept and the resolution certified, each
                   with its power, tau-b, cost, the cheapest faithful rung or why none, the seeds each answer
                   takes; tuned values per budget
    pairwise_tables.py  every pair of arms within each setting, tested and Holm-adjusted: tables/pairwise
    robust_tables.py  IQM, probability of improvement and performance profiles over the runs, failed runs scored:
                   tables/robust, improvement, profiles
    variance_tables.py  each pair's seeds-vs-test-images decomposition from the runs' predictions.npz:
                   tables/variance
    seed_planner.py  how many seeds a hypothesis needs, from pilot runs (`study.py --plan-seeds`)
    tuning_report.py  tuning-<study>.json files: the runs they set aside, cost, winners, edge warnings per optimizer
    study_trials.py  tuning trials that are runs of the study named with --study (one directory, two uses): kept
    study_runs.py  --only-study: the named study's runs, tuning and decision records alone; the rest counted
    cross_parts.py  a cross-workload study's parts: each workload's runs, taken by the study (and rung) that made them
    cross_rankings.py  each workload's ranking and pairwise tests, the matrix of ranks, Kendall's tau between workloads
    cross_targets.py  time to target in optimizer steps per run and optimizer, its ratio to the best, the profile
    cross_claims.py  each claim judged on each workload by the verdict rule, and across workloads
    cross_cost.py  device-hours per workload: its main runs and its tuning
    cross_workload.py  every table of the cross-workload report, in order (judge_cross)
    validation_runs.py  the real runs a validation study resamples (A/A pool, seed-paired pools) and each resample
                   as the run table the rules read
    validation_null.py  A/A resamples judged by the verdicts, pairwise tests, sequential rule and intervals
    validation_effect.py  a known effect's resamples: power, interval coverage, the power at the planner's seeds
    validation_fidelity.py  a real fidelity ladder's resamples: the rule's coverage and answers beside simulated pools
    validation_figures.py  one measured figure beside the figure simulation claims, and whether they disagree
    tuning_budget.py  tuning records -> each optimizer's expected best after k trials (failed trials scored), the
                   ranking per budget and the pairs whose order swaps (scripts/tuning_budget.py)
"""
