"""The run-directory layout: the file names a run directory holds, how its path is named, its lock.

Standard library only: training, the study runner and the aggregator find a run's files through it
without loading torch or pandas. A run directory holds:
    record.json     the harness's own record, written once when the run starts (formats/run_record.py)
    summary.json    status, epochs done, final and best metrics, provenance (formats/run_summary.py)
    metrics.jsonl   one JSON object per epoch (formats/metrics_log.py)
    checkpoint.pt   everything needed to resume exactly (training/checkpoint.py)
    predictions.npz the test predictions at the selected epoch (formats/predictions.py)
    train.log       the console lines of every session that trained it
    .hydra/         Hydra's config, overrides and settings of the invocation that started the run
    .lock           an flock held by the process training it
What a run's identity is lives in optbench/identity.py; generic file helpers in optbench/fileio.py.
"""

from collections.abc import Callable
from pathlib import Path

from optbench.errors import ConfigError, RunDirectoryBusy
from optbench.fileio import exclusive_lock, is_locked

RECORD_FILE = "record.json"
SUMMARY_FILE = "summary.json"
METRICS_FILE = "metrics.jsonl"
CHECKPOINT_FILE = "checkpoint.pt"
PREDICTIONS_FILE = "predictions.npz"  # numpy; its reader and writer are optbench/formats/predictions.py
LOG_FILE = "train.log"
HYDRA_DIR = ".hydra"
LOCK_FILE = ".lock"
RESULT_FILES = (RECORD_FILE, SUMMARY_FILE, METRICS_FILE, CHECKPOINT_FILE)  # what makes a directory hold a run


def noise_level(name: str, rate=0.0, label_set=None) -> str:
    """The run directory's noise level: `symmetric-0.4`, `none-0.0`; human label noise names its label set
    (`human-worst`), since the set, not a rate, says which labels are wrong (conf/config.yaml hydra.run.dir)."""
    return f"{name}-{label_set}" if name == "human" else f"{name}-{rate}"


def is_run_dir(folder) -> bool:
    """A folder that holds a run: its record, its summary, or only Hydra's config (a run that never wrote either)."""
    folder = Path(folder)
    return (
        any((folder / name).is_file() for name in (RECORD_FILE, SUMMARY_FILE))
        or (folder / HYDRA_DIR / "config.yaml").is_file()
    )


class RunDir:
    """One run directory: the paths of its files, whether it holds results, its clearing and its lock.
    Reading and writing each file belongs to that file's format module (optbench/formats/)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.record_path = self.path / RECORD_FILE
        self.summary_path = self.path / SUMMARY_FILE
        self.metrics_path = self.path / METRICS_FILE
        self.checkpoint_path = self.path / CHECKPOINT_FILE
        self.predictions_path = self.path / PREDICTIONS_FILE
        self.log_path = self.path / LOG_FILE

    def holds_results(self) -> bool:
        return any((self.path / name).exists() for name in RESULT_FILES)

    def clear_results(self) -> None:
        """A fresh start (train.rerun=true): the earlier attempt's record, metrics, checkpoint and predictions go."""
        for name in (RECORD_FILE, METRICS_FILE, CHECKPOINT_FILE, PREDICTIONS_FILE):
            (self.path / name).unlink(missing_ok=True)

    def lock(self):
        """An flock on .lock: a second process pointed here refuses; the kernel drops it when its holder dies."""
        self.path.mkdir(parents=True, exist_ok=True)
        return exclusive_lock(
            self.path / LOCK_FILE,
            lambda holder: RunDirectoryBusy(
                f"{self.path} is being trained by {holder}: wait for it to finish (or stop it), then run this "
                "command again to resume or skip it"
            ),
        )


def is_being_trained(run_path: Path) -> bool:
    """True while a process holds the run's lock (RunDir.lock); a read-only probe that writes nothing."""
    return is_locked(Path(run_path) / LOCK_FILE)


NAME_MAX_BYTES = 255  # the longest file name ext4, APFS, NTFS and most others take


def check_creatable(path: Path) -> None:
    """ConfigError (one line) when a run directory could not be made at `path`: a name longer than file
    names may be, or a file where a folder must be. Checked before anything is made, so a refused
    command leaves no half-made chain of empty folders."""
    path = Path(path)
    for part in path.parts:
        size = len(part.encode(errors="surrogateescape"))
        if size > NAME_MAX_BYTES:
            raise ConfigError(
                f"the run directory name '{part[:60]}...' is {size} bytes, longer than a file name may be "
                f"({NAME_MAX_BYTES}): shorten the override values that name it, or set hydra.run.dir=DIR"
            )
    for folder in (path, *path.parents):
        if folder.exists() or folder.is_symlink():
            if not folder.is_dir():
                raise ConfigError(
                    f"{folder} is a file, not a folder: point paths.results_dir (or hydra.run.dir) at a "
                    "folder, or move the file away"
                )
            return


def data_level(results_dir: Path, wanted: str, fingerprint: str, recorded_data: Callable[[Path], str | None]) -> str:
    """The dataset level to use under `results_dir` for `wanted` (`<dataset>-<folder>-<8 hex of the content
    fingerprint>`): `wanted` itself when it exists; else an existing level holding the same data, found by
    content: one named by another copy of the folder (the same fingerprint digits), or one named by the
    older scheme (a hash of the folder's path) whose runs record this fingerprint (`recorded_data(level)`:
    formats/run_record.py reads it); else `wanted`. So runs are found from any checkout, whatever path the data
    has."""
    results_dir = Path(results_dir)
    if (results_dir / wanted).is_dir() or not results_dir.is_dir():
        return wanted
    dataset, suffix = wanted.split("-", 1)[0], wanted.rsplit("-", 1)[-1]
    others = sorted(path for path in results_dir.glob(f"{dataset}-*") if path.is_dir())
    same_digits = [path.name for path in others if path.name.rsplit("-", 1)[-1] == suffix]
    if same_digits:
        return same_digits[0]
    for level in others:
        if recorded_data(level) == fingerprint:
            return level.name
    return wanted


def nearest_existing(path: Path) -> Path:
    """`path` (resolved) when it exists, else its nearest existing parent: what a refused command that
    created the folders below it leaves in place."""
    path = Path(path).resolve()
    return next(folder for folder in (path, *path.parents) if folder.exists())


def remove_empty_dirs(folder: Path, stop: Path) -> None:
    """Remove `folder` and its parents while they are empty, up to (not including) `stop`; never a non-empty one."""
    folder, stop = Path(folder).resolve(), Path(stop).resolve()
    while folder != stop and stop in folder.parents:
        try:
            folder.rmdir()  # fails, and ends the walk, at the first folder that is not empty
        except OSError:
            return
        folder = folder.parent
