"""What a checkpoint holds, and how a run is put back exactly where it stopped.

`checkpoint_state(...)` gathers model, optimizer (Lion's and Muon's state included), scheduler,
grad scaler, every RNG state, the completed epoch, the progress of an epoch stopped half-way, the
metric records so far and the summary, all as data `torch.load(weights_only=True)` accepts: loading
a checkpoint never runs pickled code. `restore(...)` puts the training objects and RNGs back;
`check_resumable(cfg, state)` refuses a checkpoint made with settings that change the numbers.
The batch pipeline needs no state: each epoch's batches are a pure function of (seed, epoch), and
a stopped epoch continues by skipping the batches already trained on.
"""

from omegaconf import DictConfig, OmegaConf

from optbench.engine import EpochProgress
from optbench.errors import ConfigError
from optbench.nested import flatten
from optbench.rng import capture_rng_states, restore_rng_states

FORMAT_VERSION = 1
# Settings a resumed run may change: they do not change the numbers (or only say where things go).
RESUME_FREE_KEYS = ("train.rerun", "train.progress_bar", "train.tensorboard", "train.checkpoint_every",
                    "train.divergence_factor",
                    "train.eval_batch_size", "paths", "device", "device_policy.num_workers",
                    "device_policy.pin_memory", "device_policy.persistent_workers", "dataset.root")


def numbers_config(cfg: DictConfig) -> dict:
    """The resolved config without the keys a resume may change, flattened to dotted keys."""
    flat = flatten(OmegaConf.to_container(cfg, resolve=True))
    return {key: value for key, value in flat.items()
            if not any(key == free or key.startswith(free + ".") for free in RESUME_FREE_KEYS)}


def checkpoint_state(cfg: DictConfig, model, optimizer, scheduler, scaler, epochs_done: int,
                     progress: EpochProgress | None, partial_train_seconds: float,
                     metrics: list[dict], summary: dict) -> dict:
    partial = None
    if progress is not None and progress.batches_done:
        partial = {"batches_done": progress.batches_done, "images": progress.images, "loss_sum": progress.loss_sum,
                   "correct": progress.correct, "first_nonfinite_batch": progress.first_nonfinite_batch,
                   "train_time_s": partial_train_seconds}
    return {"format": FORMAT_VERSION, "config": numbers_config(cfg), "epochs_done": epochs_done,
            "partial_epoch": partial, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(), "scaler": scaler.state_dict(), "rng": capture_rng_states(),
            "metrics": list(metrics), "summary": dict(summary)}


def check_resumable(cfg: DictConfig, state: dict, checkpoint_path) -> None:
    if state.get("format") != FORMAT_VERSION:
        raise ConfigError(f"{checkpoint_path} has checkpoint format {state.get('format')}, this code reads "
                          f"{FORMAT_VERSION}: train.rerun=true starts the run over")
    now, then = numbers_config(cfg), state["config"]
    changed = sorted(key for key in now.keys() | then.keys() if now.get(key) != then.get(key))
    if changed:
        shown = ", ".join(f"{key}: {then.get(key)!r} -> {now.get(key)!r}" for key in changed[:3])
        raise ConfigError(f"{checkpoint_path} was made with other settings ({shown}): run the original command "
                          "to resume it, or train.rerun=true to start this run over")


def restore(state: dict, model, optimizer, scheduler, scaler) -> EpochProgress | None:
    """Load the training state; returns the progress of the epoch that was stopped half-way, if any."""
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    scaler.load_state_dict(state["scaler"])
    restore_rng_states(state["rng"])
    partial = state["partial_epoch"]
    if partial is None:
        return None
    return EpochProgress(partial["batches_done"], partial["images"], partial["loss_sum"], partial["correct"],
                         partial["first_nonfinite_batch"])
