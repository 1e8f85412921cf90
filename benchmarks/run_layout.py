"""Runs side by side on one CPU: the same runs one at a time on every core, or several at once sharing them.

Trains `--runs` identical-size runs (AdamW, seeds 0.., width-16 ResNet-18, `--train-subset` real CIFAR-10
JPEG images, 5,000 validation and 10,000 test images, `--epochs` epochs) as one Hydra sweep per layout,
each into its own fresh results folder:
    serial          hydra/launcher=basic: one run at a time, torch's own thread count (all cores)
    parallel-N      hydra/launcher=parallel hydra.launcher.n_jobs=N: N runs at once, cores / N threads each
                    (the device policy's rule, device/sharing.py)
Per layout: the sweep's wall-clock seconds (start-up, data loading and evaluation included: what a study
pays), runs per hour, and each run's training images/s. It also says whether the first epoch's training
loss is identical across layouts: the thread count can change the order of float sums, like the device.

Run (from the repository root, a quiet machine; about 6 min on a 2-core CPU):
    .venv/bin/python benchmarks/run_layout.py --json benchmarks/results/run-layout-cpu.json
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from optbench import rundir
from optbench.formats import metrics_log, run_summary

REPO = Path(__file__).resolve().parents[1]
DEFAULT_ROOT = REPO.parent / "shared" / "data" / "cifar10-jpeg"


def layouts(cores: int) -> dict[str, list[str]]:
    """The layouts worth timing on this many cores: serial, and 2, 4, ... runs at once up to one per core."""
    found = {"serial": []}
    runs = 2
    while runs <= cores:
        found[f"parallel-{runs}"] = ["hydra/launcher=parallel", f"hydra.launcher.n_jobs={runs}"]
        runs *= 2
    return found


def run_layout(extra: list[str], args: argparse.Namespace, results: Path) -> float:
    """Wall seconds of one sweep of `args.runs` seeds under a launcher layout."""
    seeds = ",".join(str(seed) for seed in range(args.runs))
    command = [
        sys.executable,
        "src/train.py",
        "-m",
        "dataset=imagefolder",
        f"dataset.root={args.root}",
        f"dataset.train_subset={args.train_subset}",
        "model.width=16",
        f"epochs={args.epochs}",
        "optimizer=adamw",
        f"seed={seeds}",
        "device=cpu",
        "train.progress_bar=false",
        f"paths.results_dir={results}",
        f"paths.data_dir={args.data_dir}",
        *extra,
    ]
    started = time.perf_counter()
    subprocess.run(command, cwd=REPO, check=True, capture_output=True, text=True)
    return time.perf_counter() - started


def read_runs(results: Path) -> list[dict]:
    runs = []
    for summary_path in sorted(results.rglob(rundir.SUMMARY_FILE)):
        summary = run_summary.read(summary_path.parent)
        first = metrics_log.read(summary_path.parent)[0][0]
        runs.append(
            {
                "seed": summary.seed,
                "train_images_per_s": summary.train_images_per_s,
                "threads": summary.device_policy.get("threads"),
                "first_train_loss": first[metrics_log.TRAIN_LOSS],
            }
        )
    return sorted(runs, key=lambda run: run["seed"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="ImageFolder copy of CIFAR-10")
    parser.add_argument("--data-dir", type=Path, default=REPO / "data", help="decoded-image cache (paths.data_dir)")
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--train-subset", type=int, default=5000)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    figures = {}
    with tempfile.TemporaryDirectory() as scratch:
        for name, extra in layouts(cores).items():
            results = Path(scratch) / name
            wall_s = run_layout(extra, args, results)
            runs = read_runs(results)
            figures[name] = {
                "wall_s": wall_s,
                "runs_per_hour": args.runs * 3600 / wall_s,
                "threads_per_run": sorted({run["threads"] for run in runs}),
                "train_images_per_s_per_run": [run["train_images_per_s"] for run in runs],
                "first_train_loss": [run["first_train_loss"] for run in runs],
            }
    losses = {name: layout["first_train_loss"] for name, layout in figures.items()}
    report = {
        "machine": platform.processor() or platform.machine(),
        "cores": cores,
        "runs": args.runs,
        "train_subset": args.train_subset,
        "epochs": args.epochs,
        "layouts": figures,
        "same_training_metrics": len({json.dumps(value) for value in losses.values()}) == 1,
    }
    print(f"{cores} cores, {args.runs} runs of {args.epochs} epochs x {args.train_subset} images (width 16)")
    print(f"{'layout':<12} {'threads/run':>11} {'wall s':>8} {'runs/h':>8}")
    for name, layout in figures.items():
        print(
            f"{name:<12} {str(layout['threads_per_run']):>11} {layout['wall_s']:>8.1f} {layout['runs_per_hour']:>8.1f}"
        )
    print("first-epoch training loss identical across layouts:", report["same_training_metrics"])
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
