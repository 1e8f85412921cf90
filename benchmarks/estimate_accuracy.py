"""A study's estimate against what its training took: a small MNIST-1D study launched twice into a temporary folder.

Launch 1 has no runs of its shape on disk and an empty rate cache: its estimate comes from timed steps and a
probe sweep (studies/probe.py). Launch 2 is the same study relaunched with more seeds: its first seeds are finished,
so it prices only the new ones, from launch 1's runs on disk. Each launch is `python src/study.py STUDY` in its own
process, as a user runs it (OPTBENCH_CACHE_DIR in the temporary folder); its estimate is read back from
estimate-<study>.json (formats/study_estimate.py) and set beside what the runs it priced took, their wall time and
start-up, as `--status` does (studies/estimate_record.compared). Also measured, to say why timed steps alone fell
short: the steps timed at torch's default thread count and at the runs' one thread (against the rate the runs then
trained at), and where each launch's runs spent their time (start-up, records outside the epochs, the epochs).

Run (from the repository root; about 4 min on a 2-core CPU, 3 pairs of launches, every run on 1 thread; --docs
writes the figures' paragraph into docs/studies.md, which tests/test_study_estimate.py checks against the JSON):
    .venv/bin/python benchmarks/estimate_accuracy.py --json benchmarks/results/estimate-accuracy.json --docs
Smoke check: --repeats 1 --seeds 1 --epochs 2 --optimizers sgd (about 1 min).
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

import yaml

from optbench.formats import metrics_log, run_summary, study_estimate
from optbench.studies import estimate_record
from optbench.training.provenance import processor_and_cores

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))  # readme_blocks

import readme_blocks  # noqa: E402

DOC = REPO / "docs" / "studies.md"
BEGIN = "<!-- estimate accuracy: written by benchmarks/estimate_accuracy.py --docs; a test checks it -->"
END = "<!-- end of estimate accuracy -->"
STUDY_ID = "estimate_accuracy"
THREADS = 1  # device_policy.threads of every run: the published MNIST-1D studies' setting


def study_file(path: Path, results: Path, args: argparse.Namespace, seeds: int) -> Path:
    """The study: every optimizer of --optimizers on `seeds` seeds, --epochs epochs of MNIST-1D, into `results`."""
    study = {
        "id": STUDY_ID,
        "statement": "a small MNIST-1D study whose estimate is checked against what it took",
        "grid": {
            "optimizer": args.optimizers,
            "seed": list(range(seeds)),
            "dataset": ["mnist1d"],
            "noise": [{"name": "none"}],
            "epochs": args.epochs,
        },
        "overrides": [
            "workload=mnist1d",
            f"device_policy.threads={THREADS}",
            f"paths.results_dir={results}",
            "train.progress_bar=false",
        ],
    }
    path.write_text(yaml.safe_dump(study))
    return path


def launch(study: Path, environment: dict) -> dict:
    """One `python src/study.py STUDY`: its wall time, the load before it, and the lines its estimate printed."""
    load = os.getloadavg()[0]
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "src/study.py", str(study)], cwd=REPO, env=environment, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"error: the study launch failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
    lines = [line for line in done.stdout.splitlines() if line.startswith(("estimat", "  from ", "  measured on "))]
    return {"launch_wall_s": time.perf_counter() - started, "load_before": load, "estimate_lines": lines}


def compared(results: Path, index: int) -> dict:
    """Launch `index`'s estimate beside what its finished runs took (estimate_record.compared, as --status)."""
    kept = study_estimate.read(study_estimate.path_for(results, STUDY_ID))
    assert kept is not None, "the launch recorded no estimate"
    made = kept.launches[index]
    took = estimate_record.compared(made, results)
    return {
        "how": made.how,
        "runs_priced": len(made.runs),
        "runs_finished": took.finished,
        "estimate_s": took.predicted_s,
        "actual_s": took.actual_s,
        "ratio": took.actual_s / took.predicted_s,
    }


def where_the_time_went(results: Path, run_dirs: list[str]) -> dict:
    """A launch's runs: start-up (a relaunch's includes the finished runs its sweep passed over), their wall time
    outside the epochs (records, checkpoints), the epochs, and every epoch's training images/s."""
    startup = outside = epochs = 0.0
    rates = []
    for run_dir in run_dirs:
        summary = run_summary.read(results / run_dir)
        records = metrics_log.read(results / run_dir)[0]
        assert summary is not None, f"{run_dir} has no summary"
        epoch_s = sum(float(record[metrics_log.TIME_S]) for record in records)
        startup += float(summary.startup_s or 0.0)
        outside += float(summary.wall_time_s or 0.0) - epoch_s
        epochs += epoch_s
        rates += [float(record[metrics_log.TRAIN_IMAGES_PER_S]) for record in records]
    return {"startup_s": startup, "outside_epochs_s": outside, "epochs_s": epochs, "train_images_per_s": rates}


def timed_steps() -> dict:
    """The estimate's 5 timed steps of MNIST-1D's CNN, at torch's default thread count and at the runs' one."""
    import torch

    from optbench.device.fastest import images_per_second
    from optbench.studies.estimate import torch_threads
    from optbench.training.timing import timed_model

    model = timed_model("cnn1d", 25, 10, 100, 1, 40)
    default = torch.get_num_threads()
    with torch_threads(0):
        at_default = images_per_second(torch.device("cpu"), model)
    with torch_threads(THREADS):
        at_runs = images_per_second(torch.device("cpu"), model)
    return {"default_threads": default, "at_default_threads": at_default, "at_run_threads": at_runs}


