"""The results aggregator: a folder of run directories in, tables, figures, tests and verdicts out.

    from optbench.analysis import aggregate
    aggregate(Path("results"), Path("results/aggregate"), target_acc=0.9, experiments_dir=Path("experiments"))

Modules, one job each (data flows down the list):
    load.py        scan run directories -> one row per run, one row per (run, epoch); never writes
    groups.py      which config fields separate runs (group keys), setting and optimizer-arm labels
    stats.py       means, t intervals, exact permutation tests (paired sign-flip, two-sample, on ranks when
                   censored), the smallest attainable p, effect sizes, power, Holm, the noise-drop test
    robust.py      IQM and probability of improvement with stratified bootstrap intervals; performance profiles
    variance.py    per-image predictions -> each pair's difference, seeds-then-images bootstrap interval, and
                   the shares of its variance from seeds and from the finite test set
    tables.py      per setting x optimizer tables: CSV numbers, Markdown and LaTeX text
    figures.py     matplotlib figures (Agg), one colour per optimizer
    hypotheses.py  parsed hypotheses (optbench.specs.hypothesis_spec) -> supported / rejected / inconclusive, with the
                   numbers
    verdicts.py    one verdict per hypothesis and scope: the settings of the study that tests it, the sequential
                   decision where it ran until decided; tables/verdicts.csv
    tuning_report.py  tuning-<study>.json files: the runs they set aside, cost, winners, edge warnings per optimizer
    fidelity.py    fidelity ladders (settings differing only in budget): the study's rungs, seed sets, failed runs,
                   the planned top; per rung orders reproduced, resolution, tau-b, cost; tuned values per budget
    fidelity_stats.py  the ladder's statistics as pure functions: simultaneous change intervals, established
                   orders (Holm), tau-b's projection interval, the faithful rule, the seeds planner
    names.py       short, stable file names for each setting, the index mapping them back, what every run shares
    report.py      report.md embedding all of the above
    output.py      atomic writes into the output folder, removal of its own stale files
    inputs.py      checks of the command-line input (light: no pandas), so typos fail fast
    pipeline.py    `aggregate(...)`: runs the steps above in order

Used beside the aggregator:
    run_pair.py        two runs side by side (`python src/compare.py`): config differences, numbers, curves
    seed_planner.py    how many seeds a hypothesis needs, from pilot runs (`study.py --plan-seeds`)
    sequential_rule.py the looks, boundaries and decisions of a study run until decided (`study.py --until-decided`)
"""

__all__ = ["aggregate"]


def __getattr__(name: str):
    # Lazy, so `optbench.analysis.inputs` can be checked before pandas, scipy and matplotlib load.
    if name == "aggregate":
        from optbench.analysis.pipeline import aggregate

        return aggregate
    raise AttributeError(name)
