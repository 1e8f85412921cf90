"""The decision record of a study run until decided: `sequential-<study>.json` beside the study's runs.

One module owns the format: its schema is `DecisionRecord` (with `HypothesisDesign`, `Look` and
`HypothesisDecision`); the study runner (studies/until_decided.py) builds one through `new_record`,
`with_design` and `add_look` and writes it through `write`; every reader (the next look, the aggregator's
verdicts and report, the seed planner) gets it from `read`, which parses the file through formats.fields.
Standard library only. Written once per look, atomically, never rewritten: a look's decisions are appended,
and a hypothesis decided at one look keeps that decision at every later one, so it is never re-decided on
more data.

The contract, format 1 (JSON keys sorted, indent 2):

    {"format": 1, "study": "cpu_demo", "alpha": 0.05, "looks": [3, 6, 10],
     "rule": "...", "hypotheses": {"H2": {"comparisons": 4, "efficacy": [...], "rejection": [...]}},
     "decisions": [{"look": 0, "seeds": 3, "date": "...",
                    "hypotheses": {"H2": {"decision": "continue", "reason": "...", "seeds": 3,
                                          "conditional_power": 0.4,
                                          "z": {"imagefolder, clean: sgd vs adam": -1.2},
                                          "n": {"imagefolder, clean: sgd vs adam": 3}}}}]}

- `looks`: the seeds at each look, increasing whole numbers >= 1 (a one-seed study's first look is 1);
  `alpha` in (0, 1); per hypothesis its design, fixed at the first look that evaluated it: its required
  comparisons and one efficacy and one rejection boundary (finite z) per look.
- `decisions[i]` is look i: `look` = i, `seeds` = looks[i]; per hypothesis its decision (DECISIONS), the
  reason, the seeds of the look that took it, `conditional_power` in [0, 1] and per comparison its signed
  z; a hypothesis stopped at an earlier look repeats that look's entry.
- No number: `conditional_power` when no decision is under way, a `z` when the comparison was not
  testable. Written as null; records written before this module parsed them hold NaN there, read the same
  (None). Any other non-finite number is damage.
- `n` (the seeds each comparison's test used) came later: records written before it have none (None).
- No `format`: read as format 1; a newer one is refused (upgrade optbench). A file that does not parse is
  one DamagedRunFile (a ConfigError) naming the file, the field and the way out (WAY_OUT): the next look
  stops with exit status 2 and the record untouched; the aggregator warns in one line and ignores it.
"""

import dataclasses
import datetime
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from optbench.fileio import json_text, read_json, write_bytes_atomically
from optbench.formats.fields import Fields

FORMAT = 1
PREFIX = "sequential-"
WAY_OUT = "restore it from a backup; deleting it would let the study re-decide on more data"
Item = TypeVar("Item")  # what a check makes of one item of a JSON list
# The decisions a look can take (optbench.analysis.statistics.sequential_rule says when); all but CONTINUE are final.
CONTINUE, SUPPORTED, REJECTED, FUTILITY, UNDECIDED = "continue", "supported", "rejected", "futility", "undecided"
DECISIONS = (CONTINUE, SUPPORTED, REJECTED, FUTILITY, UNDECIDED)


@dataclass(frozen=True)
class HypothesisDesign:
    """A hypothesis's design, fixed at the first look that evaluated it."""

    comparisons: int  # m: its required comparisons (the rejection boundaries are at alpha / m)
    efficacy: tuple[float, ...]  # z boundary per look for "supported"
    rejection: tuple[float, ...]  # z boundary per look for "rejected" (crossed the other way)


@dataclass(frozen=True)
class HypothesisDecision:
    """One hypothesis's decision at one look."""

    decision: str  # one of DECISIONS
    reason: str
    seeds: int  # the seeds of the look that took it
    conditional_power: float | None  # of a decision under the current trend; None when none is under way
    z: Mapping[str, float | None]  # per comparison ("setting: a vs b") its signed z; None: not testable
    n: Mapping[str, int] | None  # per comparison the seeds its test used; None: written before `n` existed


@dataclass(frozen=True)
class Look:
    look: int  # its index in the design's looks (0-based)
    seeds: int
    date: str  # ISO 8601, UTC
    hypotheses: Mapping[str, HypothesisDecision]


