"""Copy the cross-workload study's rank matrix and which claims carry across workloads into README, so no number is
typed.

    python scripts/readme_cross_workload.py           # rewrite the block between the markers in README.md
    python scripts/readme_cross_workload.py --check   # exit 1 when README's block differs from the docs (tests run it)

The block is read from the report's tables in docs/cross-workload-study/tables (written by
scripts/cross_workload_study.py and scripts/tau_coverage.py, read through formats/aggregate_tables.py): parts.csv
(which workloads have results), ranking.csv (each optimizer's rank and mean per workload), tau.csv (Kendall's tau
between workloads with its interval), tau_coverage.csv (that interval's simulated coverage), profile_score.csv (the
AlgoPerf score) and claims.csv (each claim on every workload). A workload without results reads "not yet".
"""

import math
import sys
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "scripts"))  # readme_blocks, also when a test loads this file by path

import readme_blocks  # noqa: E402

from optbench.formats import aggregate_tables  # noqa: E402

README = REPO / "README.md"
STUDY_DOCS = REPO / "docs" / "cross-workload-study"
BEGIN = (
    "<!-- cross-workload block: written by `python scripts/readme_cross_workload.py` from docs/cross-workload-study; "
    "do not edit -->"
)
END = "<!-- end of cross-workload block -->"
NAMES = {"sgd": "SGD", "adam": "Adam", "adamw": "AdamW", "lion": "Lion", "muon": "Muon"}
PROJECTION = "projection"  # tau_coverage.csv's interval that the report prints starts with this word


def cell(row: pd.Series | None) -> str:
    """'2 (71.8 %)' for an accuracy, '1 (1.523)' for a loss; 'not yet' without a rank."""
    if row is None or not math.isfinite(row["rank"]):
        return "not yet"
    value = f"{100 * row['mean']:.1f} %" if row["higher_is_better"] else f"{row['mean']:.3f}"
    return f"{row['rank']:g} ({value})"


def rank_table(parts: pd.DataFrame, ranking: pd.DataFrame) -> str:
    workloads = list(parts["workload"])
    units = {
        workload: "test acc" if bool(rows["higher_is_better"].iloc[0]) else "val loss"
        for workload, rows in ranking.groupby("workload")
    }
    header = [f"{workload} ({units[workload]})" if workload in units else workload for workload in workloads]
    lines = ["| rank (mean) | " + " | ".join(header) + " |", "|---" * (len(workloads) + 1) + "|"]
    indexed = {(row.workload, row.optimizer): row for _, row in ranking.iterrows() for row in [row]}
    optimizers = list(dict.fromkeys(ranking["optimizer"])) or list(NAMES)
    for name in optimizers:
        cells = [cell(indexed.get((workload, name))) for workload in workloads]
        lines.append(f"| {NAMES.get(name, name)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def tau_sentence(tau: pd.DataFrame, coverage: pd.DataFrame | None) -> str:
    if not len(tau):
        return "Kendall's tau between workloads' rankings: not yet (fewer than two workloads ranked)."
    pairs = "; ".join(
        f"{row.workload_a} vs {row.workload_b} {row.tau:.2f} [{row.low:.2f}, {row.high:.2f}]"
        for row in tau.itertuples()
    )
    measured = ""
    if coverage is not None:
        mine = coverage[coverage["interval"].str.startswith(PROJECTION)]
        worst = mine.loc[mine["coverage"].idxmin()]
        measured = (
            f"; simulated in the hard cases (5 optimizers, 6 seeds, near ties), its lowest coverage is "
            f"{100 * worst['coverage']:.1f} % [{100 * worst['mc_low']:.1f}, {100 * worst['mc_high']:.1f}]"
        )
    return f"Kendall's tau between workloads' rankings: {pairs} (95 % projection intervals{measured})."


def claims_sentence(claims: pd.DataFrame) -> str:
    parts = [f"{row.claim} {row.title}: **{row.every_workload}** ({row.why})" for row in claims.itertuples()]
    return "On every workload? " + "; ".join(parts) + "."


def score_sentence(profile: pd.DataFrame, parts: pd.DataFrame) -> str:
    ranked = parts[parts["status"] == "ranked"]["workload"].tolist()
    scored = profile.dropna(subset=["score"]).sort_values("score", ascending=False, kind="stable")
    scores = ", ".join(f"{NAMES.get(row.optimizer, row.optimizer)} {row.score:.2f}" for row in scored.itertuples())
    return (
        "Time to target in steps, AlgoPerf score (1 = fastest everywhere, r_max 4) over "
        f"{', '.join(ranked) or 'none'}: {scores or 'not yet'}."
    )


def cross_workload_block(study_docs: Path = STUDY_DOCS) -> str:
    """The block from the report's tables in `study_docs`."""
    parts = aggregate_tables.read(study_docs, aggregate_tables.CROSS_PARTS)
    ranking = aggregate_tables.read(study_docs, aggregate_tables.CROSS_RANKING)
    tau = aggregate_tables.read(study_docs, aggregate_tables.CROSS_TAU)
    claims = aggregate_tables.read(study_docs, aggregate_tables.CROSS_CLAIMS)
    profile = aggregate_tables.read(study_docs, aggregate_tables.CROSS_PROFILE)
    coverage_path = study_docs / aggregate_tables.TAU_COVERAGE
    coverage = aggregate_tables.read(study_docs, aggregate_tables.TAU_COVERAGE) if coverage_path.is_file() else None
    missing = parts[parts["status"] != "ranked"]
    lines = [
        rank_table(parts, ranking),
        "",
        tau_sentence(tau, coverage),
        claims_sentence(claims),
        score_sentence(profile, parts),
    ]
    if len(missing):
        lines.append(
            "Not yet ranked: "
            + "; ".join(f"{row.workload} ({row.study}: {row.status})" for row in missing.itertuples())
            + " ([report](docs/cross-workload-study/report.md))."
        )
    return "\n".join(lines) + "\n"


def with_block(readme_text: str, block: str) -> str:
    """README's text with this script's block replaced by `block`."""
    return readme_blocks.with_block(readme_text, block, BEGIN, END)


def main(argv: list[str]) -> int:
    return readme_blocks.main_for(
        argv,
        __doc__.splitlines()[0],
        README,
        lambda current: with_block(current, cross_workload_block()),
        "README's cross-workload block differs from docs/cross-workload-study/tables: run "
        "python scripts/readme_cross_workload.py",
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
