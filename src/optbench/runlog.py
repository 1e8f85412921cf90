"""The run directory on disk: metrics.jsonl, summary.json and checkpoint.pt.

`RunLog(run_dir)` is the only writer. summary.json and checkpoint.pt are replaced atomically
(temporary file, fsync, rename), so a crash at any moment leaves either the old or the new file,
never a torn one; metrics.jsonl gets one flushed line per epoch. Hydra writes `.hydra/` itself.
"""

import json
import os
from pathlib import Path

import torch

SUMMARY_FILE = "summary.json"
METRICS_FILE = "metrics.jsonl"
CHECKPOINT_FILE = "checkpoint.pt"


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

    def read_summary(self) -> dict | None:
        if not self.summary_path.exists():
            return None
        return json.loads(self.summary_path.read_text())

    def begin(self) -> None:
        """Start a fresh run: drop metrics and checkpoint of an earlier attempt in this directory."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.metrics_path.write_text("")
        self.checkpoint_path.unlink(missing_ok=True)

    def append_metrics(self, record: dict) -> None:
        with open(self.metrics_path, "a") as handle:
            handle.write(json.dumps(record) + "\n")
            handle.flush()

    def write_summary(self, summary: dict) -> None:
        payload = (json.dumps(summary, indent=2, sort_keys=True) + "\n").encode()
        write_atomically(self.summary_path, lambda handle: handle.write(payload))

    def save_checkpoint(self, state: dict) -> None:
        write_atomically(self.checkpoint_path, lambda handle: torch.save(state, handle))
