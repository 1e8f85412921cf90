"""Copy the validation study's real-versus-simulated table into README from docs/validation-study: no typed number.

    python scripts/readme_validation.py           # rewrite the block between the markers in README.md
    python scripts/readme_validation.py --check   # exit 1 when README's block differs (the tests run this)

The block is read from docs/validation-study/tables/validation.csv (written by scripts/validation_study.py; its
columns in formats/aggregate_tables.py): one row per rule (the verdicts, the Holm pairwise tests, the sequential
rule, each interval, the power function, the seed planner, the fidelity rule's bounds and its two answers), each
showing one of that rule's figures measured on real training with its Monte Carlo interval, beside the figure
simulation (or theory) gives, and whether all of the rule's figures agree. The figure shown is the first that
disagrees, else the one at the most seeds: a rule that fails anywhere shows where.
"""

import sys
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "scripts"))  # readme_blocks, also when a test loads this file by path

import readme_blocks  # noqa: E402

from optbench.analysis.writing.validation_tables import claim_text, percent  # noqa: E402
from optbench.formats import aggregate_tables  # noqa: E402

README = REPO / "README.md"
STUDY_DOCS = REPO / "docs" / "validation-study"
BEGIN = "<!-- validation block: written by `python scripts/readme_validation.py`; do not edit -->"
END = "<!-- end of validation block -->"
# The rules, in the order README lists them: (label, which rows of validation.csv are the rule's).
RULES = (
    ("Verdict, no effect: false supported / rejected", lambda row: row.study == "A/A" and "verdict" in row.rule),
    ("Holm pairwise tests, no effect: any pair", lambda row: "pairwise tests" in row.rule),
    ("Sequential rule, no effect: crossed by look", lambda row: row.rule.startswith("sequential")),
    ("Mean's 95 % interval: coverage", lambda row: row.rule == "mean's 95 % CI"),
    ("Paired difference's 95 % interval: coverage", lambda row: row.rule == "paired difference's 95 % CI"),
    ("Power of a verdict (known effect)", lambda row: row.figure == "power (supported)"),
    ("Seed planner's 80 % power (known effect)", lambda row: row.rule.startswith("planner")),
    ("Fidelity bounds: coverage", lambda row: row.study == "fidelity ladder" and row.figure == "coverage"),
    ("Fidelity order kept: yes", lambda row: row.study == "fidelity ladder" and row.figure.startswith("order")),
    ("Fidelity magnitude: certified", lambda row: row.study == "fidelity ladder" and row.figure.startswith("cert")),
)


def shown_row(rows: pd.DataFrame):
    """The rule's figure README shows: the first that disagrees, else the first at the most seeds."""
    disagreeing = rows[rows["disagrees"].astype(bool)]
    return (disagreeing if len(disagreeing) else rows[rows["n"] == rows["n"].max()]).iloc[0]


def where(row) -> str:
    """What the shown figure is: its figure, the rung for a fidelity row, and n."""
    rung = row.rule[row.rule.rfind("(") + 1 : -1] if row.study == "fidelity ladder" else ""
    return ", ".join(part for part in (row.figure, rung, f"n = {row.n}") if part)


def agreement(rows: pd.DataFrame) -> str:
    disagree = int(rows["disagrees"].astype(bool).sum())
    return f"yes, all {len(rows)}" if not disagree else f"**no**: {disagree} of {len(rows)} disagree"


def validation_block(study_docs: Path = STUDY_DOCS) -> str:
    """The README block: the table, then where it comes from."""
    table = aggregate_tables.read(study_docs, aggregate_tables.VALIDATION)
    rows = [(label, table[[chosen(row) for row in table.itertuples()]]) for label, chosen in RULES]
    lines = [
        "| rule | figure shown | real training [MC 95 %] | simulated / claimed | agrees |",
        "|---|---|---|---|---|",
    ]
    for label, mine in rows:
        if not len(mine):
            continue
        row = shown_row(mine)
        measured = f"{percent(row['measured'])} [{percent(row['mc_low'])}, {percent(row['mc_high'])}]"
        claim = claim_text(row)
        lines.append(f"| {label} | {where(row)} | {measured} | {claim} | {agreement(mine)} |")
    return (
        "\n".join(lines)
        + "\n\nEach row: one of the rule's figures (the first that disagrees, else the one at the most seeds) of all "
        "its rows in [docs/validation-study](docs/validation-study/README.md), where each is explained; written by "
        "`python scripts/readme_validation.py` from its tables/validation.csv.\n"
    )


def with_block(readme_text: str, block: str) -> str:
    """README's text with this script's block replaced by `block`."""
    return readme_blocks.with_block(readme_text, block, BEGIN, END)


def main(argv: list[str]) -> int:
    return readme_blocks.main_for(
        argv,
        __doc__.splitlines()[0],
        README,
        lambda current: with_block(current, validation_block()),
        "README's validation block differs from docs/validation-study/tables: run python scripts/readme_validation.py",
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
