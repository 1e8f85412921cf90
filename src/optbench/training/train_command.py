"""Glue between Hydra and `train(cfg, run_dir)`: up-front checks, exit statuses, the invocation's files.

- `preflight(argv, conf_dir)`: before Hydra starts (and before it makes any directory), compose every
  combination a command asks for (sweeps expanded) and validate it, without loading torch, so a typo in
  an optimizer name or an out-of-range value is one line and exit status 2 instead of a traceback
  mid-sweep. Flag-style arguments (`--optimizer adam`) are answered with the override form.
- `run_job(cfg, run_dir, ...)`: call `train` and turn its outcome into an exit status. A refused run
  (ConfigError) leaves no directory it created behind. In a multirun a failed run is recorded and the
  sweep goes on; `deferred_exit_status()` then reports the worst failure.
Exit codes (optbench.errors): 0 completed or diverged, 2 bad configuration or input (or a run directory
another process is training), 3 out of device memory, 128 + signal when stopped by SIGINT (130) or
SIGTERM (143) after a checkpoint, 1 any other failure.
"""

import logging
import shlex
import sys
from collections import Counter
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from optbench import errors, rundir
from optbench.config.hydra_glue import (
    cfg_dataset_dir,
    check_added_keys,
    combinations,
    compose_checked,
    multirun_jobs,
    parse_overrides,
    split_command_line,
    with_optimizer_defaults,
)
from optbench.config.validation import validate
from optbench.errors import ConfigError, OutOfMemory, RunDirectoryBusy, RunInterrupted
from optbench.formats import run_summary

log = logging.getLogger(__name__)
MAX_CHECKED_COMBINATIONS = 128  # ~0.1 s each; a larger sweep is checked on its first 128 runs only
_deferred_exit_status = errors.EXIT_OK  # worst status of the failed runs of a multirun so far
_sweep_runs: list[tuple[Path, bool, str]] = []  # a multirun's run directories (checked by preflight), whether
# finished before it started, and the sweep's results root
_existing_above: dict[Path, Path] = {}  # a run directory (resolved) -> its nearest folder that existed before Hydra
# made any: a refused run removes the empty folders below it, a results folder the command created included


def preflight(argv: list[str], conf_dir: Path) -> int:
    """How many runs of the command line were checked; ConfigError (one line) for the first bad one."""
    from hydra import initialize_config_dir

    overrides, help_only = split_command_line(argv)
    if help_only:
        return 0
    values, _ = parse_overrides(overrides)
    multirun = any(argument in ("-m", "--multirun") for argument in argv)
    runs = (multirun_jobs(overrides) if multirun else combinations(values))[:MAX_CHECKED_COMBINATIONS]
    with initialize_config_dir(config_dir=str(Path(conf_dir).resolve()), version_base="1.3"):
        for run_overrides in runs:
            hydra_overrides = [override for override in overrides if override.startswith(("hydra.", "hydra/"))]
            cfg = compose_checked([*run_overrides, *hydra_overrides], conf_dir, with_hydra=True)
            validate(cfg)
            check_added_keys(run_overrides, conf_dir)
            cfg_dataset_dir(cfg)  # lists (and fingerprints) a folder of images: unusable, one line before Hydra starts
            run_dir = planned_run_dir(cfg, multirun)
            rundir.check_creatable(run_dir)
            _existing_above[run_dir.resolve()] = rundir.nearest_existing(run_dir)
            if multirun:
                _sweep_runs.append((run_dir, _is_finished(run_dir), str(cfg.hydra.sweep.dir)))
    return len(runs)


def _is_finished(run_dir: Path) -> bool:
    try:
        summary = run_summary.read(run_dir)
        return summary is not None and summary.finished
    except errors.DamagedRunFile:
        return False


def sweep_end_line() -> str | None:
    """After a multirun: `sweep: N completed, M diverged, K failed, L skipped; aggregate with: ...`, read
    from the summaries of the runs preflight checked (so jobs another launcher ran count too); None
    after a single run."""
    if not _sweep_runs:
        return None
    counts: Counter[str] = Counter()
    for run_dir, finished_before, _ in _sweep_runs:
        try:
            summary = run_summary.read(run_dir)
            status = summary.status if summary else None
        except errors.DamagedRunFile:
            status = None
        counts[
            "skipped" if finished_before else status if status in run_summary.FINAL_STATUSES else run_summary.FAILED
        ] += 1
    roots = sorted({shlex.quote(root) for _, _, root in _sweep_runs})
    line = ", ".join(
        f"{counts[key]} {key}" for key in (run_summary.COMPLETED, run_summary.DIVERGED, run_summary.FAILED, "skipped")
    )
    more = f" (the first {len(_sweep_runs)} runs)" if len(_sweep_runs) == MAX_CHECKED_COMBINATIONS else ""
    return f"sweep: {line}{more}; aggregate with: python src/aggregate.py {' '.join(roots)}"


