"""Accuracy parity of CPU bf16 autocast: the same runs at fp32 and at bf16, test accuracy and seconds per epoch.

The CPU policy trains in bf16 where the processor has native bf16 (device/policy.py). This measures what
that costs in accuracy and gains in time, at the README's real-data setting: ResNet-18 width 16 on 10,000
real CIFAR-10 training images (the JPEG copies), 4 epochs, seeds 0, 1, 2, once with
`device_policy.amp=off` and once with `device_policy.amp=bf16`. Each run is `src/train.py` in its own
process, exactly as a user runs it, in its own directory under `--results`; a finished run is skipped
(the harness's own rule), so an interrupted invocation continues where it stopped. Seeds alternate
precisions (seed 0 fp32, seed 0 bf16, seed 1 fp32, ...) so a change in machine load falls on both.

Printed and written as JSON (`--json`, default <results>/bf16_parity.json): per seed, the test accuracy
at the best-validation epoch (summary.json's `best`), seconds of training per epoch and wall seconds per
epoch (evaluation included); per precision, mean ± sd; and the paired difference bf16 - fp32 (same seed,
same initial weights and batch order).

Real measurement (from the repository root, about 4 x 6 runs of a minute or two each on a quiet 2-core CPU):
    .venv/bin/python benchmarks/bf16_parity.py
Smoke check:
    .venv/bin/python benchmarks/bf16_parity.py --width 8 --images 300 --epochs 1 --seeds 0 --results /tmp/parity
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

from throughput import add_data_arguments  # the sibling script: python puts benchmarks/ on sys.path

from optbench.formats import metrics_log, run_summary

REPO = Path(__file__).resolve().parents[1]
PRECISIONS = {"off": "fp32", "bf16": "bf16"}  # device_policy.amp value: what the tables call it


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_data_arguments(parser)
    parser.add_argument("--width", type=int, default=16, help="ResNet-18 base width (16: the README's CPU setting)")
    parser.add_argument("--images", type=int, default=10_000, help="dataset.train_subset: training images per epoch")
    parser.add_argument("--epochs", type=int, default=4, help="epochs per run")
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated run seeds")
    parser.add_argument("--device", default="cpu", help="the device both precisions train on (default cpu)")
    parser.add_argument(
        "--results",
        type=Path,
        default=REPO / "benchmarks" / "results" / "bf16-parity",
        help="run directories go under here (<results>/amp-<off|bf16>/seed<N>)",
    )
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra Hydra override for every run, repeatable (e.g. optimizer=adamw)",
    )
    parser.add_argument("--json", type=Path, help="write the figures here (default <results>/bf16_parity.json)")
    return parser.parse_args(argv)


def seeds_of(text: str) -> list[int]:
    """'0,1,2' -> [0, 1, 2]; [] when the text names no whole number >= 0."""
    seeds = [seed.strip() for seed in text.split(",") if seed.strip()]
    return [int(seed) for seed in seeds] if seeds and all(seed.isdigit() for seed in seeds) else []


def cpu_name() -> str:
    """The processor's model name (Linux /proc/cpuinfo), else what platform says."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def run_command(args, amp: str, seed: int) -> list[str]:
    return [
        sys.executable,
        str(REPO / "src" / "train.py"),
        "dataset=imagefolder",
        f"dataset.root={args.data_root}",
        f"dataset.train_subset={args.images}",
        f"model.width={args.width}",
        f"epochs={args.epochs}",
        f"seed={seed}",
        f"device={args.device}",
        f"device_policy.amp={amp}",
        "train.progress_bar=false",
        f"paths.data_dir={args.data_dir}",
        f"hydra.run.dir={run_dir(args, amp, seed)}",
        *args.override,
    ]


def run_dir(args, amp: str, seed: int) -> Path:
    return args.results.resolve() / f"amp-{amp}" / f"seed{seed}"


def run_figures(summary: run_summary.Summary) -> dict:
    """What one run contributes: test accuracy at the best-validation epoch and seconds per epoch."""
    epochs, best = summary.epochs_done, summary.best or {}
    return {
        "status": summary.status,
        "test_acc_at_best_val": summary.headline,
        "val_acc_best": best.get(metrics_log.VAL_ACC),
        "best_epoch": best.get(metrics_log.EPOCH),
        "train_s_per_epoch": (summary.train_time_s or 0.0) / epochs,
        "wall_s_per_epoch": (summary.wall_time_s or 0.0) / epochs,
        "train_images_per_s": summary.train_images_per_s,
        "policy_amp": summary.precision,
    }


