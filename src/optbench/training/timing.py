"""What device timing trains: the run's model and training step, handed down to device/.

device/fastest.py (device=fastest, the study estimate) and device/measured.py (device_policy.mode=measured)
time a few training steps, but the device layer imports nothing from the training wing: the caller
passes a `fastest.TimedModel` built here, which carries `build_model` and `train_step` with the shape
they are timed at. `timed_model(...)` is all a caller needs.
"""

from functools import partial

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
    """The model a run of this shape trains, with the step it trains by, ready for device timing."""
    return TimedModel(
        name,
        width,
        num_classes,
        batch_size,
        build=partial(build_model, name, num_classes, width),
        train_step=train_step,
        channels=channels,
        image_size=image_size,
    )
