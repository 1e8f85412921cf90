"""Why two runs of one config and seed can differ: their recorded environments side by side, and their metrics
epoch by epoch.

Besides config, seed and code, the processor kind (model, dispatch level, bf16/AMX features), the intra-op thread
count, the library versions and the precision change a run's numbers (docs/runs.md, "Reproducibility"; the thread
count and the processor by about half a point after two epochs). `environment_rows(a, b)` gives what two
summaries record of each, where they differ or where one does not say ("unknown": written before it was
recorded); `epoch_differences(recorded, replayed)` compares two runs' metrics.jsonl records number by number,
leaving out the wall-clock timings. Used by compare.py (analysis/writing/run_pair.py), replay (training/replay.py), the
study planner's reuse notes (studies/) and the aggregator's report. Standard library only.
"""

import math
from dataclasses import dataclass, field

from optbench.formats.run_summary import UNKNOWN, Summary

# metrics.jsonl keys that measure the clock, not the training: they never match between two runs
TIMING_SUFFIXES = ("time_s", "images_per_s")
NONE = "none"  # recorded, and absent (a CPU build has no CUDA)


def processor_kind(summary: Summary) -> str:
    return summary.environment.processor_kind


def threads(summary: Summary) -> str:
    """The intra-op threads it trained with: the environment's count, else the policy's, else unknown."""
    count = summary.environment.threads or summary.device_policy.get("threads")
    return str(count) if count else UNKNOWN


def _shown(value) -> str:
    if value is None or value == "":
        return UNKNOWN
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        return ", ".join(f"{key}={_shown(item)}" for key, item in sorted(value.items()))
    return str(value)


def _code(summary: Summary) -> tuple[str, str]:
    commit = summary.git.commit[:12] if summary.git.commit else UNKNOWN
    return commit, _shown(summary.git.dirty)


def environment_facts(summary: Summary) -> dict[str, str]:
    """What moves the numbers, as one run recorded it: name -> value as shown ("unknown" when not recorded)."""
    environment = summary.environment
    commit, dirty = _code(summary)
    facts = {
        "processor": processor_kind(summary),
        "threads": threads(summary),
        "device": _shown(summary.device),
        "precision": _shown(summary.precision),
    }
    facts.update({name: _shown(version) for name, version in sorted(summary.versions.items())})
    if environment.recorded:  # the build's CUDA and the deterministic settings: only where recorded at all
        facts.update(cuda=environment.cuda or NONE, cudnn=str(environment.cudnn or NONE))
        facts["deterministic"] = _shown(environment.deterministic)
    facts.update({"code commit": commit, "uncommitted changes": dirty})
    return facts


def environment_rows(a: Summary, b: Summary) -> list[tuple[str, str, str]]:
    """(what, A's, B's) for each fact that differs between two runs or that either did not record."""
    facts_a, facts_b = environment_facts(a), environment_facts(b)
    names = [*facts_a, *(name for name in facts_b if name not in facts_a)]
    rows = [(name, facts_a.get(name, UNKNOWN), facts_b.get(name, UNKNOWN)) for name in names]
    return [row for row in rows if row[1] != row[2] or UNKNOWN in row[1:]]


def is_compared(key: str, value) -> bool:
    """A metrics.jsonl number two runs of one config should share: not the epoch, not a wall-clock timing."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    return (value is None or number) and key != "epoch" and not key.endswith(TIMING_SUFFIXES)


@dataclass(frozen=True)
class MetricDifference:
    metric: str
    largest: float  # the largest |replayed - recorded| over the compared epochs (inf: one of them null, not finite)
    at_epoch: int  # where it is largest
    first_epoch: int  # the first epoch where the two differ


@dataclass(frozen=True)
class EpochComparison:
    epochs: list[int]  # the epochs compared
    compared: list[str]  # the metric keys compared
    left_out: list[str]  # keys present but not compared (timings)
    differences: list[MetricDifference]  # one per metric that differs in some epoch, in `compared` order
    numbers: int  # how many numbers were compared
    # keys one side has and the other lacks in some compared epoch (an older run written before a key existed):
    # named, not compared, and no difference (a difference would be a number both sides hold)
    missing_from_first: list[str] = field(default_factory=list)
    missing_from_second: list[str] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return not self.differences


def _gap(recorded, replayed) -> float:
    """|replayed - recorded|; inf when exactly one is null or not finite (NaN equals NaN here: same result)."""
    if recorded == replayed:
        return 0.0
    if recorded is None or replayed is None:
        return math.inf
    if isinstance(recorded, float) and isinstance(replayed, float) and math.isnan(recorded) and math.isnan(replayed):
        return 0.0
    gap = abs(replayed - recorded)
    return gap if math.isfinite(gap) else math.inf


def epoch_differences(recorded: list[dict], replayed: list[dict]) -> EpochComparison:
    """Epoch by epoch (the epochs both hold), every compared key both records have: bit-identical means equal.
    A key only one side has is named as missing from the other, never compared against nothing."""
    by_epoch = {record["epoch"]: record for record in replayed if "epoch" in record}
    pairs = [(record, by_epoch[record["epoch"]]) for record in recorded if record.get("epoch") in by_epoch]
    keys = list(dict.fromkeys(key for pair in pairs for record in pair for key in record))
    missing_from_first = [key for key in keys if any(key not in old for old, _ in pairs)]
    missing_from_second = [key for key in keys if any(key not in new for _, new in pairs)]
    both = [key for key in keys if key not in missing_from_first and key not in missing_from_second]
    compared = [key for key in both if all(is_compared(key, record[key]) for pair in pairs for record in pair)]
    left_out = [key for key in both if key not in compared and key != "epoch"]
    differences = []
    for key in compared:
        gaps = [(_gap(old[key], new[key]), old["epoch"]) for old, new in pairs]
        differing = [(gap, epoch) for gap, epoch in gaps if gap > 0]
        if differing:
            largest, at_epoch = max(differing, key=lambda item: item[0])
            differences.append(MetricDifference(key, largest, at_epoch, differing[0][1]))
    epochs = [old["epoch"] for old, _ in pairs]
    return EpochComparison(
        epochs, compared, left_out, differences, len(compared) * len(pairs), missing_from_first, missing_from_second
    )
