"""Training and data-pipeline throughput and peak memory: the harness beside a plain PyTorch loop.

Measures, side by side in one invocation on one machine, each part in its own subprocess (so every
peak-memory figure is that part's alone), on the same N real CIFAR-10 training images:
(a) training images/s of ResNet-18 (same width, batch size, device):
    harness     `optbench.training.run.train(cfg, run_dir)`, the config composed from conf/ exactly as a user
                runs it, under the device's default policy (fp32 on every CPU, the device's AMP on a GPU);
                per-epoch `train/images_per_s` from metrics.jsonl (validation and test passes run too,
                but are not in that figure);
    harness fp32  the same with device_policy.amp=off, so the policy's precision and the rest of the
                harness (on-device pipeline, channels_last) show separately;
    plain       a loop written the way kuangliu/pytorch-cifar does it: ImageFolder + PIL transforms
                (RandomCrop(32, 4), RandomHorizontalFlip, ToTensor, Normalize) + DataLoader(shuffle,
                num_workers=2), NCHW fp32, SGD, `loss.item()` every step;
    bare        forward/backward/step on one fixed, pre-made batch on the device: no data pipeline,
                the lower bound (with the harness's AMP / channels_last / cuDNN / TF32 choices, read
                from its summary.json); harness overhead = bare / harness - 1.
(b) data pipeline alone, images/s, batches only, no model: DevicePipeline, DataLoaderPipeline with 0 and
    2 workers, and the plain ImageFolder DataLoader.
(c) peak memory of each part: peak RSS of its process (VmHWM), the peak summed private memory (USS)
    of its DataLoader workers (what a worker adds, e.g. a copied dataset), and on CUDA
    torch.cuda.max_memory_allocated.
The first epoch of every part is a warm-up and is not counted; figures are mean ± std over `--repeats`.
Ratios printed: harness (default policy) / plain and harness fp32 / plain (goal at width 16: default >= 2.3x;
missed, 1.83x measured: docs/benchmarks.md), harness overhead over a bare step, and the data pipelines against
each other.

Run (from the repository root; the real measurement, about 12 min on a quiet 2-core CPU):
    .venv/bin/python benchmarks/throughput.py --images 5000 --repeats 3 --json benchmarks/results/cpu-2core.json
Smoke check (~2 min): --images 256 --repeats 1 --width 8. On a GPU: --device cuda --width 64 --images 20000.
Benchmark harness options: --harness-override device_policy.amp=bf16 (repeatable; any Hydra override).
"""

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
CIFAR_MEAN, CIFAR_STD = (0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616)  # as kuangliu/pytorch-cifar
PARTS = {  # name: (section, label)
    "harness": ("a", "harness: train(cfg), default policy"),
    "harness_fp32": ("a", "harness: train(cfg), device_policy.amp=off"),
    "plain": ("a", "plain PyTorch loop (kuangliu style)"),
    "bare": ("a", "bare train step (fixed batch)"),
    "device_pipeline": ("b", "DevicePipeline"),
    "dataloader_pipeline_0": ("b", "DataLoaderPipeline, 0 workers"),
    "dataloader_pipeline_2": ("b", "DataLoaderPipeline, 2 workers"),
    "imagefolder_loader": ("b", "plain ImageFolder DataLoader"),
}


