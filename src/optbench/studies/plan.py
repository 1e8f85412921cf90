"""A study as runs: plain Hydra sweeps, every single run, its directory and how far it got. No torch.

`plan_sweeps(study, ...)` turns one study into one or more `Sweep`s, each a plain
`python src/train.py -m ...` override list: clean and noisy settings are separate sweeps because
config validation refuses `noise=none` with `noise.rate>0`, and per-optimizer values (a tuning grid
around each default, or tuned values) need one sweep per optimizer. A quasi-random tuning study's
sweep runs a list of trials (hydra/sweeper=optbench_trials, src/hydra_plugins/) on the grid's seeds;
once an optimizer's trials have all finished, its top-k trials get a second sweep on the confirm seeds.
`plan(study, conf_dir, ...)` then composes every single run as its Hydra job will, validates it, and
reads its directory's record.json and summary.json: new, done (completed or diverged), unfinished, or
"other experiment" when the record's run id is not the planned run's (the study refuses to launch it).
An optimizer whose registry entry asks for another schedule than the default (Schedule-Free: constant)
gets its own sweep with that scheduler. A study with a fidelity ladder (`fidelity:`, specs/study_spec.py) is
planned once per rung (`study_at_rung`): each sweep carries its rung's label, and a rung with its own
`tuned_by` takes that tuning study's values. Rung runs are ordinary runs: a rung equal to another study's
settings plans exactly that study's directories, so its finished runs are done here too.
"""

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hydra import initialize_config_dir
from omegaconf import DictConfig, OmegaConf

from optbench import reproducibility, run_states
from optbench.config import own_optimizers
from optbench.config.hydra_glue import (
    cfg_dataset_dir,
    check_added_keys,
    compose_checked,
    format_value,
    multirun_jobs,
    parse_overrides,
)
from optbench.config.plain import plain_dict
from optbench.config.validation import validate
from optbench.data.fingerprint import config_data_fingerprint
from optbench.device.gpu_per_job import GPU_PER_JOB_DEVICE
from optbench.errors import ConfigError, DamagedRunFile
from optbench.formats import run_record, run_summary
from optbench.identity import identity_differences, run_id, run_identity
from optbench.rundir import RunDir, check_creatable
from optbench.specs.study_spec import EXPERIMENTS_DIR, Study, find_study, noise_entries, study_at_rung
from optbench.studies import search_space, tuning_protocol
from optbench.studies.launchers import launcher_overrides
from optbench.studies.search_space import Trial

OTHER_EXPERIMENT = run_states.OTHER_EXPERIMENT  # the record names another run (study_command imports it here)


ValuesFor = Callable[[str], dict[str, list[str]]]  # optimizer name -> the values its own sweep adds
TrialsFor = Callable[[str], list[Trial]]  # optimizer name -> its quasi-random tuning trials


@dataclass
class Sweep:
    """One plain Hydra multirun: `values` maps each override key to its list of values (several = swept)."""

    values: dict[str, list[str | None]]  # [None]: a deletion, `~key`
    label: str = ""  # what distinguishes it from the study's other sweeps
    hydra_overrides: list[str] = field(default_factory=list)  # hydra.* / hydra/...: not part of any run
    trials: list[Trial] = field(default_factory=list)  # quasi-random tuning: each trial runs with every combination
    pending: str = ""  # a sweep that cannot be planned yet (top-k reruns before the trials finish): why
    rung: str = ""  # a fidelity ladder's rung (`epochs=2`): the budget overrides this sweep runs at

    def command_overrides(self) -> list[str]:
        """The multirun's command line: `key=v1,v2` for swept keys, and the trials for the trials sweeper."""
        line = [sweep_override(key, values) for key, values in self.values.items()]
        if self.trials:
            listed = ",".join(f'"{" ".join(trial.overrides())}"' for trial in self.trials)
            line += ["hydra/sweeper=optbench_trials", f"hydra.sweeper.trials=[{listed}]"]
        return line + self.hydra_overrides

    def runs(self) -> list[list[str]]:
        """Every single run of the sweep, as the override list Hydra hands that job (the trials sweeper's order)."""
        if self.pending:
            return []
        jobs = self.runs_without_trials()
        return [job + trial.overrides() for job in jobs for trial in self.trials] if self.trials else jobs

    def runs_without_trials(self) -> list[list[str]]:
        """Hydra's own jobs of the command line (its spelling of each value names their directories)."""
        return multirun_jobs([sweep_override(key, values) for key, values in self.values.items()])

    def trial_of(self, job: int) -> Trial | None:
        return self.trials[job % len(self.trials)] if self.trials else None


