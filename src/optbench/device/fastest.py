"""`device=fastest`: time a few training steps on every available device and pick the fastest.

Apple's MPS can be slower than the CPU for small models, and a laptop's answer differs from a
workstation's, so it is measured rather than assumed: each candidate device trains the configured
model (its width, class count and batch size, under that device's default policy) for a few steps
on random data. The answer is cached per machine in `$OPTBENCH_CACHE_DIR` (default
~/.cache/optbench) under a key naming the host, torch version, devices and model shape; delete the
file or pass `refresh=True` (`src/device_benchmark.py --refresh`) to measure again.
`time_training` and the cache helpers also serve device_policy.mode=measured (device/measured.py).
"""

import dataclasses
import json
import logging
import os
import platform
import time
from pathlib import Path

import torch

from optbench.device.policy import DevicePolicy, decide_policy, facts_of, mps_available, synchronise
from optbench.rundir import write_bytes_atomically
from optbench.training.models import build_model
from optbench.training.steps import train_step

log = logging.getLogger(__name__)
CACHE_FILE = "fastest-device.json"
WARMUP_STEPS = 2   # first steps pay for allocation and kernel selection; not timed
TIMED_STEPS = 5    # enough to rank devices that differ by more than a few percent


def cache_path(name: str = CACHE_FILE) -> Path:
    return Path(os.environ.get("OPTBENCH_CACHE_DIR", Path.home() / ".cache" / "optbench")) / name


def available_devices() -> list[torch.device]:
    devices = [torch.device("cpu")]
    devices += [torch.device(f"cuda:{index}") for index in range(torch.cuda.device_count())]
    if mps_available():
        devices.append(torch.device("mps"))
    return devices


def images_per_second(device: torch.device, model_name: str, width: int, num_classes: int, batch_size: int,
                      steps: int = TIMED_STEPS) -> float:
    """Training throughput of `steps` optimizer steps after a warm-up, under the device's default policy,
    eager: compiling (the CPU policy's default from width 64) would cost half a minute per shape here."""
    policy = dataclasses.replace(decide_policy(facts_of(device), model_width=width), compile=False)
    return time_training(device, policy, model_name, width, num_classes, batch_size, steps)[1]


def time_training(device: torch.device, policy: DevicePolicy, model_name: str, width: int, num_classes: int,
                  batch_size: int, steps: int = TIMED_STEPS) -> tuple[float, float]:
    """(seconds of the warm-up steps, images/s of `steps` steps after them) under `policy`, on random data.
    The warm-up pays allocation, kernel selection and, with policy.compile, compiling."""
    generator = torch.Generator().manual_seed(0)
    images = torch.randn(batch_size, 3, 32, 32, generator=generator).to(device)
    labels = torch.randint(0, num_classes, (batch_size,), generator=generator).to(device)
    model = build_model(model_name, num_classes, width).to(device, memory_format=policy.memory_format)
    step_model = torch.compile(model) if policy.compile else model
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    scaler = policy.grad_scaler_for_run()
    started = time.perf_counter()
    for step in range(WARMUP_STEPS + steps):
        if step == WARMUP_STEPS:
            synchronise(device)
            warmup_seconds, started = time.perf_counter() - started, time.perf_counter()
        loss_sum, _ = train_step(step_model, images, labels, optimizer, policy, scaler)
    loss_sum.item()  # waits for the device
    return warmup_seconds, steps * batch_size / (time.perf_counter() - started)




def cache_key(devices: list[torch.device], model_name: str, width: int, num_classes: int, batch_size: int) -> str:
    names = ",".join(str(device) for device in devices)
    return f"{platform.node()}|torch {torch.__version__}|{names}|{model_name} width {width} classes {num_classes} batch {batch_size}"


def fastest_device(model_name: str, width: int, num_classes: int, batch_size: int,
                   refresh: bool = False) -> tuple[torch.device, dict[str, float]]:
    """The fastest available device and the images/s measured for each (cached per machine and model shape)."""
    devices = available_devices()
    if len(devices) == 1:
        return devices[0], {}
    key = cache_key(devices, model_name, width, num_classes, batch_size)
    cache = read_cache()
    if key in cache and not refresh:
        measured = cache[key]
        log.info("device=fastest: cached measurement %s (in %s)", _format(measured), cache_path())
    else:
        measured = {str(device): images_per_second(device, model_name, width, num_classes, batch_size) for device in devices}
        cache[key] = measured
        write_cache(cache)
        log.info("device=fastest: measured %s", _format(measured))
    return torch.device(max(measured, key=measured.get)), measured


def _format(measured: dict[str, float]) -> str:
    return ", ".join(f"{name} {speed:.0f} images/s" for name, speed in measured.items())


def read_cache(name: str = CACHE_FILE) -> dict:
    try:
        return json.loads(cache_path(name).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return {}  # a missing or damaged cache only costs a new measurement


def write_cache(cache: dict, name: str = CACHE_FILE) -> None:
    path = cache_path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = (json.dumps(cache, indent=2, sort_keys=True) + "\n").encode()
    write_bytes_atomically(path, payload)
