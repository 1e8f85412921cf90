"""Copy the fidelity ladder's table and its reading from docs/fidelity-study/ into README, so no number is typed.

    python scripts/readme_fidelity.py           # rewrite the block between the markers in README.md
    python scripts/readme_fidelity.py --check   # exit 1 when README's block differs from the docs (the tests run this)

The block is read from the aggregator's tables (through optbench/formats/aggregate_tables.py, their schema), never
from the rendered report: tables/fidelity_agreement.csv (each rung against the top: seeds, orders established /
kept / reversed / undetermined and the answer with its power, the resolution certified and what the seeds certify
with 80 % power, faithful, tau-b and its interval, the training-compute share, the study's resolution and the
planner's seeds for each answer with their simulated power), tables/fidelity.csv (the means per rung, seeds left
out) and, where tuning ran at several budgets, tables/fidelity_tuning.csv (the tuned values per budget and their ratio).
Its reading follows the report's rule: a rung is called faithful only when the table says so, and otherwise the
reading says why none is and what would be.
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
STUDY_DOCS = REPO / "docs" / "fidelity-study"
BEGIN = "<!-- fidelity table: written by `python scripts/readme_fidelity.py` from docs/fidelity-study; do not edit -->"
END = "<!-- end of fidelity table -->"
NAMES = {"sgd": "SGD", "adam": "Adam", "adamw": "AdamW", "lion": "Lion", "muon": "Muon"}


def interval(value: float, low: float, high: float) -> str:
    if not (math.isfinite(low) and math.isfinite(high)):
        return f"{value:.2f}"
    return f"{value:.2f} [{low:.2f}, {high:.2f}]"


def percent(share: float) -> str:
    return f"{100 * share:.0f} %" if math.isfinite(share) else "-"


def table_markdown(agreement: pd.DataFrame) -> str:
    lines = [
        f"| rung | seeds: rung / shared with {top_of(agreement)} | order kept: kept / reversed / undetermined of the "
        "orders the top establishes (Holm) [power] | resolution certified, points [80 % power at these seeds] "
        "| faithful | Kendall's tau-b [95 % CI] | training compute |",
        "|---|---|---|---|---|---|---|",
    ]
    for _, row in agreement.iterrows():
        if row["rung"] == top_of(agreement):
            continue
        lines.append(
            f"| {row['rung']} | {row['rung_seeds']} / {row['shared_seed_list']} | {row['order_kept']}: "
            f"{row['orders_kept']:g} / {row['orders_reversed']:g} / {row['orders_undetermined']:g} of "
            f"{row['established_top']:g} [{percent(row['keep_power'])}] "
            f"| {row['resolution'] * 100:.1f} [{row['design_resolution'] * 100:.1f}] "
            f"| {'yes' if row['faithful'] else 'no'} "
            f"| {interval(row['tau_b'], row['tau_low'], row['tau_high'])} "
            f"| {row['budget_share'] * 100:.0f} % |"
        )
    return "\n".join(lines) + "\n"


def top_of(agreement: pd.DataFrame) -> str:
    """The rung compared against: the one whose tau-b against itself is 1 with no interval (the top row)."""
    return str(agreement.loc[agreement["tau_low"].isna() & (agreement["tau_b"] == 1), "rung"].iloc[-1])


def seeds_phrase(seeds: float) -> str:
    return f"{seeds:g} seeds" if math.isfinite(seeds) else "more than 200 seeds"


def reading(agreement: pd.DataFrame, per_rung: pd.DataFrame) -> str:
    top = top_of(agreement)
    top_row = agreement[agreement["rung"] == top].iloc[0]
    points = top_row["resolution_wanted"] * 100
    lines = [f"At {top} (seeds {top_row['top_seeds']}) the means are {ranking_of(per_rung, top)} %."]
    if top != top_row["planned_top"]:
        lines.append(f"The planned top, {top_row['planned_top']}, is incomplete: the rungs are compared against {top}.")
    faithful = agreement[agreement["faithful"].astype(bool) & (agreement["rung"] != top)]
    below = agreement[agreement["rung"] != top]
    if len(faithful):
        row = faithful.iloc[0]
        lines.append(
            f"The cheapest faithful rung is {row['rung']}: it keeps all {row['established_top']:g} orders the top "
            f"establishes, and its ranking carries to {top} for gaps larger than {row['resolution'] * 100:.1f} points "
            f"(seeds {row['shared_seed_list']})."
        )
    elif top_row["established_top"] == 0:
        lines.append(
            f"No rung can be named faithful at a resolution of {points:g} points: {top} establishes no order after "
            f"Holm (smallest adjusted p {top_row['smallest_p_holm_top']:.2g}), so a cheaper rung has no order to keep."
        )
    else:
        lines.append(f"No rung is named faithful at a resolution of {points:g} points. {answers_sentence(below, top)}")
    if not len(faithful):
        lines.append(plan_sentence(top_row, below, points))
    left_out = per_rung[per_rung["left_out"] > 0]
    for rung, rows in left_out.groupby("rung", sort=False):
        who = ", ".join(f"{NAMES.get(row.arm, row.arm)} ({row.left_out:g})" for row in rows.itertuples())
        lines.append(f"At {rung} the seeds beyond the rung's common set are left out: {who}.")
    return " ".join(lines) + "\n"


def answers_sentence(below: pd.DataFrame, top: str) -> str:
    """Which rungs keep the top's orders, and what each certifies beside what its seeds could certify."""
    keeping = [row.rung for row in below.itertuples() if row.order_kept == "yes"]
    certified = "; ".join(
        f"{row.rung} {row.resolution * 100:.1f} points (its seeds certify an unchanged rung at "
        f"{row.design_resolution * 100:.1f} with 80 % power)"
        for row in below.itertuples()
    )
    kept = (
        f"{', '.join(keeping)} keep{'s' if len(keeping) == 1 else ''} every order {top} establishes"
        if keeping
        else f"no rung is shown to keep every order {top} establishes"
    )
    return f"Order: {kept} (table above). Magnitude: the resolutions certified are {certified}."


