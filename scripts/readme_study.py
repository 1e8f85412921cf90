"""Copy the CPU study's tables from docs/cpu-study/ into README, so no number there is typed by hand.

    python scripts/readme_study.py           # rewrite the block between the markers in README.md
    python scripts/readme_study.py --check   # exit 1 when README's block differs from the docs (the tests run this)

The block is read from the aggregator's tables (through optbench/formats/aggregate_tables.py, their schema),
never from the rendered report: a few columns of tables/results.csv (formatted by the aggregator's
display_table) and the one verdict table, tables/verdicts.csv (one row per hypothesis: the sequential decision
where its study ran until decided, else the fixed-design verdict, on the settings of the study that tests it),
with the hypotheses not tested in one line. The full tables and every other output stay in docs/cpu-study/report.md.
"""

import sys
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "scripts"))  # readme_blocks, also when a test loads this file by path

import readme_blocks  # noqa: E402

from optbench.analysis.writing.tables import display_table, to_markdown  # noqa: E402
from optbench.formats import aggregate_tables  # noqa: E402

README = REPO / "README.md"
STUDY_DOCS = REPO / "docs" / "cpu-study"
RESULTS_CSV = STUDY_DOCS / aggregate_tables.RESULTS
VERDICTS_CSV = STUDY_DOCS / aggregate_tables.VERDICTS
BEGIN = "<!-- cpu-study table: written by `python scripts/readme_study.py` from docs/cpu-study; do not edit -->"
END = "<!-- end of cpu-study table -->"
COLUMNS = [
    "setting",
    "optimizer",
    "seeds",
    "test acc @ best val (%)",
    "95% CI (%)",
    "final train loss",
    "not completed",
    "rank",
    "p vs best (Holm)",
]
NOT_TESTED = aggregate_tables.NOT_TESTED


def table_markdown(results_csv: Path = RESULTS_CSV) -> str:
    table = aggregate_tables.read_file(results_csv, aggregate_tables.RESULTS)
    shown = display_table(table, target_acc=0.0)  # the epochs-to-target column is left out below
    shown.insert(0, "setting", table["setting"].to_numpy())
    return to_markdown(shown[COLUMNS])


def verdicts_markdown(verdicts_csv: Path = VERDICTS_CSV) -> str:
    """One row per hypothesis judged (its verdict, the settings and rule it was judged on, the seeds, why), then
    one line naming those not tested."""
    table = aggregate_tables.read_file(verdicts_csv, aggregate_tables.VERDICTS)
    judged = table[table["verdict"] != NOT_TESTED]
    shown = pd.DataFrame(
        {
            "hypothesis": judged["hypothesis"] + " " + judged["title"],
            "judged on": judged["scope"],
            "verdict": "**" + judged["verdict"].str.upper() + "**",
            "rule": judged["rule"],
            "seeds": judged["seeds"],
            "why": judged["why"],
        }
    )
    lines = to_markdown(shown)
    untested = table[table["verdict"] == NOT_TESTED]
    if len(untested):
        named = "; ".join(f"{row.hypothesis} ({row.why})" for row in untested.itertuples())
        lines += f"\nNot judged here: {named}.\n"
    return lines


def study_block() -> str:
    return (
        table_markdown() + "\nHypotheses (experiments/hypotheses/), one verdict each, as the report gives them "
        "(`tables/verdicts.csv`):\n\n" + verdicts_markdown()
    )


def with_block(readme_text: str, block: str) -> str:
    """README's text with this script's block replaced by `block`."""
    return readme_blocks.with_block(readme_text, block, BEGIN, END)


def main(argv: list[str]) -> int:
    return readme_blocks.main_for(
        argv,
        __doc__.splitlines()[0],
        README,
        lambda current: with_block(current, study_block()),
        "README's cpu-study block differs from docs/cpu-study (tables/results.csv, tables/verdicts.csv): "
        "run python scripts/readme_study.py",
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
