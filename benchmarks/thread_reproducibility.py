"""How far the intra-op thread count moves a run's numbers, and whether a replay brings them back bit for bit.

One small real-image run (ResNet-18 at width 16 on 2,000 CIFAR-10 JPEG training images, Adam, seed 0, two
epochs) is trained through the harness's own `train(cfg, run_dir)` twice on this machine, with
`device_policy.threads=1` and with `device_policy.threads=2`, and the two are compared epoch by epoch as
`python src/replay.py` compares (optbench.reproducibility: every metrics.jsonl number but the wall-clock
timings). Then the 1-thread run is replayed under `device_policy.threads=2` in the process (the replay pins the
recorded 1) and compared with its record. docs/runs.md ("Reproducibility") quotes the figures it prints and
writes to benchmarks/results/thread-reproducibility.json.

    .venv/bin/python benchmarks/thread_reproducibility.py     # about 3 minutes on the 2-core CPU
"""

import argparse
import json
import tempfile
from pathlib import Path

import torch
from hydra import compose, initialize_config_dir

from optbench import reproducibility
from optbench.config.hydra_glue import register_resolvers
from optbench.formats import metrics_log, run_summary
from optbench.training import replay
from optbench.training.run import train

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "cifar10-jpeg"
RESULT = REPO / "benchmarks" / "results" / "thread-reproducibility.json"


def run_overrides(data_root: Path, data_dir: Path, images: int, epochs: int) -> list[str]:
    return [
        "dataset=imagefolder",
        f"dataset.root={data_root}",
        f"dataset.train_subset={images}",
        "dataset.val_size=1000",
        f"paths.data_dir={data_dir}",
        "model.width=16",
        "optimizer=adam",
        "optimizer.lr=0.00278",
        f"epochs={epochs}",
        "device=cpu",
        "train.progress_bar=false",
    ]


def trained(overrides: list[str], threads: int, run_dir: Path) -> list[dict]:
    register_resolvers()
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = compose(config_name="config", overrides=[*overrides, f"device_policy.threads={threads}"])
    train(cfg, run_dir)
    return metrics_log.read(run_dir)[0]


def differences(comparison: reproducibility.EpochComparison) -> dict:
    return {item.metric: {"largest": item.largest, "at_epoch": item.at_epoch} for item in comparison.differences}


def measure(data_root: Path, data_dir: Path, images: int, epochs: int, folder: Path) -> dict:
    overrides = run_overrides(data_root, data_dir, images, epochs)
    records = {threads: trained(overrides, threads, folder / f"threads{threads}") for threads in (1, 2)}
    between = reproducibility.epoch_differences(records[1], records[2])
    recorded = replay.read_recorded(folder / "threads1")
    torch.set_num_threads(2)  # the replaying process's own count: the replay pins the recorded 1
    replayed = replay.replay(recorded, replay.replay_config(recorded), epochs, folder / "replay")
    environment = run_summary.read(folder / "threads1").environment
    return {
        "command": "python benchmarks/thread_reproducibility.py",
        "run": f"ResNet-18 width 16, {images} real CIFAR-10 images, Adam lr 0.00278, seed 0, {epochs} epochs",
        "processor": environment.processor_kind,
        "torch": environment.torch,
        "test_acc": {str(threads): records[threads][-1][metrics_log.TEST_ACC] for threads in (1, 2)},
        "threads_1_vs_2": {"identical": between.identical, "differences": differences(between)},
        "replay_of_1_thread_run": {
            "identical": replayed.comparison.identical,
            "numbers": replayed.comparison.numbers,
            "threads": replayed.summary.environment.threads,
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-root", type=Path, default=DATA, help="the CIFAR-10 JPEG image folder")
    parser.add_argument("--data-dir", type=Path, default=REPO / "data", help="paths.data_dir (decoded cache)")
    parser.add_argument("--images", type=int, default=2000)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULT)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="thread-reproducibility-") as folder:
        figures = measure(args.data_root, args.data_dir, args.images, args.epochs, Path(folder))
    args.out.write_text(json.dumps(figures, indent=2) + "\n")
    accuracy = figures["test_acc"]
    print(f"{figures['processor']}, torch {figures['torch']}: {figures['run']}")
    print(f"test acc after {args.epochs} epochs: 1 thread {accuracy['1']:.4f}, 2 threads {accuracy['2']:.4f}")
    for metric, gap in figures["threads_1_vs_2"]["differences"].items():
        print(f"  1 vs 2 threads, {metric}: largest |difference| {gap['largest']:.6g} (epoch {gap['at_epoch']})")
    replayed = figures["replay_of_1_thread_run"]
    verdict = "bit-identical" if replayed["identical"] else "different"
    print(f"replay of the 1-thread run from a 2-thread process: {verdict} ({replayed['numbers']} numbers)")
    print(f"written: {args.out}")


if __name__ == "__main__":
    main()