@dataclass(frozen=True)
class DecisionRecord:
    version: int
    study: str
    alpha: float
    looks: tuple[int, ...]  # the seeds at each look
    rule: str  # the rule in words
    hypotheses: Mapping[str, HypothesisDesign]
    decisions: tuple[Look, ...]  # the looks taken so far, in order

    @property
    def looks_done(self) -> int:
        return len(self.decisions)

    def stopped(self) -> dict[str, HypothesisDecision]:
        """Hypotheses with a final decision, and that decision (from the look that took it)."""
        final: dict[str, HypothesisDecision] = {}
        for look in self.decisions:
            for name, entry in look.hypotheses.items():
                if name not in final and entry.decision != CONTINUE:
                    final[name] = entry
        return final

    def ruling(self, hypothesis_id: str) -> tuple[int, HypothesisDecision] | None:
        """(look index, decision) of the look that decided the hypothesis, else of the latest look with it;
        None when no look has it yet."""
        with_it = [
            (look.look, look.hypotheses[hypothesis_id]) for look in self.decisions if hypothesis_id in look.hypotheses
        ]
        if not with_it:
            return None
        return next(((look, entry) for look, entry in with_it if entry.decision != CONTINUE), with_it[-1])


# ---- building and writing (the study runner) ----------------------------------------------------------------


def record_path(results_dir: Path, study_id: str) -> Path:
    return Path(results_dir) / f"{PREFIX}{study_id}.json"


def find_records(results_dir: Path, skip: Path | None = None) -> list[Path]:
    """Every decision record below `results_dir`, sorted; those inside `skip` (an output folder) are not."""
    skip = Path(skip).resolve() if skip else None
    return sorted(
        path
        for path in Path(results_dir).rglob(f"{PREFIX}*.json")
        if skip is None or skip not in path.resolve().parents
    )


def new_record(
    study_id: str,
    looks: tuple[int, ...],
    alpha: float,
    rule: str,
    hypotheses: Mapping[str, HypothesisDesign] | None = None,
) -> DecisionRecord:
    """A record before its first look; the hypotheses' designs are added as they are first evaluated (with_design)."""
    return DecisionRecord(FORMAT, study_id, alpha, tuple(looks), rule, dict(hypotheses or {}), ())


def with_design(record: DecisionRecord, hypothesis_id: str, design: HypothesisDesign) -> DecisionRecord:
    """The record with a hypothesis's design, stored at the first look that evaluates it."""
    return dataclasses.replace(record, hypotheses={**record.hypotheses, hypothesis_id: design})


def add_look(record: DecisionRecord, decisions: Mapping[str, HypothesisDecision]) -> DecisionRecord:
    """The record with its next look; a hypothesis already stopped keeps its earlier decision."""
    index = record.looks_done
    look = Look(
        index,
        record.looks[index],
        datetime.datetime.now(datetime.UTC).isoformat(),
        {**decisions, **record.stopped()},
    )
    return dataclasses.replace(record, decisions=(*record.decisions, look))


def no_number(value: float) -> float | None:
    """None for NaN (a comparison not testable, no decision under way): the file holds null there."""
    return None if math.isnan(value) else value


def content(record: DecisionRecord) -> dict:
    """The JSON object of `record`, in the layout of the contract above."""
    return {
        "format": FORMAT,
        "study": record.study,
        "alpha": record.alpha,
        "looks": list(record.looks),
        "rule": record.rule,
        "hypotheses": {
            name: {
                "comparisons": design.comparisons,
                "efficacy": list(design.efficacy),
                "rejection": list(design.rejection),
            }
            for name, design in record.hypotheses.items()
        },
        "decisions": [
            {
                "look": look.look,
                "seeds": look.seeds,
                "date": look.date,
                "hypotheses": {name: decision_content(entry) for name, entry in look.hypotheses.items()},
            }
            for look in record.decisions
        ],
    }


def decision_content(entry: HypothesisDecision) -> dict:
    written = {**dataclasses.asdict(entry), "z": dict(entry.z)}
    if entry.n is None:  # a look from before `n` existed stays as it was written
        del written["n"]
    else:
        written["n"] = dict(entry.n)
    return written


