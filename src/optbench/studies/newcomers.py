"""Newcomers: optimizers a main study tunes with its tuning study's protocol, beside that study's published winners.

A study comparing one optimizer against a published one (`newcomers: [radam]`, `tuned_by: tune_cpu_demo`) tunes only
the newcomers, with the tuning study's own protocol (its search space, trials, epochs, seeds and top-k reruns:
study_spec.newcomer_tuning), and runs the other optimizers with the winners the tuning study already selected. So
the baselines are never re-selected, and the newcomer's tuned config is written beside its own config
(config_path.tuned_config_path), outside the tracked conf/. `tuning_studies` gives the tuning studies a main study
runs first; `protocol_line` says who is tuned how; `budget_warning` compares the protocol the newcomers get with the
budget the baselines' tuning record states (a protocol edited since the baselines were tuned): arms tuned with
different budgets are not a fair comparison.
"""

from pathlib import Path

from optbench.errors import ConfigError, DamagedRunFile
from optbench.formats import tuning_record
from optbench.specs.study_spec import Study, find_study, newcomer_tuning, tuning_studies_of
from optbench.studies import tuning_protocol


def tuning_studies(study: Study, experiments_dir: Path) -> list[Study]:
    """The tuning studies `study` runs first (its tuned_by, its rungs'), each checked to be one; for a study with
    newcomers, its tuned_by's protocol on the newcomers only."""
    found = [find_study(name, experiments_dir) for name in tuning_studies_of(study)]
    not_tuning = [tuning_study for tuning_study in found if not tuning_study.tune]
    if not_tuning:
        raise ConfigError(
            f"{study.source}: tuned_by: {not_tuning[0].id} is not a tuning study (it has no `tune:` block)"
        )
    return [newcomer_tuning(found[0], study.newcomers)] if study.newcomers else found


def baseline_tuning(study: Study, experiments_dir: Path) -> Study:
    """The tuning study whose winners the baselines of a study with newcomers keep (its tuned_by)."""
    return find_study(study.tuned_by, experiments_dir)


def protocol_line(study: Study, baseline: Study) -> str:
    """Who is tuned here and how, and whose values the others keep."""
    assert baseline.tune is not None  # a tuning study (tuning_studies checked it)
    budget = tuning_protocol.budget_of(baseline)
    others = [str(name) for name in _as_list(study.grid["optimizer"]) if str(name) not in study.newcomers]
    return (
        f"study {study.id}: {', '.join(study.newcomers)} tuned here with {baseline.id}'s protocol "
        f"({describe(budget)}); {', '.join(others) or 'no other optimizer'} keep {baseline.id}'s winners "
        f"(optimizer={baseline.tune.output}/NAME)"
    )


def describe(budget: tuning_record.Budget) -> str:
    trials = f"{budget.trials} trials" if budget.trials is not None else "a grid"
    epochs = "/".join(map(str, budget.epochs))
    reruns = f", top {budget.top_k} on seeds {list(budget.confirm_seeds)}" if budget.top_k else ""
    return f"{trials} x {epochs} epochs on seeds {list(budget.trial_seeds)}{reruns}"


def budget_warning(study: Study, baseline: Study, folders: list[Path]) -> str | None:
    """`warning: ...` when the baselines' tuning record (in the first of `folders` that has it) states another
    budget than the newcomers get; None when they agree or no record is found."""
    newcomer_budget = tuning_protocol.budget_of(newcomer_tuning(baseline, study.newcomers))
    for folder in folders:
        path = tuning_record.record_path(folder, baseline.id)
        if not path.is_file():
            continue
        try:
            recorded = tuning_record.read(path).budget
        except DamagedRunFile:
            return None  # the aggregator names a damaged record; the study does not read it further
        if recorded == newcomer_budget:
            return None
        return (
            f"warning: the arms are tuned with different budgets: {baseline.id}'s record ({path}) says its optimizers "
            f"got {describe(recorded)}, the newcomers {', '.join(study.newcomers)} get {describe(newcomer_budget)}: "
            f"give them the same protocol, or the comparison favours the better-tuned arms"
        )
    return None


def _as_list(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]
