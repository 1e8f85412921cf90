"""The fidelity report: does a cheap budget rank the optimizers as the expensive one does (docs/fidelity.md)?

A *ladder* is a set of runs whose settings differ only in fidelity keys (epochs, model.width,
dataset.train_subset, or a key a study's rungs name), found from the group keys of groups.py: runs that
share every other setting key (dataset, noise, ...) and take two or more combinations of fidelity values
form one ladder, one *rung* per combination. Runs of other settings (a noise setting run at one budget
only) form no ladder and never enter one; tuning trials are set aside before loading. Per ladder:
- per rung, each arm's mean, 95 % t interval and rank (1 = best, ties averaged);
- each rung against the top rung (the largest budget, epochs x images x width^2, at which every optimizer has a
  completed run; a larger rung still being run is shown, not compared): Kendall's tau-b of the
  arms' means over the seeds every compared arm ran at the rung (scipy.stats.kendalltau) with a 95 %
  percentile bootstrap interval that resamples seeds, the same draw at both rungs for the seeds they share;
  the share of pairs ordered alike; every pair whose order differs, with its difference and interval
  (stats.compare) at both rungs, a flip being *confirmed* only when the difference is significant in
  opposite directions at the two rungs;
- each rung's cost (device-hours from the runs' own wall time) and how many of its significant pairwise
  orders hold at the top rung; the cheapest rung whose significant orders all hold.
An arm missing at a rung is named in `missing`, never silently dropped from the counts.
`tuned_settings` tabulates the winners of tuning studies run at more than one budget (short-horizon bias).
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from optbench.analysis.groups import (
    ARM_IDENTITY,
    CONFIG_PREFIX,
    Grouping,
    arm_label,
    ordered_arms,
    setting_label,
    short_key,
    varies,
)
from optbench.analysis.stats import ALPHA, by_seed, compare, describe

# Keys that change what a run costs, not what it asks; with the exponent of their share of the training compute
# (a ResNet's FLOPs grow with the square of its width).
FIDELITY_KEYS: dict[str, float] = {"cfg.epochs": 1, "cfg.dataset.train_subset": 1, "cfg.model.width": 2}
BOOTSTRAP_REPLICATES = 2000
BOOTSTRAP_SEED = 0  # the interval is a function of the runs: the same folder gives the same report
TOP_SEEDS = 2  # the top rung needs an interval and a test for every pair: two completed seeds per optimizer


@dataclass
class Rung:
    label: str  # `epochs=2` or `epochs=8, model.width=32`
    values: dict  # fidelity key (cfg.*) -> value
    budget: float  # training compute relative units (epochs x images x width^2); NaN when unknown
    runs: pd.DataFrame  # its runs (every status: a hypothesis counts a failed run as a result)


@dataclass
class Ladder:
    setting: str  # the setting without its fidelity keys: `imagefolder, clean`
    keys: list[str]  # the fidelity keys that vary (cfg.*)
    rungs: list[Rung]  # cheapest first; the last is the top rung
    arms: list[str]  # optimizers (and variants within a rung), in the report's order
    per_rung: pd.DataFrame = field(default_factory=pd.DataFrame)  # rung x arm: n, mean, interval, rank
    agreement: pd.DataFrame = field(default_factory=pd.DataFrame)  # rung vs top: tau-b, interval, pairs, cost
    flips: pd.DataFrame = field(default_factory=pd.DataFrame)  # pairs ordered differently at a rung and the top
    missing: list[str] = field(default_factory=list)  # arms absent at some rung, named
    not_yet: list[str] = field(default_factory=list)  # rungs with runs but none completed: left out, named
    top_index: int = -1  # the rung compared against: the largest at which every optimizer has TOP_SEEDS completed runs

    @property
    def top(self) -> Rung:
        return self.rungs[self.top_index]

    @property
    def compared(self) -> list[Rung]:
        """The rungs up to the top one; a larger rung still incomplete is shown, not compared."""
        return self.rungs[: self.top_index % len(self.rungs) + 1]


def fidelity_keys(extra: Sequence[str] = ()) -> dict[str, float]:
    """The known fidelity keys, and any key a study's rungs name (exponent 1 when its share is unknown)."""
    return {
        **FIDELITY_KEYS,
        **{
            CONFIG_PREFIX + key: FIDELITY_KEYS.get(CONFIG_PREFIX + key, 1)
            for key in extra
            if CONFIG_PREFIX + key not in FIDELITY_KEYS
        },
    }


