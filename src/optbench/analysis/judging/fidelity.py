"""The fidelity report: does a cheap budget rank the optimizers as the expensive one does (docs/fidelity.md)?

A ladder's runs, rungs, seed sets and the planned top are found in ladder_runs.py; its statistics are
fidelity_stats.py's; the tables and sentences a reader sees are written by analysis/writing/fidelity_tables.py.
Per ladder (`analyse_ladder`):
- one seed set per comparison: a rung's means, ranks and tests use the seeds every optimizer has a result for
  there; a rung against the top uses the seeds both rungs share; the tables give n and the seeds, and seeds
  beyond the study's plan (a sequential study's) are marked;
- per rung against the top, two answers, each with the power its seeds give an unchanged rung
  (fidelity_power.py): *order kept* (yes / no / undetermined: each order the top establishes, paired t with Holm,
  kept, reversed or undetermined by a one-sided 95 % bound on the rung's own difference) and *magnitude* (each
  pair's change in difference with one-sided 95 % bounds on its own spread; the resolution the rung certifies, and
  beside it the resolution its shared seeds certify with 80 % power when nothing changes); Kendall's tau-b with a
  projection interval, pairs ordered alike and flips, cost (the training-compute share; device-hours as measured
  beside it); a rung is faithful only when both answers are yes (fidelity_stats.is_faithful);
- `cheapest_faithful_rung` names it; else `why_none` says why, with the seeds `fidelity_plan` finds for each
  answer at each rung's own spread and their simulated power.
`tuned_settings` tabulates the winners of tuning studies of one workload and setting run at more than one budget
(short-horizon bias).
"""

import math
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from optbench.analysis.judging.ladder_runs import (
    TOP_SEEDS,
    Ladder,
    Rung,
    common_seeds,
    failure_notes,
    left_out_notes,
    matrix,
    result_arms,
    seed_values,
    top_note,
)
from optbench.analysis.judging.robust_tables import RESULT_STATUSES  # runs that ended: completed, diverged, failed
from optbench.analysis.statistics import fidelity_power, fidelity_stats
from optbench.analysis.statistics.power import ALPHA
from optbench.analysis.statistics.summaries import describe, seeds_text
from optbench.analysis.statistics.two_arms import two_arm_test


def per_rung_table(ladder: Ladder, metric: str, higher_is_better: bool = True) -> pd.DataFrame:
    """Per rung and arm: n, seeds, mean and interval of `metric`, and the rank (1 = best in the metric's direction:
    the highest accuracy, the lowest loss)."""
    sign = -1.0 if higher_is_better else 1.0  # rankdata ranks the smallest first
    rows = []
    for rung in ladder.rungs:
        seeds = common_seeds(rung, ladder.arms)
        present = [arm for arm in ladder.arms if arm in result_arms(rung)]
        cells = {arm: describe(seed_values(rung, arm, metric)[seeds]) for arm in present}
        ranks = dict(zip(present, scipy_stats.rankdata([sign * cells[arm].mean for arm in present])))
        for arm in present:
            ended = rung.runs[(rung.runs["arm"] == arm) & rung.runs["seed"].isin(seeds)]
            rows.append(
                {
                    "setting": ladder.setting,
                    "rung": rung.label,
                    "budget": rung.budget,
                    "arm": arm,
                    "n": cells[arm].n,
                    "seeds": seeds_text(seeds),
                    "mean": cells[arm].mean,
                    "ci_low": cells[arm].ci_low,
                    "ci_high": cells[arm].ci_high,
                    "rank": float(ranks[arm]),
                    "failed": int(ended["status"].isin(("diverged", "failed")).sum()),
                    "left_out": len(set(seed_values(rung, arm, metric).index) - set(seeds)),
                }
            )
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- pairs: same order, flips, established orders


def significant_sign(comparison, alpha: float) -> int:
    """+1 / -1 when the difference a - b is significant at alpha (unadjusted), 0 otherwise."""
    if not (comparison.p_value < alpha):
        return 0
    return int(np.sign(comparison.difference))


