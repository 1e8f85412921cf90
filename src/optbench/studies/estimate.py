"""How long a study's remaining runs will take on this device, from a short measured run.

For every distinct (device, model, width, classes, batch size) among the runs still to do, train a
few steps on random data (`optbench.device.fastest.images_per_second`: 2 warm-up + 5 timed steps) and take
the images/s. One epoch then costs its training images / rate, plus its validation and test images
/ (3 x rate) (a forward pass is about a third of a training step), and a run costs its remaining
epochs of that. The estimate ignores data loading and start-up, so it is a lower bound on a busy
machine, and it is the serial time: a parallel launcher divides it by its concurrent jobs.
"""

from dataclasses import dataclass

from omegaconf import DictConfig

from optbench import datasets

FORWARD_SHARE = 1 / 3  # evaluation forward pass vs a full training step (forward + backward ~ 3 forwards)


@dataclass(frozen=True)
class Workload:
    """One run's remaining work."""

    shape: tuple            # (device, model name, width, classes, batch size): what the rate depends on
    train_images: int       # per epoch
    eval_images: int        # validation + test, per epoch
    epochs_left: int


def dataset_sizes(dataset: DictConfig) -> tuple[int, int, int] | None:
    """(training, validation, test) images of a run's dataset; None when unknown before loading (imagefolder)."""
    sizes = datasets.official_sizes(dataset)
    if sizes is None:
        return None
    full_train, test = sizes
    val = int(dataset.val_size)
    train = full_train - val
    if dataset.get("train_subset"):
        train = min(train, int(dataset.train_subset))
    return train, val, test


def workload(cfg: DictConfig, epochs_done: int) -> Workload | None:
    sizes = dataset_sizes(cfg.dataset)
    if sizes is None:
        return None
    train, val, test = sizes
    num_classes = datasets.num_classes(cfg.dataset) or 10   # known whenever the sizes are
    shape = (str(cfg.device), cfg.model.name, int(cfg.model.width), num_classes, int(cfg.batch_size))
    return Workload(shape, train, val + test, max(0, int(cfg.epochs) - epochs_done))


def measure_rates(shapes: set[tuple]) -> dict[tuple, tuple[str, float]]:
    """shape -> (device measured on, training images/s), measured once per shape."""
    from optbench.device.fastest import fastest_device, images_per_second  # torch: only when an estimate is asked for
    from optbench.device.policy import resolve_device
    from optbench.training.timing import timed_model

    rates = {}
    for shape in sorted(shapes):
        requested, model_name, width, num_classes, batch_size = shape
        model = timed_model(model_name, width, num_classes, batch_size)
        if requested == "fastest":
            device = fastest_device(model)[0]
        else:
            device = resolve_device(requested if requested.startswith(("cpu", "cuda", "mps")) else "auto")
        rates[shape] = (str(device), images_per_second(device, model))
    return rates


def seconds_left(work: Workload, rate: float) -> float:
    return work.epochs_left * (work.train_images / rate + work.eval_images * FORWARD_SHARE / rate)