def find_ladders(runs: pd.DataFrame, grouping: Grouping, keys: dict[str, float] | None = None) -> list[Ladder]:
    """Ladders: runs alike but for the fidelity keys, at two or more rungs with completed runs."""
    keys = keys or dict(FIDELITY_KEYS)
    varying = [key for key in grouping.setting_keys if key in keys]
    if not varying or not len(runs):
        return []
    base_keys = [key for key in grouping.setting_keys if key not in varying]
    base = Grouping(setting_keys=base_keys, arm_keys=grouping.arm_keys)
    ladders = []
    for _, group in runs.groupby([runs[key].map(repr) for key in base_keys], sort=False, dropna=False):
        group, arms = rung_arms(group, grouping, varying)
        rungs = rungs_of(group, varying, keys)
        ran = [rung for rung in rungs if (rung.runs["status"] == "completed").any()]
        if len(ran) >= 2:
            present = set(group.loc[group["status"] == "completed", "arm"])
            not_yet = [
                f"{rung.label}: no completed run yet ({len(rung.runs)} run(s): "
                f"{', '.join(sorted(set(rung.runs['status'].map(str))))})"
                for rung in rungs
                if rung not in ran
            ]
            arms = [arm for arm in arms if arm in present]
            ladders.append(
                Ladder(
                    setting=setting_label(group.iloc[0], base),
                    keys=varying,
                    rungs=ran,
                    arms=arms,
                    not_yet=not_yet,
                    top_index=top_rung_index(ran, arms),
                )
            )
    return ladders


def completed_arms(rung: Rung, min_seeds: int = 1) -> set:
    """The optimizers with at least `min_seeds` completed runs at the rung."""
    counts = rung.runs.loc[rung.runs["status"] == "completed", "arm"].value_counts()
    return set(counts[counts >= min_seeds].index)


def top_rung_index(rungs: list[Rung], arms: list[str]) -> int:
    """The largest rung at which every optimizer of the ladder has TOP_SEEDS completed runs: a larger rung still
    being run would rank one optimizer against nothing, or (one seed each) compare every pair without an interval
    or a test. With no such rung, the rung with the most optimizers (the larger on a tie)."""
    complete = [index for index, rung in enumerate(rungs) if completed_arms(rung, TOP_SEEDS) >= set(arms)]
    if complete:
        return complete[-1]
    return max(range(len(rungs)), key=lambda index: (len(completed_arms(rungs[index])), index))


def rung_arms(runs: pd.DataFrame, grouping: Grouping, varying: list[str]) -> tuple[pd.DataFrame, list[str]]:
    """The runs with `arm` relabelled by the optimizer fields that vary within a rung only: a learning rate tuned
    per rung (a rung's own tuned_by) differs between rungs, yet it is the same optimizer climbing the ladder."""
    within_rung = [
        key for key in grouping.arm_keys if key not in ARM_IDENTITY and varies(runs, key, [*ARM_IDENTITY, *varying])
    ]
    rung_grouping = Grouping(setting_keys=grouping.setting_keys, arm_keys=[*ARM_IDENTITY, *within_rung])
    relabelled = runs.assign(arm=[arm_label(row, rung_grouping) for _, row in runs.iterrows()])
    return relabelled, ordered_arms(relabelled, rung_grouping)


def rungs_of(runs: pd.DataFrame, varying: list[str], keys: dict[str, float]) -> list[Rung]:
    rungs = []
    for _, group in runs.groupby([runs[key].map(repr) for key in varying], sort=False, dropna=False):
        values = {key: group.iloc[0][key] for key in varying}
        label = ", ".join(f"{short_key(key)}={value}" for key, value in values.items())
        rungs.append(Rung(label, values, budget_of(values, keys), group))
    return sorted(
        rungs,
        key=lambda rung: (
            rung.budget if math.isfinite(rung.budget) else math.inf,
            [str(value) for value in rung.values.values()],
        ),
    )