def write(path: Path, record: DecisionRecord) -> None:
    """Replace the record atomically; it is parsed first, so the harness never writes one it cannot read back."""
    path = Path(path)
    written = content(record)
    parse(written, path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomically(path, (json_text(written) + "\n").encode())


# ---- reading -----------------------------------------------------------------------------------------------


def read(path: Path) -> DecisionRecord | None:
    """The record, or None when there is none yet; DamagedRunFile naming the file and the field when it does not
    parse."""
    written = read_json(Path(path), WAY_OUT)
    return None if written is None else parse(written, Path(path))


def parse(written: object, path: Path) -> DecisionRecord:
    """The checked DecisionRecord of `written` (the file's JSON); DamagedRunFile on the first field off it."""
    fields = Fields(written, path, way_out=WAY_OUT)
    version = fields.version(FORMAT)
    study = fields.text("study", required=True)
    alpha = fields.number("alpha", required=True)
    if alpha is None or not 0 < alpha < 1:
        Fields(written, path, "alpha", WAY_OUT).fail(f"is {alpha!r}, not in (0, 1)")
    looks = tuple(items(fields, "looks", lambda item, key: item.whole(key, required=True, low=1)))
    if not looks or any(later <= earlier for earlier, later in zip(looks, looks[1:])):
        Fields(written, path, "looks", WAY_OUT).fail(f"is {list(looks)}, not increasing seed counts")
    designs = fields.inner("hypotheses", required=True)
    listed = fields.listing("decisions", required=True)
    if len(listed) > len(looks):
        Fields(written, path, "decisions", WAY_OUT).fail(f"holds {len(listed)} looks, the design {len(looks)}")
    return DecisionRecord(
        version=version,
        study=study,
        alpha=alpha,
        looks=looks,
        rule=fields.text("rule", required=True),
        hypotheses={name: parse_design(designs.inner(name, required=True), len(looks)) for name in designs.value},
        decisions=tuple(
            parse_look(Fields(look, path, f"decisions[{index}]", WAY_OUT), index, looks)
            for index, look in enumerate(listed)
        ),
    )


def items(fields: Fields, key: str, check: Callable[[Fields, str], Item]) -> list[Item]:
    """Each item of the JSON list at `key`, checked by `check(item_fields, name)` (failures name `key[i]`)."""
    values = fields.listing(key, required=True)
    named = {f"{key}[{index}]": value for index, value in enumerate(values)}
    item_fields = Fields(named, fields.path, fields.where, fields.way_out)
    return [check(item_fields, name) for name in named]


def parse_design(fields: Fields, looks: int) -> HypothesisDesign:
    boundaries = {
        key: tuple(items(fields, key, lambda item, name: item.number(name, required=True, low=0)))
        for key in ("efficacy", "rejection")
    }
    for key, values in boundaries.items():
        if len(values) != looks:
            Fields(fields.value, fields.path, f"{fields.where}.{key}", fields.way_out).fail(
                f"holds {len(values)} boundaries, the design has {looks} looks"
            )
    return HypothesisDesign(fields.whole("comparisons", required=True), **boundaries)


def parse_look(fields: Fields, index: int, looks: tuple[int, ...]) -> Look:
    look = fields.whole("look", required=True)
    seeds = fields.whole("seeds", required=True, low=1)
    if (look, seeds) != (index, looks[index]):
        fields.fail(f"is look {look} at {seeds} seeds, not look {index} at {looks[index]} (the design's looks)")
    decisions = fields.inner("hypotheses", required=True)
    return Look(
        look,
        seeds,
        fields.text("date", required=True),
        {name: parse_decision(decisions.inner(name, required=True)) for name in decisions.value},
    )


def parse_decision(fields: Fields) -> HypothesisDecision:
    z = fields.inner("z", required=True)
    n = fields.inner("n")
    return HypothesisDecision(
        decision=fields.text("decision", required=True, choices=DECISIONS),
        reason=fields.text("reason", required=True),
        seeds=fields.whole("seeds", required=True, low=1),
        conditional_power=number_or_none(fields, "conditional_power", low=0, high=1),
        z={comparison: number_or_none(z, comparison) for comparison in z.value},
        n=None if n is None else {comparison: n.whole(comparison, required=True) for comparison in n.value},
    )


def number_or_none(fields: Fields, key: str, low: float = -math.inf, high: float = math.inf) -> float | None:
    """A finite number, or None where the writer had none: null, or NaN as records written before this module
    parsed them hold it. The key itself must be there; infinity is damage."""
    if key not in fields.value:
        fields.number(key, required=True)  # raises: is missing
    value = fields.value[key]
    if isinstance(value, float) and math.isnan(value):
        return None
    return fields.number(key, low=low, high=high)
