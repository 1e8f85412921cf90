"""The fidelity section's tables and phrases as a reader sees them (report.md): a ladder's judged tables
(analysis/judging/fidelity.py) turned into Markdown-ready text, accuracies in % and intervals in brackets.
"""

import math

import pandas as pd

from optbench.analysis.judging.fidelity import COVERAGE_MEASURED_FROM
from optbench.analysis.judging.ladder_runs import Ladder


def interval_text(mean: float, low: float, high: float, scale: float = 100.0, digits: int = 2) -> str:
    if not math.isfinite(mean):
        return "-"
    if not (math.isfinite(low) and math.isfinite(high)):
        return f"{mean * scale:.{digits}f}"
    return f"{mean * scale:.{digits}f} [{low * scale:.{digits}f}, {high * scale:.{digits}f}]"


def per_rung_display(ladder: Ladder) -> pd.DataFrame:
    """Arms as rows, rungs as columns: `mean [95 % interval] #rank (n)`, accuracies in %, the runs that diverged or
    failed among them counted; a last row names each rung's seed set."""
    table = ladder.per_rung
    cells = {
        (row["arm"], row["rung"]): f"{interval_text(row['mean'], row['ci_low'], row['ci_high'])} "
        f"#{row['rank']:g} (n={row['n']}" + (f", {row['failed']} diverged/failed" if row["failed"] else "") + ")"
        for _, row in table.iterrows()
    }
    seeds = table.drop_duplicates("rung").set_index("rung")["seeds"] if len(table) else pd.Series(dtype=str)
    return pd.DataFrame(
        [
            {"optimizer": arm, **{rung.label: cells.get((arm, rung.label), "missing") for rung in ladder.rungs}}
            for arm in ladder.arms
        ]
        + [{"optimizer": "seeds", **{rung.label: seeds.get(rung.label, "-") for rung in ladder.rungs}}]
    )


def orders_text(row) -> str:
    return (
        f"{row['established_top']:g} established: {row['reproduced']:g} reproduced, {row['contradicted']:g} "
        f"contradicted, {row['undetermined']:g} undetermined"
    )


def coverage_note(row) -> str:
    """Why a rung's change intervals may cover less than their 95 %: seeds too few for their coverage to have
    been measured, or one optimizer's spread far from the others' (the intervals pool one spread)."""
    if not row["under_covering"]:
        return ""
    if row["shared_seeds"] < COVERAGE_MEASURED_FROM:
        return " (coverage not measured below 3 seeds)"
    return f" (possibly under-covering: {row['noisiest']}'s spread {row['spread_ratio']:.1f}x the others')"


def resolution_text(row) -> str:
    """`6.9 points`, with the coverage note where the rung's intervals are flagged."""
    return f"{row['resolution'] * 100:.1f} points{coverage_note(row)}"


def agreement_display(ladder: Ladder) -> pd.DataFrame:
    rows = []
    for _, row in ladder.agreement.iterrows():
        top = row["rung"] == ladder.top.label
        flag = "" if top else coverage_note(row)
        rows.append(
            {
                "rung": row["rung"] + (" (top)" if top else ""),
                "seeds: rung / shared with top": f"{row['rung_seeds']} / {'-' if top else row['shared_seed_list']}",
                "orders at the top (Holm)": f"{row['established_top']:g} established" if top else orders_text(row),
                "resolution (points)": "-" if top else f"{row['resolution'] * 100:.1f}{flag}",
                "faithful": "-" if top else ("yes" if row["faithful"] else "no"),
                "tau-b [95 % CI]": "1 (itself)"
                if top
                else interval_text(row["tau_b"], row["tau_low"], row["tau_high"], 1, 2),
                "pairs ordered alike": "-" if top else f"{row['same_order']:g} of {row['pairs']:g}",
                "flips (confirmed / unconfirmed)": "-"
                if top
                else f"{row['confirmed_flips']:g} / {row['unconfirmed_flips']:g}",
                "training compute vs top": f"{row['budget_share'] * 100:.0f} %",
                "device-hours per run, as measured": f"{row['hours_per_run']:.3f} ({row['devices']})",
            }
        )
    return pd.DataFrame(rows)


def orders_display(ladder: Ladder) -> pd.DataFrame:
    """Pairs as rows, rungs as columns: the change of the pair's difference from the top to the rung (points)
    with its simultaneous 95 % interval, and what became of the top's order there."""
    if ladder.orders.empty:
        return pd.DataFrame()
    rows: dict[str, dict] = {}
    for _, row in ladder.orders.iterrows():
        pair = f"{row['a']} - {row['b']}"
        rows.setdefault(pair, {"pair": pair, "top: difference (points)": f"{row['difference_top'] * 100:+.2f}"})
        cell = interval_text(row["change"], row["change_low"], row["change_high"])
        rows[pair][row["rung"]] = cell + (f" {row['order']}" if row["order"] else "")
    return pd.DataFrame(list(rows.values()))


def flips_display(flips: pd.DataFrame) -> pd.DataFrame:
    if flips.empty:
        return pd.DataFrame()
    return pd.DataFrame(
        [
            {
                "rung": row["rung"],
                "pair": f"{row['a']} - {row['b']}",
                "difference at rung (points) [CI]": interval_text(
                    row["difference_rung"], row["ci_low_rung"], row["ci_high_rung"]
                ),
                "p at rung": f"{row['p_rung']:.3g}",
                "difference at top (points) [CI]": interval_text(
                    row["difference_top"], row["ci_low_top"], row["ci_high_top"]
                ),
                "p at top": f"{row['p_top']:.3g}",
                "flip": row["flip"],
            }
            for _, row in flips.iterrows()
        ]
    )


def verdicts_display(table: pd.DataFrame, ladder: Ladder) -> pd.DataFrame:
    if table.empty:
        return table
    rows = []
    for hypothesis, group in table.groupby("hypothesis", sort=False):
        verdicts = dict(zip(group["rung"], group["verdict"]))
        changed = [rung for rung, changes in zip(group["rung"], group["changes"]) if changes]
        rows.append(
            {
                "hypothesis": hypothesis,
                **{rung.label: verdicts.get(rung.label, "-") for rung in ladder.rungs},
                "differs from the top rung at": ", ".join(changed) or "none",
            }
        )
    return pd.DataFrame(rows)
