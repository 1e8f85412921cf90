"""A durable mirror of a run directory (`paths.mirror_dir`): copies out while training, restores before it.

A run trains in its local directory (fast disk); `Mirror` copies its files to the same path relative to
`paths.results_dir` under the mirror folder (a run outside results_dir uses its directory name): the
small files (record, metrics, summary, log, predictions) after every epoch, the checkpoint at most every
`train.mirror_every_s` seconds in a background thread, and everything at the end or on a stop signal.
Every copy is atomic on the mirror side (a temporary name, then a rename). A failing mirror (mount gone,
disk full, permission) never fails the run: each kind of error is logged once, counted in
summary["mirror"], and the copy is retried at the next chance. `restore(...)` runs before the identity
check: when the local directory is missing or has fewer epochs than the mirror, and the mirror's record
names the same identity, it copies the mirror back (a mirror holding another experiment is refused).
"""

import logging
import shutil
import threading
import time
from pathlib import Path
from typing import Any

from optbench import fileio, identity, rundir
from optbench.errors import ConfigError
from optbench.formats import run_record, run_summary
from optbench.rundir import RunDir

log = logging.getLogger(__name__)
SMALL_FILES = (
    rundir.RECORD_FILE,
    rundir.METRICS_FILE,
    rundir.LOG_FILE,
    rundir.PREDICTIONS_FILE,
)  # summary.json last, alone


def mirror_path(mirror_dir: str | Path, run_path: Path, results_dir: str | Path) -> Path:
    """Where a run directory lives under the mirror: its path relative to results_dir, else its name."""
    run_path, results = Path(run_path).resolve(), Path(results_dir).resolve()
    relative = run_path.relative_to(results) if results in run_path.parents else Path(run_path.name)
    return Path(mirror_dir) / relative


def copy_atomically(source: Path, target: Path) -> None:
    """Copy `source` over `target` through rundir's atomic writer (temporary sibling, fsync, rename)."""
    with open(source, "rb") as reader:
        fileio.write_atomically(target, lambda writer: shutil.copyfileobj(reader, writer, 1 << 20))


def copy_small_files(source: Path, target: Path) -> None:
    """record, metrics, log, predictions and .hydra/ (the aggregator groups runs by it) from `source` to `target`."""
    for name in SMALL_FILES:
        if (source / name).exists():
            copy_atomically(source / name, target / name)
    hydra_files = sorted((source / rundir.HYDRA_DIR).glob("*.yaml"))
    if hydra_files:
        (target / rundir.HYDRA_DIR).mkdir(exist_ok=True)
    for path in hydra_files:
        copy_atomically(path, target / rundir.HYDRA_DIR / path.name)


class Mirror:
    """The copies of one run directory to its mirror, and what became of them (`status`, in summary.json)."""

    def __init__(self, local: RunDir, root: Path, target: Path, every_s: float):
        self.local, self.root, self.target, self.every_s = local, Path(root), Path(target), every_s
        self.status: dict[str, Any] = {
            "dir": str(self.target),
            "last_epoch_mirrored": None,
            "checkpoint_epoch": None,
            "errors": 0,
            "last_error": None,
        }
        # (mtime_ns, size) of the checkpoint last copied, and when a copy last started
        self.copied_checkpoint: tuple[int, int] | None = None
        self.last_checkpoint_copy = -float("inf")
        # the background copy, and what it left: the copy's stamp and epochs, or the error it met
        self.thread: threading.Thread | None = None
        self.thread_result: tuple[tuple[int, int], int | None] | OSError | None = None
        self.kinds_logged: set[tuple[str, int | None]] = set()

    def attach(self, summary: dict) -> None:
        """The summary reports this mirror's status from now on (the same dict, updated in place)."""
        summary["mirror"] = self.status

    def after_epoch(self, epoch: int, summary: dict) -> None:
        """Copy the small files now, and the checkpoint in the background when it changed and is due."""
        self._collect_checkpoint_copy()
        if self.thread is None and time.monotonic() - self.last_checkpoint_copy >= self.every_s:
            self._start_checkpoint_copy(summary.get("epochs_done"))
        self._copy_small_files(epoch, summary)

    def finish(self, summary: dict) -> None:
        """At the end (completed, diverged, interrupted, failed): wait, copy the checkpoint, then the rest."""
        if self.thread is not None:
            self.thread.join()
        self._collect_checkpoint_copy()
        self._start_checkpoint_copy(summary.get("epochs_done"), background=False)
        self._collect_checkpoint_copy()
        self._copy_small_files(summary.get("epochs_done"), summary)

    # ------------------------------------------------------------ copies

    def _prepare_target(self) -> None:
        if not self.root.is_dir():  # never create a missing mount point on the local disk
            raise FileNotFoundError(f"mirror folder {self.root} is missing (a dropped mount?)")
        self.target.mkdir(parents=True, exist_ok=True)

    def _copy_small_files(self, epoch: int | None, summary: dict) -> None:
        """record, metrics and log, then the summary saying they were mirrored; a failure is recorded locally."""
        previous = self.status["last_epoch_mirrored"]
        try:
            self._prepare_target()
            copy_small_files(self.local.path, self.target)
            self.status["last_epoch_mirrored"] = epoch
            run_summary.write(self.local.path, summary)
            copy_atomically(self.local.summary_path, self.target / rundir.SUMMARY_FILE)
        except OSError as error:
            self.status["last_epoch_mirrored"] = previous
            self._record_error(error, "the run's files")
            run_summary.write(self.local.path, summary)

    def _start_checkpoint_copy(self, epochs_done: int | None, background: bool = True) -> None:
        source = self.local.checkpoint_path
        try:
            stamp = (source.stat().st_mtime_ns, source.stat().st_size)
        except FileNotFoundError:
            return
        if stamp == self.copied_checkpoint:
            return
        self.last_checkpoint_copy = time.monotonic()

        def copy() -> None:
            try:
                self._prepare_target()
                copy_atomically(source, self.target / rundir.CHECKPOINT_FILE)
                self.thread_result = (stamp, epochs_done)
            except OSError as error:
                self.thread_result = error

        if background:
            self.thread = threading.Thread(target=copy, name="optbench-mirror", daemon=True)
            self.thread.start()
        else:
            copy()

    def _collect_checkpoint_copy(self) -> None:
        """Take in the result of a finished checkpoint copy (the status is only changed from this thread)."""
        if self.thread is not None and self.thread.is_alive():
            return
        self.thread, result, self.thread_result = None, self.thread_result, None
        if result is None:
            return
        if isinstance(result, OSError):
            self.last_checkpoint_copy = -float("inf")  # retry at the next chance
            self._record_error(result, "the checkpoint")
        else:
            self.copied_checkpoint, self.status["checkpoint_epoch"] = result

    def _record_error(self, error: OSError, what: str) -> None:
        self.status["errors"] += 1
        self.status["last_error"] = f"{what}: {type(error).__name__}: {error}"
        kind = (type(error).__name__, getattr(error, "errno", None))
        if kind not in self.kinds_logged:
            self.kinds_logged.add(kind)
            log.warning(
                "mirror: could not copy %s to %s (%s: %s); training goes on locally, retrying at the next chance",
                what,
                self.target,
                type(error).__name__,
                error,
            )


