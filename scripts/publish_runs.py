"""Copy a study's run records (not its checkpoints) into a folder that goes in the repository.

    python scripts/publish_runs.py results/cpu-demo docs/cpu-study/runs

A published study keeps, beside its report, every run's record.json, summary.json, metrics.jsonl,
train.log and .hydra/, and the tuning records (tuning-*.json), in the same layout: about 15 KB a run
instead of megabytes of checkpoints. Anyone can then recompute every table and verdict from them
(`python src/aggregate.py docs/cpu-study/runs --out DIR`; the tests do), and a study interrupted
between machines can be put back under results/ and resumed (its finished runs are skipped).
Runs of every status are copied: a diverged or failed run is a result, never dropped. Files already in
the destination are replaced by the source's; nothing else there is removed.
"""

import argparse
import collections
import json
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from optbench import rundir  # noqa: E402

RUN_FILES = (rundir.RECORD_FILE, rundir.SUMMARY_FILE, rundir.METRICS_FILE, rundir.LOG_FILE)
TUNING_RECORDS = "tuning-*.json"


def run_dirs(source: Path, skip: Path) -> list[Path]:
    """Every folder below `source` holding a summary.json, outside `skip` (the destination)."""
    return sorted(path.parent for path in source.rglob(rundir.SUMMARY_FILE)
                  if skip not in path.resolve().parents)


def copy_file(source_file: Path, target_file: Path) -> None:
    target_file.parent.mkdir(parents=True, exist_ok=True)
    with open(source_file, "rb") as reader:
        rundir.write_atomically(target_file, lambda writer: shutil.copyfileobj(reader, writer))


def publish(source: Path, destination: Path) -> collections.Counter:
    """Copy the run records and tuning records of `source` into `destination`; returns runs by status."""
    statuses = collections.Counter()
    skip = destination.resolve()
    for run_dir in run_dirs(source, skip):
        relative = run_dir.relative_to(source)
        files = [run_dir / name for name in RUN_FILES if (run_dir / name).is_file()]
        files += sorted((run_dir / rundir.HYDRA_DIR).glob("*.yaml"))
        for file in files:
            copy_file(file, destination / relative / file.relative_to(run_dir))
        statuses[json.loads((run_dir / rundir.SUMMARY_FILE).read_text()).get("status", "unreadable")] += 1
    for record in source.rglob(TUNING_RECORDS):
        if skip not in record.resolve().parents:
            copy_file(record, destination / record.relative_to(source))
    return statuses


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, help="the study's results folder, e.g. results/cpu-demo")
    parser.add_argument("destination", type=Path, help="where the records go, e.g. docs/cpu-study/runs")
    args = parser.parse_args(argv)
    if not args.source.is_dir():
        print(f"error: {args.source} is not a folder: give the study's results folder (paths.results_dir)",
              file=sys.stderr)
        return 2
    statuses = publish(args.source, args.destination)
    if not statuses:
        print(f"error: no run directories (folders holding {rundir.SUMMARY_FILE}) under {args.source}: "
              f"give the study's results folder", file=sys.stderr)
        return 2
    counts = ", ".join(f"{count} {status}" for status, count in sorted(statuses.items()))
    print(f"{sum(statuses.values())} runs ({counts}) -> {args.destination}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