def pair_rows(ladder: Ladder, rung: Rung, arms: list[str], metric: str, alpha: float) -> list[dict]:
    """Each pair's order at the rung and at the top on the seeds both share, with its unadjusted paired test:
    what the flips table shows (a flip is *confirmed* only when significant in opposite directions at both)."""
    rung_seeds = top_seeds = sorted(set(common_seeds(rung, arms)) & set(common_seeds(ladder.top, arms)))
    rows = []
    for a, b in combinations(arms, 2):
        at_rung = two_arm_test(
            seed_values(rung, a, metric)[rung_seeds], seed_values(rung, b, metric)[rung_seeds], alpha
        )
        at_top = two_arm_test(
            seed_values(ladder.top, a, metric)[top_seeds], seed_values(ladder.top, b, metric)[top_seeds], alpha
        )
        order_rung = int(np.sign(at_rung.mean_a - at_rung.mean_b))
        order_top = int(np.sign(at_top.mean_a - at_top.mean_b))
        sign_rung, sign_top = significant_sign(at_rung, alpha), significant_sign(at_top, alpha)
        rows.append(
            {
                "setting": ladder.setting,
                "rung": rung.label,
                "top": ladder.top.label,
                "a": a,
                "b": b,
                "order_rung": order_rung,
                "order_top": order_top,
                "same_order": order_rung == order_top != 0,
                "difference_rung": at_rung.difference,
                "ci_low_rung": at_rung.ci_low,
                "ci_high_rung": at_rung.ci_high,
                "p_rung": at_rung.p_value,
                "difference_top": at_top.difference,
                "ci_low_top": at_top.ci_low,
                "ci_high_top": at_top.ci_high,
                "p_top": at_top.p_value,
                "significant_rung": sign_rung != 0,
                "kept": sign_rung != 0 and order_top == sign_rung,
                "flip": ""
                if order_rung == order_top
                else ("confirmed" if sign_rung and sign_top and sign_rung == -sign_top else "unconfirmed"),
            }
        )
    return rows


def order_rows(ladder: Ladder, rung: Rung, arms: list[str], metric: str, alpha: float) -> tuple[list[dict], dict]:
    """Per pair: the change of its difference on the seeds the rung and the top share, with one-sided bounds on
    its own spread; the order the top establishes (its seeds) and the rung's one-sided bounds on its own difference
    (its seeds), which keep, reverse or leave undetermined that order; and the rung's summary."""
    shared = sorted(set(common_seeds(rung, arms)) & set(common_seeds(ladder.top, arms)))
    top_seeds, rung_seeds = common_seeds(ladder.top, arms), common_seeds(rung, arms)
    top_values, rung_values = matrix(ladder.top, arms, top_seeds, metric), matrix(rung, arms, rung_seeds, metric)
    top_signs, top_p = fidelity_stats.established_orders(top_values, alpha)
    counts = fidelity_stats.order_fates(rung_values, top_signs)
    _, rung_low, rung_high, _ = fidelity_stats.one_sided_bounds(fidelity_stats.pair_differences(rung_values))
    low, top = matrix(rung, arms, shared, metric), matrix(ladder.top, arms, shared, metric)
    changes = fidelity_stats.change_intervals(low, top) if len(shared) and len(arms) >= 2 else []
    rows = [
        {
            "setting": ladder.setting,
            "rung": rung.label,
            "top": ladder.top.label,
            "a": arms[change.a],
            "b": arms[change.b],
            "seeds": seeds_text(shared),
            "difference_rung": float(low[change.a].mean() - low[change.b].mean()),
            "difference_top": float(top[change.a].mean() - top[change.b].mean()),
            "change": change.change,
            "change_low": change.low,
            "change_high": change.high,
            "change_bound": change.bound,
            "established_top": int(top_sign),
            "p_holm_top": float(p_top),
            "rung_low": float(low_bound),
            "rung_high": float(high_bound),
            "order": label,
        }
        for change, top_sign, p_top, low_bound, high_bound, label in zip(
            changes, top_signs, top_p, rung_low, rung_high, counts.labels
        )
    ]
    summary = {
        "shared": shared,
        "rung_seeds": rung_seeds,
        "top_seeds": top_seeds,
        "counts": counts,
        "resolution": fidelity_stats.resolution(changes),
        "low": low,
        "top": top,
        "rung_values": rung_values,
        "top_means": top_values.mean(axis=1) if len(top_seeds) else np.full(len(arms), math.nan),
        "top_signs": top_signs,
        "smallest_p_top": float(np.nanmin(top_p)) if len(top_p) and np.isfinite(top_p).any() else math.nan,
    }
    return rows, summary