def budget_of(values: dict, keys: dict[str, float]) -> float:
    """Relative training compute of a rung: the product of its fidelity values, each to its exponent."""
    budget = 1.0
    for key, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) or not value == value:
            return math.nan  # an unset subset (the full training set) or a text value: order by the values instead
        budget *= float(value) ** keys.get(key, 1)
    return budget


# ---------------------------------------------------------------- per rung: means, intervals, ranks


def seed_values(rung: Rung, arm: str, metric: str) -> pd.Series:
    runs = rung.runs[(rung.runs["arm"] == arm) & (rung.runs["status"] == "completed")]
    return by_seed(pd.Series(runs[metric].to_numpy(dtype=float), index=runs["seed"].to_numpy()))


def per_rung_table(ladder: Ladder, metric: str) -> pd.DataFrame:
    rows = []
    for rung in ladder.rungs:
        cells = {arm: describe(seed_values(rung, arm, metric)) for arm in ladder.arms}
        present = [arm for arm in ladder.arms if cells[arm].n]
        ranks = dict(zip(present, scipy_stats.rankdata([-cells[arm].mean for arm in present])))
        for arm in present:
            cell = cells[arm]
            rows.append(
                {
                    "setting": ladder.setting,
                    "rung": rung.label,
                    "budget": rung.budget,
                    "arm": arm,
                    "n": cell.n,
                    "mean": cell.mean,
                    "ci_low": cell.ci_low,
                    "ci_high": cell.ci_high,
                    "rank": float(ranks[arm]),
                }
            )
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- tau-b and its seed bootstrap


def means_matrix(rung: Rung, arms: list[str], metric: str) -> tuple[list, np.ndarray]:
    """The seeds every arm ran at the rung, and the arms x seeds matrix of their values."""
    series = [seed_values(rung, arm, metric) for arm in arms]
    seeds = sorted(set.intersection(*(set(values.index) for values in series))) if series else []
    return seeds, np.array([[values[seed] for seed in seeds] for values in series], dtype=float)


def tau_b(x, y) -> float:
    return float(scipy_stats.kendalltau(x, y).statistic)  # scipy's default variant is tau-b (ties corrected)


def bootstrap_tau(
    low: tuple[list, np.ndarray],
    top: tuple[list, np.ndarray],
    replicates: int = BOOTSTRAP_REPLICATES,
    seed: int = BOOTSTRAP_SEED,
    confidence: float = 0.95,
) -> tuple[float, float]:
    """Percentile interval of tau-b between the two rungs' arm means, resampling seeds: the seeds both rungs ran
    are drawn once for both (paired), each rung's other seeds within it, so each rung keeps its own n."""
    (low_seeds, low_values), (top_seeds, top_values) = low, top
    shared = [seed for seed in low_seeds if seed in top_seeds]
    low_only = [low_seeds.index(seed) for seed in low_seeds if seed not in shared]
    top_only = [top_seeds.index(seed) for seed in top_seeds if seed not in shared]
    low_shared, top_shared = [low_seeds.index(seed) for seed in shared], [top_seeds.index(seed) for seed in shared]
    rng = np.random.default_rng(seed)
    draws: list[float] = []
    for _ in range(replicates):
        both = rng.integers(0, len(shared), len(shared)) if shared else np.array([], dtype=int)
        low_draw = [*np.take(low_shared, both), *rng.choice(low_only, len(low_only))]
        top_draw = [*np.take(top_shared, both), *rng.choice(top_only, len(top_only))]
        draws.append(tau_b(low_values[:, low_draw].mean(axis=1), top_values[:, top_draw].mean(axis=1)))
    taus = np.array(draws)
    taus = taus[np.isfinite(taus)]  # a draw whose means all tie has no tau
    if not len(taus):
        return math.nan, math.nan
    tail = (1 - confidence) / 2 * 100
    return float(np.percentile(taus, tail)), float(np.percentile(taus, 100 - tail))


# ---------------------------------------------------------------- pairs: same order, flips, kept orders


