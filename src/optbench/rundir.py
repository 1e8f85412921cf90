"""The run-directory contract: file names, statuses, the record and its identity, one reader, atomic writes.

Standard library only: training writes through it, and the study runner, tuning and the aggregator
read through it without loading torch or pandas. A run directory holds:
    record.json     the harness's own record, written once when the run starts and never rewritten:
                    the full resolved config, the run's identity and its hash (`run_id`)
    summary.json    status, epochs done, final and best metrics, provenance (replaced atomically)
    metrics.jsonl   one JSON object per epoch
    checkpoint.pt   everything needed to resume exactly (training/checkpoint.py)
    predictions.npz the test predictions at the selected epoch (format: optbench/predictions.py)
    train.log       the console lines of every session that trained it
    .hydra/         Hydra's config, overrides and settings of the invocation that started the run
    .lock           an flock held by the process training it
**Identity** is everything that can change a run's numbers: the resolved config less
`NUMBERS_FREE_KEYS` (the one list of settings that cannot), plus a fingerprint of the data. Skipping
and resuming compare it with the record, so a directory only ever holds one experiment.
**One error policy**: a file that is missing reads as None; a file that exists but cannot be read
raises DamagedRunFile naming the file and the way out. Lenient readers (the aggregator, the study
planner) catch it and report the run as unreadable.
"""

import contextlib
import fcntl
import hashlib
import json
import math
import os
import platform
from pathlib import Path

from optbench.errors import ConfigError, DamagedRunFile, RunDirectoryBusy

RECORD_FILE = "record.json"
SUMMARY_FILE = "summary.json"
METRICS_FILE = "metrics.jsonl"
CHECKPOINT_FILE = "checkpoint.pt"
PREDICTIONS_FILE = "predictions.npz"   # numpy; its reader and writer are optbench/predictions.py
LOG_FILE = "train.log"
HYDRA_DIR = ".hydra"
LOCK_FILE = ".lock"
RESULT_FILES = (RECORD_FILE, SUMMARY_FILE, METRICS_FILE, CHECKPOINT_FILE)  # what makes a directory hold a run

RUNNING, COMPLETED, DIVERGED, FAILED, INTERRUPTED = "running", "completed", "diverged", "failed", "interrupted"
STATUSES = (COMPLETED, DIVERGED, FAILED, INTERRUPTED, RUNNING)
FINAL_STATUSES = (COMPLETED, DIVERGED)   # results: the same command skips them

# Settings that do not change a run's numbers: where files go, logging and trackers, checkpoint cadence, the device
# choice and its data-loading knobs (the device policy that does change numbers is recorded in summary.json),
# and dataset.root, which the data fingerprint covers. The directory name (conf/config.yaml exclude_keys),
# the resume check and the aggregator's grouping all use this list; tests/test_house.py ties them together.
NUMBERS_FREE_KEYS = (
    "paths", "device", "device_policy.num_workers", "device_policy.pin_memory", "device_policy.persistent_workers",
    "device_policy.keep_awake", "device_policy.threads", "dataset.root", "dataset.download",
    "noise.label_file",   # a local copy of a human label file: refused unless its md5 is the official one
    "train.rerun", "train.progress_bar", "train.tensorboard",
    "train.checkpoint_every", "train.divergence_factor", "train.eval_batch_size", "train.test_every",
    "train.mirror_every_s",
    "logger", "study",   # experiment trackers (conf/logger/) and the study tag they carry
)
RECORD_FORMAT = 1


def noise_level(name: str, rate=0.0, label_set=None) -> str:
    """The run directory's noise level: `symmetric-0.4`, `none-0.0`; human label noise names its label set
    (`human-worst`), since the set, not a rate, says which labels are wrong (conf/config.yaml hydra.run.dir)."""
    return f"{name}-{label_set}" if name == "human" else f"{name}-{rate}"


def is_run_dir(folder) -> bool:
    """A folder that holds a run: its record, its summary, or only Hydra's config (a run that never wrote either)."""
    folder = Path(folder)
    return any((folder / name).is_file() for name in (RECORD_FILE, SUMMARY_FILE)) or \
        (folder / HYDRA_DIR / "config.yaml").is_file()


