"""The fidelity report: does a cheap budget rank the optimizers as the expensive one does (docs/fidelity.md)?

A *ladder* is a set of runs whose settings differ only in fidelity keys (epochs, model.width,
dataset.train_subset, or a key a study's rungs name), found from the group keys of groups.py: runs that
share every other setting key (dataset, noise, ...) and take two or more combinations of fidelity values
form one ladder, one *rung* per combination. With the study that made them (`--study`), the rungs are the
study's (`planned_rungs`): two rungs at one budget tuned by different tuning studies are told apart by the
values each tuning chose (its record's winners), and a planned rung with no runs is named. Runs of other
settings form no ladder; tuning trials are set aside before loading. Statistics: fidelity_stats.py.
Per ladder:
- every run that ended is a result: a diverged or failed run counts at its recorded score, or chance (as the
  robust tables count it), and is named; a seed some optimizer lacks is named, never silently dropped;
- one seed set per comparison: a rung's means, ranks and tests use the seeds every optimizer has a result for
  there; a rung against the top uses the seeds both rungs share; the tables give n and the seeds, and seeds
  beyond the study's plan (a sequential study's) are marked;
- the top rung is the planned top (the largest budget); when it is incomplete the report says so, why (not yet
  run, running or interrupted) and which rung is compared instead, and names no rung faithful on its behalf;
- per rung against the top: each pair's change in difference with simultaneous intervals, the rung's
  resolution, the orders the top establishes (paired t, Holm) counted reproduced, contradicted or undetermined,
  Kendall's tau-b with a projection interval, pairs ordered alike and flips, cost (the training-compute share;
  device-hours as measured beside it); a rung is faithful only on evidence (fidelity_stats.is_faithful).
`tuned_settings` tabulates the winners of tuning studies run at more than one budget (short-horizon bias).
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np
import pandas as pd
import yaml
from scipy import stats as scipy_stats

from optbench.analysis.groups import (
    BASE_ARM_KEYS,
    CONFIG_PREFIX,
    Grouping,
    arm_label,
    ordered_arms,
    setting_label,
    short_key,
    varies,
)
from optbench.analysis.judging.robust_tables import RESULT_STATUSES  # runs that ended: completed, diverged, failed
from optbench.analysis.statistics import fidelity_stats
from optbench.analysis.statistics.power import ALPHA
from optbench.analysis.statistics.summaries import by_seed, describe, seeds_text
from optbench.analysis.statistics.two_arms import two_arm_test
from optbench.formats.run_summary import COMPLETED

# Keys that change what a run costs, not what it asks; with the exponent of their share of the training compute
# (a ResNet's FLOPs grow with the square of its width).
FIDELITY_KEYS: dict[str, float] = {"cfg.epochs": 1, "cfg.dataset.train_subset": 1, "cfg.model.width": 2}
TOP_SEEDS = 2  # the top rung needs an interval and a test for every pair: two seeds with a result per optimizer
COVERAGE_MEASURED_FROM = 3  # seeds: the intervals' coverage is measured at 3, 6 and 10 (docs/fidelity.md)


@dataclass
class Rung:
    label: str  # `epochs=2` or `epochs=8, model.width=32`; a study's rung label (`epochs=8,tuned_by=tune_8`)
    values: dict  # fidelity key (cfg.*) -> value
    budget: float  # training compute relative units (epochs x images x width^2); NaN when unknown
    runs: pd.DataFrame  # its runs (every status: a failed run is a result)
    tuned_by: str = ""  # the tuning study its runs used, when the study says


@dataclass(frozen=True)
class PlannedRung:
    """A study's rung as the analysis needs it: its label, budget values and the tuning it runs with."""

    label: str
    values: dict  # cfg.key -> value
    tuned_by: str  # the tuning study whose winners it runs with ("" when untuned)
    own_tuning: bool  # the rung names its own tuned_by (another rung may share its budget)
    winners: dict | None  # optimizer -> {cfg.optimizer.lr: value, ...} from that study's record; None: no record


