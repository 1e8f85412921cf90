"""Is this machine ready? Versions, devices, and a quick training test of every registered optimizer.

    python test_setup.py [--device auto|fastest|cpu|cuda|cuda:N|mps]

Each check prints one line with a check mark or a cross; the exit status is 0 only when all pass.
It prints the versions, the devices present, and the device and policy (AMP, memory format, ...)
a run would use. The training test gives every optimizer a few steps on one fixed batch with a
small ResNet-18 under that policy and checks the losses are finite and falling. Takes well under a
minute on a 2-core CPU.
"""

import argparse
import importlib
import math
import platform
import sys
import time
from pathlib import Path

import optbench  # noqa: F401  (first: sets PYTORCH_ENABLE_MPS_FALLBACK before torch loads)
import torch
import torchvision
from omegaconf import OmegaConf

from optbench.device.policy import DevicePolicy, decide_policy, facts_of, mps_available, mps_built, resolve_device
from optbench.training.steps import train_step
from optbench.errors import ConfigError
from optbench.device.fastest import fastest_device
from optbench.training.models import build_model
from optbench import optimizers
from optbench.choices import OPTIMIZERS
from optbench.training.optim import build_optimizer, set_mode

CONF_DIR = Path(__file__).resolve().parent / "conf"
# the optimizers' libraries (their import names) and the rest a run imports
LIBRARIES = (*(library.replace("-", "_") for library in optimizers.libraries()), "hydra", "torchvision")
STEPS = 8          # optimizer steps on the fixed batch; enough for every default LR to lower the loss
BATCH = 32         # images in the fixed batch
WIDTH = 8          # ResNet-18 width for the test (64 = standard); small so a CPU finishes in seconds


def import_check() -> bool:
    missing = []
    for name in LIBRARIES:
        try:
            importlib.import_module(name)
        except ImportError as error:
            missing.append(f"{name} ({error})")
    return report(not missing, "imports: " + (", ".join(LIBRARIES) if not missing else "MISSING " + ", ".join(missing)))


def report(ok: bool, text: str) -> bool:
    print(f"{'✓' if ok else '✗'} {text}")
    return ok


def environment_lines(device: torch.device, policy: DevicePolicy) -> None:
    print(f"  Python {platform.python_version()}, torch {torch.__version__}, torchvision {torchvision.__version__}")
    if torch.cuda.is_available():
        for index in range(torch.cuda.device_count()):
            properties = torch.cuda.get_device_properties(index)
            print(f"  CUDA {index}: {properties.name}, {properties.total_memory / 2**30:.1f} GiB")
    else:
        print("  CUDA: not available")
    print(f"  MPS: built {mps_built()}, available {mps_available()}")
    print(f"  CPU threads: {torch.get_num_threads()}")
    print(f"  device chosen: {device}; its policy:")
    for line in policy.log_lines():
        print(f"    {line}")


def optimizer_losses(name: str, device: torch.device, policy: DevicePolicy) -> list[float]:
    torch.manual_seed(0)
    images = torch.randn(BATCH, 3, 32, 32, device=device)
    labels = torch.arange(BATCH, device=device) % 10
    model = build_model("resnet18", 10, WIDTH).to(device, memory_format=policy.memory_format)
    options = OmegaConf.to_container(OmegaConf.load(CONF_DIR / "optimizer" / f"{name}.yaml"))
    optimizer = build_optimizer(model, total_steps=STEPS, **options)
    set_mode(optimizer, training=True)
    scaler = policy.grad_scaler_for_run()
    return [train_step(model, images, labels, optimizer, policy, scaler)[0].item() / BATCH for _ in range(STEPS)]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Check this machine for the optimizer harness.")
    parser.add_argument("--device", default="auto", help="auto, fastest, cpu, cuda, cuda:N or mps")
    args = parser.parse_args(argv)
    try:
        device = resolve_device(args.device, fastest=lambda: fastest_device("resnet18", WIDTH, 10, BATCH)[0])
        policy = decide_policy(facts_of(device), model_width=WIDTH)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    results = [import_check()]
    environment_lines(device, policy)
    for name in OPTIMIZERS:
        started = time.perf_counter()
        try:
            losses = optimizer_losses(name, device, policy)
        except Exception as error:  # report every optimizer, even after one breaks
            results.append(report(False, f"{name}: {type(error).__name__}: {error}"))
            continue
        finite = all(map(math.isfinite, losses))
        falling = losses[-1] < losses[0]
        shown = " ".join(f"{value:.3f}" for value in losses)
        results.append(report(finite and falling, f"{name}: losses {shown} ({time.perf_counter() - started:.1f}s)"
                              + ("" if finite else " NOT FINITE") + ("" if falling else " NOT FALLING")))
    passed = all(results)
    print(f"{sum(results)} passed, {len(results) - sum(results)} failed")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