def own_spreads(values: np.ndarray) -> np.ndarray:
    """Each optimizer's own sd in an optimizer x seed matrix (fidelity_stats.optimizer_variances; a negative
    estimate is no spread seen); NaN where it cannot be estimated."""
    return np.sqrt(np.clip(fidelity_stats.optimizer_variances(values), 0.0, None))


def answers_power(summary: dict) -> dict:
    """The power beside the two answers at this rung's seeds, were the rung unchanged: the share of such rungs
    keeping the top's orders, and the smallest resolution certified with 80 % power (fidelity_power)."""
    rung_values, changes = summary["rung_values"], summary["low"] - summary["top"]
    return {
        "keep_power": fidelity_power.keep_power(
            summary["top_means"], own_spreads(rung_values), summary["top_signs"], rung_values.shape[1]
        ),
        "design_resolution": fidelity_power.design_resolution(own_spreads(changes), changes.shape[1]),
    }


def device_hours(rung: Rung) -> tuple[float, float, str]:
    """Total device-hours of the rung's runs that ended, the mean per run, and the devices they ran on."""
    seconds = pd.to_numeric(
        rung.runs.loc[rung.runs["status"].isin(RESULT_STATUSES), "wall_time_s"], errors="coerce"
    ).dropna()
    devices = ", ".join(sorted({str(device) for device in rung.runs.get("device", pd.Series(dtype=str)).dropna()}))
    return float(seconds.sum() / 3600), float(seconds.mean() / 3600) if len(seconds) else math.nan, devices


def analyse_ladder(
    ladder: Ladder, metric: str, alpha: float = ALPHA, resolution: float | None = None, higher_is_better: bool = True
) -> Ladder:
    """Fill the ladder's tables: per rung, each rung against the top, every pair's change, and what is named.
    `resolution`: the study's (metric units; default fidelity_stats.DEFAULT_RESOLUTION_POINTS points).
    `higher_is_better`: the metric's direction, which the ranks read (orders, flips and tau-b compare two rungs'
    orders of one metric: the same in either direction)."""
    if resolution is not None:
        ladder.resolution = resolution
    ladder.per_rung = per_rung_table(ladder, metric, higher_is_better)
    present = {rung.label: result_arms(rung) for rung in ladder.rungs}
    ladder.missing = [
        f"{arm} has no completed run at {rung.label}"
        for rung in ladder.compared
        for arm in ladder.arms
        if arm not in present[rung.label]
    ]
    for rung in ladder.rungs[len(ladder.compared) :]:
        short = ", ".join(arm for arm in ladder.arms if arm not in result_arms(rung, TOP_SEEDS))
        ladder.not_yet.append(
            f"{rung.label}: {short or 'the optimizers'} have fewer than {TOP_SEEDS} completed seeds there yet "
            "(shown in the table and figures, not compared)"
        )
    ladder.notes = top_note(ladder) + failure_notes(ladder) + ladder.selection + left_out_notes(ladder)
    top_hours = device_hours(ladder.top)
    agreement, pairs, orders = [], [], []
    for rung in ladder.compared:
        arms = [arm for arm in ladder.arms if arm in present[rung.label] and arm in present[ladder.top.label]]
        rows = pair_rows(ladder, rung, arms, metric, alpha) if rung is not ladder.top else []
        order_table, summary = order_rows(ladder, rung, arms, metric, alpha)
        pairs += rows
        orders += order_table if rung is not ladder.top else []
        agreement.append(agreement_row(ladder, rung, arms, rows, summary, top_hours))
    ladder.agreement = pd.DataFrame(agreement)
    ladder.orders = pd.DataFrame(orders)
    ladder.flips = pd.DataFrame([row for row in pairs if row["flip"]])
    return ladder