@dataclass
class Ladder:
    setting: str  # the setting without its fidelity keys: `imagefolder, clean`
    keys: list[str]  # the fidelity keys that vary (cfg.*)
    rungs: list[Rung]  # cheapest first; the last is the top rung
    arms: list[str]  # optimizers (and variants within a rung), in the report's order
    per_rung: pd.DataFrame = field(default_factory=pd.DataFrame)  # rung x arm: n, seeds, mean, interval, rank
    agreement: pd.DataFrame = field(default_factory=pd.DataFrame)  # rung vs top: orders, resolution, tau-b, cost
    orders: pd.DataFrame = field(default_factory=pd.DataFrame)  # rung x pair: change and its interval, orders
    flips: pd.DataFrame = field(default_factory=pd.DataFrame)  # pairs ordered differently at a rung and the top
    missing: list[str] = field(default_factory=list)  # arms absent at some rung, named
    not_yet: list[str] = field(default_factory=list)  # rungs not compared (no run, or too few seeds yet), named
    notes: list[str] = field(default_factory=list)  # failed runs, seeds left out, an incomplete top: named
    top_index: int = -1  # the rung compared against: the planned top when complete (top_rung_index)
    planned_top: str = ""  # the planned top rung's label (the largest budget); "" = the last rung
    planned_seeds: tuple = ()  # the study's seeds, when known: seeds beyond them are marked as added
    added_by: str = ""  # the sequential studies whose decision records are here: who added seeds beyond the plan
    resolution: float = fidelity_stats.DEFAULT_RESOLUTION_POINTS / 100  # the study's resolution (metric units)

    @property
    def top(self) -> Rung:
        return self.rungs[self.top_index]

    @property
    def compared(self) -> list[Rung]:
        """The rungs up to the top one; a larger rung still incomplete is shown, not compared."""
        return self.rungs[: self.top_index % len(self.rungs) + 1]

    @property
    def top_label(self) -> str:
        return self.planned_top or self.rungs[-1].label


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


def planned_rungs(study, tuning_studies: list) -> list[PlannedRung]:
    """The study's rungs, each with the winners of the tuning study it runs with (from its record among
    `tuning_studies`, tuning_report.TuningStudy; None when the folder holds no record of it)."""
    records = {tuning.name: tuning for tuning in tuning_studies}
    planned = []
    for rung in study.rungs:
        tuned_by = rung.tuned_by or study.tuned_by
        record = records.get(tuned_by)
        winners = (
            {
                name: {CONFIG_PREFIX + key: value for key, value in entry.winner.values.items()}
                for name, entry in record.optimizers.items()
                if entry.winner
            }
            if record
            else None
        )
        values = {
            CONFIG_PREFIX + key: yaml.safe_load(value)
            for key, value in (override.split("=", 1) for override in rung.overrides)
        }
        planned.append(PlannedRung(rung.label, values, tuned_by, bool(rung.tuned_by), winners))
    return planned


def same_value(a, b) -> bool:
    try:
        return math.isclose(float(a), float(b), rel_tol=1e-6)
    except (TypeError, ValueError):
        return str(a) == str(b)


def rung_labels(run: pd.Series, varying: list[str], planned: Sequence[PlannedRung]) -> list[str]:
    """The rungs a run belongs to: the planned rungs of its budget, told apart (when several share it) by the
    values their tuning chose; a budget no rung plans is a rung of its own (a GPU rung run beside the ladder).
    A run tuned alike for two rungs is one directory, and serves both."""
    at_budget = [
        rung
        for rung in planned
        if all(key in run.index and same_value(run[key], value) for key, value in rung.values.items())
    ]
    if not at_budget:
        return [", ".join(f"{short_key(key)}={run[key]}" for key in varying)]
    if len(at_budget) == 1:
        return [at_budget[0].label]
    tuned_alike = [
        rung
        for rung in at_budget
        if rung.winners is not None
        and run["optimizer"] in rung.winners
        and all(
            key in run.index and same_value(run[key], value) for key, value in rung.winners[run["optimizer"]].items()
        )
    ]
    if tuned_alike:
        return [rung.label for rung in tuned_alike]
    # no record to tell by: the study's shared tuning takes it, never a rung whose own tuning left no record
    return [rung.label for rung in at_budget if not rung.own_tuning][:1]


