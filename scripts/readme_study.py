"""Copy the CPU study's results table from docs/cpu-study/ into README, so no number there is typed by hand.

    python scripts/readme_study.py           # rewrite the block between the markers in README.md
    python scripts/readme_study.py --check   # exit 1 when README's block differs from the docs (the tests run this)

The block is a few columns of the aggregator's own results table (tables/results.csv, formatted by the
aggregator's display_table), the hypotheses' verdict table as report.md gives it, and the final decision
of each hypothesis a study run until decided took (its decision record in docs/cpu-study/runs); the full
tables and every other output stay in docs/cpu-study/report.md.
"""

import argparse
import sys
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from optbench.formats import decision_record  # noqa: E402
from optbench.analysis.report import decided_over  # noqa: E402
from optbench.analysis.tables import display_table, to_markdown  # noqa: E402

README = REPO / "README.md"
STUDY_DOCS = REPO / "docs" / "cpu-study"
RESULTS_CSV = STUDY_DOCS / "tables" / "results.csv"
REPORT = STUDY_DOCS / "report.md"
PUBLISHED_RUNS = STUDY_DOCS / "runs"
VERDICTS_HEADING = "## Hypotheses"
BEGIN = "<!-- cpu-study table: written by `python scripts/readme_study.py` from docs/cpu-study; do not edit -->"
END = "<!-- end of cpu-study table -->"
COLUMNS = ["setting", "optimizer", "seeds", "test acc @ best val (%)", "95% CI (%)", "final train loss",
           "not completed", "rank", "p vs best (Holm)"]


def table_markdown(results_csv: Path = RESULTS_CSV) -> str:
    table = pd.read_csv(results_csv)
    shown = display_table(table, target_acc=0.0)   # the epochs-to-target column is left out below
    shown.insert(0, "setting", table["setting"].to_numpy())
    return to_markdown(shown[COLUMNS])


def verdicts_markdown(report: Path = REPORT) -> str:
    """The first table under report.md's Hypotheses heading: one row per hypothesis, its verdict and why."""
    lines = report.read_text().splitlines()
    if VERDICTS_HEADING not in lines:
        raise ValueError(f"{report} has no {VERDICTS_HEADING!r} section: aggregate with the hypotheses folder")
    after = lines[lines.index(VERDICTS_HEADING) + 1:]
    start = next(index for index, line in enumerate(after) if line.startswith("|"))
    end = next((index for index, line in enumerate(after[start:], start) if not line.startswith("|")), len(after))
    return "\n".join(after[start:end]) + "\n"


def decisions_markdown(runs: Path = PUBLISHED_RUNS) -> str:
    """One row per hypothesis of each study run until decided: its final decision and the seeds it spent."""
    rows = []
    for path in decision_record.find_records(runs):
        record = decision_record.read(path)
        rows += [{"study": record["study"], "hypothesis": name, "settings": decided_over(entry),
                  "decision": f"**{entry['decision'].upper()}**", "seeds spent": entry["seeds"], "why": entry["reason"]}
                 for name, entry in sorted(decision_record.stopped(record).items())]
    return to_markdown(pd.DataFrame(rows)) + "\n" if rows else ""


def study_block() -> str:
    block = table_markdown() + "\nHypotheses (experiments/hypotheses/), as the report judges them at this scale:\n\n" + \
        verdicts_markdown()
    decided = decisions_markdown()
    if decided:
        block += "\nDecided by adding seeds until decided (the sequential rule, O'Brien-Fleming alpha spending):\n\n" + decided
    return block


def with_block(readme_text: str, block: str) -> str:
    """README's text with the lines between the markers replaced by `block`."""
    start, end = readme_text.find(BEGIN), readme_text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"README.md lacks the markers {BEGIN!r} ... {END!r}: put them where the table goes")
    return readme_text[:start + len(BEGIN)] + "\n" + block.strip() + "\n" + readme_text[end:]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 when README differs")
    args = parser.parse_args(argv)
    current = README.read_text()
    try:
        wanted = with_block(current, study_block())
    except (ValueError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.check:
        if wanted != current:
            print("README's cpu-study block differs from docs/cpu-study (tables/results.csv, report.md): "
                  "run python scripts/readme_study.py", file=sys.stderr)
            return 1
        return 0
    if wanted != current:
        README.write_text(wanted)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