def agreement_row(
    ladder: Ladder, rung: Rung, arms: list[str], pairs: list[dict], summary: dict, top_hours: tuple[float, float, str]
) -> dict:
    hours, per_run, devices = device_hours(rung)
    counts, shared = summary["counts"], summary["shared"]
    row = {
        "setting": ladder.setting,
        "rung": rung.label,
        "budget": rung.budget,
        "arms": len(arms),
        "seeds": len(summary["rung_seeds"]),
        "rung_seeds": seeds_text(summary["rung_seeds"]),
        "shared_seeds": len(shared),
        "shared_seed_list": seeds_text(shared),
        "top_seeds": seeds_text(summary["top_seeds"]),
        "established_top": counts.established,
        "smallest_p_holm_top": summary["smallest_p_top"],
        "budget_share": rung.budget / ladder.top.budget,
        "device_hours": hours,
        "hours_per_run": per_run,
        "cost_share": per_run / top_hours[1] if top_hours[1] else math.nan,
        "devices": devices,
        "tuned_by": rung.tuned_by,
    }
    if rung is ladder.top:
        return {**row, "tau_b": 1.0, "tau_low": math.nan, "tau_high": math.nan, "faithful": False}
    low, top = summary["low"], summary["top"]
    tau = fidelity_stats.tau_b(low.mean(axis=1), top.mean(axis=1)) if len(arms) >= 2 and len(shared) else math.nan
    tau_low, tau_high = fidelity_stats.tau_b_interval(low, top) if len(arms) >= 2 and len(shared) else (math.nan,) * 2
    return {
        **row,
        "order_kept": counts.answer,  # yes | no | undetermined
        "orders_kept": counts.kept,
        "orders_reversed": counts.reversed,
        "orders_undetermined": counts.undetermined,
        "resolution": summary["resolution"],  # certified: every change within it at 95 %
        **(
            answers_power(summary)
            if len(arms) >= 2 and len(shared) >= 2
            else {"keep_power": math.nan, "design_resolution": math.nan}
        ),
        "faithful": fidelity_stats.is_faithful(counts, summary["resolution"], ladder.resolution),
        "tau_b": tau,
        "tau_low": tau_low,
        "tau_high": tau_high,
        "pairs": len(pairs),
        "same_order": sum(pair["same_order"] for pair in pairs),
        "significant_pairs": sum(pair["significant_rung"] for pair in pairs),
        "kept_pairs": sum(pair["kept"] for pair in pairs),
        "confirmed_flips": sum(pair["flip"] == "confirmed" for pair in pairs),
        "unconfirmed_flips": sum(pair["flip"] == "unconfirmed" for pair in pairs),
    }


def cheapest_faithful_rung(ladder: Ladder) -> str | None:
    """The cheapest rung below the top that is faithful on evidence (fidelity_stats.is_faithful): it keeps every
    order the top establishes, and every change is certified within the study's resolution."""
    below = ladder.agreement[ladder.agreement["rung"] != ladder.top.label]
    faithful = below[below["faithful"].astype(bool)] if "faithful" in below else below.iloc[0:0]
    return str(faithful.iloc[0]["rung"]) if len(faithful) else None


# ---------------------------------------------------------------- why no rung is faithful, and the seeds it takes


@dataclass(frozen=True)
class RungKeep:
    """The planner's seeds for *order kept* at one rung, from that rung's own spread: rungs differ several-fold
    in spread (MNIST-1D's AdamW: 5.2 points at 6 epochs, 0.7 at 30), so a spread pooled over them fits none."""

    rung: str
    spreads: np.ndarray  # per optimizer: its own sd at the rung (80 % upper bound)
    established: int  # orders the top establishes among the optimizers the rung shares with it
    seeds: int | None  # an unchanged rung keeps all of them with 80 % power; None: not within MAX_SEEDS, or none
    power: float  # simulated at that number (an independent generator)
    out_of_reach: tuple[tuple[str, float, float], ...] = ()  # (order `a above b`, gap at the top, kept at MAX_SEEDS)