def find_ladders(
    runs: pd.DataFrame,
    grouping: Grouping,
    keys: dict[str, float] | None = None,
    planned: Sequence[PlannedRung] = (),
) -> list[Ladder]:
    """Ladders: runs alike but for the fidelity keys, at two or more rungs with results. `planned`: the study's
    rungs (planned_rungs), whose labels and order the ladder takes."""
    keys = keys or dict(FIDELITY_KEYS)
    varying = [key for key in grouping.setting_keys if key in keys]
    if not varying or not len(runs):
        return []
    base_keys = [key for key in grouping.setting_keys if key not in varying]
    base = Grouping(setting_keys=base_keys, arm_keys=grouping.arm_keys)
    ladders = []
    for _, group in runs.groupby([runs[key].map(repr) for key in base_keys], sort=False, dropna=False):
        ladder = ladder_of(group, grouping, varying, keys, planned)
        if ladder is not None:
            ladder.setting = setting_label(group.iloc[0], base)
            ladders.append(ladder)
    return ladders


def ladder_of(group, grouping: Grouping, varying: list[str], keys: dict, planned) -> "Ladder | None":
    belongs = {index: rung_labels(run, varying, planned) for index, run in group.iterrows()}
    untold = [index for index, found in belongs.items() if not found]  # at a shared budget, no tuning record fits
    labelled = pd.concat(
        [group.loc[[index]].assign(rung=label) for index, found in belongs.items() for label in found]
    ).reset_index(drop=True)
    labelled, arms = rung_arms(labelled, grouping)
    rungs = rungs_of(labelled, varying, keys, planned)
    ran = [rung for rung in rungs if rung.runs["status"].isin(RESULT_STATUSES).any()]
    if len(ran) < 2:
        return None
    present = set(labelled.loc[labelled["status"].isin(RESULT_STATUSES), "arm"])
    not_yet = [
        f"{rung.label}: no run has ended yet ({len(rung.runs)} run(s): "
        f"{', '.join(sorted(set(rung.runs['status'].map(str))))})"
        for rung in rungs
        if rung not in ran
    ]
    unplanned = {rung.label for rung in rungs}
    for rung in planned:
        if rung.label not in unplanned:
            why = (
                f"; its tuning study {rung.tuned_by} has no record in this folder, so no run can be told to be its"
                if rung.own_tuning and rung.winners is None
                else ""
            )
            not_yet.append(f"{rung.label}: no runs yet{why}")
    if untold:
        not_yet.append(
            f"{len(untold)} run(s) ({', '.join(sorted(set(group.loc[untold, 'arm'].map(str))))}) at a budget two "
            "rungs share match neither rung's tuned values: left out"
        )
    arms = [arm for arm in arms if arm in present]
    planned_top = max(
        [(rung.budget, index, rung.label) for index, rung in enumerate(ran)]
        + [(budget_of(rung.values, keys), -1, rung.label) for rung in planned if rung.label not in unplanned],
        key=lambda entry: (entry[0] if math.isfinite(entry[0]) else -math.inf, entry[1]),
    )[2]
    labels = [rung.label for rung in ran]
    top_index = top_rung_index(ran, arms, labels.index(planned_top) if planned_top in labels else None)
    return Ladder("", varying, ran, arms, not_yet=not_yet, top_index=top_index, planned_top=planned_top)


def result_arms(rung: Rung, min_seeds: int = 1) -> set:
    """The optimizers with at least `min_seeds` seeds with a result (a run that ended) at the rung."""
    counts = rung.runs.loc[rung.runs["status"].isin(RESULT_STATUSES)].groupby("arm")["seed"].nunique()
    return set(counts[counts >= min_seeds].index)


completed_arms = result_arms  # the name before failed runs counted as results