def from_config(cfg, local: RunDir) -> Mirror | None:
    """The run's mirror, or None when paths.mirror_dir is null."""
    root = cfg.paths.get("mirror_dir")
    if not root:
        return None
    target = mirror_path(root, local.path, cfg.paths.results_dir)
    return Mirror(local, Path(root), target, float(cfg.train.mirror_every_s))


# ---------------------------------------------------------------- restore


def _epochs_done(directory: RunDir, resumable_only: bool = False) -> int:
    """Epochs done by the run in `directory`; with `resumable_only`, 0 unless a checkpoint or a final
    status backs them (a mirror whose checkpoint copies all failed is not worth restoring)."""
    summary = run_summary.read(directory.path)
    if summary is None or (resumable_only and not (directory.checkpoint_path.exists() or summary.finished)):
        return 0
    return summary.epochs_done


def needs_restore(local: RunDir, mirrored: RunDir) -> bool:
    """The local directory holds no run, or fewer epochs than the mirror."""
    if run_record.read(local.path) is None and not local.holds_results():
        return True
    return _epochs_done(local) < _epochs_done(mirrored, resumable_only=True)


def open_root(mirror: Mirror) -> None:
    """Create the mirror folder if need be; one that cannot be reached (a dropped mount) is refused at the
    start, so a run never starts over locally and then overwrites the mirror's progress."""
    try:
        mirror.root.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ConfigError(
            f"paths.mirror_dir={mirror.root} cannot be reached ({type(error).__name__}: {error}): "
            "mount it again, or drop paths.mirror_dir to train without a mirror"
        ) from None


def restore(mirror: Mirror, wanted: dict) -> bool:
    """Copy the mirror back into the local directory when it is ahead; True when it did.

    A mirror holding another experiment is refused (ConfigError, nothing copied). A local directory holding
    another experiment is left alone: the local identity check refuses it next."""
    mirrored = RunDir(mirror.target)
    record = run_record.read(mirrored.path)
    if record is None:
        return False
    changed = identity.identity_differences(record.identity, wanted)
    if changed:
        raise ConfigError(
            f"mirror {mirror.target} holds another experiment ({'; '.join(changed[:3])}): choose "
            "another paths.mirror_dir, or train.rerun=true to replace it"
        )
    local_record = run_record.read(mirror.local.path)
    if local_record is not None and identity.identity_differences(local_record.identity, wanted):
        return False
    if not needs_restore(mirror.local, mirrored):
        return False
    mirror.local.path.mkdir(parents=True, exist_ok=True)
    copy_small_files(mirrored.path, mirror.local.path)
    for name in (rundir.CHECKPOINT_FILE, rundir.SUMMARY_FILE):  # the summary last: a torn restore resumes
        if (mirrored.path / name).exists():
            copy_atomically(mirrored.path / name, mirror.local.path / name)
        else:
            (mirror.local.path / name).unlink(missing_ok=True)
    log.info(
        "restored %s from the mirror %s (%d epoch(s) done there)",
        mirror.local.path,
        mirror.target,
        _epochs_done(mirrored),
    )
    return True