@dataclass(frozen=True)
class RungCertify:
    """The planner's seeds for *magnitude* at one rung, from that rung's own spread of change against the top: a
    spread pooled over rungs several-fold apart under-powers the noisy rung and asks the quiet one for too many."""

    rung: str
    spreads: np.ndarray  # per optimizer: sd of its per-seed change between the rung and the top (80 % upper bound)
    seeds: int | None  # shared with the top: an unchanged rung certified within the resolution with 80 % power
    power: float  # simulated at that number (an independent generator)

    @property
    def change_sd(self) -> float:
        """The root mean square of the optimizers' change spreads (one number to print)."""
        return float(np.sqrt(np.mean(self.spreads**2))) if len(self.spreads) else math.nan


@dataclass(frozen=True)
class FidelityPlan:
    difference_sd: float  # sd of a pair's per-seed difference at the top, at its 80 % upper bound
    certifies: tuple[RungCertify, ...]  # per rung below the top: the seeds certifying it, at its own spread of change
    keeps: tuple[RungKeep, ...]  # per rung below the top: the seeds that keep the top's orders, at its own spread
    seeds_to_establish: int | None  # at the top, for 80 % power to establish an order with a gap of the resolution


def pooled_spreads(matrices: list[np.ndarray]) -> np.ndarray:
    """Each optimizer's own sd pooled over several optimizer x seed matrices (their Grubbs variances weighted by
    their seeds' degrees of freedom), at its one-sided 80 % upper bound on the pooled residual's degrees of
    freedom (Browne 1995, as the seed planner does); a negative pooled variance is no spread seen."""
    usable = [values for values in matrices if values.shape[1] >= 2 and values.shape[0] >= 2]
    if not usable:
        return np.array([])
    weights = np.array([values.shape[1] - 1 for values in usable], dtype=float)
    variances = np.array([fidelity_stats.optimizer_variances(values) for values in usable])
    pooled = np.clip((variances * weights[:, None]).sum(axis=0) / weights.sum(), 0.0, None)
    df = int(sum((values.shape[0] - 1) * (values.shape[1] - 1) for values in usable))
    return np.sqrt(pooled) * fidelity_stats.sd_upper_bound(1.0, df)


def shared_arms(ladder: Ladder, rung: Rung) -> list[str]:
    """The optimizers a rung and the top both have results for: what the rung's answers are judged on."""
    return [arm for arm in ladder.arms if arm in result_arms(rung) and arm in result_arms(ladder.top)]


def rung_certify(ladder: Ladder, rung: Rung, metric: str) -> RungCertify:
    """The seeds shared with the top at which an unchanged rung with this rung's own spread of change (each
    optimizer's, rung minus top on the seeds both share, at its 80 % upper bound) is certified within the study's
    resolution with 80 % power, on the optimizers the two share (as the rung's magnitude answer is judged)."""
    arms = shared_arms(ladder, rung)
    shared = sorted(set(common_seeds(rung, arms)) & set(common_seeds(ladder.top, arms)))
    spreads = pooled_spreads([matrix(rung, arms, shared, metric) - matrix(ladder.top, arms, shared, metric)])
    seeds = fidelity_power.seeds_to_certify(spreads, ladder.resolution) if len(spreads) else None
    power = fidelity_power.certify_power(spreads, seeds, ladder.resolution) if seeds else math.nan
    return RungCertify(rung.label, spreads, seeds, power)