def add_data_arguments(parser: argparse.ArgumentParser) -> None:
    """--data-root and --data-dir: the real images and the harness's decoded cache (bf16_parity.py too)."""
    parser.add_argument(
        "--data-root",
        type=Path,
        default=REPO.parent / "shared" / "data" / "cifar10-jpeg",
        help="ImageFolder with train/<class>/*.jpg and test/<class>/*.jpg",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(os.environ.get("OPTBENCH_DATA_DIR", REPO / "data")),
        help="the harness's paths.data_dir (holds the decoded-image cache)",
    )


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cpu", help="cpu, cuda, cuda:N or mps (default cpu)")
    parser.add_argument("--width", type=int, default=16, help="ResNet-18 base width (64 = standard; 16 on CPU)")
    parser.add_argument("--batch-size", type=int, default=128, help="images per step (128, as the SGD recipes)")
    parser.add_argument("--images", type=int, default=2048, help="training images per epoch (0 = the whole split)")
    parser.add_argument("--repeats", type=int, default=3, help="timed epochs per part, after one warm-up epoch")
    add_data_arguments(parser)
    parser.add_argument("--val-size", type=int, default=1000, help="harness dataset.val_size (validated every epoch)")
    parser.add_argument(
        "--plain-workers", type=int, default=2, help="DataLoader workers of the plain loop (kuangliu: 2)"
    )
    parser.add_argument(
        "--min-seconds", type=float, default=1.0, help="(b): each timed repeat runs whole epochs for at least this long"
    )
    parser.add_argument(
        "--threads", type=int, default=0, help="torch.set_num_threads in every part (0 = torch's default: one per core)"
    )
    parser.add_argument(
        "--harness-override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra Hydra override for the harness run, repeatable (e.g. device_policy.amp=bf16)",
    )
    parser.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated subset of {', '.join(PARTS)}")
    parser.add_argument("--json", type=Path, help="write all figures here")
    parser.add_argument("--part", choices=PARTS, help=argparse.SUPPRESS)  # internal: run one part
    parser.add_argument("--part-out", type=Path, help=argparse.SUPPRESS)  # internal: its result file
    parser.add_argument("--bare-settings", default="{}", help=argparse.SUPPRESS)  # internal: harness policy
    return parser.parse_args(argv)


# --- (a) training ---------------------------------------------------------------------------------


def harness_overrides(args) -> list[str]:
    subset = f"dataset.train_subset={args.images}" if args.images else "dataset.train_subset=null"
    return [
        "dataset=imagefolder",
        f"dataset.root={args.data_root}",
        subset,
        f"dataset.val_size={args.val_size}",
        f"model.width={args.width}",
        f"epochs={args.repeats + 1}",
        f"batch_size={args.batch_size}",
        f"device={args.device}",
        "train.progress_bar=false",
        f"paths.data_dir={args.data_dir}",
        *args.harness_override,
    ]


def run_harness(args, extra_overrides: tuple[str, ...] = ()) -> dict:
    """The harness's training images/s; `extra_overrides` come last, so they win over --harness-override."""
    from hydra import compose, initialize_config_dir

    from optbench.config.hydra_glue import register_resolvers
    from optbench.formats import metrics_log, run_summary
    from optbench.training.run import train

    register_resolvers()
    with tempfile.TemporaryDirectory() as results:
        with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
            overrides = [*harness_overrides(args), *extra_overrides, f"paths.results_dir={results}"]
            cfg = compose(config_name="config", overrides=overrides)
        train(cfg, Path(results) / "run")
        summary = run_summary.read(Path(results) / "run")
        epochs = metrics_log.read(Path(results) / "run")[0]
    return {
        "rates": [epoch[metrics_log.TRAIN_IMAGES_PER_S] for epoch in epochs[1:]],
        "status": summary.status,
        "device_policy": summary.device_policy,
        "summary_train_images_per_s": summary.train_images_per_s,
        "overrides": [*harness_overrides(args), *extra_overrides],
    }


def imagefolder_loader(args, num_workers: int):
    """The kuangliu/pytorch-cifar training loader, on a fixed random subset of `--images` images."""
    from torch.utils.data import DataLoader, Subset
    from torchvision import datasets, transforms

    transform = transforms.Compose(
        [
            transforms.RandomCrop(32, padding=4),
            transforms.RandomHorizontalFlip(),
            transforms.ToTensor(),
            transforms.Normalize(CIFAR_MEAN, CIFAR_STD),
        ]
    )
    folder = datasets.ImageFolder(str(args.data_root / "train"), transform=transform)
    count = args.images or len(folder)
    subset = Subset(folder, torch.randperm(len(folder), generator=torch.Generator().manual_seed(0))[:count].tolist())
    return DataLoader(subset, batch_size=args.batch_size, shuffle=True, num_workers=num_workers)


def run_plain(args) -> dict:
    from optbench.training.models import build_model

    device = torch.device(args.device)
    if device.type == "cuda":
        torch.backends.cudnn.benchmark = True  # as kuangliu/pytorch-cifar
    loader = imagefolder_loader(args, args.plain_workers)
    net = build_model("resnet18", 10, args.width).to(device)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    rates = [plain_epoch(net, loader, optimizer, device) for _ in range(args.repeats + 1)]
    return {"rates": rates[1:], "workers": args.plain_workers}


