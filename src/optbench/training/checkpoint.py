"""What a checkpoint holds, and how a run is put back exactly where it stopped.

`checkpoint_state(run, state)` gathers model, optimizer (Lion's and Muon's state included), scheduler,
grad scaler, every RNG state, the completed epochs, the progress of an epoch stopped half-way, the
metric records so far, the summary and the selected epoch's test predictions, all as data
`torch.load(weights_only=True)` accepts: loading a checkpoint never runs pickled code. It also names the run it
belongs to (`run_id`, from record.json),
so a checkpoint copied in from another run is refused. `save`/`load` write and read checkpoint.pt
atomically; `restore(...)` puts the training objects and RNGs back. The batch pipeline needs no
state: each epoch's batches are a pure function of (seed, epoch), and a stopped epoch continues by
skipping the batches already trained on.
"""

from pathlib import Path

import torch

from optbench.errors import ConfigError
from optbench.fileio import write_atomically
from optbench.training.rng import capture_rng_states, restore_rng_states
from optbench.training.steps import EpochProgress

FORMAT_VERSION = 2  # 2: identity moved to record.json; the checkpoint names its run_id


def checkpoint_state(run, state) -> dict:
    """`run`: the assembled Run; `state`: the loop's LoopState at a step boundary."""
    progress, partial = state.progress, None
    if progress is not None and progress.batches_done:
        loss_sum, correct, first_nonfinite_batch = progress.totals()
        partial = {
            "batches_done": progress.batches_done,
            "images": progress.images,
            "loss_sum": loss_sum,
            "correct": correct,
            "first_nonfinite_batch": first_nonfinite_batch,
            "train_time_s": state.partial_seconds,
        }
    return {
        "format": FORMAT_VERSION,
        "run_id": run.run_id,
        "epochs_done": len(state.records),
        "partial_epoch": partial,
        "model": run.model.state_dict(),
        "optimizer": run.optimizer.state_dict(),
        "scheduler": run.scheduler.state_dict(),
        "scaler": run.scaler.state_dict(),
        "rng": capture_rng_states(),
        "metrics": list(state.records),
        "summary": dict(state.summary),
        "selected_predictions": _selected_predictions(state),
    }


def _selected_predictions(state) -> dict | None:
    if state.selected_predictions is None:
        return None
    epoch, predicted = state.selected_predictions
    return {"epoch": epoch, "predicted": predicted}


def save(path: Path, checkpoint: dict) -> None:
    write_atomically(path, lambda handle: torch.save(checkpoint, handle))


def load(path: Path, device: torch.device) -> dict | None:
    """The checkpoint (tensors on `device`), None when there is none; a damaged one is a ConfigError."""
    if not Path(path).exists():
        return None
    try:
        # TorchVersion (a str) is allowed: checkpoints of c49d9ce recorded environment.torch as one
        with torch.serialization.safe_globals([torch.torch_version.TorchVersion]):
            return torch.load(path, map_location=device, weights_only=True)
    except Exception as error:  # truncated file, not a zip archive, unpickling refused, ...
        raise ConfigError(
            f"{path} cannot be read ({type(error).__name__}): delete it to restart this run "
            "from epoch 1, or train.rerun=true to start over"
        ) from error


def check_resumable(checkpoint: dict, run_id: str, path: Path) -> None:
    if checkpoint.get("format") != FORMAT_VERSION:
        raise ConfigError(
            f"{path} has checkpoint format {checkpoint.get('format')}, this code reads "
            f"{FORMAT_VERSION}: train.rerun=true starts the run over"
        )
    if checkpoint.get("run_id") != run_id:
        raise ConfigError(
            f"{path} belongs to run {checkpoint.get('run_id')}, not to this directory's run {run_id}: "
            "delete it to restart this run from epoch 1, or train.rerun=true to start over"
        )


def restore(checkpoint: dict, model, optimizer, scheduler, scaler) -> EpochProgress | None:
    """Load the training state; returns the progress of the epoch that was stopped half-way, if any."""
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    scheduler.load_state_dict(checkpoint["scheduler"])
    scaler.load_state_dict(checkpoint["scaler"])
    restore_rng_states(checkpoint["rng"])
    partial = checkpoint["partial_epoch"]
    if partial is None:
        return None
    return EpochProgress(
        partial["batches_done"],
        partial["images"],
        partial["loss_sum"],
        partial["correct"],
        partial["first_nonfinite_batch"],
    )