def rung_keep(ladder: Ladder, rung: Rung, metric: str, alpha: float) -> RungKeep:
    """The seeds at which an unchanged rung with this rung's own spread (80 % upper bound) keeps every order the
    top establishes with 80 % power, on the optimizers the two share (as the rung's order answer is judged); where
    none up to MAX_SEEDS does, the orders out of reach."""
    arms = shared_arms(ladder, rung)
    top_values = matrix(ladder.top, arms, common_seeds(ladder.top, arms), metric)
    signs = fidelity_stats.established_orders(top_values, alpha)[0]
    means = top_values.mean(axis=1) if top_values.shape[1] else np.full(len(arms), math.nan)
    spreads = pooled_spreads([matrix(rung, arms, common_seeds(rung, arms), metric)])
    established = int(np.count_nonzero(signs))
    seeds = fidelity_power.seeds_to_keep(means, spreads, signs) if len(spreads) else None
    if seeds is not None:
        return RungKeep(
            rung.label, spreads, established, seeds, fidelity_power.keep_power(means, spreads, signs, seeds)
        )
    if not (established and len(spreads) and np.isfinite(spreads).all() and spreads.max() > 0):
        return RungKeep(rung.label, spreads, established, None, math.nan)
    pairs = fidelity_stats.pairs_of(len(arms))
    out = tuple(
        (f"{arms[high]} above {arms[low]}", float(abs(means[a] - means[b])), share)
        for index, share in fidelity_power.orders_out_of_reach(means, spreads, signs)
        for a, b in [pairs[index]]
        for high, low in [(a, b) if signs[index] > 0 else (b, a)]
    )
    return RungKeep(rung.label, spreads, established, None, math.nan, out)


def fidelity_plan(ladder: Ladder, metric: str, alpha: float = ALPHA) -> FidelityPlan:
    """The planner. Per rung below the top, from that rung's own spreads at their one-sided 80 % upper bounds (rungs
    differ several-fold in spread, so one pooled over them fits none), the seeds at which an unchanged rung gets
    each answer with 80 % power and that power simulated at the number given: magnitude (`rung_certify`: seeds
    shared with the top, certified within the resolution) and order kept (`rung_keep`: seeds at the rung). And the
    seeds at the top that establish orders the resolution apart."""
    # The top's spread, on the optimizers every compared rung shares with it: an arm only the top has (a learning
    # rate tuned at the top's budget only) is compared at no rung, so no order of its needs establishing.
    arms = [
        arm
        for arm in ladder.arms
        if arm in result_arms(ladder.top) and all(arm in result_arms(rung) for rung in ladder.compared[:-1])
    ]
    top_sd, top_df = fidelity_stats.residual_spread(matrix(ladder.top, arms, common_seeds(ladder.top, arms), metric))
    difference_sd = math.sqrt(2) * fidelity_stats.sd_upper_bound(top_sd, top_df) if top_df else math.nan
    pairs = len(arms) * (len(arms) - 1) // 2
    below = ladder.compared[:-1]
    return FidelityPlan(
        difference_sd,
        tuple(rung_certify(ladder, rung, metric) for rung in below),
        tuple(rung_keep(ladder, rung, metric, alpha) for rung in below),
        fidelity_stats.seeds_to_establish(difference_sd, ladder.resolution, pairs, alpha),
    )


def with_plan(ladder: Ladder, plan: FidelityPlan) -> Ladder:
    """The agreement table with the study's resolution and the planner's seeds (README's reading reads them): the
    seeds for each answer and their power on each rung's own row (NaN on the top's)."""
    certifies = {certify.rung: certify for certify in plan.certifies}
    keeps = {keep.rung: keep for keep in plan.keeps}
    rungs = list(ladder.agreement["rung"])
    ladder.agreement = ladder.agreement.assign(
        resolution_wanted=ladder.resolution,
        seeds_to_establish=plan.seeds_to_establish,
        seeds_for_resolution=[seeds_or_nan(certifies[rung].seeds) if rung in certifies else math.nan for rung in rungs],
        power_for_resolution=[certifies[rung].power if rung in certifies else math.nan for rung in rungs],
        seeds_to_keep=[seeds_or_nan(keeps[rung].seeds) if rung in keeps else math.nan for rung in rungs],
        power_to_keep=[keeps[rung].power if rung in keeps else math.nan for rung in rungs],
        planned_top=ladder.top_label,
    )
    return ladder


