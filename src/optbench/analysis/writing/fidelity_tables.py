"""The fidelity section's tables and phrases as a reader sees them (report.md): a ladder's judged tables
(analysis/judging/fidelity.py) turned into Markdown-ready text, accuracies in % and intervals in brackets.
"""

import math

import pandas as pd

from optbench.analysis.judging.fidelity import percent
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
    """`order kept undetermined: 7 established, 4 kept, 0 reversed, 3 undetermined (63 % power)`."""
    return (
        f"order kept {row['order_kept']}: {row['established_top']:g} established, {row['orders_kept']:g} kept, "
        f"{row['orders_reversed']:g} reversed, {row['orders_undetermined']:g} undetermined "
        f"({percent(row['keep_power'])} power were the rung unchanged)"
    )


def resolution_text(row) -> str:
    """`6.0 points (80 % power at 3.0)`: the resolution certified, and what these seeds certify an unchanged rung
    at with 80 % power."""
    design = row["design_resolution"] * 100
    beside = f" (80 % power at {design:.1f})" if math.isfinite(design) else ""
    return f"{row['resolution'] * 100:.1f} points{beside}"


def agreement_display(ladder: Ladder) -> pd.DataFrame:
    rows = []
    for _, row in ladder.agreement.iterrows():
        top = row["rung"] == ladder.top.label
        rows.append(
            {
                "rung": row["rung"] + (" (top)" if top else ""),
                "seeds: rung / shared with top": f"{row['rung_seeds']} / {'-' if top else row['shared_seed_list']}",
                "order kept: kept / reversed / undetermined of the top's (Holm) [power]": f"{row['established_top']:g}"
                " established"
                if top
                else f"{row['order_kept']}: {row['orders_kept']:g} / {row['orders_reversed']:g} / "
                f"{row['orders_undetermined']:g} of {row['established_top']:g} [{percent(row['keep_power'])}]",
                "resolution certified (points) [80 % power]": "-"
                if top
                else f"{row['resolution'] * 100:.1f} [{row['design_resolution'] * 100:.1f}]",
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
    with its one-sided 95 % bounds (a 90 % two-sided interval), and what became of the top's order there."""
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
