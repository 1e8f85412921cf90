"""The results aggregator: a folder of run directories in, tables, figures, tests and verdicts out.

    from optbench.analysis import aggregate
    aggregate(Path("results"), Path("results/aggregate"), target_acc=0.9, experiments_dir=Path("experiments"))

Rooms, arrows pointing down (writing -> judging -> statistics; every room may read the loading modules):
    load.py        scan run directories -> one row per run, one row per (run, epoch); never writes
    groups.py      which config fields separate runs (group keys), setting and optimizer-arm labels
    inputs.py      checks of the command-line input (light: no pandas), so typos fail fast
    headline.py    each workload's headline column, its direction, label and unit (a loss ranks low-first)
    targets.py     time-to-target per workload: its target, in its budget unit, crossed in the metric's direction
    statistics/    pure statistics over arrays and numbers: tests, intervals, power, Holm, robust estimators,
                   the sequential rule, a ladder's statistics
    judging/       hypotheses and verdicts, fidelity ladders, the seed planner, tuning records
    writing/       tables, figures, report.md, file names, the output folder; two runs side by side
    pipeline.py    `aggregate(...)`: three steps, analyse (load and compute), judge, write, in that order
"""

__all__ = ["aggregate"]


def __getattr__(name: str):
    # Lazy, so `optbench.analysis.inputs` can be checked before pandas, scipy and matplotlib load.
    if name == "aggregate":
        from optbench.analysis.pipeline import aggregate

        return aggregate
    raise AttributeError(name)