def significant_sign(comparison, alpha: float) -> int:
    """+1 / -1 when the difference a - b is significant at alpha, 0 otherwise."""
    if not (comparison.p_value < alpha):
        return 0
    return int(np.sign(comparison.difference))


def pair_rows(ladder: Ladder, rung: Rung, arms: list[str], metric: str, alpha: float) -> list[dict]:
    rows = []
    for a, b in combinations(arms, 2):
        at_rung = compare(seed_values(rung, a, metric), seed_values(rung, b, metric), alpha)
        at_top = compare(seed_values(ladder.top, a, metric), seed_values(ladder.top, b, metric), alpha)
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


def device_hours(rung: Rung) -> tuple[float, float, str]:
    """Total device-hours of the rung's runs, the mean per run, and the devices they ran on."""
    seconds = pd.to_numeric(rung.runs.loc[rung.runs["status"] == "completed", "wall_time_s"], errors="coerce").dropna()
    devices = ", ".join(sorted({str(device) for device in rung.runs.get("device", pd.Series(dtype=str)).dropna()}))
    return float(seconds.sum() / 3600), float(seconds.mean() / 3600) if len(seconds) else math.nan, devices


def analyse_ladder(ladder: Ladder, metric: str, alpha: float = ALPHA, replicates: int = BOOTSTRAP_REPLICATES) -> Ladder:
    """Fill the ladder's tables: per rung, agreement with the top rung, and the pairs ordered differently."""
    ladder.per_rung = per_rung_table(ladder, metric)
    present = {
        rung.label: set(ladder.per_rung.loc[ladder.per_rung["rung"] == rung.label, "arm"]) for rung in ladder.rungs
    }
    ladder.missing = [
        f"{arm} has no completed run at {rung.label}"
        for rung in ladder.compared
        for arm in ladder.arms
        if arm not in present[rung.label]
    ]
    for rung in ladder.rungs[len(ladder.compared) :]:
        short = ", ".join(arm for arm in ladder.arms if arm not in completed_arms(rung, TOP_SEEDS))
        ladder.not_yet.append(
            f"{rung.label}: {short} have fewer than {TOP_SEEDS} completed seeds there yet "
            "(shown in the table and figures, not compared)"
        )
    top_hours = device_hours(ladder.top)
    agreement, pairs = [], []
    for rung in ladder.compared:
        arms = [arm for arm in ladder.arms if arm in present[rung.label] and arm in present[ladder.top.label]]
        rows = pair_rows(ladder, rung, arms, metric, alpha) if rung is not ladder.top else []
        pairs += rows
        agreement.append(agreement_row(ladder, rung, arms, rows, metric, top_hours, replicates))
    ladder.agreement = pd.DataFrame(agreement)
    ladder.flips = pd.DataFrame([row for row in pairs if row["flip"]])
    return ladder


