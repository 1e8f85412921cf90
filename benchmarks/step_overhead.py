"""What the harness adds to a small model's training step, before and after a change to its code, side by side.

    python benchmarks/step_overhead.py --before COMMIT [--pairs 3] [--rounds 5] [--json FILE] [--docs]
    python benchmarks/step_overhead.py --from-json benchmarks/results/step-overhead.json --docs

The `src/` of `--before COMMIT` (git archive) and this checkout's are measured in turn, `--pairs` times, which one goes
first alternating, each in fresh processes on one thread (what a study's run gets), so a load that drifts over the
minutes of a measurement slows both alike:
- ratio: benchmarks/workload_speed.py --skip-default-runs --repeats ROUNDS, run against that src/ (PYTHONPATH): the
  harness's time per step over a plain PyTorch loop's, MNIST-1D and char_lm (the median of its alternating rounds);
- overhead: in one process per shape (MNIST-1D's default run; CIFAR's ResNet-18 at width 16 on synthetic images),
  the assembled run (`prepare`), epochs of the harness's `train_epoch` (and its epoch result) alternating with
  epochs of a bare loop on the same model, optimizer and training tensors as stored (uint8 images only made float:
  zero_grad, forward, cross-entropy, backward, step): microseconds per step of each, median over ROUNDS pairs of
  epochs, and their difference, what the harness adds to a step besides the model's own work.
The figures quoted are medians over the pairs, the load average beside them. --docs writes the table into
docs/benchmarks.md between its markers (tests/test_steps.py checks it is this script's, from the JSON).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))  # readme_blocks

import readme_blocks  # noqa: E402

DOC = REPO / "docs" / "benchmarks.md"
BEGIN = "<!-- step overhead: written by benchmarks/step_overhead.py --docs; a test checks it -->"
END = "<!-- end of step overhead -->"
WORKLOADS = ("mnist1d", "char_lm")


SHAPES = {  # the config of each shape whose step is timed
    "mnist1d": ["workload=mnist1d", "optimizer=adamw"],  # its default run: cnn1d width 25, batch 100, 36 steps
    "cifar_small": [  # CIFAR's: ResNet-18 on 32x32 images, at width 16, 5 steps of 128 synthetic images
        "dataset=synthetic",
        "dataset.train_size=840",
        "dataset.val_size=200",
        "model.width=16",
        "batch_size=128",
        "optimizer=adamw",
    ],
}


def overhead_child(shape: str, rounds: int) -> dict:
    """Run in a child process whose PYTHONPATH is the measured src/: harness and bare microseconds per step."""
    import torch

    sys.path.insert(0, str(REPO / "tests"))
    from conftest import compose_config

    from optbench.training.assemble import prepare
    from optbench.training.steps import train_epoch

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as folder:
        overrides = [*SHAPES[shape], "device=cpu", "device_policy.threads=1", "train.progress_bar=false"]
        run = prepare(compose_config([*overrides, f"paths.data_dir={folder}/data"]))
    images, labels, steps, batch = run.splits.train.images, run.noisy.labels, len(run.pipeline), run.cfg.batch_size

    def harness(epoch: int) -> None:
        batches = run.pipeline.epoch(epoch)
        train_epoch(run.step_model, batches, run.optimizer, run.scheduler, run.policy, run.scaler).result()

    def bare(epoch: int) -> None:
        order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(epoch))
        for start in range(0, steps * batch, batch):
            index = order[start : start + batch]
            inputs = images[index] if images.is_floating_point() else images[index].float()  # no normalisation
            loss = torch.nn.functional.cross_entropy(run.model(inputs), labels[index])
            run.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            run.optimizer.step()

    timed: dict[str, list[float]] = {"harness_us": [], "bare_us": []}
    for epoch in range(rounds + 1):
        for key, one_epoch in (("harness_us", harness), ("bare_us", bare))[:: 1 if epoch % 2 else -1]:
            started = time.perf_counter()
            one_epoch(epoch + 1)
            if epoch:  # the first of each is a warm-up
                timed[key].append((time.perf_counter() - started) / steps * 1e6)
    harness_us, bare_us = (statistics.median(timed[key]) for key in ("harness_us", "bare_us"))
    return {"harness_us": harness_us, "bare_us": bare_us, "adds_us": harness_us - bare_us, "steps_per_epoch": steps}


def measure_tree(source: Path, rounds: int) -> dict:
    """Both figures of the src/ at `source`, each from fresh processes."""
    environment = {**os.environ, "PYTHONPATH": str(source), "OMP_NUM_THREADS": "1"}
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "speed.json"
        subprocess.run(
            [sys.executable, str(REPO / "benchmarks" / "workload_speed.py"), "--skip-default-runs"]
            + ["--repeats", str(rounds), "--out", str(out)],
            env=environment,
            cwd=REPO,
            check=True,
            capture_output=True,
        )
        speed = json.loads(out.read_text())["workloads"]
    overhead = {}
    for shape in SHAPES:
        child = subprocess.run(
            [sys.executable, __file__, "--overhead-child", shape, "--rounds", str(rounds)],
            env=environment,
            cwd=REPO,
            check=True,
            capture_output=True,
            text=True,
        )
        overhead[shape] = json.loads(child.stdout.strip().splitlines()[-1])
    return {
        "ratio": {name: speed[name]["harness_time_over_plain"] for name in WORKLOADS},
        "overhead": overhead,
        "load_before": load,
        "load_after": os.getloadavg()[0],
    }


def archived_source(commit: str, folder: Path) -> Path:
    """`commit`'s src/ unpacked under `folder` (git archive: the checkout is left as it is)."""
    archive = subprocess.run(["git", "archive", commit, "src"], cwd=REPO, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder / "src"


def git_name(*arguments: str) -> str:
    return subprocess.run(["git", *arguments], cwd=REPO, check=True, capture_output=True, text=True).stdout.strip()


def measure(args: argparse.Namespace) -> dict:
    import torch

    from optbench.training.provenance import processor_and_cores  # this tree's, not the measured src/'s

    after = git_name("rev-parse", "--short=8", "HEAD")
    after += " with uncommitted changes" if git_name("status", "--short", "--untracked-files=no") else ""
    pairs = []
    with tempfile.TemporaryDirectory() as folder:
        trees = {"before": archived_source(args.before, Path(folder)), "after": REPO / "src"}
        for number in range(args.pairs):
            order = ("before", "after") if number % 2 == 0 else ("after", "before")
            pair = {name: measure_tree(trees[name], args.rounds) for name in order}
            pairs.append({name: pair[name] for name in ("before", "after")})
            print(f"pair {number + 1}: {json.dumps(pairs[-1])}", file=sys.stderr)
    return {
        "command": " ".join(["python benchmarks/step_overhead.py", *args.argv]),
        "machine": processor_and_cores(),
        "torch": torch.__version__.split("+")[0],
        "date": time.strftime("%Y-%m-%d"),
        "before": git_name("rev-parse", "--short=8", args.before),
        "after": after,
        "rounds": args.rounds,
        "pairs": pairs,
    }


def over_pairs(figures: dict, side: str, figure) -> tuple[float, float, float]:
    """(median, lowest, highest) over the pairs of `figure(measurement)` for one side."""
    values = [figure(pair[side]) for pair in figures["pairs"]]
    return statistics.median(values), min(values), max(values)


def docs_text(figures: dict) -> str:
    """The table docs/benchmarks.md quotes (tests/test_steps.py checks it is this, from the JSON)."""
    loads = [run[key] for pair in figures["pairs"] for run in pair.values() for key in ("load_before", "load_after")]
    introduction = (
        f"`{figures['command']}` on {figures['machine']} (torch {figures['torch']}, {figures['date']}, 1 thread, "
        f"beside other training: load average {min(loads):.1f}-{max(loads):.1f}). {len(figures['pairs'])} pairs of "
        f"measurements, before and after in turn, the order alternating; each figure the median over the pairs, "
        f"the lowest and highest pair in brackets; a pair's ratio is the median of its {figures['rounds']} "
        f"alternating rounds, a step time the median of {figures['rounds']} epochs:"
    )
    lines = [
        textwrap.fill(introduction, 115, break_long_words=False, break_on_hyphens=False),
        "",
        "| code | MNIST-1D harness / plain | char_lm harness / plain | MNIST-1D step: harness, bare | "
        "the harness adds to it | CIFAR-shaped step (ResNet-18 width 16, batch 128): harness, bare |",
        "|---|---|---|---|---|---|",
    ]
    for side in ("before", "after"):
        ratio = {name: over_pairs(figures, side, lambda run, name=name: run["ratio"][name]) for name in WORKLOADS}
        step = {
            f"{shape}/{key}": over_pairs(figures, side, lambda run, shape=shape, key=key: run["overhead"][shape][key])[
                0
            ]
            for shape in SHAPES
            for key in ("harness_us", "bare_us")
        }
        added = over_pairs(figures, side, lambda run: run["overhead"]["mnist1d"]["adds_us"])
        share = over_pairs(
            figures, side, lambda run: run["overhead"]["mnist1d"]["adds_us"] / run["overhead"]["mnist1d"]["bare_us"]
        )
        lines.append(
            f"| {side} ({figures[side]}) "
            + "".join(f"| {middle:.2f}x ({low:.2f}-{high:.2f}) " for middle, low, high in ratio.values())
            + f"| {step['mnist1d/harness_us']:,.0f} us, {step['mnist1d/bare_us']:,.0f} us "
            f"| {added[0]:,.0f} us ({added[1]:,.0f} to {added[2]:,.0f}), {share[0]:.1%} of the bare step "
            f"| {step['cifar_small/harness_us'] / 1000:,.1f} ms, {step['cifar_small/bare_us'] / 1000:,.1f} ms |"
        )
    return "\n".join(lines)


def with_block(text: str, block: str) -> str:
    """docs/benchmarks.md with the text between its markers replaced by `block`."""
    return readme_blocks.with_block(text, block, BEGIN, END, "docs/benchmarks.md")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", help="the commit to compare this checkout with")
    parser.add_argument("--pairs", type=int, default=3, help="measurements of each side, the order alternating")
    parser.add_argument("--rounds", type=int, default=5, help="each measurement's alternating rounds")
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument("--from-json", type=Path, help="measure nothing: report the figures this file holds")
    parser.add_argument("--docs", action="store_true", help="write the table into docs/benchmarks.md")
    parser.add_argument("--overhead-child", choices=sorted(SHAPES), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.argv = list(argv)
    if args.overhead_child:
        print(json.dumps(overhead_child(args.overhead_child, args.rounds)))
        return 0
    if not args.from_json and not args.before:
        print("error: give --before COMMIT to measure, or --from-json FILE to report a measurement", file=sys.stderr)
        return 2
    figures = json.loads(args.from_json.read_text()) if args.from_json else measure(args)
    print(docs_text(figures))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    if args.docs:
        DOC.write_text(with_block(DOC.read_text(), docs_text(figures)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