def seeds_or_nan(seeds: int | None) -> float:
    return math.nan if seeds is None else seeds


def seeds_phrase(seeds: int | None) -> str:
    return f"{seeds} seeds" if seeds is not None else f"more than {fidelity_stats.MAX_SEEDS} seeds"


def percent(share: float) -> str:
    return f"{100 * share:.0f} %" if math.isfinite(share) else "-"


def rung_answers(row) -> str:
    """One rung's two answers with their power: `epochs=2: order kept undetermined (4 of 7 kept, 0 reversed;
    63 % power at its 6 seeds), certifies 6.0 points (its 6 shared seeds certify 3.0 with 80 % power)`."""
    return (
        f"{row['rung']}: order kept {row['order_kept']} ({row['orders_kept']:g} of {row['established_top']:g} kept, "
        f"{row['orders_reversed']:g} reversed; {percent(row['keep_power'])} power at its {row['seeds']:g} seeds), "
        f"certifies {row['resolution'] * 100:.1f} points (its {row['shared_seeds']:g} shared seeds certify "
        f"{row['design_resolution'] * 100:.1f} with 80 % power)"
    )


def keep_phrase(keep: RungKeep) -> str:
    """`epochs=30: 24 seeds (simulated: 84 %)`, or why no number of seeds keeps the orders there."""
    if not keep.established:
        return f"{keep.rung}: none (the top establishes no order among its optimizers)"
    if keep.seeds is not None:
        return f"{keep.rung}: {keep.seeds} seeds (simulated: {percent(keep.power)})"
    if not keep.out_of_reach:
        spread_known = len(keep.spreads) and np.isfinite(keep.spreads).all() and keep.spreads.max() > 0
        why = (
            f"each order alone is within reach, all {keep.established} together are not"
            if spread_known
            else "its spread is unknown: fewer than two seeds, or none seen"
        )
        return f"{keep.rung}: {seeds_phrase(None)} ({why})"
    orders = "; ".join(
        f"{order}, {gap * 100:.2f} points apart at the top, is kept in {percent(share)} of unchanged rungs even at "
        f"{fidelity_stats.MAX_SEEDS} seeds"
        for order, gap, share in keep.out_of_reach
    )
    return f"{keep.rung}: {seeds_phrase(None)} ({orders})"


def certify_phrase(certify: RungCertify) -> str:
    """`epochs=30: 22 seeds (simulated: 81 %)`, or `more than 200 seeds`, and why where its spread is unknown."""
    if certify.seeds is not None:
        return f"{certify.rung}: {certify.seeds} seeds (simulated: {percent(certify.power)})"
    spread_known = len(certify.spreads) >= 2 and np.isfinite(certify.spreads).all() and certify.spreads.max() > 0
    why = "" if spread_known else " (its spread of change is unknown: fewer than two shared seeds, or none seen)"
    return f"{certify.rung}: {seeds_phrase(None)}{why}"


def plan_sentence(ladder: Ladder, plan: FidelityPlan) -> str:
    """What the planner finds for each answer, at each rung's own spread, with the power simulated at its number."""
    points = ladder.resolution * 100
    established = max((keep.established for keep in plan.keeps), default=0)
    keep = (
        f"keeping the top's {established} orders with 80 % power takes, at each rung's own spread (80 % upper "
        f"bound), {', '.join(keep_phrase(keep) for keep in plan.keeps)}"
        if established
        else "no order to keep (the top establishes none)"
    )
    return (
        f"At each rung's own spread of change against the top (80 % upper bounds), an unchanged rung is certified at "
        f"{points:g} points with 80 % power on these seeds shared with the top: "
        f"{', '.join(certify_phrase(certify) for certify in plan.certifies)}; {keep}; "
        f"{seeds_phrase(plan.seeds_to_establish)} per optimizer at the top would establish orders {points:g} points "
        "apart (Holm's strictest step) (`python src/study.py LADDER --plan-seeds --pilot DIR`)."
    )