def is_complete(rung: Rung, arms: list[str]) -> bool:
    """Every optimizer has a result there, on TOP_SEEDS seeds they share: a rung that can be a top."""
    return result_arms(rung) >= set(arms) and len(common_seeds(rung, arms)) >= TOP_SEEDS


def top_rung_index(rungs: list[Rung], arms: list[str], planned: int | None = None) -> int:
    """The planned top (`planned`, default the largest rung) when complete; else the largest complete rung below
    it (the report says which and why); with none complete, the planned top itself."""
    planned = len(rungs) - 1 if planned is None else planned
    complete = [index for index, rung in enumerate(rungs) if is_complete(rung, arms)]
    if planned in complete or not complete:
        return planned
    below = [index for index in complete if index < planned]
    return below[-1] if below else complete[-1]


def rung_arms(runs: pd.DataFrame, grouping: Grouping) -> tuple[pd.DataFrame, list[str]]:
    """The runs with `arm` relabelled by the optimizer fields that vary within a rung only: a learning rate tuned
    per rung (a rung's own tuned_by) differs between rungs, yet it is the same optimizer climbing the ladder."""
    within_rung = [
        key for key in grouping.arm_keys if key not in BASE_ARM_KEYS and varies(runs, key, [*BASE_ARM_KEYS, "rung"])
    ]
    rung_grouping = Grouping(setting_keys=grouping.setting_keys, arm_keys=[*BASE_ARM_KEYS, *within_rung])
    relabelled = runs.assign(arm=[arm_label(row, rung_grouping) for _, row in runs.iterrows()])
    return relabelled, ordered_arms(relabelled, rung_grouping)


