"""What device timing trains: the run's model and training step, handed down to device/.

device/fastest.py (device=fastest, the study estimate) and device/measured.py (device_policy.mode=measured)
time a few training steps, but the device layer imports nothing from the training wing: the caller
passes a `fastest.TimedModel` built here, which carries `build_model` and `train_step` with the shape
they are timed at. `timed_model(...)` is all a caller needs.
"""

from functools import partial

import torch

from optbench.device.fastest import CIFAR_INPUT, TimedModel
from optbench.training.models import build_model
from optbench.training.steps import train_step


def timed_model(
    name: str,
    width: int,
    num_classes: int,
    batch_size: int,
    channels: int = CIFAR_INPUT[0],
    image_size: int = CIFAR_INPUT[1],
) -> TimedModel:
    """The model a run of this shape trains, with the step it trains by, ready for device timing. A model of
    sequences takes (batch, channels, image_size) points; the GPT (batch, image_size) tokens, image_size being
    its context."""
    return TimedModel(
        name,
        width,
        num_classes,
        batch_size,
        build=partial(build_model, name, num_classes, width, **({"context": image_size} if name == "gpt" else {})),
        train_step=train_step,
        channels=channels,
        image_size=image_size,
        make_batch=_batch_maker(name, num_classes, batch_size, channels, image_size),
    )


def _batch_maker(name: str, num_classes: int, batch_size: int, channels: int, length: int):
    """Random inputs of a model that is not fed images; None for an image model (device/ draws those itself)."""
    if name in ("cnn1d", "mlp1d"):
        return lambda generator: (
            torch.randn(batch_size, channels, length, generator=generator),
            torch.randint(0, num_classes, (batch_size,), generator=generator),
        )
    if name == "gpt":
        return lambda generator: (
            torch.randint(0, num_classes, (batch_size, length), generator=generator),
            torch.randint(0, num_classes, (batch_size, length), generator=generator),
        )
    return None