def why_none(ladder: Ladder, plan: FidelityPlan) -> str:
    """Why no rung can be named faithful, each rung's two answers with the power its seeds give, and the plan."""
    top = ladder.agreement[ladder.agreement["rung"] == ladder.top.label].iloc[0]
    below = ladder.agreement[ladder.agreement["rung"] != ladder.top.label]
    points = ladder.resolution * 100
    if top["established_top"] == 0:
        reason = (
            f"the top rung ({ladder.top.label}, seeds {top['top_seeds']}) establishes no order after Holm "
            f"(smallest adjusted p {top['smallest_p_holm_top']:.2g}), so there is no order a cheaper rung could keep"
        )
    else:
        reason = "; ".join(rung_answers(row) for _, row in below.iterrows())
    return f"No rung is named faithful at {points:g} points: {reason}. {plan_sentence(ladder, plan)}"


# ---------------------------------------------------------------- tuned settings across budgets

TUNED_KEYS = ("optimizer.lr", "optimizer.weight_decay")


def tuned_settings(tuning_studies: list) -> pd.DataFrame:
    """Per tuning study and optimizer: its workload, the epochs its trials ran, the chosen lr and weight decay, and
    their ratio to the winners of `longest_tuning`, the one with the most epochs among the tunings of the same
    workload and settings but the budget (tuning_report's `setting`): a CIFAR tuning is never read against
    MNIST-1D's. A tuning whose settings are unknown, or that no other shares, is compared with none. Empty unless
    two tunings share their settings."""
    alike: dict[tuple, list] = {}
    for study in tuning_studies:
        if study.setting:
            alike.setdefault(study.setting, []).append(study)
    tables = [compared_tunings(studies) for studies in alike.values() if len({study.name for study in studies}) > 1]
    if not tables:
        return pd.DataFrame()
    return pd.concat(tables).reset_index(drop=True)


def compared_tunings(studies: list) -> pd.DataFrame:
    """Tunings of one workload and setting: each winner's ratio to the longest tuning's."""
    rows = []
    for study in studies:
        for name, entry in study.optimizers.items():
            epochs = sorted({run.epochs_done for run in entry.listed_runs if run.epochs_done})
            values = entry.winner.values if entry.winner else {}
            rows.append(
                {
                    "study": study.name,
                    "optimizer": name,
                    "epochs": max(epochs) if epochs else math.nan,
                    **{
                        key.removeprefix("optimizer."): float(values[key]) if key in values else math.nan
                        for key in TUNED_KEYS
                    },
                }
            )
    table = pd.DataFrame(rows)
    top_study = table.sort_values("epochs", kind="stable").iloc[-1]["study"]
    top = table[table["study"] == top_study].set_index("optimizer")
    for key in ("lr", "weight_decay"):
        table[f"{key}_ratio_to_top"] = [
            row[key] / top[key].get(row["optimizer"], math.nan) for _, row in table.iterrows()
        ]
    table = table.assign(workload=studies[0].workload, longest_tuning=top_study)
    return table.sort_values(["optimizer", "epochs"], kind="stable")


# ---------------------------------------------------------------- verdicts rung by rung


def verdicts_by_rung(ladder: Ladder, judge) -> pd.DataFrame:
    """Each hypothesis's verdict at each rung under the unchanged rule: `judge(runs)` -> verdicts of those runs
    (the pipeline's hypotheses and context); `changes` marks a verdict that differs from the top rung's."""
    rows = [
        {"setting": ladder.setting, "rung": rung.label, "hypothesis": verdict.hypothesis.id, "verdict": verdict.verdict}
        for rung in ladder.rungs
        for verdict in judge(rung.runs)
    ]
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    at_top = table[table["rung"] == ladder.top.label].set_index("hypothesis")["verdict"]
    table["changes"] = [row["verdict"] != at_top.get(row["hypothesis"]) for _, row in table.iterrows()]
    return table