def agreement_row(
    ladder: Ladder,
    rung: Rung,
    arms: list[str],
    pairs: list[dict],
    metric: str,
    top_hours: tuple[float, float, str],
    replicates: int,
) -> dict:
    hours, per_run, devices = device_hours(rung)
    row = {
        "setting": ladder.setting,
        "rung": rung.label,
        "budget": rung.budget,
        "arms": len(arms),
        "seeds": len(means_matrix(rung, arms, metric)[0]),
        "device_hours": hours,
        "hours_per_run": per_run,
        "cost_share": per_run / top_hours[1] if top_hours[1] else math.nan,
        "budget_share": rung.budget / ladder.top.budget,
        "devices": devices,
    }
    if rung is ladder.top:
        return {
            **row,
            "tau_b": 1.0,
            "tau_low": math.nan,
            "tau_high": math.nan,
            "pairs": math.nan,
            "same_order": math.nan,
            "significant_pairs": math.nan,
            "kept_pairs": math.nan,
            "confirmed_flips": math.nan,
            "unconfirmed_flips": math.nan,
        }
    # tau-b and its bootstrap on the same numbers: each rung's means over the seeds every compared optimizer ran
    low, top = means_matrix(rung, arms, metric), means_matrix(ladder.top, arms, metric)
    tau = tau_b(low[1].mean(axis=1), top[1].mean(axis=1)) if len(arms) >= 2 and low[0] and top[0] else math.nan
    tau_low, tau_high = (
        bootstrap_tau(low, top, replicates) if len(arms) >= 2 and low[0] and top[0] else (math.nan, math.nan)
    )
    return {
        **row,
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
    """The cheapest rung below the top whose significant pairwise orders (at least one) all hold at the top."""
    below = ladder.agreement[ladder.agreement["rung"] != ladder.top.label]
    if below.empty:
        return None
    faithful = below[(below["significant_pairs"] >= 1) & (below["kept_pairs"] == below["significant_pairs"])]
    return str(faithful.iloc[0]["rung"]) if len(faithful) else None


# ---------------------------------------------------------------- tuned settings across budgets

TUNED_KEYS = ("optimizer.lr", "optimizer.weight_decay")


def tuned_settings(tuning_studies: list) -> pd.DataFrame:
    """Per tuning study (one per rung) and optimizer: the epochs its trials ran, the chosen lr and weight decay,
    and their ratio to the winners of the study with the most epochs. Empty unless two or more studies ran."""
    rows = []
    for study in tuning_studies:
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
    if table.empty or table["study"].nunique() < 2:
        return pd.DataFrame()
    top_study = table.sort_values("epochs", kind="stable").iloc[-1]["study"]
    top = table[table["study"] == top_study].set_index("optimizer")
    for key in ("lr", "weight_decay"):
        table[f"{key}_ratio_to_top"] = [
            row[key] / top[key].get(row["optimizer"], math.nan) for _, row in table.iterrows()
        ]
    return table.sort_values(["optimizer", "epochs"], kind="stable").reset_index(drop=True)


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


# ---------------------------------------------------------------- display (report.md, tables/*.md)


def interval_text(mean: float, low: float, high: float, scale: float = 100.0, digits: int = 2) -> str:
    if not math.isfinite(mean):
        return "-"
    if not (math.isfinite(low) and math.isfinite(high)):
        return f"{mean * scale:.{digits}f}"
    return f"{mean * scale:.{digits}f} [{low * scale:.{digits}f}, {high * scale:.{digits}f}]"


def per_rung_display(ladder: Ladder) -> pd.DataFrame:
    """Arms as rows, rungs as columns: `mean [95 % interval] #rank (n)`, accuracies in %."""
    table = ladder.per_rung
    cells = {
        (row["arm"], row["rung"]): f"{interval_text(row['mean'], row['ci_low'], row['ci_high'])} "
        f"#{row['rank']:g} (n={row['n']})"
        for _, row in table.iterrows()
    }
    return pd.DataFrame(
        [
            {"optimizer": arm, **{rung.label: cells.get((arm, rung.label), "missing") for rung in ladder.rungs}}
            for arm in ladder.arms
        ]
    )


def agreement_display(ladder: Ladder) -> pd.DataFrame:
    rows = []
    for _, row in ladder.agreement.iterrows():
        top = row["rung"] == ladder.top.label
        rows.append(
            {
                "rung": row["rung"] + (" (top)" if top else ""),
                "tau-b [95 % CI]": "1 (itself)"
                if top
                else interval_text(row["tau_b"], row["tau_low"], row["tau_high"], 1, 2),
                "pairs ordered alike": "-" if top else f"{row['same_order']:g} of {row['pairs']:g}",
                "significant orders kept at top": "-"
                if top
                else f"{row['kept_pairs']:g} of {row['significant_pairs']:g}",
                "flips (confirmed / unconfirmed)": "-"
                if top
                else f"{row['confirmed_flips']:g} / {row['unconfirmed_flips']:g}",
                "optimizers x seeds": f"{row['arms']} x {row['seeds']}",
                "device-hours (per run)": f"{row['device_hours']:.2f} ({row['hours_per_run']:.3f})",
                "cost vs top (compute)": f"{row['cost_share'] * 100:.0f} % ({row['budget_share'] * 100:.0f} %)",
                "devices": row["devices"],
            }
        )
    return pd.DataFrame(rows)


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
