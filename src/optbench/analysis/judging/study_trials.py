"""Tuning trials that are also runs of the study named with `--study`: counted in its tables, not set aside.

A run directory is a run's identity, so a tuning trial and a study's run with the same configuration are one
directory. When the tuning study and the named study plan the same runs but for optimizer, seed and the tuned
values (the same grid otherwise, the same overrides, the budget of one of the study's rungs), a trial on one of
the rung's seeds (its own `seeds:`, else the grid's) whose values are the winners that rung runs with is that
rung's run: tune_cpu_demo_8ep's seed-0 trial of the values tuned at 3 epochs is cpu_fidelity's 8-epoch seed-0 run.
Setting those aside dropped the seeds from the study's tables; the report's post-selection note still names the
seeds a tuning ran on. A rung tuned by its own tuning runs seeds that tuning did not select on: its winners' seed-0
and seed-1 trials chose them, are no run of that rung, and stay set aside (ladder_runs.py drops them from the rung
even when they are another rung's run).
"""

from pathlib import Path

from optbench.analysis.judging.tuning_report import TuningStudy
from optbench.errors import ConfigError
from optbench.specs.study_spec import Study, find_study
from optbench.values import same_value

PER_RUN_KEYS = ("optimizer", "seed", "epochs")  # what a rung or a trial sets for itself


def as_list(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def rung_budgets(study: Study) -> list[tuple[dict[str, str], str, set[int]]]:
    """Per rung, its budget overrides ({key: value}), the tuning study whose winners it runs with, and its seeds
    (a rung's own tuning study's selection seeds taken out: they are that tuning's runs, not the rung's)."""
    grid_seeds = {int(seed) for seed in as_list(study.grid.get("seed"))}
    if not study.rungs:
        epochs = as_list(study.grid.get("epochs"))
        return [({"epochs": str(epochs[0])}, study.tuned_by, grid_seeds)] if len(epochs) == 1 else []
    return [
        (
            dict(override.split("=", 1) for override in rung.overrides),
            rung.tuned_by or study.tuned_by,
            set(rung.seeds) or grid_seeds,
        )
        for rung in study.rungs
    ]


def plans_alike(study: Study, tuning: Study, budget: dict[str, str]) -> bool:
    """The tuning's runs and the study's runs at `budget` differ only in optimizer, seed and tuned values."""
    if set(budget) != {"epochs"} or set(study.overrides) != set(tuning.overrides):
        return False  # a width or subset rung: the tuning's own grid would have to say so; not matched here
    if [str(value) for value in as_list(tuning.grid.get("epochs"))] != [budget["epochs"]]:
        return False
    keys = (set(study.grid) | set(tuning.grid)) - set(PER_RUN_KEYS)
    return all(as_list(study.grid.get(key)) == as_list(tuning.grid.get(key)) for key in keys)


def same_values(a: dict[str, float], b: dict[str, float]) -> bool:
    return a.keys() == b.keys() and all(same_value(a[key], b[key]) for key in a)


def study_runs_among_trials(
    study: Study | None, tunings: list[TuningStudy], results_dir: Path, experiments_dir: Path | None
) -> frozenset[Path]:
    """The resolved run directories of tuning trials that are runs `study` plans (empty without a study)."""
    if study is None:
        return frozenset()
    records = {tuning.name: tuning for tuning in tunings}
    kept: set[Path] = set()
    for tuning in tunings:
        try:
            spec = find_study(tuning.name, *([experiments_dir] if experiments_dir else []))
        except ConfigError:
            continue  # no study file to compare plans with: its trials stay set aside
        for budget, tuned_by, seeds in rung_budgets(study):
            if tuned_by in records and plans_alike(study, spec, budget):
                if tuned_by == tuning.name and any(rung.tuned_by == tuned_by for rung in study.rungs):
                    continue  # a rung's own tuning: its winners' trials are the selection, never the rung's runs
                folder = (results_dir / tuning.source).parent
                kept |= winners_trial_dirs(study, tuning, records[tuned_by], folder, seeds)
    return frozenset(kept)


def winners_trial_dirs(
    study: Study, tuning: TuningStudy, rung_tuning: TuningStudy, folder: Path, seeds: set[int]
) -> set[Path]:
    """`tuning`'s trial runs on `seeds` (the rung's) and the study's optimizers whose values are `rung_tuning`'s
    winners."""
    optimizers = set(as_list(study.grid.get("optimizer")))
    dirs: set[Path] = set()
    for name, entry in tuning.optimizers.items():
        winner = rung_tuning.optimizers[name].winner if name in rung_tuning.optimizers else None
        if name not in optimizers or winner is None:
            continue
        for trial in entry.trials:
            if same_values(trial.values, winner.values):
                dirs.update((folder / run.run_dir).resolve() for run in trial.runs if run.seed in seeds)
    return dirs