def measure_pair(args: argparse.Namespace) -> dict:
    """The fresh launch and the relaunch, in a new temporary folder with its own empty cache."""
    with tempfile.TemporaryDirectory(prefix="estimate-accuracy-") as folder:
        root = Path(folder)
        results, study = root / "results", root / "study.yaml"
        environment = {**os.environ, "OPTBENCH_CACHE_DIR": str(root / "cache")}  # nothing cached: it times and probes
        steps = timed_steps()
        fresh = launch(study_file(study, results, args, args.seeds), environment) | compared(results, 0)
        relaunched = launch(study_file(study, results, args, 2 * args.seeds), environment) | compared(results, 1)
        kept = study_estimate.read(study_estimate.path_for(results, STUDY_ID))
        assert kept is not None
        fresh["time"], relaunched["time"] = (
            where_the_time_went(results, [run.run_dir for run in made.runs]) for made in kept.launches
        )
    steps["runs_median_train_images_per_s"] = statistics.median(fresh["time"]["train_images_per_s"])
    for made in (fresh, relaunched):
        del made["time"]["train_images_per_s"]
    return {"fresh": fresh, "relaunched": relaunched, "timed_steps": steps}


def measure(args: argparse.Namespace) -> dict:
    return {
        "command": " ".join(["python benchmarks/estimate_accuracy.py", *args.argv]),
        "machine": processor_and_cores(),
        "date": time.strftime("%Y-%m-%d"),
        "study": {"optimizers": args.optimizers, "seeds": args.seeds, "epochs": args.epochs, "threads": THREADS},
        "pairs": [measure_pair(args) for _ in range(args.repeats)],
    }


def report(figures: dict) -> str:
    lines = [f"{figures['machine']}, {figures['date']}: {figures['command']}"]
    for number, pair in enumerate(figures["pairs"], 1):
        for label, key in (
            ("fresh: no runs of its shape on disk", "fresh"),
            ("relaunched: its shape on disk", "relaunched"),
        ):
            launch, spent = pair[key], pair[key]["time"]
            lines.append(
                f"{number} {label}: estimate {launch['estimate_s']:.1f} s for {launch['runs_finished']} runs, took "
                f"{launch['actual_s']:.1f} s (wall time and start-up), {launch['ratio']:.2f} x the estimate; from "
                f"{launch['how']}; the launch took {launch['launch_wall_s']:.0f} s (load {launch['load_before']:.1f})"
            )
            lines.append(
                f"  its runs: {spent['startup_s']:.1f} s start-up, {spent['outside_epochs_s']:.1f} s outside the "
                f"epochs, {spent['epochs_s']:.1f} s in them"
            )
        steps = pair["timed_steps"]
        lines.append(
            f"  timed steps: {steps['at_default_threads']:.0f} images/s at torch's default {steps['default_threads']} "
            f"threads, {steps['at_run_threads']:.0f} at the runs' {THREADS}; the runs trained at "
            f"{steps['runs_median_train_images_per_s']:.0f} (median over their epochs)"
        )
    return "\n".join([*lines, docs_text(figures)])


def docs_text(figures: dict) -> str:
    """The paragraph docs/studies.md quotes (tests/test_study_estimate.py checks it is this, from the JSON)."""
    pairs, study = figures["pairs"], figures["study"]
    ratios = {key: ", ".join(f"{pair[key]['ratio']:.2f}" for pair in pairs) for key in ("fresh", "relaunched")}
    steps = [pair["timed_steps"] for pair in pairs]
    span = lambda key: f"{min(s[key] for s in steps):,.0f}-{max(s[key] for s in steps):,.0f}"  # noqa: E731
    startup = [pair["fresh"]["time"]["startup_s"] / pair["fresh"]["actual_s"] for pair in pairs]
    epochs = [pair["fresh"]["time"]["epochs_s"] / pair["fresh"]["actual_s"] for pair in pairs]
    return (
        f"`{figures['command']}` on {figures['machine']} ({figures['date']}, beside other training; "
        f"{len(study['optimizers'])} optimizers x {study['seeds']} seeds x {study['epochs']} epochs of MNIST-1D on "
        f"{study['threads']} thread, launched with nothing on disk, then relaunched with twice the seeds, "
        f"{len(pairs)} times): the fresh launch's runs took {ratios['fresh']} x its estimate, the relaunch's "
        f"{ratios['relaunched']} x. The fresh launch's runs spent {min(startup):.0%}-{max(startup):.0%} of their "
        f"time starting up and {min(epochs):.0%}-{max(epochs):.0%} in their epochs; steps timed at torch's default "
        f"{steps[0]['default_threads']} threads gave {span('at_default_threads')} images/s, at the runs' one "
        f"{span('at_run_threads')}, and the runs trained at {span('runs_median_train_images_per_s')} (medians)."
    )


def with_block(text: str, block: str) -> str:
    """docs/studies.md with the paragraph between its markers replaced by `block`, wrapped at 115 columns."""
    wrapped = textwrap.fill(block.strip(), 115, break_long_words=False, break_on_hyphens=False)
    return readme_blocks.with_block(text, wrapped, BEGIN, END, "docs/studies.md")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--optimizers", nargs="+", default=["sgd", "adam", "lion"])
    parser.add_argument("--seeds", type=int, default=3, help="launch 1's seeds per optimizer; launch 2 doubles them")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3, help="fresh launch and relaunch pairs, each in a new folder")
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument("--from-json", type=Path, help="measure nothing: report the figures this file holds")
    parser.add_argument("--docs", action="store_true", help="write the figures' paragraph into docs/studies.md")
    args = parser.parse_args(argv)
    args.argv = list(argv)
    figures = json.loads(args.from_json.read_text()) if args.from_json else measure(args)
    print(report(figures))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    if args.docs:
        DOC.write_text(with_block(DOC.read_text(), docs_text(figures)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
