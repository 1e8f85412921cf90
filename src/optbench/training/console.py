"""What a run tells its user: one line per epoch, one for the device policy, one at the end; and train.log.

The console gets short lines; train.log (in the run directory, appended by every session that trains
the run) gets those and the details: the device policy's choices with their reasons, one per line.
`log_to_file(run_dir)` attaches train.log only while a run actually trains, so a skipped or refused
command leaves the directory byte for byte as it was. Experiment trackers (TensorBoard, MLflow...): trackers.py.
"""

import contextlib
import logging
from pathlib import Path

from optbench.rundir import LOG_FILE
from optbench.training.progress import headline

log = logging.getLogger("optbench")
details = logging.getLogger("optbench.details")  # train.log only: the console gets the one-line version
details.propagate = False
LOG_FORMAT = "[%(asctime)s] %(message)s"


@contextlib.contextmanager
def log_to_file(run_dir: Path):
    handler = logging.FileHandler(Path(run_dir) / LOG_FILE, mode="a")
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    root = logging.getLogger()
    root.addHandler(handler)
    details.addHandler(handler)
    previous_level = root.level
    if root.level > logging.INFO or root.level == logging.NOTSET:
        root.setLevel(logging.INFO)  # outside Hydra (tests, the notebook) the root logger may be at WARNING
    try:
        yield
    finally:
        root.removeHandler(handler)
        details.removeHandler(handler)
        root.setLevel(previous_level)
        handler.close()


def log_policy(device, requested: str, policy) -> None:
    """One line for the console: the device, AMP, memory format, compile, how they were chosen, caffeinate."""
    line = (
        f"device {device} (device={requested}): amp {policy.amp}, "
        f"{'channels_last' if policy.channels_last else 'NCHW'}, compile {'on' if policy.compile else 'off'}, "
        f"{policy.threads} thread{'s' if policy.threads != 1 else ''}"
    )
    if "runs at once" in policy.reasons.get("threads", ""):
        line += f" ({policy.reasons['threads']})"
    if policy.mode == "measured":
        line += f"; measured: {policy.measured_figures() or 'nothing uncertain to time'}"
    if policy.keep_awake:
        line += "; caffeinate -i held"
    log.info("%s; details in %s", line, LOG_FILE)


def log_policy_details(policy) -> None:
    """Every choice of the policy with its reason, for train.log only (called once the file is attached)."""
    for line in policy.log_lines():
        details.info("  policy %s", line)
    if policy.mode == "measured":
        details.info(
            "  policy measured (img/s per candidate): %s", policy.measured_figures() or "nothing uncertain to time"
        )


def log_optimizer_defaults(optimizer_name: str, defaults: dict) -> None:
    """One line per group option the optimizer's registry entry chose (config/hydra_glue.with_optimizer_defaults)."""
    for group, option in defaults.items():
        log.info("%s=%s: optimizer=%s's own default (no %s= given)", group, option, optimizer_name, group)


def epoch_line(record: dict, epochs: int) -> str:
    parts = [
        f"epoch {record['epoch']}/{epochs}",
        f"train loss {record['train/loss']:.4f} acc {record['train/acc']:.4f}",
    ]
    for split_name in ("val", "test"):
        if f"{split_name}/acc" in record:
            parts.append(f"{split_name} loss {record[f'{split_name}/loss']:.4f} acc {record[f'{split_name}/acc']:.4f}")
    if "val/acc_clean" in record:
        parts.append(f"clean val acc {record['val/acc_clean']:.4f}")
    if "noisy/fit_noisy_label" in record:
        parts.append(
            f"noisy fit noisy {record['noisy/fit_noisy_label']:.3f} clean {record['noisy/fit_clean_label']:.3f}"
        )
    parts.append(f"lr {record['lr']:.3g}")
    parts.append(f"{record['time_s']:.1f}s")
    return " | ".join(parts)


def log_epoch(record: dict, epochs: int) -> None:
    log.info(epoch_line(record, epochs))


def final_line(summary: dict, run_dir: Path, skipped: bool = False) -> str:
    """The one line every run ends with: its directory, its status and its headline number."""
    status = summary.get("status")
    what = f"skipped, already {status}" if skipped else status
    line = f"{what}: {run_dir}: {headline(summary)}"
    if summary.get("diverged_at"):
        line += f"; diverged at epoch {summary['diverged_at'].get('epoch')} ({summary['diverged_at'].get('reason')})"
    return line