def is_numbers_free(key: str) -> bool:
    """True for a dotted config key under NUMBERS_FREE_KEYS (`paths.data_dir` is under `paths`)."""
    return any(key == free or key.startswith(free + ".") for free in NUMBERS_FREE_KEYS)


def flatten(tree: dict, prefix: str = "") -> dict:
    """{'a': {'b': 1}, 'c': [1, 2]} -> {'a.b': 1, 'c': '[1, 2]'}: lists as JSON text, so values stay
    hashable (the aggregator groups on them) and compare by content."""
    flat = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten(value, f"{name}."))
        elif isinstance(value, (list, tuple)):
            flat[name] = json.dumps(value)
        else:
            flat[name] = value
    return flat


# ---------------------------------------------------------------- identity

def identity(resolved_config: dict, data_fingerprint: str) -> dict:
    """What a run's numbers depend on: the flattened config less NUMBERS_FREE_KEYS, and the data."""
    config = {key: value for key, value in flatten(resolved_config).items() if not is_numbers_free(key)}
    return {"config": dict(sorted(config.items())), "data": data_fingerprint}


def run_id(run_identity: dict) -> str:
    """A short stable hash of an identity: equal identities, equal ids."""
    canonical = json.dumps(run_identity, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def identity_differences(recorded: dict, wanted: dict) -> list[str]:
    """'key: recorded -> wanted' for each config key that differs, and 'the data differ' when they do."""
    then, now = recorded.get("config", {}), wanted.get("config", {})
    changed = [f"{key}: {then.get(key)!r} -> {now.get(key)!r}" for key in sorted(then.keys() | now.keys())
               if then.get(key) != now.get(key)]
    if recorded.get("data") != wanted.get("data"):
        changed.append("the data differ")
    return changed


def new_record(resolved_config: dict, run_identity: dict, created: str) -> dict:
    return {"format": RECORD_FORMAT, "run_id": run_id(run_identity), "created": created,
            "identity": run_identity, "config": resolved_config}


# ---------------------------------------------------------------- files

def strict_json(value):
    """NaN and infinities (a diverged run's loss) become null: the files stay valid JSON for any reader."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: strict_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json(item) for item in value]
    return value


def json_text(value, indent: int | None = 2) -> str:
    return json.dumps(strict_json(value), indent=indent, sort_keys=indent is not None, allow_nan=False)


def write_atomically(path: Path, write) -> None:
    """Call `write(binary_file)` on a temporary sibling of `path`, fsync it, then rename it over `path`:
    a crash at any moment leaves the old file or the new one, never a torn one."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        with open(temporary, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def write_bytes_atomically(path: Path, payload: bytes) -> None:
    write_atomically(path, lambda handle: handle.write(payload))


def read_json(path: Path, way_out: str) -> dict | None:
    """The JSON object in `path`; None when the file is missing; DamagedRunFile when it cannot be read."""
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as error:
        raise DamagedRunFile(f"{path} cannot be read ({type(error).__name__}): {way_out}") from error
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise DamagedRunFile(f"{path} is damaged ({error}): {way_out}") from error
    if not isinstance(value, dict):
        raise DamagedRunFile(f"{path} is not a JSON object: {way_out}")
    return value


def read_metrics(path: Path) -> tuple[list[dict], int]:
    """metrics.jsonl as one dict per epoch, and how many lines were not JSON objects (a torn last line)."""
    try:
        lines = Path(path).read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return [], 0
    records, bad = [], 0
    for line in filter(str.strip, lines):
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            bad += 1
            continue
        if isinstance(record, dict):
            records.append(record)
        else:
            bad += 1
    return records, bad


class RunDir:
    """One run directory: the paths of its files, their one reader, and writers for the text files."""

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

    def read_record(self) -> dict | None:
        return read_json(self.record_path, "move this run directory away, or train.rerun=true to start it over")

    def read_summary(self) -> dict | None:
        return read_json(self.summary_path, "move it away to resume from the checkpoint, or train.rerun=true "
                                            "to start this run over")

    def read_metrics(self) -> tuple[list[dict], int]:
        return read_metrics(self.metrics_path)

    def write_record(self, record: dict) -> None:
        """Written once: an existing record is never replaced (a fresh start removes it first)."""
        payload = (json_text(record) + "\n").encode()
        with open(self.record_path, "xb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())

    def write_summary(self, summary: dict) -> None:
        write_bytes_atomically(self.summary_path, (json_text(summary) + "\n").encode())

    def append_metrics(self, record: dict) -> None:
        with open(self.metrics_path, "a") as handle:
            handle.write(json_text(record, indent=None) + "\n")
            handle.flush()

    def replace_metrics(self, records: list[dict]) -> None:
        """metrics.jsonl as exactly these records (a resume drops the epochs after its checkpoint)."""
        payload = "".join(json_text(record, indent=None) + "\n" for record in records).encode()
        write_bytes_atomically(self.metrics_path, payload)

    def clear_results(self) -> None:
        """A fresh start (train.rerun=true): the earlier attempt's record, metrics, checkpoint and predictions go."""
        for name in (RECORD_FILE, METRICS_FILE, CHECKPOINT_FILE, PREDICTIONS_FILE):
            (self.path / name).unlink(missing_ok=True)

    @contextlib.contextmanager
    def lock(self):
        """An flock on .lock: a second process pointed here refuses; the kernel drops it when its holder dies."""
        self.path.mkdir(parents=True, exist_ok=True)
        with open(self.path / LOCK_FILE, "a+") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.seek(0)
                holder = handle.read().strip() or "another process"
                raise RunDirectoryBusy(f"{self.path} is being trained by {holder}: wait for it to finish "
                                       "(or stop it), then run this command again to resume or skip it") from None
            handle.truncate(0)
            handle.write(f"pid {os.getpid()} on {platform.node()}\n")
            handle.flush()
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)


def is_being_trained(run_path: Path) -> bool:
    """True while a process holds the run's lock (RunDir.lock). A read-only probe: nothing is created or
    written; the shared lock it takes for a moment only succeeds when no trainer holds the exclusive one."""
    try:
        handle = open(Path(run_path) / LOCK_FILE, "rb")
    except (FileNotFoundError, NotADirectoryError):
        return False
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


NAME_MAX_BYTES = 255   # the longest file name ext4, APFS, NTFS and most others take


def check_creatable(path: Path) -> None:
    """ConfigError (one line) when a run directory could not be made at `path`: a name longer than file
    names may be, or a file where a folder must be. Checked before anything is made, so a refused
    command leaves no half-made chain of empty folders."""
    path = Path(path)
    for part in path.parts:
        size = len(part.encode(errors="surrogateescape"))
        if size > NAME_MAX_BYTES:
            raise ConfigError(f"the run directory name '{part[:60]}...' is {size} bytes, longer than a file name may be "
                              f"({NAME_MAX_BYTES}): shorten the override values that name it, or set hydra.run.dir=DIR")
    for folder in (path, *path.parents):
        if folder.exists() or folder.is_symlink():
            if not folder.is_dir():
                raise ConfigError(f"{folder} is a file, not a folder: point paths.results_dir (or hydra.run.dir) at a "
                                  "folder, or move the file away")
            return


def data_level(results_dir: Path, wanted: str, fingerprint: str) -> str:
    """The dataset level to use under `results_dir` for `wanted` (`<dataset>-<folder>-<8 hex of the content
    fingerprint>`): `wanted` itself when it exists; else an existing level holding the same data, found by
    content: one named by another copy of the folder (the same fingerprint digits), or one named by the
    older scheme (a hash of the folder's path) whose runs record this fingerprint; else `wanted`. So runs
    are found from any checkout, whatever path the data has."""
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


def recorded_data(level: Path) -> str | None:
    """The data fingerprint recorded by the first run found below a dataset level (all its runs share it)."""
    for record_path in Path(level).glob(f"**/{RECORD_FILE}"):
        try:
            return (read_json(record_path, "") or {}).get("identity", {}).get("data")
        except DamagedRunFile:
            continue
    return None


def remove_empty_dirs(folder: Path, stop: Path) -> None:
    """Remove `folder` and its parents while they are empty, up to (not including) `stop`; never a non-empty one."""
    folder, stop = Path(folder).resolve(), Path(stop).resolve()
    while folder != stop and stop in folder.parents:
        try:
            folder.rmdir()   # fails, and ends the walk, at the first folder that is not empty
        except OSError:
            return
        folder = folder.parent
