"""The run directory on disk: metrics.jsonl, summary.json, checkpoint.pt and a lock.

`RunLog(run_dir)` is the only writer. summary.json and checkpoint.pt are replaced atomically
(temporary file, fsync, rename), so a crash at any moment leaves either the old or the new file,
never a torn one; metrics.jsonl gets one flushed line per epoch (non-finite numbers written as null,
so the files are strict JSON), and on resume it is rewritten
(atomically) to the records the checkpoint holds. A damaged summary or checkpoint is a ConfigError
naming the file and the way out; nothing is overwritten on the way. `lock()` makes a second process
pointed at the same directory refuse: an flock on `.lock`, which the kernel drops when its holder
dies, so a killed run never leaves a stale lock. Hydra writes `.hydra/` itself.
"""

import contextlib
import fcntl
import json
import math
import os
import platform
from pathlib import Path

import torch

from optbench.errors import ConfigError, RunDirectoryBusy

SUMMARY_FILE = "summary.json"
METRICS_FILE = "metrics.jsonl"
CHECKPOINT_FILE = "checkpoint.pt"
LOCK_FILE = ".lock"


def strict_json(value):
    """NaN and infinities (a diverged run's loss) become null: the files stay valid JSON for any reader."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: strict_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json(item) for item in value]
    return value


def write_atomically(path: Path, write) -> None:
    """Call `write(file)` on a temporary sibling of `path`, fsync it, then rename it over `path`."""
    temporary = path.with_name(f".{path.name}.tmp{os.getpid()}")
    with open(temporary, "wb") as handle:
        write(handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


class RunLog:
    def __init__(self, run_dir: Path):
        self.run_dir = Path(run_dir)
        self.summary_path = self.run_dir / SUMMARY_FILE
        self.metrics_path = self.run_dir / METRICS_FILE
        self.checkpoint_path = self.run_dir / CHECKPOINT_FILE

    @contextlib.contextmanager
    def lock(self):
        self.run_dir.mkdir(parents=True, exist_ok=True)
        with open(self.run_dir / LOCK_FILE, "a+") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.seek(0)
                holder = handle.read().strip() or "another process"
                raise RunDirectoryBusy(f"{self.run_dir} is being trained by {holder}: wait for it to finish "
                                       "(or stop it), then run this command again to resume or skip it") from None
            handle.truncate(0)
            handle.write(f"pid {os.getpid()} on {platform.node()}\n")
            handle.flush()
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def read_summary(self) -> dict | None:
        if not self.summary_path.exists():
            return None
        try:
            return json.loads(self.summary_path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise ConfigError(f"{self.summary_path} is damaged ({error}): move it away to resume from the checkpoint, "
                              "or train.rerun=true to start this run over") from error

    def begin(self) -> None:
        """Start a fresh run: drop metrics and checkpoint of an earlier attempt in this directory."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.metrics_path.write_text("")
        self.checkpoint_path.unlink(missing_ok=True)

    def load_checkpoint(self, device: torch.device) -> dict | None:
        """The checkpoint (tensors on `device`), None when there is none; a damaged one is a ConfigError."""
        if not self.checkpoint_path.exists():
            return None
        try:
            return torch.load(self.checkpoint_path, map_location=device, weights_only=True)
        except Exception as error:  # truncated file, not a zip archive, unpickling refused, ...
            raise ConfigError(f"{self.checkpoint_path} cannot be read ({type(error).__name__}): delete it to "
                              "restart this run from epoch 1, or train.rerun=true to start over") from error

    def restore_metrics(self, records: list[dict]) -> None:
        """Rewrite metrics.jsonl to exactly the records a checkpoint holds (drops epochs after it)."""
        payload = "".join(json.dumps(strict_json(record), allow_nan=False) + "\n" for record in records).encode()
        write_atomically(self.metrics_path, lambda handle: handle.write(payload))

    def append_metrics(self, record: dict) -> None:
        with open(self.metrics_path, "a") as handle:
            handle.write(json.dumps(strict_json(record), allow_nan=False) + "\n")
            handle.flush()

    def write_summary(self, summary: dict) -> None:
        payload = (json.dumps(strict_json(summary), indent=2, sort_keys=True, allow_nan=False) + "\n").encode()
        write_atomically(self.summary_path, lambda handle: handle.write(payload))

    def save_checkpoint(self, state: dict) -> None:
        write_atomically(self.checkpoint_path, lambda handle: torch.save(state, handle))