def planned_run_dir(cfg: DictConfig, multirun: bool) -> Path:
    """The directory Hydra will give this run (a multirun job's, or a single run's)."""
    if multirun:
        return Path(cfg.hydra.sweep.dir) / cfg.hydra.sweep.subdir
    return Path(cfg.hydra.run.dir)


def with_job_defaults(cfg: DictConfig, task_overrides, conf_dir: Path) -> DictConfig:
    """A job's config as Hydra composed it, with its optimizer's own group options where the command chose none
    (hydra_glue.with_optimizer_defaults, the path preflight and the study planner take too)."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    def composed(overrides: list[str]) -> DictConfig:
        if GlobalHydra.instance().is_initialized():  # inside @hydra.main (and its launchers' jobs)
            return compose(config_name="config", overrides=overrides)
        with initialize_config_dir(config_dir=str(Path(conf_dir).resolve()), version_base="1.3"):
            return compose(config_name="config", overrides=overrides)

    return with_optimizer_defaults(cfg, [str(line) for line in task_overrides], composed)


def hydra_files(cfg: DictConfig, hydra_config) -> dict[str, str]:
    """What Hydra would write into .hydra/; the run writes it once, when it starts (hydra.output_subdir is
    null, so a later invocation cannot overwrite the files of existing results)."""
    return {
        "config.yaml": OmegaConf.to_yaml(cfg),
        "overrides.yaml": OmegaConf.to_yaml(hydra_config.overrides.task),
        "hydra.yaml": OmegaConf.to_yaml(OmegaConf.create({"hydra": hydra_config})),
    }


def run_job(cfg: DictConfig, run_dir: Path, multirun: bool = False, files: dict[str, str] | None = None) -> int:
    """Train one run; returns the exit status the process should end with now (0: go on)."""
    from optbench.training.run import train  # torch and torchvision load only once the config is known good

    global _deferred_exit_status
    try:
        train(cfg, run_dir, files)
        return errors.EXIT_OK
    except ConfigError as error:
        discard_new_run_dir(Path(run_dir), Path(cfg.paths.results_dir))
        print(f"error: {error}", file=sys.stderr)
        return errors.EXIT_BAD_INPUT
    except RunDirectoryBusy as error:
        if not multirun:
            print(f"error: {error}", file=sys.stderr)
            return errors.EXIT_BAD_INPUT
        log.warning("skipped: %s", error)  # another process (maybe another sweep) trains it
    except RunInterrupted as error:
        log.warning("interrupted, checkpoint saved; run the same command to resume: %s", run_dir)
        return errors.EXIT_SIGNAL_BASE + error.signum
    except KeyboardInterrupt:
        log.warning("interrupted: %s", run_dir)
        return errors.EXIT_SIGNAL_BASE + 2
    except Exception as error:
        status = errors.EXIT_OUT_OF_MEMORY if isinstance(error, OutOfMemory) else errors.EXIT_FAILED
        if not multirun:
            if isinstance(error, OutOfMemory):
                print(f"error: {error}", file=sys.stderr)  # summary.json already says failed, with this line
                return status
            raise
        log.exception("run failed, the sweep goes on: %s", run_dir)
        _deferred_exit_status = max(_deferred_exit_status, status)
    return errors.EXIT_OK


def deferred_exit_status() -> int:
    """0, or the worst failure among the runs of a multirun (3 out of memory, 1 other failures)."""
    return _deferred_exit_status


def discard_new_run_dir(run_dir: Path, results_dir: Path) -> None:
    """After a refusal: a directory holding no results loses its run lock, then every folder left empty is
    removed, up to the nearest folder that existed before the command (preflight noted it: a results folder
    the command created goes too); without that note up to the results root (or only the run directory
    itself, when it lies elsewhere)."""
    directory = rundir.RunDir(run_dir)
    if not run_dir.is_dir() or directory.holds_results():
        return
    (run_dir / rundir.LOCK_FILE).unlink(missing_ok=True)
    existed = _existing_above.get(run_dir.resolve())  # known when preflight saw the command line
    if existed is not None:
        rundir.remove_empty_dirs(run_dir, existed)
        return
    inside_results = results_dir.resolve() in run_dir.resolve().parents
    rundir.remove_empty_dirs(run_dir, results_dir if inside_results else run_dir.parent)