def train_all(args) -> tuple[dict, list[str]]:
    """{amp: {seed: figures}} for every run that finished, and the runs that did not."""
    runs, failed = {amp: {} for amp in PRECISIONS}, []
    for seed in seeds_of(args.seeds):
        for amp in PRECISIONS:
            print(f"training seed {seed} at {PRECISIONS[amp]} ...", file=sys.stderr, flush=True)
            done = subprocess.run(run_command(args, amp, seed), cwd=REPO)
            summary = run_summary.read(run_dir(args, amp, seed)) if done.returncode == 0 else None
            if summary is None or not summary.epochs_done:
                failed.append(f"amp={amp} seed={seed} (exit {done.returncode})")
                continue
            runs[amp][seed] = run_figures(summary)
    return runs, failed


def mean_sd(values: list[float]) -> tuple[float, float]:
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0


def precision_figures(runs: dict) -> dict:
    """Per precision: mean and sd of accuracy and seconds; and the paired bf16 - fp32 accuracy difference."""
    figures = {}
    for amp, by_seed in runs.items():
        if by_seed:
            figures[PRECISIONS[amp]] = {
                key: mean_sd([run[key] for run in by_seed.values()])
                for key in ("test_acc_at_best_val", "train_s_per_epoch", "wall_s_per_epoch")
            }
    paired = [
        runs["bf16"][seed]["test_acc_at_best_val"] - runs["off"][seed]["test_acc_at_best_val"]
        for seed in runs["off"].keys() & runs["bf16"].keys()
    ]
    if paired:
        figures["bf16 - fp32 test acc (paired by seed)"] = mean_sd(paired)
    if {"fp32", "bf16"} <= figures.keys():
        figures["speed-up bf16 / fp32 (train s per epoch)"] = (
            figures["fp32"]["train_s_per_epoch"][0] / figures["bf16"]["train_s_per_epoch"][0]
        )
    return figures


def print_report(args, runs: dict, figures: dict) -> None:
    print(
        f"\n{args.device}, ResNet-18 width {args.width}, {args.images:,} training images, {args.epochs} epoch(s), "
        f"seeds {args.seeds}; {os.cpu_count()} CPU core(s), {cpu_name()}"
    )
    header = f"{'precision':10}{'seed':>6}{'test acc @ best val':>21}{'train s/epoch':>15}{'wall s/epoch':>14}"
    print(header + "\n" + "-" * len(header))
    for amp, by_seed in runs.items():
        for seed, run in sorted(by_seed.items()):
            print(
                f"{PRECISIONS[amp]:10}{seed:>6}{run['test_acc_at_best_val']:>21.4f}{run['train_s_per_epoch']:>15.1f}"
                f"{run['wall_s_per_epoch']:>14.1f}"
            )
    for name in ("fp32", "bf16"):
        if name in figures:
            (acc, acc_sd), (train, train_sd), (wall, wall_sd) = figures[name].values()
            print(
                f"{name:10}{'mean':>6}{f'{acc:.4f} ± {acc_sd:.4f}':>21}{f'{train:.1f} ± {train_sd:.1f}':>15}"
                f"{f'{wall:.1f} ± {wall_sd:.1f}':>14}"
            )
    for label, value in figures.items():
        if label not in ("fp32", "bf16"):
            print(
                f"{label}: {value[0]:+.4f} ± {value[1]:.4f}" if isinstance(value, tuple) else f"{label}: {value:.2f}x"
            )


def main(argv=None) -> int:
    args = parse_args(argv)
    if not (args.data_root / "train").is_dir():
        print(
            f"error: no ImageFolder at {args.data_root} (train/<class>/*.jpg, test/<class>/*.jpg): pass --data-root",
            file=sys.stderr,
        )
        return 2
    if not seeds_of(args.seeds):
        print(f"error: --seeds {args.seeds}: give whole numbers >= 0, e.g. --seeds 0,1,2", file=sys.stderr)
        return 2
    runs, failed = train_all(args)
    figures = precision_figures(runs)
    print_report(args, runs, figures)
    out = args.json or args.results / "bf16_parity.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "args": {key: str(value) for key, value in vars(args).items()},
                "machine": {"platform": platform.platform(), "processor": cpu_name(), "cpu_count": os.cpu_count()},
                "runs": {PRECISIONS[amp]: by_seed for amp, by_seed in runs.items()},
                "figures": figures,
                "failed": failed,
            },
            indent=2,
        )
    )
    print(f"figures written to {out}")
    if failed:
        print(f"failed: {'; '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