def rungs_of(runs: pd.DataFrame, varying: list[str], keys: dict[str, float], planned=()) -> list[Rung]:
    order = {rung.label: index for index, rung in enumerate(planned)}
    tuned_by = {rung.label: rung.tuned_by for rung in planned}
    rungs = []
    for label, group in runs.groupby("rung", sort=False):
        values = {key: group.iloc[0][key] for key in varying}
        rungs.append(Rung(str(label), values, budget_of(values, keys), group, tuned_by.get(label, "")))
    return sorted(
        rungs,
        key=lambda rung: (
            rung.budget if math.isfinite(rung.budget) else math.inf,
            order.get(rung.label, len(order)),
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


# ---------------------------------------------------------------- results per seed, one seed set per comparison


def seed_values(rung: Rung, arm: str, metric: str) -> pd.Series:
    """The arm's results by seed: completed runs' metric, a diverged or failed run's recorded score or chance."""
    runs = rung.runs[(rung.runs["arm"] == arm) & rung.runs["status"].isin(RESULT_STATUSES)]
    values = pd.to_numeric(runs[metric], errors="coerce").to_numpy(dtype=float)
    chance = 1.0 / pd.to_numeric(runs["num_classes"], errors="coerce") if "num_classes" in runs else math.nan
    bad = (runs["status"] != COMPLETED).to_numpy() & ~np.isfinite(values)
    values = np.where(bad, np.asarray(pd.Series(chance, index=runs.index), dtype=float), values)
    return by_seed(pd.Series(values, index=runs["seed"].to_numpy()))


def common_seeds(rung: Rung, arms: list[str], metric: str | None = None) -> list:
    """The seeds every arm present at the rung has a result for: the rung's one seed set."""
    present = result_arms(rung) & set(arms)
    ended = rung.runs[rung.runs["arm"].isin(present) & rung.runs["status"].isin(RESULT_STATUSES)]
    if not present:
        return []
    return sorted(set.intersection(*(set(group["seed"]) for _, group in ended.groupby("arm"))))


def matrix(rung: Rung, arms: list[str], seeds: list, metric: str) -> np.ndarray:
    """The arms x seeds matrix of results."""
    series = [seed_values(rung, arm, metric) for arm in arms]
    return np.array([[values[seed] for seed in seeds] for values in series], dtype=float)


def per_rung_table(ladder: Ladder, metric: str) -> pd.DataFrame:
    rows = []
    for rung in ladder.rungs:
        seeds = common_seeds(rung, ladder.arms)
        present = [arm for arm in ladder.arms if arm in result_arms(rung)]
        cells = {arm: describe(seed_values(rung, arm, metric)[seeds]) for arm in present}
        ranks = dict(zip(present, scipy_stats.rankdata([-cells[arm].mean for arm in present])))
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


def tau_b(x, y) -> float:
    return fidelity_stats.tau_b(x, y)


# ---------------------------------------------------------------- what is named: failures, seeds, the top


def failure_notes(ladder: Ladder) -> list[str]:
    notes = []
    for rung in ladder.rungs:
        bad = rung.runs[rung.runs["status"].isin(("diverged", "failed"))]
        for (arm, status), runs in bad.groupby(["arm", "status"], sort=False):
            notes.append(
                f"{arm} {status} at {rung.label} on seed(s) {seeds_text(sorted(runs['seed']))}: results, counted at "
                "the recorded score (chance when none was recorded) as the robust tables count them"
            )
    return notes


def left_out_notes(ladder: Ladder) -> list[str]:
    """Seeds some optimizer ran at a rung that are outside the rung's seed set, with whom they ran for."""
    notes = []
    for rung in ladder.rungs:
        seeds = set(common_seeds(rung, ladder.arms))
        ended = rung.runs[rung.runs["status"].isin(RESULT_STATUSES)]
        extra = ended[~ended["seed"].isin(seeds)]
        if extra.empty:
            continue
        beyond = sorted(set(extra["seed"]) - set(ladder.planned_seeds)) if ladder.planned_seeds else []
        added = f" (seeds {seeds_text(beyond)} added beyond the study's plan" + (
            f" by the sequential study {ladder.added_by})" if ladder.added_by else ")"
        )
        notes.append(
            f"{rung.label}: seeds {seeds_text(sorted(set(extra['seed'])))} ran for "
            f"{', '.join(sorted(set(extra['arm'])))} only{added if beyond else ''}: left out of this rung's "
            f"comparisons, which use the seeds every optimizer ran ({seeds_text(sorted(seeds))})"
        )
    return notes


def arm_state(rung: Rung | None, arm: str, wanted: Sequence) -> str:
    """`muon: results on seeds 0 (seed 1 interrupted; seeds 2-5 not yet run)` at a rung."""
    runs = rung.runs[rung.runs["arm"] == arm] if rung is not None else pd.DataFrame(columns=["seed", "status"])
    ended = sorted(set(runs.loc[runs["status"].isin(RESULT_STATUSES), "seed"]))
    unfinished = runs[~runs["status"].isin(RESULT_STATUSES)]
    parts = [f"seed {seed} {status}" for seed, status in zip(unfinished["seed"], unfinished["status"])]
    absent = sorted(set(wanted) - set(runs["seed"]))
    if absent:
        parts.append(f"seeds {seeds_text(absent)} not yet run")
    return f"{arm}: results on {len(ended)} seed(s)" + (f" ({'; '.join(parts)})" if parts else "")


def top_note(ladder: Ladder) -> list[str]:
    if ladder.top.label == ladder.top_label:
        return []
    planned = next((rung for rung in ladder.rungs if rung.label == ladder.top_label), None)
    wanted = ladder.planned_seeds or sorted(set(ladder.top.runs["seed"]))
    states = [
        arm_state(planned, arm, wanted) for arm in ladder.arms if planned is None or not is_complete(planned, [arm])
    ]
    why = "; ".join(states) if planned is not None else "no runs yet"
    return [
        f"The planned top rung, {ladder.top_label}, is not complete ({why}): the cheaper rungs are compared against "
        f"{ladder.top.label} instead, and no rung is called faithful on {ladder.top_label}'s behalf"
    ]


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
    """Per pair: the change of its difference on the seeds the rung and the top share, with simultaneous
    intervals; the order the top establishes (its seeds) and the rung's (its seeds); and the rung's summary."""
    shared = sorted(set(common_seeds(rung, arms)) & set(common_seeds(ladder.top, arms)))
    top_seeds, rung_seeds = common_seeds(ladder.top, arms), common_seeds(rung, arms)
    top_signs, top_p = fidelity_stats.established_orders(matrix(ladder.top, arms, top_seeds, metric), alpha)
    rung_signs, rung_p = fidelity_stats.established_orders(matrix(rung, arms, rung_seeds, metric), alpha)
    counts = fidelity_stats.classify_orders(top_signs, rung_signs)
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
            "established_top": int(top_sign),
            "p_holm_top": float(p_top),
            "established_rung": int(rung_sign),
            "p_holm_rung": float(p_rung),
            "order": label,
        }
        for change, top_sign, p_top, rung_sign, p_rung, label in zip(
            changes, top_signs, top_p, rung_signs, rung_p, counts.labels
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
        "smallest_p_top": float(np.nanmin(top_p)) if len(top_p) and np.isfinite(top_p).any() else math.nan,
    }
    return rows, summary


def device_hours(rung: Rung) -> tuple[float, float, str]:
    """Total device-hours of the rung's runs that ended, the mean per run, and the devices they ran on."""
    seconds = pd.to_numeric(
        rung.runs.loc[rung.runs["status"].isin(RESULT_STATUSES), "wall_time_s"], errors="coerce"
    ).dropna()
    devices = ", ".join(sorted({str(device) for device in rung.runs.get("device", pd.Series(dtype=str)).dropna()}))
    return float(seconds.sum() / 3600), float(seconds.mean() / 3600) if len(seconds) else math.nan, devices


def analyse_ladder(ladder: Ladder, metric: str, alpha: float = ALPHA, resolution: float | None = None) -> Ladder:
    """Fill the ladder's tables: per rung, each rung against the top, every pair's change, and what is named.
    `resolution`: the study's (metric units; default fidelity_stats.DEFAULT_RESOLUTION_POINTS points)."""
    if resolution is not None:
        ladder.resolution = resolution
    ladder.per_rung = per_rung_table(ladder, metric)
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
    ladder.notes = top_note(ladder) + failure_notes(ladder) + left_out_notes(ladder)
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
    tau = tau_b(low.mean(axis=1), top.mean(axis=1)) if len(arms) >= 2 and len(shared) else math.nan
    tau_low, tau_high = fidelity_stats.tau_b_interval(low, top) if len(arms) >= 2 and len(shared) else (math.nan,) * 2
    return {
        **row,
        "reproduced": counts.reproduced,
        "contradicted": counts.contradicted,
        "undetermined": counts.undetermined,
        "resolution": summary["resolution"],
        "faithful": fidelity_stats.is_faithful(counts, summary["resolution"], ladder.resolution),
        "under_covering": len(shared) < COVERAGE_MEASURED_FROM,
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
    """The cheapest rung below the top that is faithful on evidence (fidelity_stats.is_faithful): the top
    establishes an order, the rung reproduces every one, contradicts none, at the study's resolution."""
    below = ladder.agreement[ladder.agreement["rung"] != ladder.top.label]
    faithful = below[below["faithful"].astype(bool)] if "faithful" in below else below.iloc[0:0]
    return str(faithful.iloc[0]["rung"]) if len(faithful) else None


# ---------------------------------------------------------------- why no rung is faithful, and the seeds it takes


@dataclass(frozen=True)
class FidelityPlan:
    change_sd: float  # residual sd of the per-seed changes, pooled over the rungs, at its 80 % upper bound
    difference_sd: float  # sd of a pair's per-seed difference at the top, at its 80 % upper bound
    seeds_for_resolution: int | None  # shared by a rung and the top, for a resolution of ladder.resolution
    seeds_to_establish: int | None  # at the top, for 80 % power to establish an order with a gap of the resolution


def fidelity_plan(ladder: Ladder, metric: str, alpha: float = ALPHA) -> FidelityPlan:
    """The planner, from the ladder's own spread: residual sds (fidelity_stats.residual_spread) pooled over the
    compared rungs, each at its one-sided 80 % upper bound (Browne 1995, as the seed planner does)."""
    arms = [arm for arm in ladder.arms if arm in result_arms(ladder.top)]
    top_seeds = common_seeds(ladder.top, arms)
    top_sd, top_df = fidelity_stats.residual_spread(matrix(ladder.top, arms, top_seeds, metric))
    change_variance, change_df = 0.0, 0
    for rung in ladder.compared[:-1]:
        shared = sorted(set(common_seeds(rung, arms)) & set(top_seeds))
        sd, df = fidelity_stats.residual_spread(
            matrix(rung, arms, shared, metric) - matrix(ladder.top, arms, shared, metric)
        )
        if df:
            change_variance, change_df = change_variance + sd**2 * df, change_df + df
    change_sd = (
        fidelity_stats.sd_upper_bound(math.sqrt(change_variance / change_df), change_df) if change_df else math.nan
    )
    difference_sd = math.sqrt(2) * fidelity_stats.sd_upper_bound(top_sd, top_df) if top_df else math.nan
    pairs = len(arms) * (len(arms) - 1) // 2
    return FidelityPlan(
        change_sd,
        difference_sd,
        fidelity_stats.seeds_for_resolution(change_sd, len(arms), ladder.resolution),
        fidelity_stats.seeds_to_establish(difference_sd, ladder.resolution, pairs, alpha),
    )


def with_plan(ladder: Ladder, plan: FidelityPlan) -> Ladder:
    """The agreement table with the study's resolution and the planner's seeds (README's reading reads them)."""
    ladder.agreement = ladder.agreement.assign(
        resolution_wanted=ladder.resolution,
        seeds_to_establish=plan.seeds_to_establish,
        seeds_for_resolution=plan.seeds_for_resolution,
        planned_top=ladder.top_label,
    )
    return ladder


def seeds_phrase(seeds: int | None) -> str:
    return f"{seeds} seeds" if seeds is not None else f"more than {fidelity_stats.MAX_SEEDS} seeds"


def why_none(ladder: Ladder, plan: FidelityPlan) -> str:
    """One sentence: why no rung can be named faithful, and what would let one be."""
    top = ladder.agreement[ladder.agreement["rung"] == ladder.top.label].iloc[0]
    below = ladder.agreement[ladder.agreement["rung"] != ladder.top.label]
    points = ladder.resolution * 100
    if top["established_top"] == 0:
        reason = (
            f"the top rung ({ladder.top.label}, seeds {top['top_seeds']}) establishes no order after Holm "
            f"(smallest adjusted p {top['smallest_p_holm_top']:.2g}), so there is nothing a cheaper rung could "
            "reproduce"
        )
    else:
        reason = "; ".join(
            f"{row['rung']} reproduces {row['reproduced']:g} of {row['established_top']:g} established orders"
            f" ({row['contradicted']:g} contradicted) at a resolution of {row['resolution'] * 100:.1f} points"
            for _, row in below.iterrows()
        )
        reason = (
            f"no cheaper rung reproduces every order the top establishes at a resolution of {points:g} points "
            f"({reason})"
        )
    return (
        f"No rung is named faithful: {reason}. From this ladder's spread, {seeds_phrase(plan.seeds_to_establish)} "
        f"per optimizer at the top would establish orders {points:g} points apart (80 % power, Holm's strictest step), "
        f"and {seeds_phrase(plan.seeds_for_resolution)} shared by a rung and the top would bring its resolution "
        f"to {points:g} points where the ranking does not move (`python src/study.py LADDER --plan-seeds --pilot DIR`)."
    )


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


def agreement_display(ladder: Ladder) -> pd.DataFrame:
    rows = []
    for _, row in ladder.agreement.iterrows():
        top = row["rung"] == ladder.top.label
        flag = " (coverage not measured below 3 seeds)" if not top and row["under_covering"] else ""
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
