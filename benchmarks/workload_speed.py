"""The new workloads' training speed: the harness's step beside a plain PyTorch loop's, and a default run's wall time.

    python benchmarks/workload_speed.py [--threads 1] [--repeats 5] [--out benchmarks/results/workload-speed.json]

For each workload other than CIFAR (mnist1d, char_lm), in this one process, one thread (what a study's run gets):
- harness: `optbench.training.run.train` on the workload's default config (its model, batch and data), for a
  warm-up epoch and EPOCHS_PER_ROUND timed ones of `STEPS` steps; its figure is metrics.jsonl's
  `train/images_per_s` (training only: evaluation is timed apart). Examples are sequences (MNIST-1D) or characters.
- plain: the loop a researcher writes for the same model and batch: the same `build_model`, torch.optim.AdamW,
  shuffled index batches from the same training tensors (a text: nanoGPT's get_batch, random windows),
  forward, cross-entropy, backward, step; no per-step host read. Timed over the same steps, after a warm-up.
Both sides are measured in `--repeats` alternating rounds (paired_rates); the ratio is the median over rounds of
harness / plain time per step (1.00 = as fast; the target is within 1.1x). Then a default run of
each workload (`python src/train.py workload=NAME`, its default budget, AdamW) is timed end to end with
the wall time summary.json records. The load average is recorded beside: a busy machine slows both sides.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

from optbench.formats import metrics_log
from optbench.training.provenance import processor_name

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
CORPUS = REPO.parent / "shared" / "data" / "tinyshakespeare" / "input.txt"
EPOCHS_PER_ROUND = 3  # timed epochs per side and round (their median): one 36-step epoch swung by 30 % under load
STEPS = {"mnist1d": 36, "char_lm": 50}  # one epoch of MNIST-1D's 3,600 sequences at batch 100; 50 GPT steps
OVERRIDES = {
    "mnist1d": ["workload=mnist1d", "optimizer=adamw"],
    "char_lm": [
        "workload=char_lm",
        "optimizer=adamw",
        f"dataset.path={CORPUS}",
        f"dataset.steps_per_epoch={STEPS['char_lm']}",
    ],
}


def harness_rates(name: str, repeats: int, threads: int) -> list[float]:
    from conftest import compose_config

    from optbench.training.run import train

    with tempfile.TemporaryDirectory() as folder:
        cfg = compose_config(
            [
                *OVERRIDES[name],
                f"epochs={repeats + 1}",
                f"device_policy.threads={threads}",
                "device=cpu",
                "train.progress_bar=false",
                f"paths.data_dir={folder}/data",
            ]
        )
        train(cfg, Path(folder) / "run")
        records = metrics_log.read(Path(folder) / "run")[0]
    return [record[metrics_log.TRAIN_IMAGES_PER_S] for record in records[1:]]


def plain_rates(name: str, repeats: int) -> list[float]:
    from optbench.data.splits import load_splits
    from optbench.data.text import load_text_splits
    from optbench.training.models import build_model

    torch.manual_seed(0)
    if name == "mnist1d":
        train = load_splits(name="mnist1d", data_dir="data", val_size=400).train
        model, batch = build_model("cnn1d", 10, 25), 100
    else:
        train = load_text_splits("tinyshakespeare", "data", path=str(CORPUS)).train
        model, batch = build_model("gpt", 65, 128, context=64), 12
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-2)
    positions = torch.arange(64)

    def batches():
        if name == "mnist1d":
            order = torch.randperm(len(train.labels))
            for start in range(0, STEPS[name] * batch, batch):
                index = order[start : start + batch]
                yield train.images[index], train.labels[index]
        else:
            for _ in range(STEPS[name]):
                window = torch.randint(0, len(train.images) - 64, (batch,))[:, None] + positions
                yield train.images[window], train.labels[window]

    rates = []
    for repeat in range(repeats + 1):
        started, examples = time.perf_counter(), 0
        for inputs, labels in batches():
            loss = torch.nn.functional.cross_entropy(model(inputs), labels.reshape(-1))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            examples += labels.numel()
        if repeat:  # the first pass is a warm-up
            rates.append(examples / (time.perf_counter() - started))
    return rates


def paired_rates(name: str, rounds: int, threads: int) -> tuple[list[float], list[float]]:
    """Harness and plain rates measured in alternating rounds (each a warm-up and EPOCHS_PER_ROUND timed epochs per
    side, their median; which side goes first alternating too), so a load that drifts over the minutes of a
    measurement slows both sides of a round alike: the ratio is the median of the rounds' ratios. Measured in
    blocks (all harness, then all plain), a busy machine gave 1.24x and 0.61x where a quieter one had given 1.09x
    and 0.96x."""
    harness, plain = [], []
    for round_number in range(rounds):
        if round_number % 2 == 0:
            harness.append(statistics.median(harness_rates(name, EPOCHS_PER_ROUND, threads)))
            plain.append(statistics.median(plain_rates(name, EPOCHS_PER_ROUND)))
        else:
            plain.append(statistics.median(plain_rates(name, EPOCHS_PER_ROUND)))
            harness.append(statistics.median(harness_rates(name, EPOCHS_PER_ROUND, threads)))
    return harness, plain


def default_run_seconds(name: str, threads: int) -> float:
    from conftest import compose_config

    from optbench.training.run import train

    with tempfile.TemporaryDirectory() as folder:
        extra = [f"dataset.path={CORPUS}"] if name == "char_lm" else []
        cfg = compose_config(
            [
                f"workload={name}",
                "optimizer=adamw",
                *extra,
                f"device_policy.threads={threads}",
                "device=cpu",
                "train.progress_bar=false",
                f"paths.data_dir={folder}/data",
            ]
        )
        return float(train(cfg, Path(folder) / "run")["wall_time_s"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--skip-default-runs", action="store_true")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "workload-speed.json")
    args = parser.parse_args()
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    torch.set_num_threads(args.threads)
    results = {
        "processor": str(processor_name()),
        "threads": args.threads,
        "load_before": os.getloadavg()[0],
        "workloads": {},
    }
    for name in ("mnist1d", "char_lm"):
        harness, plain = paired_rates(name, args.repeats, args.threads)
        entry = {
            "harness_examples_per_s": statistics.median(harness),
            "plain_examples_per_s": statistics.median(plain),
            "harness_time_over_plain": statistics.median(p / h for h, p in zip(harness, plain)),
            "rounds": args.repeats,
        }
        if not args.skip_default_runs:
            entry["default_run_wall_s"] = default_run_seconds(name, args.threads)
        results["workloads"][name] = entry
        print(name, json.dumps(entry))
    results["load_after"] = os.getloadavg()[0]
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
