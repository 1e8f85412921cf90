"""A study as runs: plain Hydra sweeps, every single run, its directory and how far it got. No torch.

`plan_sweeps(study, ...)` turns one study into one or more `Sweep`s, each a plain
`python src/train.py -m ...` override list: clean and noisy settings are separate sweeps because
config validation refuses `noise=none` with `noise.rate>0`, and per-optimizer values (a tuning grid
around each default, or tuned values) need one sweep per optimizer. `plan(study, conf_dir, ...)` then
composes every single run as its Hydra job will, validates it, and reads its directory's summary.json:
new, done (completed or diverged) or unfinished.
"""

from dataclasses import dataclass, field
from pathlib import Path

from hydra import initialize_config_dir
from omegaconf import OmegaConf

from optbench.config import validate
from optbench.errors import ConfigError, DamagedRunFile
from optbench.hydra_glue import combinations, compose_checked, format_value, parse_overrides
from optbench.rundir import FINAL_STATUSES, RunDir
from optbench.studies import tuning
from optbench.studies.launchers import GPU_PER_JOB_DEVICE, launcher_overrides
from optbench.studies.spec import Study


@dataclass
class Sweep:
    """One plain Hydra multirun: `values` maps each override key to its list of values (several = swept)."""

    values: dict[str, list[str]]
    label: str = ""                       # what distinguishes it from the study's other sweeps
    hydra_overrides: list[str] = field(default_factory=list)   # hydra.* / hydra/...: not part of any run

    def command_overrides(self) -> list[str]:
        """The multirun's command line: `key=v1,v2` for swept keys."""
        return [f"{key}={','.join(values)}" for key, values in self.values.items()] + self.hydra_overrides

    def runs(self) -> list[list[str]]:
        """Every single run of the sweep, as the override list Hydra hands that job."""
        return combinations(self.values)


@dataclass
class PlannedRun:
    overrides: list[str]
    run_dir: Path
    cfg: object             # the composed config (DictConfig), hydra node removed
    status: str             # new | done | unfinished
    detail: str = ""        # summary.json's status and epochs, when there is one
    epochs_done: int = 0


def _as_list(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def noise_settings(grid: dict) -> list[dict[str, list[str]]]:
    """One entry per noise setting: `[{name: none}, {name: symmetric, rate: [0.2, 0.4]}]` (or `none`, or a name)."""
    settings = []
    for entry in _as_list(grid["noise"]):
        entry = {"name": entry} if isinstance(entry, str) else dict(entry)
        values = {"noise": [str(entry["name"])]}
        if "rate" in entry and entry["name"] != "none":
            values["noise.rate"] = [format_value(rate) for rate in _as_list(entry["rate"])]
        settings.append(values)
    return settings


def base_values(grid: dict, default_epochs: int) -> dict[str, list[str]]:
    """optimizer, seed, dataset and (only when it differs from conf/config.yaml) epochs.

    An override equal to the default is left out on purpose: every override becomes part of the run
    directory, so leaving it out lets studies share runs (H1's clean runs are the full study's)."""
    values = {"optimizer": [str(name) for name in _as_list(grid["optimizer"])],
              "seed": [format_value(seed) for seed in _as_list(grid["seed"])],
              "dataset": [str(name) for name in _as_list(grid["dataset"])]}
    if int(grid["epochs"]) != default_epochs:
        values["epochs"] = [str(int(grid["epochs"]))]
    return values


def merge(*layers: dict[str, list[str]]) -> dict[str, list[str]]:
    """Later layers win key by key (`--set dataset=synthetic` replaces the grid's datasets)."""
    merged: dict[str, list[str]] = {}
    for layer in layers:
        merged.update(layer)
    return merged


def plan_sweeps(study: Study, default_epochs: int, extra_overrides: list[str] = (),
                per_optimizer: "callable | None" = None) -> list[Sweep]:
    """The study's multiruns. `per_optimizer(name)` -> {key: values} gives one sweep per optimizer with
    those values added (a tuning grid, or tuned values); None runs all optimizers in one sweep."""
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
        for optimizer in base["optimizer"]:
            own = per_optimizer(optimizer)
            values = merge(base, {"optimizer": [optimizer]}, noise, own, study_values, extra_values)
            sweeps.append(Sweep(values, f"{optimizer} {noise_label}", study_hydra + extra_hydra))
    return sweeps


def plan(study: Study, conf_dir: Path, extra: list[str], launcher: str, tuned: bool) -> list[tuple[Sweep, list[PlannedRun]]]:
    if tuned and study.tune:
        raise ConfigError(f"study {study.id} is a tuning study: --tuned applies to the main studies")
    with initialize_config_dir(config_dir=str(Path(conf_dir).resolve()), version_base="1.3"):
        default_epochs = compose_checked([], conf_dir).epochs
        per_optimizer = None
        if study.tune:
            per_optimizer = lambda name: tuning.grid_values(compose_checked([f"optimizer={name}"], conf_dir).optimizer, study.tune)
        elif tuned:
            per_optimizer = lambda name: tuning.tuned_values(conf_dir, name)
        sweeps = plan_sweeps(study, default_epochs, extra, per_optimizer)
        planned = []
        for sweep in sweeps:
            if launcher == "parallel" and "device" not in sweep.values:
                sweep.values["device"] = [GPU_PER_JOB_DEVICE]
            sweep.hydra_overrides = launcher_overrides(launcher) + sweep.hydra_overrides
            planned.append((sweep, [_plan_run(overrides, conf_dir) for overrides in sweep.runs()]))
    return planned


def _plan_run(overrides: list[str], conf_dir: Path) -> PlannedRun:
    """Compose the run as its Hydra job will, validate it, and read its directory's summary.json."""
    cfg = compose_checked(overrides, conf_dir, with_hydra=True)
    try:
        validate(cfg)
    except ConfigError as error:
        raise ConfigError(f"{error} (run {' '.join(overrides)})") from None
    run_dir = Path(cfg.hydra.sweep.dir) / cfg.hydra.sweep.subdir  # what a multirun job's output_dir will be
    with_hydra_removed = OmegaConf.masked_copy(cfg, [key for key in cfg if key != "hydra"])
    run = PlannedRun(list(overrides), run_dir, with_hydra_removed, "new")
    try:
        summary = RunDir(run_dir).read_summary()
    except DamagedRunFile:
        summary = {"status": "unreadable summary.json"}
    if summary is not None:
        run.epochs_done = int(summary.get("epochs_done") or 0)
        run.status = "done" if summary.get("status") in FINAL_STATUSES else "unfinished"
        run.detail = f"{summary.get('status')}, {run.epochs_done}/{summary.get('epochs_planned', cfg.epochs)} epochs"
    return run
