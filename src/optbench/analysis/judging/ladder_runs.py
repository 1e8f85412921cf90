"""A fidelity ladder's runs: which runs form a ladder, its rungs, their seed sets, and what is named about them.

A *ladder* is a set of runs whose settings differ only in fidelity keys (epochs, model.width,
dataset.train_subset, or a key a study's rungs name), found from the group keys of groups.py: runs that
share every other setting key (dataset, noise, ...) and take two or more combinations of fidelity values
form one ladder, one *rung* per combination. A ladder's budget keys are those that vary within it (a folder of
several workloads varies model.width between them, not along MNIST-1D's epochs), so a rung's `budget` is the same
whatever else the folder holds: its epochs (its steps for a step-budgeted workload: epochs x
dataset.steps_per_epoch) times the compute factor of any other budget key varying along the ladder. With the
study that made them (`--study`), the rungs are the study's (`planned_rungs`): two rungs at one budget tuned by
different tuning studies are told apart by the values each tuning chose (its record's winners), and a planned rung
with no runs is named. A rung that names its own tuning (`tuned_by`) drops the seeds that tuning ran on (its trial
and confirm seeds): its winners were selected on those runs, so they are never its evidence (`selection_notes`
names them). Runs of other settings form no ladder; tuning trials are set aside before loading.
- every run that ended is a result (`seed_values`): a diverged or failed run counts at its recorded score, or
  chance (as the robust tables count it); `failure_notes` names it, `left_out_notes` names a seed some
  optimizer lacks, never silently dropped;
- one seed set per rung (`common_seeds`): the seeds every optimizer has a result for there;
- the top rung is the planned top (the largest budget); when it is incomplete `top_rung_index` compares the
  largest complete rung below it instead and `top_note` says so and why (not yet run, running or interrupted).
What the rungs show against the top is judged in fidelity.py.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import yaml

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
from optbench.analysis.statistics.summaries import by_seed, seeds_text
from optbench.formats.run_summary import COMPLETED
from optbench.registry import workloads
from optbench.values import same_value

# Keys that change what a run costs, not what it asks; with the exponent of their share of the training compute
# (a ResNet's FLOPs grow with the square of its width).
FIDELITY_KEYS: dict[str, float] = {"cfg.epochs": 1, "cfg.dataset.train_subset": 1, "cfg.model.width": 2}
EPOCHS_KEY = "cfg.epochs"
TOP_SEEDS = 2  # the top rung needs an interval and a test for every pair: two seeds with a result per optimizer


@dataclass
class Rung:
    label: str  # `epochs=2` or `epochs=8, model.width=32`; a study's rung label (`epochs=8,tuned_by=tune_8`)
    values: dict  # fidelity key (cfg.*) -> value
    budget: float  # epochs (steps for a step-budgeted workload) x images x width^2 of the keys varying along the
    # ladder: an epochs ladder's budget is its epochs; NaN when unknown
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
    # a rung with its own tuning: the seeds that tuning selected on (trial and confirm seeds), never its evidence
    selected_on: frozenset = frozenset()


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
    selection: list[str] = field(default_factory=list)  # a rung's runs left out as its own tuning's selection runs
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
        selected_on = record.selection_seeds if record and rung.tuned_by else frozenset()
        planned.append(PlannedRung(rung.label, values, tuned_by, bool(rung.tuned_by), winners, selected_on))
    return planned


def selection_seeds(run: pd.Series, labels: list[str], planned: Sequence[PlannedRung]) -> list[str]:
    """The rungs among `labels` whose own tuning selected on this run's seed: the run is not their evidence (the
    winners' scores on the seeds that chose them are inflated by the choice, the winner's curse)."""
    by_label = {rung.label: rung for rung in planned}
    seed = run.get("seed")
    return [
        label
        for label in labels
        if label in by_label and seed is not None and seed == seed and int(seed) in by_label[label].selected_on
    ]


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
        # the keys varying along this ladder: another workload's width varies in the folder, not here
        along = [key for key in varying if group[key].map(repr).nunique() > 1]
        ladder = ladder_of(group, grouping, along, keys, planned) if along else None
        if ladder is not None:
            ladder.setting = setting_label(group.iloc[0], base)
            ladders.append(ladder)
    return ladders


def ladder_of(group, grouping: Grouping, varying: list[str], keys: dict, planned) -> "Ladder | None":
    belongs = {index: rung_labels(run, varying, planned) for index, run in group.iterrows()}
    untold = [index for index, found in belongs.items() if not found]  # at a shared budget, no tuning record fits
    selected = {index: selection_seeds(group.loc[index], found, planned) for index, found in belongs.items()}
    belongs = {index: [label for label in found if label not in selected[index]] for index, found in belongs.items()}
    pieces = [group.loc[[index]].assign(rung=label) for index, found in belongs.items() for label in found]
    if not pieces:
        return None
    labelled = pd.concat(pieces).reset_index(drop=True)
    labelled, arms = rung_arms(labelled, grouping)
    steps = steps_per_epoch(group)
    rungs = rungs_of(labelled, varying, keys, planned, steps)
    ran = [rung for rung in rungs if rung.runs["status"].isin(RESULT_STATUSES).any()]
    if len({rung.budget for rung in ran}) < 2:  # one budget (two tunings of it serving the same runs): no ladder
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
        + [(budget_of(rung.values, keys, steps), -1, rung.label) for rung in planned if rung.label not in unplanned],
        key=lambda entry: (entry[0] if math.isfinite(entry[0]) else -math.inf, entry[1]),
    )[2]
    labels = [rung.label for rung in ran]
    top_index = top_rung_index(ran, arms, labels.index(planned_top) if planned_top in labels else None)
    selection = [
        f"{label}: seeds {seeds_text(sorted({int(group.loc[index, 'seed']) for index in indices}))} left out: its own "
        f"tuning study {next(rung.tuned_by for rung in planned if rung.label == label)} selected its winners on "
        "them, so those runs are not its evidence (docs/fidelity.md)"
        for label in dict.fromkeys(label for found in selected.values() for label in found)
        for indices in [[index for index, found in selected.items() if label in found]]
    ]
    return Ladder(
        "", varying, ran, arms, not_yet=not_yet, selection=selection, top_index=top_index, planned_top=planned_top
    )


def result_arms(rung: Rung, min_seeds: int = 1) -> set:
    """The optimizers with at least `min_seeds` seeds with a result (a run that ended) at the rung."""
    counts = rung.runs.loc[rung.runs["status"].isin(RESULT_STATUSES)].groupby("arm")["seed"].nunique()
    return set(counts[counts >= min_seeds].index)


def is_complete(rung: Rung, arms: list[str]) -> bool:
    """Every optimizer has a result there, on TOP_SEEDS seeds they share: a rung that can be a top."""
    return result_arms(rung) >= set(arms) and len(common_seeds(rung, arms)) >= TOP_SEEDS


def top_rung_index(rungs: list[Rung], arms: list[str], planned: int | None = None) -> int:
    """The planned top (`planned`, default the largest rung) when complete; else the largest complete rung below
    it (the report says which and why); with none complete, or only the cheapest (nothing below it to compare), the
    planned top itself."""
    planned = len(rungs) - 1 if planned is None else planned
    # the cheapest rung has nothing below it to compare: as the top it would leave no comparison at all
    complete = [index for index, rung in enumerate(rungs) if index and is_complete(rung, arms)]
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


def rungs_of(
    runs: pd.DataFrame, varying: list[str], keys: dict[str, float], planned=(), steps: float = 1.0
) -> list[Rung]:
    order = {rung.label: index for index, rung in enumerate(planned)}
    tuned_by = {rung.label: rung.tuned_by for rung in planned}
    rungs = []
    for label, group in runs.groupby("rung", sort=False):
        values = {key: group.iloc[0][key] for key in varying}
        rungs.append(Rung(str(label), values, budget_of(values, keys, steps), group, tuned_by.get(label, "")))
    return sorted(
        rungs,
        key=lambda rung: (
            rung.budget if math.isfinite(rung.budget) else math.inf,
            order.get(rung.label, len(order)),
            [str(value) for value in rung.values.values()],
        ),
    )


def steps_per_epoch(runs: pd.DataFrame) -> float:
    """A step-budgeted workload's steps per evaluation period (dataset.steps_per_epoch), by which its rungs' epochs
    become steps; 1 for a workload budgeted in epochs, or when the runs do not say."""
    names = runs["workload"].dropna().unique() if "workload" in runs else []
    if len(names) != 1 or workloads.describe(str(names[0])).budget_unit != workloads.STEPS:
        return 1.0
    steps = pd.to_numeric(runs.get("cfg.dataset.steps_per_epoch", pd.Series(dtype=float)), errors="coerce")
    found = steps.dropna().unique()
    return float(found[0]) if len(found) == 1 else 1.0


def budget_of(values: dict, keys: dict[str, float], steps: float = 1.0) -> float:
    """A rung's budget: the product of its fidelity values, each to its exponent, its epochs counted in steps
    (`steps` per epoch) for a step-budgeted workload."""
    budget = steps if EPOCHS_KEY in values else 1.0
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
    """The arms x seeds matrix of results (two-dimensional even with no arm: (0, seeds))."""
    series = [seed_values(rung, arm, metric) for arm in arms]
    values = np.array([[values[seed] for seed in seeds] for values in series], dtype=float)
    return values.reshape(len(arms), len(seeds))


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
        return incomplete_top_note(ladder)
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


def incomplete_top_note(ladder: Ladder) -> list[str]:
    """The planned top kept though incomplete (no complete rung but the cheapest): the runs it lacks, named."""
    if len(ladder.rungs) < 2 or is_complete(ladder.top, ladder.arms):
        return []
    wanted = ladder.planned_seeds or sorted(set(ladder.top.runs["seed"]))
    states = [arm_state(ladder.top, arm, wanted) for arm in ladder.arms if not is_complete(ladder.top, [arm])]
    return [
        f"The planned top rung, {ladder.top_label}, is not complete ({'; '.join(states)}), and no rung above the "
        "cheapest is: the cheaper rungs are compared against it on the seeds it has"
    ]
