"""Tuning-budget curves: each optimizer's expected best validation score after k tuning trials, per workload.

    python scripts/tuning_budget.py docs/cpu-study/runs docs/cross-workload-study/runs --out docs/cross-workload-study

Reads every tuning record (`tuning-<study>.json`) below the RUNS_DIR folders (analysis/judging/tuning_budget.py:
each trial's score on the trial seed; a diverged or failed trial at its recorded score, else chance), computes
Tang et al.'s unbiased E_k for k = 1..n with bias-corrected bootstrap intervals (analysis/statistics/
expected_max.py), simulates those intervals' coverage in the hard case (expected_max_coverage.py), and writes
under OUT: tables/tuning_budget.csv/.md (the curves), tables/tuning_budget_ranks.csv/.md (the ranking at k = 1, 4,
8, 16, 32), tables/tuning_budget_pairs.csv (pairs whose order swaps), tables/tuning_budget_coverage.csv,
figures/tuning_budget.png/.pdf, and the page tuning-budget.md. A registry workload with no tuning record is named
as missing. Fixed generator seeds: the same records give the same files.
"""

import argparse
import shlex
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

import pandas as pd  # noqa: E402

from optbench.analysis.judging.tuning_budget import curve_table, pair_table, rank_table, read_searches  # noqa: E402
from optbench.analysis.statistics.expected_max_coverage import (  # noqa: E402
    HARD_CASE,
    describe,
    simulate_coverage,
)
from optbench.analysis.writing.figures.style import close  # noqa: E402
from optbench.analysis.writing.figures.tuning_budget import tuning_budget_figure  # noqa: E402
from optbench.analysis.writing.output import OutputDir  # noqa: E402
from optbench.analysis.writing.tables import to_markdown  # noqa: E402
from optbench.analysis.writing.tuning_budget_page import curves_markdown, page, rank_display  # noqa: E402
from optbench.formats import aggregate_tables  # noqa: E402

PAGE = "tuning-budget.md"
FIGURE = "figures/tuning_budget"
COVERAGE_TRIALS = (8, 16, 32)  # CIFAR's, char_lm's and MNIST-1D's trials per optimizer
COVERAGE_REPETITIONS = 2000
COVERAGE_RESAMPLES = 2000  # per simulated search (the tables use 20,000)


def coverage_table(repetitions: int, trials: tuple[int, ...] = COVERAGE_TRIALS) -> pd.DataFrame:
    rows = []
    for n in trials:
        for result in simulate_coverage(HARD_CASE, n, repetitions, seed=n, resamples=COVERAGE_RESAMPLES):
            rows.append(
                {
                    "trials": n,
                    "k": result.k,
                    "truth": result.truth,
                    "coverage": result.coverage.value,
                    "mc_low": result.coverage.low,
                    "mc_high": result.coverage.high,
                    "bias": result.bias,
                    "bias_se": result.bias_se,
                    "with_replacement_bias": result.with_replacement_bias,
                    "with_replacement_bias_se": result.with_replacement_bias_se,
                    "mean_width": result.mean_width,
                    "repetitions": repetitions,
                }
            )
    return pd.DataFrame(rows)


def shown_path(path: Path) -> str:
    """A path as the page shows it: relative to the repository when inside it."""
    resolved = Path(path).resolve()
    return resolved.relative_to(REPO).as_posix() if resolved.is_relative_to(REPO) else str(path)


def command_text(argv: list[str]) -> str:
    return "python scripts/tuning_budget.py " + " ".join(shlex.quote(arg) for arg in argv)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs_dirs", type=Path, nargs="+", metavar="RUNS_DIR", help="folders holding tuning records")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "cross-workload-study")
    parser.add_argument(
        "--coverage-repetitions",
        type=int,
        default=COVERAGE_REPETITIONS,
        help=f"simulated searches per trial count (default {COVERAGE_REPETITIONS})",
    )
    args = parser.parse_args(argv)
    not_folders = [str(folder) for folder in args.runs_dirs if not folder.is_dir()]
    if not_folders:
        print(f"error: {', '.join(not_folders)}: not a folder; give folders holding tuning-*.json", file=sys.stderr)
        return 2
    try:
        found = read_searches(args.runs_dirs)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if not found.searches:
        folders = ", ".join(str(folder) for folder in args.runs_dirs)
        print(
            f"error: no readable tuning-*.json below {folders}; give the folders the tuning studies wrote",
            file=sys.stderr,
        )
        return 2
    curves = curve_table(found.searches)
    ranks = rank_table(curves)
    pairs = pair_table(found.searches, ranks)
    coverage = coverage_table(args.coverage_repetitions)
    sources = sorted({f"`{shown_path(Path(search.source))}` ({search.workload})" for search in found.searches})
    missing = found.missing()
    write_outputs(args.out, curves, ranks, pairs, coverage)
    text = page(
        sources, missing, found.warnings, curves, ranks, pairs, coverage, describe(HARD_CASE), command_text(argv)
    )
    OutputDir(args.out).write_text(PAGE, text)
    for warning in found.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(f"wrote {args.out / PAGE}" + (f"; missing: {', '.join(missing)}" if missing else ""))
    return 0


def write_outputs(
    out_dir: Path, curves: pd.DataFrame, ranks: pd.DataFrame, pairs: pd.DataFrame, coverage: pd.DataFrame
) -> None:
    out = OutputDir(out_dir)
    for table, frame in (
        (aggregate_tables.TUNING_BUDGET, curves),
        (aggregate_tables.TUNING_BUDGET_RANKS, ranks),
        (aggregate_tables.TUNING_BUDGET_PAIRS, pairs),
        (aggregate_tables.TUNING_BUDGET_COVERAGE, coverage),
    ):
        out.write_text(table, aggregate_tables.csv_text(table, frame))
    out.write_text("tables/tuning_budget.md", curves_markdown(curves))
    out.write_text("tables/tuning_budget_ranks.md", to_markdown(rank_display(ranks, curves)))
    figure = tuning_budget_figure(curves)
    out.write_figure(figure, FIGURE)
    close(figure)


if __name__ == "__main__":
    sys.exit(main())
