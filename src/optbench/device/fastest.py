"""`device=fastest`: time a few training steps on every available device and pick the fastest.

Apple's MPS can be slower than the CPU for small models, and a laptop's answer differs from a
workstation's, so it is measured rather than assumed: each candidate device trains the configured
model (its width, class count and batch size, under that device's default policy) for a few steps
on random data. What trains comes from the caller as a `TimedModel` (the model builder, the training
step and the input shape; optbench.training.timing.timed_model makes the run's), so this layer imports
nothing from training/. The answer is cached per machine in `$OPTBENCH_CACHE_DIR` (default
~/.cache/optbench) under a key naming the host, torch version, devices and model shape; delete the
file or pass `refresh=True` (`src/device_benchmark.py --refresh`) to measure again.
`time_training` and the cache helpers also serve device_policy.mode=measured (device/measured.py).
"""

import dataclasses
import logging
import os
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from optbench.device.policy import DevicePolicy, decide_policy, facts_of, mps_available, synchronise
from optbench.formats import rate_cache

log = logging.getLogger(__name__)
CACHE_FILE = "fastest-device.json"
WARMUP_STEPS = 2  # first steps pay for allocation and kernel selection; not timed
TIMED_STEPS = 5  # enough to rank devices that differ by more than a few percent
CIFAR_INPUT = (3, 32)  # (channels, image size) of the models timed before inputs were named: their cache keys stay


@dataclass(frozen=True)
class TimedModel:
    """What the timing trains, handed down by the caller; the shape fields also key the cache entry."""

    name: str
    width: int
    num_classes: int
    batch_size: int
    build: Callable[[], torch.nn.Module]  # a fresh model on the CPU, as a run builds it
    train_step: Callable  # (model, images, labels, optimizer, policy, scaler) -> (loss sum, correct)
    channels: int = 3
    image_size: int = 32  # square images, image_size x image_size pixels
    # A model that is not fed images (a sequence, a text's windows): (generator) -> (inputs, labels) on the CPU
    make_batch: Callable[[torch.Generator], tuple[torch.Tensor, torch.Tensor]] | None = None

    def describe(self) -> str:
        text = f"{self.name} width {self.width} classes {self.num_classes} batch {self.batch_size}"
        if (self.channels, self.image_size) != CIFAR_INPUT:
            text += f" input {self.channels}x{self.image_size}x{self.image_size}"
        return text


def cache_path(name: str = CACHE_FILE) -> Path:
    return Path(os.environ.get("OPTBENCH_CACHE_DIR", Path.home() / ".cache" / "optbench")) / name


def available_devices() -> list[torch.device]:
    devices = [torch.device("cpu")]
    devices += [torch.device(f"cuda:{index}") for index in range(torch.cuda.device_count())]
    if mps_available():
        devices.append(torch.device("mps"))
    return devices


def images_per_second(device: torch.device, model: TimedModel, steps: int = TIMED_STEPS) -> float:
    """Training throughput of `steps` optimizer steps after a warm-up, under the device's default policy,
    eager: compiling (the CPU policy's default from width 64) would cost half a minute per shape here."""
    policy = dataclasses.replace(decide_policy(facts_of(device), model_width=model.width), compile=False)
    if model.make_batch is not None:  # sequences or tokens: NHWC is an image layout
        policy = dataclasses.replace(policy, channels_last=False)
    return time_training(device, policy, model, steps)[1]


def time_training(
    device: torch.device, policy: DevicePolicy, model: TimedModel, steps: int = TIMED_STEPS
) -> tuple[float, float]:
    """(seconds of the warm-up steps, images/s of `steps` steps after them) under `policy`, on random data.
    The warm-up pays allocation, kernel selection and, with policy.compile, compiling."""
    generator = torch.Generator().manual_seed(0)
    if model.make_batch is not None:
        images, labels = (tensor.to(device) for tensor in model.make_batch(generator))
    else:
        shape = (model.batch_size, model.channels, model.image_size, model.image_size)
        images = torch.randn(shape, generator=generator).to(device)
        labels = torch.randint(0, model.num_classes, (model.batch_size,), generator=generator).to(device)
    # Module.to takes a device and a memory format together, an overload torch's stubs do not list
    network = model.build().to(device, memory_format=policy.memory_format)  # type: ignore[call-overload]
    step_network = torch.compile(network) if policy.compile else network
    optimizer = torch.optim.SGD(network.parameters(), lr=0.01, momentum=0.9)
    scaler = policy.grad_scaler_for_run()
    started = time.perf_counter()
    for step in range(WARMUP_STEPS + steps):
        if step == WARMUP_STEPS:
            synchronise(device)
            warmup_seconds, started = time.perf_counter() - started, time.perf_counter()
        loss_sum, _ = model.train_step(step_network, images, labels, optimizer, policy, scaler)
    loss_sum.item()  # waits for the device
    return warmup_seconds, steps * model.batch_size / (time.perf_counter() - started)


def cache_key(devices: list[torch.device], model: TimedModel) -> str:
    names = ",".join(str(device) for device in devices)
    return f"{platform.node()}|torch {torch.__version__}|{names}|{model.describe()}"


def fastest_device(model: TimedModel, refresh: bool = False) -> tuple[torch.device, dict[str, float]]:
    """The fastest available device and the images/s measured for each (cached per machine and model shape)."""
    devices = available_devices()
    if len(devices) == 1:
        return devices[0], {}
    key = cache_key(devices, model)
    cache = read_cache()
    if key in cache and not refresh:
        measured = cache[key]
        log.info("device=fastest: cached measurement %s (in %s)", _format(measured), cache_path())
    else:
        measured = {str(device): images_per_second(device, model) for device in devices}
        cache[key] = measured
        write_cache(cache)
        log.info("device=fastest: measured %s", _format(measured))
    return torch.device(max(measured, key=measured.get)), measured


def _format(measured: dict[str, float]) -> str:
    return ", ".join(f"{name} {speed:.0f} images/s" for name, speed in measured.items())


def read_cache(name: str = CACHE_FILE) -> dict:
    return rate_cache.read(cache_path(name))  # a missing or damaged cache only costs a new measurement


def write_cache(cache: dict, name: str = CACHE_FILE) -> None:
    rate_cache.write(cache_path(name), cache)
