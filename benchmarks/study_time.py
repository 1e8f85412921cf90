"""A study's epoch, before and after the evaluation changes: the CPU demo's per-epoch protocol timed end to end.

Each mode trains the same run (`optbench.training.run.train`, AdamW, seed 0, width-16 ResNet-18 on
`--train-subset` real CIFAR-10 JPEG images, the rest of the 50,000 split into 5,000 validation images as
the CPU demo does, and the 10,000 test images) for `--epochs` epochs, in its own subprocess:
    before    the previous defaults: evaluation batch 1024, BatchNorm not folded, test every epoch;
    after     the new defaults: the device's evaluation batch (train.eval_batch_size=auto), BatchNorm folded;
    improved  after, with train.test_every=improved (test only where validation improves, and at the last).
Per mode, from metrics.jsonl (the first epoch is a warm-up and not counted): seconds per epoch, training
and evaluation images/s, evaluation / training rate. The training metrics of every epoch must be the same
in all modes (evaluation draws no random numbers and changes no weight); the script checks it.

Run (from the repository root, a quiet machine; about 8 min on a 2-core CPU):
    .venv/bin/python benchmarks/study_time.py --json benchmarks/results/study-time-cpu.json
Smoke check: --train-subset 1000 --epochs 2.
"""

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from optbench.formats import metrics_log

REPO = Path(__file__).resolve().parents[1]
DEFAULT_ROOT = REPO.parent / "shared" / "data" / "cifar10-jpeg"
MODES = {"before": ["train.eval_batch_size=1024"], "after": [], "improved": ["train.test_every=improved"]}
TRAINING_KEYS = (metrics_log.TRAIN_LOSS, metrics_log.TRAIN_ACC, metrics_log.LR)


def run_mode(mode: str, args: argparse.Namespace, results: Path) -> list[dict]:
    """Train in a fresh process (so no mode warms another's caches); the metrics.jsonl records."""
    overrides = [
        "dataset=imagefolder",
        f"dataset.root={args.root}",
        f"dataset.train_subset={args.train_subset}",
        "model.width=16",
        f"epochs={args.epochs}",
        "optimizer=adamw",
        "seed=0",
        "device=cpu",
        "train.progress_bar=false",
        f"paths.results_dir={results}",
        *MODES[mode],
    ]
    code = (
        "import sys, json; sys.path.insert(0, 'src')\n"
        "from optbench.config.hydra_glue import register_resolvers; register_resolvers()\n"
        "from hydra import compose, initialize_config_dir\n"
        "from optbench.training import epoch_record\n"
        "from optbench.training.run import train\n"
        f"if {mode == 'before'!r}:\n"
        "    epoch_record.evaluation_model = lambda run: run.step_model   # the previous evaluation: unfolded\n"
        f"with initialize_config_dir(config_dir={str(REPO / 'conf')!r}, version_base='1.3'):\n"
        f"    cfg = compose(config_name='config', overrides={overrides!r})\n"
        f"train(cfg, {str(results / mode)!r})\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, capture_output=True, text=True)
    return metrics_log.read(results / mode)[0]


def summarise(records: list[dict]) -> dict:
    counted = records[1:] or records  # the first epoch warms up (allocators, decoded data in cache)
    mean = lambda key: statistics.mean(record[key] for record in counted)  # noqa: E731
    return {
        "epoch_s": mean(metrics_log.TIME_S),
        "train_images_per_s": mean(metrics_log.TRAIN_IMAGES_PER_S),
        "eval_s": mean(metrics_log.EVAL_TIME_S),
        "eval_images_per_s": mean(metrics_log.EVAL_IMAGES_PER_S),
        "eval_over_train_rate": mean(metrics_log.EVAL_IMAGES_PER_S) / mean(metrics_log.TRAIN_IMAGES_PER_S),
        "tested_epochs": sum(metrics_log.TEST_ACC in record for record in records),
        "epochs": len(records),
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="CIFAR-10 JPEG copies (ImageFolder layout)")
    parser.add_argument("--train-subset", type=int, default=10000)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        records = {mode: run_mode(mode, args, Path(folder)) for mode in MODES}
    training = {mode: [[record[key] for key in TRAINING_KEYS] for record in rows] for mode, rows in records.items()}
    same_training = all(rows == training["before"] for rows in training.values())
    figures = {mode: summarise(rows) for mode, rows in records.items()}
    print(f"{'mode':<10} {'s/epoch':>8} {'train img/s':>12} {'eval s':>7} {'eval img/s':>11} {'eval/train':>10} tested")
    for mode, row in figures.items():
        print(
            f"{mode:<10} {row['epoch_s']:>8.1f} {row['train_images_per_s']:>12.0f} {row['eval_s']:>7.1f} "
            f"{row['eval_images_per_s']:>11.0f} {row['eval_over_train_rate']:>9.1f}x {row['tested_epochs']}/{row['epochs']}"  # noqa: E501
        )
    for mode in ("after", "improved"):
        print(f"{mode} / before, seconds per epoch: {figures[mode]['epoch_s'] / figures['before']['epoch_s']:.2f}")
    print(f"training metrics identical in every mode: {same_training}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(
                {
                    "machine": platform.processor() or platform.machine(),
                    "cpus": __import__("os").cpu_count(),
                    "args": {k: str(v) for k, v in vars(args).items()},
                    "figures": figures,
                    "same_training": same_training,
                },
                indent=2,
            )
            + "\n"
        )
    return 0 if same_training else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
