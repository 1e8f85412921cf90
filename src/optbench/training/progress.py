"""The summary.json schema: the first summary of a run, its update after each epoch, divergence and failure.

A summary says how the run stands: `status` (running, completed, diverged, failed, interrupted),
`epochs_done`, `final` (the last epoch's metric record), `best` (the epoch with the best validation
accuracy, its test accuracy beside it), wall and training time, throughput, the device and its policy,
library versions, the git state, the data, the realised noise and the model. Pure functions of plain
dicts; the loop writes the result through RunDir.
"""

import math

from optbench.formats import run_summary
from optbench.training import provenance


def initial_summary(
    cfg, run_identity_hash: str, dataset: dict, noise: dict, model: dict, device: str, policy: dict, environment: dict
) -> dict:
    return {
        "format": run_summary.FORMAT,
        "status": run_summary.RUNNING,
        "run_id": run_identity_hash,
        "epochs_done": 0,
        "epochs_planned": cfg.epochs,
        "seed": cfg.seed,
        "optimizer": cfg.optimizer.name,
        "final": None,
        "best": None,
        "error": None,
        "dataset": dataset,
        "noise": noise,
        "model": model,
        "device": device,
        "device_policy": policy,
        "versions": provenance.library_versions(),
        "git": provenance.git_state(),
        "environment": environment,
        "wall_time_s": 0.0,
        "train_time_s": 0.0,
        "train_images": 0,
        "train_images_per_s": None,
    }


def update_summary(summary: dict, record: dict, wall_time_s: float) -> None:
    """After an epoch: progress, totals, and the best epoch by validation accuracy (the last one without
    a validation split)."""
    summary["epochs_done"] = record["epoch"]
    summary["final"] = record
    summary["wall_time_s"] = wall_time_s
    summary["train_time_s"] += record["train/time_s"]
    summary["train_images"] += record["train/images"]
    summary["train_images_per_s"] = summary["train_images"] / summary["train_time_s"]
    summary["best"] = _better(summary["best"], record, "val/acc", "last epoch (no validation split)")
    if "val/acc_clean" in record:  # label noise: the oracle choice on clean validation labels, beside it
        summary["best_clean_val"] = _better(summary.get("best_clean_val"), record, "val/acc_clean", None)


def best_so_far(summary: dict) -> dict:
    """Selection key -> the best value of the epochs done (val/acc; val/acc_clean under label noise)."""
    chosen = {"val/acc": summary.get("best"), "val/acc_clean": summary.get("best_clean_val")}
    return {key: record[key] for key, record in chosen.items() if record and key in record}


def _better(best: dict | None, record: dict, key: str, fallback: str | None) -> dict:
    selected_by = key if key in record else fallback
    if best is None or key not in record or record[key] > best[key]:
        return {"selected_by": selected_by, **record}
    return best


def divergence(record: dict, first_nonfinite_batch: int, factor: float, num_classes: int) -> dict | None:
    """Where and why a run diverged: a non-finite loss, or an epoch loss past `factor` x ln(classes) (the
    loss of a uniform guess); None when it did not."""
    loss, limit = record["train/loss"], factor * math.log(num_classes)
    if math.isfinite(loss) and loss <= limit:
        return None
    where = {
        "epoch": record["epoch"],
        "train/loss": loss,
        "reason": "non-finite training loss"
        if not math.isfinite(loss)
        else f"training loss above {factor} x ln({num_classes}) = {limit:.3g}",
    }
    if first_nonfinite_batch >= 0:
        where["batch"] = first_nonfinite_batch  # counted from 0 within the epoch
    return where


def failed(summary: dict | None, error: BaseException) -> dict:
    """The summary of a run that failed (before its first epoch, `summary` is None)."""
    failed_summary = {"epochs_done": 0, "final": None, "best": None, **(summary or {})}
    failed_summary.update(status=run_summary.FAILED, error=f"{type(error).__name__}: {error}")
    return failed_summary


def headline(summary: dict) -> str:
    """'test acc 0.6720 at the best-validation epoch 7 of 10' (or what there is to say)."""
    best = summary.get("best") or {}
    if "test/acc" not in best:
        return f"{summary.get('epochs_done', 0)} epoch(s) done, no test accuracy yet"
    chosen = "best-validation epoch" if best.get("selected_by") == "val/acc" else "last epoch (no validation split)"
    return f"test acc {best['test/acc']:.4f} at the {chosen} {best['epoch']} of {summary.get('epochs_planned', '?')}"
