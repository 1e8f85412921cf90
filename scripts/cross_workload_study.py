"""The cross-workload report: does the optimizers' ranking carry across workloads? Tables, figure and report.md.

    python scripts/cross_workload_study.py docs/cross-workload-study/runs --out docs/cross-workload-study

RUNS_DIR holds every workload's runs side by side (published with scripts/publish_runs.py), with their tuning
records. The parts file (experiments/cross-workload/parts.yaml) names each workload's study (and rung); each part's
runs are those of its study at its rung, tuned by its tuning study (analysis/judging/cross_parts.py). Writes into OUT:
tables/*.csv (their columns in formats/aggregate_tables.py) and *.md, figures/time_to_target_profile.{png,pdf} and
report.md: each workload's ranking with Holm-adjusted pairwise tests, the matrix of ranks, Kendall's tau between
workloads with its interval, time to target in steps with its performance profile and score, which claims hold on
every workload, and the device-hours. A workload without runs yet is named as missing. Bad input: one `error:` line,
exit status 2, nothing written.
"""

import argparse
import shlex
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from optbench.analysis.judging.cross_workload import judge_cross  # noqa: E402
from optbench.analysis.writing.cross_workload_report import write_report  # noqa: E402
from optbench.errors import ConfigError  # noqa: E402
from optbench.specs.cross_workload_spec import PARTS_FILE, load_parts  # noqa: E402
from optbench.specs.study_spec import EXPERIMENTS_DIR  # noqa: E402

DEFAULT_OUT = REPO / "docs" / "cross-workload-study"


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs_dir", type=Path, help="the folder holding every workload's runs")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"default {DEFAULT_OUT.relative_to(REPO)}")
    parser.add_argument("--parts", type=Path, default=PARTS_FILE, help="the parts file (default: the study's)")
    parser.add_argument("--experiments", type=Path, default=EXPERIMENTS_DIR, help="where the parts' studies are")
    parser.add_argument("--no-figures", action="store_true", help="tables and report only")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    command = "python scripts/cross_workload_study.py " + " ".join(
        shlex.quote(str(part)) for part in [args.runs_dir, "--out", args.out]
    )
    try:
        if args.out.exists() and not args.out.is_dir():
            raise ConfigError(f"--out {args.out} is a file: give a folder for the report")
        result = judge_cross(args.runs_dir, load_parts(args.parts), args.experiments)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    written = write_report(result, args.out, command, draw_figures=not args.no_figures)
    for part in result.missing:
        print(f"{part.workload}: missing ({part.missing})")
    print(f"wrote {len(written)} files into {args.out}: report.md, tables/, figures/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