def plan_sentence(top_row, below: pd.DataFrame, points: float) -> str:
    """The planner's seeds for each answer, at each rung's own spread (each on its rung's row), with the power
    simulated at its number."""
    return (
        f"At each rung's own spread (80 % upper bounds), certifying an unchanged rung within {points:g} points with "
        f"80 % power takes {rung_seeds(below, 'seeds_for_resolution', 'power_for_resolution')} shared with the top, "
        f"and keeping the top's orders with 80 % power takes {rung_seeds(below, 'seeds_to_keep', 'power_to_keep')} "
        f"at the rung; {seeds_phrase(top_row['seeds_to_establish'])} per optimizer at the top would establish orders "
        f"{points:g} points apart."
    )


def rung_seeds(below: pd.DataFrame, seeds: str, power: str) -> str:
    """`epochs=2 4 seeds (simulated: 85 %), epochs=4 more than 200 seeds`: one planner column per rung."""
    return ", ".join(
        f"{row['rung']} {seeds_phrase(row[seeds])}"
        + (f" (simulated: {percent(row[power])})" if math.isfinite(row[seeds]) else "")
        for _, row in below.iterrows()
    )


def tuning_sentence(tuned: pd.DataFrame) -> str:
    """Each shorter tuning's lr and weight decay per optimizer as a multiple of the winners of the longest tuning of
    its workload and setting (`longest_tuning`)."""
    sentences = []
    for longest, alike in tuned.groupby("longest_tuning", sort=False):
        sentences += shorter_tunings(alike.sort_values("epochs", kind="stable"), alike[alike["study"] == longest])
    return " ".join(sentences)


def shorter_tunings(order: pd.DataFrame, longest: pd.DataFrame) -> list[str]:
    """One sentence per tuning shorter than `longest` (rows of one workload and setting, by epochs)."""
    top = longest.iloc[0]
    sentences = []
    for study, rows in order[order["study"] != top["study"]].groupby("study", sort=False):
        names = [NAMES.get(name, name) for name in rows["optimizer"]]
        lrs = ", ".join(f"{name} {ratio:.2f}" for name, ratio in zip(names, rows["lr_ratio_to_top"]))
        decays = ", ".join(f"{name} {ratio:.2f}" for name, ratio in zip(names, rows["weight_decay_ratio_to_top"]))
        sentences.append(
            f"Tuned at {rows['epochs'].iloc[0]:g} epochs ({study}), the learning rates are these multiples of those "
            f"tuned at {top['epochs']:g} ({top['study']}): {lrs}; the weight decays: {decays} "
            "(tables/fidelity_tuning.csv)."
        )
    return sentences


def retuned_reading(agreement: pd.DataFrame, per_rung: pd.DataFrame) -> str:
    """How the ranking moves at a rung tuned at its own budget, beside the rung of that budget tuned as the study."""
    sentences = []
    study_tuning = agreement["tuned_by"].mode().iloc[0]
    for row in agreement[agreement["tuned_by"] != study_tuning].itertuples():
        same_budget = agreement[(agreement["budget"] == row.budget) & (agreement["tuned_by"] == study_tuning)]
        beside = [
            f"; tuned as the rest of the study ({study_tuning}), {other} ranks {ranking_of(per_rung, other)} %"
            for other in same_budget["rung"]
        ]
        sentences.append(
            f"Tuned at its own budget ({row.tuned_by}), {row.rung} ranks {ranking_of(per_rung, row.rung)} %"
            f"{''.join(beside)}. Its tau-b against {row.planned_top} is "
            f"{interval(row.tau_b, row.tau_low, row.tau_high)} (95 % projection interval)."
        )
    return " ".join(sentences)


def ranking_of(per_rung: pd.DataFrame, rung: str) -> str:
    means = per_rung[per_rung["rung"] == rung].sort_values("rank")
    return ", ".join(f"{NAMES.get(row.arm, row.arm)} {row.mean * 100:.1f}" for row in means.itertuples())


def fidelity_block(study_docs: Path = STUDY_DOCS) -> str:
    """The block from the aggregator's output folder `study_docs` (its tables, checked for the columns read here):
    the rungs against the top and their reading, then, where tuning ran at several budgets, the tuned values."""
    agreement = aggregate_tables.read(study_docs, aggregate_tables.FIDELITY_AGREEMENT)
    per_rung = aggregate_tables.read(study_docs, aggregate_tables.FIDELITY)
    block = table_markdown(agreement) + "\n" + reading(agreement, per_rung)
    if (study_docs / aggregate_tables.FIDELITY_TUNING).is_file():
        tuned = aggregate_tables.read(study_docs, aggregate_tables.FIDELITY_TUNING)
        block += "\n" + tuning_sentence(tuned) + " " + retuned_reading(agreement, per_rung) + "\n"
    return block


def with_block(readme_text: str, block: str) -> str:
    """README's text with this script's block replaced by `block`."""
    return readme_blocks.with_block(readme_text, block, BEGIN, END)


def main(argv: list[str]) -> int:
    return readme_blocks.main_for(
        argv,
        __doc__.splitlines()[0],
        README,
        lambda current: with_block(current, fidelity_block()),
        "README's fidelity block differs from docs/fidelity-study/tables: run python scripts/readme_fidelity.py",
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
