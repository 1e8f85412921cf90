"""Command-line glue between Hydra and `train(cfg, run_dir)`: exit codes and up-front checks.

- `preflight(argv, conf_dir)`: before Hydra starts (and before it makes any directory), compose every
  combination a command asks for (sweeps expanded) and validate it, so a typo in an optimizer name or
  an out-of-range value gives one line and exit status 2 instead of a traceback mid-sweep.
- `run_job(cfg, run_dir)`: call `train`; a ConfigError discovered later (data missing, bad folder)
  prints one line, removes the files Hydra put in a run directory that holds no results, and exits 2.
Exit codes: 0 completed or diverged (a result), 2 bad configuration or input (or a run directory
another process is training), 3 out of device memory, 128 + signal when stopped by SIGINT (130) or
SIGTERM (143) after a checkpoint, 1 any other failure. In a multirun a failed run is recorded and
the sweep goes on; the exit status then reports the worst failure.
"""

import itertools
import logging
import shutil
import sys
from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra._internal.utils import get_args_parser
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException
from omegaconf import DictConfig

from optbench.config import validate
from optbench.errors import ConfigError, OutOfMemory, RunDirectoryBusy, RunInterrupted
from optbench.runlog import CHECKPOINT_FILE, LOCK_FILE, METRICS_FILE, SUMMARY_FILE

log = logging.getLogger(__name__)
EXIT_BAD_INPUT = 2
EXIT_FAILED = 1
EXIT_OUT_OF_MEMORY = 3
EXIT_INTERRUPTED = 130  # the shell's code for Ctrl-C (128 + SIGINT); SIGTERM gives 143
_deferred_exit_status = 0  # worst status of the failed runs of a multirun so far
MAX_CHECKED_COMBINATIONS = 128  # ~0.3 s each; a larger sweep is checked on its first 128 runs only


def fail(message: str, status: int = EXIT_BAD_INPUT) -> None:
    print(f"error: {message}", file=sys.stderr)
    sys.exit(status)


def preflight(argv: list[str], conf_dir: Path, config_name: str = "config") -> None:
    try:
        combinations = _override_combinations(get_args_parser().parse_args(argv).overrides)
        with initialize_config_dir(config_dir=str(conf_dir.resolve()), version_base="1.3"):
            for overrides in itertools.islice(combinations, MAX_CHECKED_COMBINATIONS):
                check_groups(overrides, conf_dir)
                validate(compose(config_name=config_name, overrides=overrides))
    except ConfigError as error:
        fail(str(error))
    except HydraException as error:
        fail(hydra_error_line(error))


def hydra_error_line(error: HydraException) -> str:
    """Hydra's message on one line: its first two lines name the key and the fix."""
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    return "; ".join(lines[:2])


def _override_combinations(overrides: list[str]) -> "itertools.product":
    """Every single-run override list a (possibly sweeping) command line stands for; hydra.* left out."""
    choices = []
    for override in OverridesParser.create().parse_overrides(overrides):
        if override.is_hydra_override():
            continue
        key = override.get_key_element()  # keeps +, ++, ~ prefixes and @package
        if override.is_sweep_override():
            try:
                choices.append([f"{key}={value}" for value in override.sweep_string_iterator()])
            except Exception:  # interval sweeps (optimisation launchers) have no list of values to check
                continue
        else:
            choices.append([override.input_line])
    return itertools.product(*choices)


def check_groups(overrides: tuple[str, ...], conf_dir: Path) -> None:
    for override in overrides:
        key, _, value = override.lstrip("+~").partition("=")
        group_dir = conf_dir / key
        if group_dir.is_dir() and value not in ("null", "") and not (group_dir / f"{value}.yaml").exists():
            options = sorted(path.stem for path in group_dir.glob("*.yaml"))
            raise ConfigError(f"unknown {key} '{value}': choose {key}=" + ", ".join(options))


def run_job(cfg: DictConfig, run_dir: Path, multirun: bool = False) -> dict | None:
    """Train one run. In a multirun a failed run (recorded as failed in its summary) does not stop
    the others: the sweep goes on and the process exits with `deferred_exit_status()` at the end."""
    from optbench.runner import train  # heavy imports (torch, torchvision) only once the config is known good

    global _deferred_exit_status
    try:
        return train(cfg, run_dir)
    except ConfigError as error:
        _discard_empty_run_dir(run_dir, Path(cfg.paths.results_dir))
        fail(str(error))
    except RunDirectoryBusy as error:
        if not multirun:
            fail(str(error))
        log.warning("skipped: %s", error)  # another process (maybe another sweep) trains it
    except RunInterrupted as error:
        log.warning("interrupted, checkpoint saved; run the same command to resume: %s", run_dir)
        sys.exit(128 + error.signum)
    except KeyboardInterrupt:
        log.warning("interrupted: %s", run_dir)
        sys.exit(EXIT_INTERRUPTED)
    except Exception as error:
        status = EXIT_OUT_OF_MEMORY if isinstance(error, OutOfMemory) else EXIT_FAILED
        if not multirun:
            if isinstance(error, OutOfMemory):
                fail(str(error), status)  # summary.json already says failed, with this line
            raise
        log.exception("run failed, the sweep goes on: %s", run_dir)
        _deferred_exit_status = max(_deferred_exit_status, status)
    return None


def deferred_exit_status() -> int:
    """0, or the worst failure among the runs of a multirun (3 out of memory, 1 other failures)."""
    return _deferred_exit_status


def _discard_empty_run_dir(run_dir: Path, results_dir: Path) -> None:
    """Remove what Hydra wrote for a run that never started, unless an earlier run left results there.

    Only Hydra's own files and the run lock go (.hydra/, the job log, .lock), then the folders left empty, up to (not
    including) the results root; nothing a user or an earlier run wrote is touched.
    """
    if any((run_dir / name).exists() for name in (SUMMARY_FILE, METRICS_FILE, CHECKPOINT_FILE)):
        return
    shutil.rmtree(run_dir / ".hydra", ignore_errors=True)
    (run_dir / "train.log").unlink(missing_ok=True)
    (run_dir / LOCK_FILE).unlink(missing_ok=True)  # ours, released when train() gave up
    folder, stop = run_dir.resolve(), results_dir.resolve()
    while True:
        try:
            folder.rmdir()  # fails, and stops the walk, at the first folder that is not empty
        except OSError:
            return
        folder = folder.parent
        if folder == stop or stop not in folder.parents:
            return
