"""Copy the tuning-budget figure and rankings from docs/cross-workload-study/ into README, so no number is typed.

    python scripts/readme_tuning_budget.py           # rewrite the block between the markers in README.md
    python scripts/readme_tuning_budget.py --check   # exit 1 when README's block differs from the docs (tests run it)

The block is read from scripts/tuning_budget.py's tables (tables/tuning_budget_ranks.csv and
tables/tuning_budget_pairs.csv, their columns in formats/aggregate_tables.py): the figure's link, and per
workload the ranking at k = 1, 8 and all its trials (32 on MNIST-1D, 16 on char_lm) with whether any pair's swap
is resolved; a registry workload without a tuning record is named as missing. At most 10 lines.
"""

import sys
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "scripts"))  # readme_blocks, also when a test loads this file by path

import readme_blocks  # noqa: E402

from optbench.formats import aggregate_tables  # noqa: E402
from optbench.registry import workloads  # noqa: E402

README = REPO / "README.md"
STUDY_DOCS = REPO / "docs" / "cross-workload-study"
BEGIN = "<!-- tuning-budget block: written by `python scripts/readme_tuning_budget.py`; do not edit -->"
END = "<!-- end of tuning-budget block -->"
SHOWN_BUDGETS = (1, 8)  # and the largest k each workload reached: all its trials
NAMES = {"sgd": "SGD", "adam": "Adam", "adamw": "AdamW", "lion": "Lion", "muon": "Muon"}


def workload_line(workload: str, ranks: pd.DataFrame, pairs: pd.DataFrame) -> str:
    """'- mnist1d (32 trials each): k=1 Adam > ...; k=8 ...; k=32 ...; 5 pairs swap, none resolved.'"""
    rows = ranks[ranks["workload"] == workload]
    reached = set(rows["k"])
    orders = [
        f"k={k} " + " > ".join(NAMES.get(name, name) for name in rows[rows["k"] == k].sort_values("rank")["optimizer"])
        for k in sorted({*SHOWN_BUDGETS, max(reached, default=1)} & reached)
    ]
    swaps = pairs[(pairs["workload"] == workload) & (pairs["reversal"].fillna("") != "")]
    resolved = swaps[swaps["reversal"] == "resolved"]
    verdict = (
        "no pair swaps"
        if not len(swaps)
        else f"{len(swaps)} pair(s) swap, {len(resolved) or 'none'} resolved"
        + (
            " ("
            + ", ".join(f"{NAMES.get(r.first, r.first)}-{NAMES.get(r.second, r.second)}" for r in resolved.itertuples())
            + ")"
            if len(resolved)
            else ""
        )
    )
    return f"- {workload} ({int(rows['trials'].max())} trials each): {'; '.join(orders)}; {verdict}."


def tuning_budget_block(study_docs: Path = STUDY_DOCS) -> str:
    ranks = aggregate_tables.read(study_docs, aggregate_tables.TUNING_BUDGET_RANKS)
    pairs = aggregate_tables.read(study_docs, aggregate_tables.TUNING_BUDGET_PAIRS)
    present = list(dict.fromkeys(ranks["workload"]))
    missing = [name for name in workloads.NAMES if name not in present]
    lines = [
        "![Tuning-budget curves](docs/cross-workload-study/figures/tuning_budget.png)",
        "",
        "Expected best validation score after k trials (Tang et al.'s unbiased estimator), ranked by it; a swap is "
        "resolved when both ends' 95 % intervals exclude a tie "
        "([method, coverage and tables](docs/cross-workload-study/tuning-budget.md)):",
        "",
        *[workload_line(workload, ranks, pairs) for workload in present],
    ]
    if missing:
        lines.append(f"- No tuning record yet: {', '.join(missing)}.")
    return "\n".join(lines) + "\n"


def with_block(readme_text: str, block: str) -> str:
    return readme_blocks.with_block(readme_text, block, BEGIN, END)


def main(argv: list[str]) -> int:
    return readme_blocks.main_for(
        argv,
        __doc__.splitlines()[0],
        README,
        lambda current: with_block(current, tuning_budget_block()),
        "README's tuning-budget block differs from docs/cross-workload-study/tables: run "
        "python scripts/readme_tuning_budget.py",
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
