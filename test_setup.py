"""Is this machine ready? Versions, devices, and a quick training test of every registered optimizer.

    python test_setup.py [--device auto|fastest|cpu|cuda|cuda:N|mps]

Each check prints one line with a check mark or a cross; the exit status is 0 only when all pass.
It prints the versions, the devices present, the device and policy (AMP, memory format, ...)
a run would use, and which datasets are ready to use here (`--image-folder DIR` adds a folder of images). The training
test gives every optimizer a few steps on one fixed batch with a
small ResNet-18 under that policy and checks the losses are finite and falling; then each other workload
(workload=mnist1d, char_lm) trains a few AdamW steps of its model on a batch of its real data. Takes well
under a minute on a 2-core CPU.
"""

import dataclasses
import importlib
import math
import os
import platform
import sys
import time
from pathlib import Path

import torch
import torchvision
from omegaconf import OmegaConf

import optbench  # noqa: F401  (first: sets PYTORCH_ENABLE_MPS_FALLBACK before torch loads)
from optbench.command_line import OneLineParser
from optbench.data import text
from optbench.data.fingerprint import list_image_folder
from optbench.data.splits import load_splits
from optbench.device.fastest import fastest_device
from optbench.device.policy import DevicePolicy, decide_policy, facts_of, mps_available, mps_built, resolve_device
from optbench.errors import ConfigError
from optbench.registry import optimizers, workloads
from optbench.registry.choices import OPTIMIZERS
from optbench.training.models import build_model
from optbench.training.optim import build_optimizer, set_mode
from optbench.training.steps import train_step
from optbench.training.timing import timed_model

CONF_DIR = Path(__file__).resolve().parent / "conf"
# the optimizers' libraries (their import names) and the rest a run imports
LIBRARIES = (*(library.replace("-", "_") for library in optimizers.libraries()), "hydra", "torchvision")
STEPS = 8  # optimizer steps on the fixed batch; enough for every default LR to lower the loss
BATCH = 32  # images in the fixed batch
WIDTH = 8  # ResNet-18 width for the test (64 = standard); small so a CPU finishes in seconds
WORKLOAD_WIDTH = {"cnn1d": 25, "gpt": 32}  # the MNIST-1D CNN as the paper has it; a narrow GPT, seconds on a CPU
CONTEXT = 64  # characters per window of the language model's batch (its default context)
SHARED_DATA = Path(__file__).resolve().parent.parent / "shared" / "data"  # the copies beside a checkout (README "Data")


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


def data_lines(data_dir: Path, image_roots: list[str]) -> None:
    """Which datasets are ready to use here, without reading them (no md5 check, no decoding): information,
    not a check, since a machine without network may use an image folder only."""
    print(f"  data (paths.data_dir={data_dir}):")
    for name, dataset_class in (("cifar10", torchvision.datasets.CIFAR10), ("cifar100", torchvision.datasets.CIFAR100)):
        folder = data_dir / dataset_class.base_folder
        files = [entry for entry, _ in dataset_class.train_list + dataset_class.test_list]
        ready = all((folder / entry).is_file() for entry in files)
        print(
            f"    {name}: "
            + (
                "ready"
                if ready
                else f"not in {folder}: downloaded on first use (needs the network); "
                "offline, use a folder of images (dataset=imagefolder dataset.root=DIR)"
            )
        )
    for root in image_roots:
        try:
            classes, train, test = list_image_folder(root)
            print(
                f"    imagefolder {root}: ready ({len(classes)} classes, {len(train)} training and {len(test)} test images)"  # noqa: E501
            )
        except ConfigError as error:
            print(f"    imagefolder {root}: not usable: {error}")
    print("    synthetic: always ready (generated)")


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


def workload_batch(name: str, data_dir: Path) -> tuple[torch.Tensor, torch.Tensor, str]:
    """(inputs, labels, where from) of one training batch of a new workload's real data where it is here:
    MNIST-1D is generated; Tiny Shakespeare is read from paths.data_dir or the shared copy beside this checkout
    (random characters otherwise, said so)."""
    if name == "mnist1d":
        splits = load_splits(name="mnist1d", data_dir=str(data_dir), val_size=400)
        return splits.train.images[:BATCH], splits.train.labels[:BATCH], "generated"
    for path in (text.corpus_path(data_dir, "tinyshakespeare"), SHARED_DATA / "tinyshakespeare" / "input.txt"):
        if path.is_file():
            tokens, _ = text.load_corpus(data_dir, "tinyshakespeare", str(path), download=False)
            inputs, targets = text.windows(tokens[:100_000], CONTEXT, BATCH)
            return inputs, targets, str(path)
    generator = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, 65, (BATCH * CONTEXT + 1,), generator=generator)
    inputs, targets = text.windows(tokens, CONTEXT, BATCH)
    return inputs, targets, "random characters (corpus not found: the first run downloads it)"