def plain_epoch(net, loader, optimizer, device) -> float:
    criterion = torch.nn.CrossEntropyLoss()
    net.train()
    started, train_loss, correct, total = time.perf_counter(), 0.0, 0, 0
    for inputs, targets in loader:
        inputs, targets = inputs.to(device), targets.to(device)
        optimizer.zero_grad()
        outputs = net(inputs)
        loss = criterion(outputs, targets)
        loss.backward()
        optimizer.step()
        train_loss += loss.item()
        correct += outputs.max(1)[1].eq(targets).sum().item()
        total += targets.size(0)
    return total / (time.perf_counter() - started)


def run_bare(args) -> dict:
    from optbench.training.models import build_model

    settings = json.loads(args.bare_settings)
    device = torch.device(args.device)
    if device.type == "cuda":
        torch.backends.cudnn.benchmark = bool(settings.get("cudnn_benchmark", True))
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = bool(settings.get("tf32", False))
    memory_format = torch.channels_last if settings.get("channels_last") else torch.contiguous_format
    amp = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(settings.get("amp"))
    model = build_model("resnet18", 10, args.width).to(device, memory_format=memory_format)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=5e-4)
    scaler = torch.amp.GradScaler(device.type, enabled=amp is torch.float16)
    images = torch.randn(args.batch_size, 3, 32, 32, device=device).contiguous(memory_format=memory_format)
    labels = torch.randint(0, 10, (args.batch_size,), device=device)
    steps = max(1, (args.images or 50_000 - args.val_size) // args.batch_size)  # one epoch's worth
    rates = [bare_epoch(model, images, labels, optimizer, scaler, amp, steps) for _ in range(args.repeats + 1)]
    return {"rates": rates[1:], "settings": settings, "steps_per_repeat": steps}


def bare_epoch(model, images, labels, optimizer, scaler, amp, steps: int) -> float:
    model.train()
    synchronize(images.device)
    started = time.perf_counter()
    for _ in range(steps):
        with torch.autocast(images.device.type, dtype=amp, enabled=amp is not None):
            loss = torch.nn.functional.cross_entropy(model(images), labels)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    synchronize(images.device)
    return steps * len(labels) / (time.perf_counter() - started)


# --- (b) data pipeline alone ----------------------------------------------------------------------


def training_split(args):
    from optbench.data.splits import load_splits

    splits = load_splits(
        "imagefolder",
        str(args.data_dir),
        val_size=args.val_size,
        train_subset=args.images or None,
        root=str(args.data_root),
    )
    return splits.train, splits.mean, splits.std


def run_device_pipeline(args) -> dict:
    from optbench.data.pipelines import DevicePipeline

    train, mean, std = training_split(args)
    device = torch.device(args.device)
    pipeline = DevicePipeline(train.images.to(device), train.labels.to(device), args.batch_size, 0, mean, std)
    return {"rates": time_epochs(pipeline.epoch, device, args)}


def run_dataloader_pipeline(args, num_workers: int) -> dict:
    from optbench.data.pipelines import DataLoaderPipeline

    train, mean, std = training_split(args)
    device = torch.device(args.device)
    pipeline = DataLoaderPipeline(
        train.images,
        train.labels,
        args.batch_size,
        0,
        mean,
        std,
        device,
        num_workers=num_workers,
        pin_memory=device.type == "cuda",
        persistent_workers=True,
    )
    return {"rates": time_epochs(pipeline.epoch, device, args), "workers": num_workers}


def run_imagefolder_loader(args) -> dict:
    loader = imagefolder_loader(args, args.plain_workers)
    device = torch.device(args.device)

    def epoch(_):
        return ((images.to(device), labels.to(device)) for images, labels in loader)

    return {"rates": time_epochs(epoch, device, args), "workers": args.plain_workers}


def time_epochs(epoch_batches, device: torch.device, args) -> list[float]:
    """images/s per repeat; a repeat runs whole epochs until `--min-seconds` have passed; epoch 1 warms up."""

    def one_epoch(number: int) -> int:
        count = sum(len(labels) for _, labels in epoch_batches(number))
        synchronize(device)
        return count

    one_epoch(1)
    rates, epoch = [], 2
    for _ in range(args.repeats):
        started, images = time.perf_counter(), 0
        while images == 0 or time.perf_counter() - started < args.min_seconds:
            images, epoch = images + one_epoch(epoch), epoch + 1
        rates.append(images / (time.perf_counter() - started))
    return rates


# --- one part per subprocess ------------------------------------------------------------------------

RUNNERS = {
    "harness": run_harness,
    "harness_fp32": lambda args: run_harness(args, ("device_policy.amp=off",)),
    "plain": run_plain,
    "bare": run_bare,
    "device_pipeline": run_device_pipeline,
    "dataloader_pipeline_0": lambda args: run_dataloader_pipeline(args, 0),
    "dataloader_pipeline_2": lambda args: run_dataloader_pipeline(args, 2),
    "imagefolder_loader": run_imagefolder_loader,
}


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def run_part(args) -> None:
    """Child process: run one part, add its memory figures, write them to --part-out."""
    import_rss = proc_status_mb("VmRSS")
    if args.threads:
        torch.set_num_threads(args.threads)
    with WorkerMemoryMonitor() as workers:
        result = RUNNERS[args.part](args)
    result.update(
        peak_rss_mb=proc_status_mb("VmHWM") or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        rss_after_import_mb=import_rss,
        **workers.peaks,
    )
    if torch.device(args.device).type == "cuda":
        result["cuda_max_allocated_mb"] = torch.cuda.max_memory_allocated() / 2**20
    args.part_out.write_text(json.dumps(result))


def proc_status_mb(field: str, pid: int | str = "self") -> float | None:
    """A memory line of /proc/PID/status in MB (VmHWM = peak RSS since exec); None off Linux."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


class WorkerMemoryMonitor:
    """Peak summed memory of this process's children (DataLoader workers), sampled twice a second.

    RSS would count the parent's pages a forked worker merely shares, and ru_maxrss of children
    even inherits the parent's peak through exec; so this reads /proc/PID/smaps_rollup: USS
    (private pages: what a worker really adds, e.g. a copied dataset) and PSS (shared pages split
    among their users). Linux only; elsewhere the figures stay None.
    """

    def __init__(self, interval_s: float = 0.5):
        import threading

        self.interval_s, self.peaks = interval_s, {"workers_peak_uss_mb": None, "workers_peak_pss_mb": None}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc_info):
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            totals = [smaps_rollup_mb(pid) for pid in child_pids()]
            totals = [total for total in totals if total]
            if totals:
                for key, index in (("workers_peak_uss_mb", 0), ("workers_peak_pss_mb", 1)):
                    value = sum(total[index] for total in totals)
                    self.peaks[key] = max(self.peaks[key] or 0.0, value)


def child_pids() -> list[int]:
    pids = []
    for children in Path("/proc/self/task").glob("*/children"):
        try:
            pids += [int(pid) for pid in children.read_text().split()]
        except OSError:
            pass
    return pids


def smaps_rollup_mb(pid: int) -> tuple[float, float] | None:
    """(USS, PSS) of one process in MB, or None when it has gone."""
    try:
        fields = dict(line.split()[:2] for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:])
    except (OSError, ValueError):
        return None
    kib = {key.rstrip(":"): int(value) for key, value in fields.items() if value.isdigit()}
    return (kib.get("Private_Clean", 0) + kib.get("Private_Dirty", 0)) / 1024, kib.get("Pss", 0) / 1024


def spawn_part(name: str, argv: list[str], bare_settings: dict) -> dict | None:
    """Run one part in a fresh interpreter; None (and its error on stderr) when it fails."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "part.json"
        command = [
            sys.executable,
            str(Path(__file__).resolve()),
            *argv,
            "--part",
            name,
            "--part-out",
            str(out),
            "--bare-settings",
            json.dumps(bare_settings),
        ]
        print(f"running {name} ...", file=sys.stderr, flush=True)
        if subprocess.run(command).returncode != 0:
            print(f"part {name} failed; the others go on", file=sys.stderr)
            return None
        return json.loads(out.read_text())


def bare_settings_from(harness: dict | None) -> dict:
    """The harness's own device-policy choices (once its summary records them), for a like-for-like bare step."""
    policy = (harness or {}).get("device_policy") or {}
    return {key: policy[key] for key in ("amp", "channels_last", "cudnn_benchmark", "tf32") if key in policy}


# --- report ---------------------------------------------------------------------------------------


def mean_std(values: list[float]) -> tuple[float, float]:
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0


def ratios(parts: dict) -> dict:
    rate = {name: mean_std(part["rates"])[0] for name, part in parts.items()}
    found = {}
    if {"harness", "plain"} <= rate.keys():
        amp = (parts["harness"].get("device_policy") or {}).get("amp", "?")
        found[f"training: harness, default policy (amp {amp}) / plain loop (goal >= 2.3 at width 16)"] = (
            rate["harness"] / rate["plain"]
        )
    if {"harness_fp32", "plain"} <= rate.keys():
        found["training: harness at fp32 (device_policy.amp=off) / plain loop"] = rate["harness_fp32"] / rate["plain"]
    if {"harness", "bare"} <= rate.keys():
        found["harness overhead: bare / harness - 1 (target <= 0.05)"] = rate["bare"] / rate["harness"] - 1
    for other in ("imagefolder_loader", "dataloader_pipeline_2", "dataloader_pipeline_0"):
        if {"device_pipeline", other} <= rate.keys():
            target = " (target >= 20)" if other == "imagefolder_loader" else ""
            found[f"data: DevicePipeline / {PARTS[other][1]}{target}"] = rate["device_pipeline"] / rate[other]
    return found


def part_label(name: str, part: dict) -> str:
    """The part's label; the harness's default policy names its precision (it differs between CPUs)."""
    if name == "harness" and part.get("device_policy"):
        return f"{PARTS[name][1]} (amp {part['device_policy']['amp']})"
    return PARTS[name][1]


def print_table(parts: dict, found: dict, args) -> None:
    threads = args.threads or torch.get_num_threads()
    print(
        f"\n{args.device}, ResNet-18 width {args.width}, batch {args.batch_size}, {args.images or 'all'} images, "
        f"{args.repeats} timed epoch(s) after 1 warm-up; {os.cpu_count()} CPU core(s), {threads} torch thread(s); "
        f"torch {torch.__version__}"
    )
    header = f"{'':3}{'part':48}{'images/s':>18}{'peak RSS MB':>13}{'workers USS MB':>16}{'CUDA MB':>9}"
    print(header + "\n" + "-" * len(header))
    for name, part in parts.items():
        mean, std = mean_std(part["rates"])
        workers, cuda = part.get("workers_peak_uss_mb"), part.get("cuda_max_allocated_mb")
        print(
            f"({PARTS[name][0]}){part_label(name, part):48}{f'{mean:,.0f} ± {std:,.0f}':>18}{part['peak_rss_mb']:>13,.0f}"  # noqa: E501
            f"{'-' if workers is None else f'{workers:,.0f}':>16}{'-' if cuda is None else f'{cuda:,.0f}':>9}"
        )
    for label, value in found.items():
        print(f"{label}: {value:+.1%}" if "overhead" in label else f"{label}: {value:.2f}x")


def machine() -> dict:
    info = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "processor": platform.processor(),
        "torch": torch.__version__,
    }
    if torch.cuda.is_available():
        info["cuda_device"] = torch.cuda.get_device_name()
    return info


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.part:
        run_part(args)
        return 0
    if not (args.data_root / "train").is_dir():
        print(
            f"error: no ImageFolder at {args.data_root} (train/<class>/*.jpg, test/<class>/*.jpg): pass --data-root",
            file=sys.stderr,
        )
        return 2
    names = [name.strip() for name in args.parts.split(",") if name.strip()]
    unknown = sorted(set(names) - set(PARTS))
    if unknown:
        print(f"error: unknown part {unknown[0]}: choose from {', '.join(PARTS)}", file=sys.stderr)
        return 2
    parts, failed = {}, []
    for name in names:
        result = spawn_part(name, argv, bare_settings_from(parts.get("harness")))
        if result is None:
            failed.append(name)
        else:
            parts[name] = result
    found = ratios(parts)
    print_table(parts, found, args)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(
                {
                    "args": {key: str(value) for key, value in vars(args).items()},
                    "machine": machine(),
                    "parts": parts,
                    "failed": failed,
                    "ratios": found,
                },
                indent=2,
            )
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