def sweep_override(key: str, values: list[str | None]) -> str:
    """`key=v1,v2`, or the key alone for a deletion (`~key`, whose one value is None)."""
    given = [value for value in values if value is not None]
    return f"{key}={','.join(given)}" if given else key


@dataclass
class PlannedRun:
    overrides: list[str]
    run_dir: Path
    cfg: DictConfig  # the composed config, hydra node removed
    status: str  # new | done | unfinished | other experiment (its record names another run)
    detail: str = ""  # summary.json's status and epochs, or how the recorded experiment differs
    run_id: str = ""  # the run id it will record, once its directory holds a record
    epochs_done: int = 0
    trial: Trial | None = None  # the quasi-random tuning trial it runs
    trained_on: tuple[str, str] | None = None  # a run with a summary: (processor kind, intra-op threads) it recorded


def _as_list(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def noise_settings(grid: dict) -> list[dict[str, list[str]]]:
    """One sweep's override values per noise setting of the grid (study_spec.noise_entries parses them): an entry's
    `optimizer: [lion, adamw]` runs that setting for those of the grid's optimizers only."""
    settings = []
    for entry in noise_entries(grid):
        values = {"noise": [entry.name]}
        if entry.rates:
            values["noise.rate"] = [format_value(rate) for rate in entry.rates]
        if entry.label_sets:  # noise: human: `{name: human, label_set: [aggre, worst]}`
            values["noise.label_set"] = list(entry.label_sets)
        if entry.label_file is not None:
            values["noise.label_file"] = [entry.label_file]
        if entry.optimizers is not None:
            values["optimizer"] = list(entry.optimizers)
        settings.append(values)
    return settings


def base_values(grid: dict, default_epochs: int) -> dict[str, list[str]]:
    """optimizer, seed, dataset and (only when it differs from conf/config.yaml) epochs.

    An override equal to the default is left out on purpose: every override becomes part of the run
    directory, so leaving it out lets studies share runs (H1's clean runs are the full study's)."""
    values = {
        "optimizer": [str(name) for name in _as_list(grid["optimizer"])],
        "seed": [format_value(seed) for seed in _as_list(grid["seed"])],
        "dataset": [str(name) for name in _as_list(grid["dataset"])],
    }
    if int(grid["epochs"]) != default_epochs:
        values["epochs"] = [str(int(grid["epochs"]))]
    return values


def merge(*layers: Mapping[str, Sequence[str | None]]) -> dict[str, list[str | None]]:
    """Later layers win key by key (`--set dataset=synthetic` replaces the grid's datasets)."""
    merged: dict[str, list[str | None]] = {}
    for layer in layers:
        merged.update({key: list(values) for key, values in layer.items()})
    return merged


def plan_sweeps(
    study: Study,
    default_epochs: int,
    extra_overrides: Sequence[str] = (),
    per_optimizer: ValuesFor | None = None,
    trials_for: TrialsFor | None = None,
) -> list[Sweep]:
    """The study's multiruns. `per_optimizer(name)` -> {key: values} gives one sweep per optimizer with
    those values added (a tuning grid, or tuned values); None runs all optimizers in one sweep.
    `trials_for(name)` -> the optimizer's quasi-random trials, for a tuning study."""
    if trials_for is not None:
        per_optimizer = per_optimizer or (lambda name: {})
    study_values, study_hydra = parse_overrides(list(study.overrides))
    extra_values, extra_hydra = parse_overrides(list(extra_overrides))
    base = base_values(study.grid, default_epochs)
    sweeps = []
    for noise in noise_settings(study.grid):
        noise_label = "+".join(f"{key}={','.join(values)}" for key, values in noise.items())
        if per_optimizer is None:
            values = merge(base, noise, study_values, extra_values)
            sweeps.append(Sweep(values, noise_label, study_hydra + extra_hydra))
            continue
        for optimizer in noise.get("optimizer", base["optimizer"]):
            own = per_optimizer(optimizer)
            values = merge(base, noise, {"optimizer": [optimizer]}, own, study_values, extra_values)
            trials = trials_for(optimizer) if trials_for else []
            searched_and_set = sorted(set(values) & {key for trial in trials for key in trial.values})
            if searched_and_set:
                raise ConfigError(
                    f"study {study.id}: {searched_and_set[0]} is searched by the tuning study and "
                    "also set by an override: drop the override"
                )
            label = f"{optimizer} {noise_label}" + (f", {len(trials)} trials" if trials else "")
            sweeps.append(Sweep(values, label, study_hydra + extra_hydra, trials))
    return sweeps


def confirm_sweep(trial_sweep: Sweep, runs: list[PlannedRun], study: Study) -> Sweep:
    """The top-k trials of one trial sweep again on the confirm seeds; pending while a trial is unfinished."""
    tune = study.tune
    assert tune is not None  # a tuning study
    values = merge(trial_sweep.values, {"seed": [format_value(seed) for seed in tune.confirm_seeds]})
    label = trial_sweep.label.replace(f", {len(trial_sweep.trials)} trials", f", top {tune.top_k} trials")
    best = tuning_protocol.top_trials(runs, tune.select_on, tune.top_k)
    if best is None:
        return Sweep(
            values,
            label,
            list(trial_sweep.hydra_overrides),
            pending=(
                f"top {tune.top_k} of {len(trial_sweep.trials)} trials on seeds {list(tune.confirm_seeds)}: "
                "chosen once every trial has finished"
            ),
        )
    return Sweep(values, label, list(trial_sweep.hydra_overrides), best)


def quasirandom_trials(study: Study) -> TrialsFor:
    tune = study.tune
    assert tune is not None  # a tuning study
    ranges_by_optimizer = search_space.load_space(tune.space_path(EXPERIMENTS_DIR))

    def trials_for(optimizer: str) -> list[Trial]:
        if optimizer not in ranges_by_optimizer:
            raise ConfigError(
                f"search space {tune.space} has no ranges for {optimizer}: add them, so every optimizer is searched"
            )
        return search_space.trials(ranges_by_optimizer[optimizer], tune.trials, tune.sampler, tune.sampler_seed)

    return trials_for


def with_own_schedules(per_optimizer: ValuesFor | None, names: list, default_schedule: str) -> ValuesFor | None:
    """Adds `scheduler=<its default>` for the optimizers whose registry default is not conf/config.yaml's
    (Schedule-Free: constant), so they can share a study with the others; unchanged when none needs it,
    and the others get no override, so their run directories stay the ones other studies share."""
    own = {
        str(name): [spec.default_schedule]
        for name in names
        if (spec := own_optimizers.spec_for(str(name))) and spec.default_schedule != default_schedule
    }
    if not own:
        return per_optimizer
    return lambda name: {
        **({"scheduler": own[name]} if name in own else {}),
        **(per_optimizer(name) if per_optimizer else {}),
    }


def plan(
    study: Study,
    conf_dir: Path,
    extra: list[str],
    launcher: str,
    tuned: "bool | str",
    defaults_stand_in: bool = False,
) -> list[tuple[Sweep, list[PlannedRun]]]:
    """`tuned`: True reads conf/optimizer/tuned/<name>.yaml, a string reads conf/optimizer/<tuned>/<name>.yaml
    (config_path.tuned_config_path); `defaults_stand_in`: an optimizer without its tuned config yet runs its
    defaults (a dry run before tuning ends) instead of being refused.
    A fidelity ladder is planned rung by rung; a tuned ladder's rung with its own `tuned_by` uses that study's
    output (untuned, every rung runs the defaults)."""
    if not study.rungs:
        return plan_one(study, conf_dir, extra, launcher, tuned, defaults_stand_in)
    planned = []
    for rung in study.rungs:
        rung_tuned = rung_tuning(study, rung) if (tuned and rung.tuned_by) else tuned
        rung_study = study_at_rung(study, rung)
        for sweep, runs in plan_one(rung_study, conf_dir, extra, launcher, rung_tuned, defaults_stand_in):
            sweep.rung, sweep.label = rung.label, f"rung {rung.label}: {sweep.label}"
            planned.append((sweep, runs))
    return planned


def rung_tuning(study: Study, rung) -> str:
    """The conf/optimizer/ folder of the tuning study a rung names (`tuned_by` of the rung)."""
    tuning_study = find_study(rung.tuned_by, study.source.parents[1])
    if not tuning_study.tune:
        raise ConfigError(f"{study.source}: rung {rung.label}: tuned_by: {rung.tuned_by} is not a tuning study")
    return tuning_study.tune.output


def plan_one(
    study: Study, conf_dir: Path, extra: list[str], launcher: str, tuned: "bool | str", defaults_stand_in: bool = False
) -> list[tuple[Sweep, list[PlannedRun]]]:
    if tuned and study.tune:
        raise ConfigError(f"study {study.id} is a tuning study: --tuned applies to the main studies")
    with initialize_config_dir(config_dir=str(Path(conf_dir).resolve()), version_base="1.3"):
        defaults = compose_checked([], conf_dir)
        default_epochs = defaults.epochs
        per_optimizer, trials_for = None, None
        if study.tune and study.tune.method == "quasirandom":
            trials_for = quasirandom_trials(study)
        elif study.tune:
            per_optimizer = lambda name: tuning_protocol.grid_values(  # noqa: E731
                compose_checked([f"optimizer={name}"], conf_dir).optimizer, study.tune
            )
        elif tuned:
            per_optimizer = lambda name: tuning_protocol.tuned_values(  # noqa: E731
                conf_dir, name, tuned if isinstance(tuned, str) else "tuned", defaults_stand_in
            )
        per_optimizer = with_own_schedules(per_optimizer, _as_list(study.grid["optimizer"]), defaults.scheduler.name)
        sweeps = plan_sweeps(study, default_epochs, extra, per_optimizer, trials_for)
        planned = [(sweep, _plan_sweep(sweep, conf_dir, launcher)) for sweep in sweeps]
        if trials_for is not None:
            planned += [
                (sweep, _plan_sweep(sweep, conf_dir, launcher))
                for sweep in (confirm_sweep(trial_sweep, runs, study) for trial_sweep, runs in list(planned))
            ]
    return planned


def _plan_sweep(sweep: Sweep, conf_dir: Path, launcher: str) -> list[PlannedRun]:
    if launcher == "parallel" and "device" not in sweep.values:
        sweep.values["device"] = [GPU_PER_JOB_DEVICE]
    if not any(override.startswith("hydra/launcher=") for override in sweep.hydra_overrides):
        sweep.hydra_overrides = launcher_overrides(launcher) + sweep.hydra_overrides
    runs = [_plan_run(overrides, conf_dir) for overrides in sweep.runs()]
    for job, run in enumerate(runs):
        run.trial = sweep.trial_of(job)
    return runs


def _plan_run(overrides: list[str], conf_dir: Path) -> PlannedRun:
    """Compose the run as its Hydra job will, validate it, and read its directory's summary.json."""
    cfg = compose_checked(overrides, conf_dir, with_hydra=True)
    try:
        validate(cfg)
    except ConfigError as error:
        raise ConfigError(f"{error} (run {' '.join(overrides)})") from None
    check_added_keys(overrides, conf_dir)
    cfg_dataset_dir(cfg)  # a folder of images that cannot be listed: one line here, not in the resolver
    run_dir = Path(cfg.hydra.sweep.dir) / cfg.hydra.sweep.subdir  # what a multirun job's output_dir will be
    check_creatable(run_dir)
    with_hydra_removed = OmegaConf.masked_copy(cfg, [key for key in cfg if key != "hydra"])
    run = PlannedRun(list(overrides), run_dir, with_hydra_removed, run_states.NEW)
    directory = RunDir(run_dir)
    try:
        summary, record = run_summary.read(directory.path), run_record.read(directory.path)
    except DamagedRunFile as error:
        run.status, run.detail = run_states.UNFINISHED, f"unreadable: {error}"
        return run
    if record is not None:
        run.run_id = planned_run_id(with_hydra_removed)
        if record.run_id != run.run_id:
            changed = identity_differences(record.identity, planned_identity(with_hydra_removed))
            run.status, run.detail = OTHER_EXPERIMENT, "; ".join(changed[:3]) or "another run id"
            return run
    if summary is not None:
        run.epochs_done = summary.epochs_done
        run.trained_on = (summary.environment.processor_kind, reproducibility.threads(summary))
        run.status = run_states.DONE if summary.finished else run_states.UNFINISHED
        run.detail = f"{summary.status}, {run.epochs_done}/{summary.epochs_planned or cfg.epochs} epochs"
    return run


def planned_identity(cfg) -> dict:
    """The run identity the run will record (training/run.py computes the same from the job's config)."""
    resolved = plain_dict(cfg, resolve=True)
    data = json.dumps([resolved["dataset"], resolved["paths"]["data_dir"]], sort_keys=True, default=str)
    return run_identity(resolved, _fingerprint_of(data))


@functools.lru_cache(maxsize=16)  # a study's runs share a few datasets: each is listed and hashed once
def _fingerprint_of(data: str) -> str:
    dataset, data_dir = json.loads(data)
    return config_data_fingerprint({"dataset": dataset, "paths": {"data_dir": data_dir}})


def planned_run_id(cfg) -> str:
    return run_id(planned_identity(cfg))