def workload_losses(name: str, device: torch.device, data_dir: Path) -> tuple[list[float], str]:
    """A few AdamW steps of the workload's default model on one batch of its data (NCHW, no compile)."""
    workload = workloads.describe(name)
    inputs, labels, source = workload_batch(name, data_dir)
    torch.manual_seed(0)
    model_name = workload.models[0]
    model_options = {"context": CONTEXT} if model_name == "gpt" else {}
    classes = 65 if model_name == "gpt" else 10
    model = build_model(model_name, classes, WORKLOAD_WIDTH[model_name], **model_options).to(device)
    policy = dataclasses.replace(decide_policy(facts_of(device), model_width=WIDTH), channels_last=False)
    options = OmegaConf.to_container(OmegaConf.load(CONF_DIR / "optimizer" / "adamw.yaml"))
    optimizer = build_optimizer(model, total_steps=STEPS, **options)
    scaler = policy.grad_scaler_for_run()
    inputs, labels = inputs.to(device), labels.to(device)
    examples = labels.numel()
    steps = [train_step(model, inputs, labels, optimizer, policy, scaler)[0].item() / examples for _ in range(STEPS)]
    return steps, source


def main(argv: list[str]) -> int:
    parser = OneLineParser(prog="python test_setup.py", description="Check this machine for the optimizer harness.")
    parser.add_argument("--device", default="auto", help="auto, fastest, cpu, cuda, cuda:N or mps")
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(os.environ.get("OPTBENCH_DATA_DIR", "data")),
        help="where datasets are downloaded and cached (paths.data_dir; default $OPTBENCH_DATA_DIR or data)",
    )
    parser.add_argument(
        "--image-folder",
        action="append",
        default=[],
        metavar="DIR",
        help="also say whether this folder of images (dataset.root) is ready; repeatable",
    )
    try:
        args = parser.parse_args(argv)
        device = resolve_device(
            args.device, fastest=lambda: fastest_device(timed_model("resnet18", WIDTH, 10, BATCH))[0]
        )
        policy = decide_policy(facts_of(device), model_width=WIDTH)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    results = [import_check()]
    environment_lines(device, policy)
    shared_copies = SHARED_DATA / "cifar10-jpeg"  # README "Data"
    data_lines(args.data_dir, args.image_folder or ([str(shared_copies)] if shared_copies.is_dir() else []))
    for name in OPTIMIZERS:
        started = time.perf_counter()
        try:
            losses = optimizer_losses(name, device, policy)
        except Exception as error:  # report every optimizer, even after one breaks  # noqa: BLE001
            results.append(report(False, f"{name}: {type(error).__name__}: {error}"))
            continue
        finite = all(map(math.isfinite, losses))
        falling = losses[-1] < losses[0]
        shown = " ".join(f"{value:.3f}" for value in losses)
        results.append(
            report(
                finite and falling,
                f"{name}: losses {shown} ({time.perf_counter() - started:.1f}s)"
                + ("" if finite else " NOT FINITE")
                + ("" if falling else " NOT FALLING"),
            )
        )
    for name in workloads.NAMES[1:]:  # the CIFAR ResNet-18 is the optimizers' check above
        started = time.perf_counter()
        try:
            losses, source = workload_losses(name, device, args.data_dir)
        except Exception as error:  # report every workload, even after one breaks  # noqa: BLE001
            results.append(report(False, f"workload={name}: {type(error).__name__}: {error}"))
            continue
        falling = all(map(math.isfinite, losses)) and losses[-1] < losses[0]
        shown = " ".join(f"{value:.3f}" for value in losses)
        took = time.perf_counter() - started
        results.append(
            report(
                falling,
                f"workload={name}: adamw losses {shown} on {source} ({took:.1f}s)"
                + ("" if falling else " NOT FALLING"),
            )
        )
    passed = all(results)
    print(f"{sum(results)} passed, {len(results) - sum(results)} failed")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
