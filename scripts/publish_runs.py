"""Copy a study's run records (not its checkpoints) into a folder that goes in the repository.

    python scripts/publish_runs.py results/cpu-demo docs/cpu-study/runs

A published study keeps, beside its report, every run's record.json, summary.json, metrics.jsonl,
predictions.npz (the mirror's small files), train.log and .hydra/, the tuning records (tuning-*.json) and
the decision records of studies run until decided (sequential-*.json), in the same layout: about 15 KB a
run, plus 10 to 20 KB of test predictions for 10,000 test images
instead of megabytes of checkpoints. Anyone can then recompute every table and verdict from them
(`python src/aggregate.py docs/cpu-study/runs --out DIR`; the tests do), and a study interrupted
between machines can be put back under results/ and resumed (its finished runs are skipped).
Runs of every status are copied: a diverged or failed run is a result, never dropped. Files already in
the destination are replaced by the source's; nothing else there is removed.
"""

import argparse
import collections
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from optbench import rundir  # noqa: E402
from optbench.analysis.load import find_run_dirs  # noqa: E402
from optbench.errors import DamagedRunFile  # noqa: E402
from optbench.formats import decision_record, run_summary, tuning_record  # noqa: E402
from optbench.training.mirror import copy_atomically, copy_small_files  # noqa: E402  the mirror's copy: same files


def status_of(run_dir: Path) -> str:
    try:
        summary = run_summary.read(run_dir)
    except DamagedRunFile:
        return "unreadable"
    return summary.status if summary else "no summary"


def publish(source: Path, destination: Path) -> collections.Counter[str]:
    """Copy the run records and tuning records of `source` into `destination`; returns runs by status."""
    statuses: collections.Counter[str] = collections.Counter()
    for run_dir in find_run_dirs(source, skip=destination):
        target = destination / run_dir.relative_to(source)
        target.mkdir(parents=True, exist_ok=True)
        copy_small_files(run_dir, target)  # record, metrics, log, .hydra/
        if (run_dir / rundir.SUMMARY_FILE).is_file():
            copy_atomically(run_dir / rundir.SUMMARY_FILE, target / rundir.SUMMARY_FILE)
        statuses[status_of(run_dir)] += 1
    for record in [
        *tuning_record.find_records(source, skip=destination),
        *decision_record.find_records(source, skip=destination),
    ]:
        target = destination / record.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        copy_atomically(record, target)
    return statuses


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, help="the study's results folder, e.g. results/cpu-demo")
    parser.add_argument("destination", type=Path, help="where the records go, e.g. docs/cpu-study/runs")
    args = parser.parse_args(argv)
    if not args.source.is_dir():
        print(
            f"error: {args.source} is not a folder: give the study's results folder (paths.results_dir)",
            file=sys.stderr,
        )
        return 2
    statuses = publish(args.source, args.destination)
    if not statuses:
        print(
            f"error: no run directories (folders holding {rundir.RECORD_FILE} or {rundir.SUMMARY_FILE}) under "
            f"{args.source}: give the study's results folder",
            file=sys.stderr,
        )
        return 2
    counts = ", ".join(f"{count} {status}" for status, count in sorted(statuses.items()))
    print(f"{sum(statuses.values())} runs ({counts}) -> {args.destination}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
