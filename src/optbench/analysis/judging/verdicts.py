"""One verdict per hypothesis and scope: the settings a hypothesis is judged on, and the rule that judges it.

A hypothesis is judged on the settings of the study that tests it, never on settings other studies happen to
have put in the same folder (`scopes`):
- **sequential**: a study run until decided (its decision record, `sequential-<study>.json`, is in the folder)
  tests the hypotheses its record decides. The scope is that study's planned settings
  (experiments/studies/<study>.yaml) and its decision is the verdict: supported or rejected when a boundary
  was crossed, inconclusive when it stopped for futility, was undecided at its last look, or is still going.
  The fixed-design verdict on the same runs (the seeds of the deciding look, hypotheses.hypothesis_verdict) is
  kept as detail: it treats a seed count chosen by looking at the data as fixed in advance, so it over-states the
  evidence and is never the verdict;
- **study**: else the study named with `--study` (`--study H1` names a hypothesis's own `study:` block), for
  the hypotheses it tests (study_spec.tested_hypotheses), on its planned settings;
- **folder**: else every setting in the folder matching the hypothesis's `where:`.
A hypothesis the named study does not test, or whose scope holds no run of its optimizers at all, gets no
verdict: it is listed as not tested (`NotTested`), not called inconclusive on nothing. `verdict_table` is
tables/verdicts.csv, one row per (hypothesis, scope): the one source of every verdict the report and README show.
"""

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from optbench.analysis.judging.hypotheses import INCONCLUSIVE, REJECTED, SUPPORTED, Context, Verdict, hypothesis_verdict
from optbench.analysis.statistics.sequential_rule import CONTINUE, FUTILITY, look_seeds
from optbench.errors import ConfigError
from optbench.formats import aggregate_tables
from optbench.formats.aggregate_tables import NOT_TESTED
from optbench.formats.decision_record import DecisionRecord, HypothesisDecision
from optbench.specs.hypothesis_spec import Hypothesis
from optbench.specs.study_spec import Study, find_study, planned_settings, tested_hypotheses

SEQUENTIAL, STUDY, FOLDER = "sequential", "study", "folder"
VERDICT_OF_DECISION = {
    "supported": SUPPORTED,
    "rejected": REJECTED,
    "futility": INCONCLUSIVE,
    "undecided": INCONCLUSIVE,
    CONTINUE: INCONCLUSIVE,
}


@dataclass(frozen=True)
class Scope:
    rule: str  # SEQUENTIAL, STUDY or FOLDER
    study: str = ""  # the study that tests the hypothesis ("" when none is known)
    planned: tuple = ()  # its planned settings (study_spec.PlannedSetting); empty: the folder's
    own_seeds: tuple = ()  # SEQUENTIAL: the study's own seeds, from which its looks count on
    record: DecisionRecord | None = dataclasses.field(default=None, compare=False)  # SEQUENTIAL: the decision record
    tuned_by: str = ""  # SEQUENTIAL: the deciding study's tuning study, whose winners are its arms


@dataclass
class Judgement:
    """The one verdict on a hypothesis in a scope, and the fixed-design evaluation it rests on or sits beside."""

    hypothesis: Hypothesis
    scope: Scope
    verdict: str  # supported, rejected, inconclusive
    reason: str
    fixed: Verdict  # hypotheses.hypothesis_verdict on the scope (the verdict itself unless SEQUENTIAL)
    decision: str = ""  # SEQUENTIAL: the record's decision (supported, rejected, futility, ...)
    look: int = 0  # SEQUENTIAL: the look that decided it (1-based), or the latest
    looks: int = 0  # SEQUENTIAL: how many looks the design has
    seeds_spent: int = 0  # SEQUENTIAL: the seeds of that look

    @property
    def settings(self) -> list[str]:
        """The settings it was judged on: those of its runs, then planned ones without any."""
        runs = self.fixed.runs
        present = [] if runs is None else runs.sort_values(["dataset", "noise_rate"], kind="stable")["setting"]
        absent = [check.setting for check in self.fixed.checks if check.expected == "planned by the study"]
        return list(dict.fromkeys([*present, *absent]))


@dataclass(frozen=True)
class NotTested:
    hypothesis: Hypothesis
    why: str


def judge(
    hypotheses: list[Hypothesis],
    context: Context,
    records: list[DecisionRecord],
    study: Study | None = None,
    experiments_dir: Path | None = None,
    warnings: list[str] | None = None,
) -> tuple[list[Judgement], list[NotTested]]:
    """Every hypothesis judged once per scope (`scopes`), or listed as not tested. `records`: the decision
    records found beside the runs; `study`: the study named with --study; `experiments_dir`: where the
    records' studies are found; `warnings` collects what could not be resolved."""
    tested = tested_hypotheses(study, [hypothesis.id for hypothesis in hypotheses]) if study else None
    judgements, untested = [], []
    for hypothesis in hypotheses:
        if study is not None and tested is not None and hypothesis.id not in tested:
            untested.append(NotTested(hypothesis, f"not tested by study {study.id}"))
            continue
        for scope in scopes(hypothesis, records, study, experiments_dir, warnings if warnings is not None else []):
            judgement = judge_in(hypothesis, scope, context)
            if judgement.fixed.checks:
                judgements.append(judgement)
            else:
                why = judgement.fixed.reason.removeprefix("missing runs: ")
                untested.append(NotTested(hypothesis, f"not tested by these runs: {why}"))
    return judgements, untested


def scopes(
    hypothesis: Hypothesis,
    records: list[DecisionRecord],
    study: Study | None,
    experiments_dir: Path | None,
    warnings: list[str],
) -> list[Scope]:
    """The scopes a hypothesis is judged in: one per study that decided it sequentially, else the named study's,
    else the folder's."""
    sequential = [
        sequential_scope(record, experiments_dir, warnings) for record in records if hypothesis.id in record.hypotheses
    ]
    if sequential:
        return sequential
    if study is not None:
        return [Scope(STUDY, study.id, tuple(planned_settings(study)))]
    return [Scope(FOLDER)]


def sequential_scope(record: DecisionRecord, experiments_dir: Path | None, warnings: list[str]) -> Scope:
    """The scope of a study run until decided: its planned settings and own seeds, read from its study file."""
    try:
        study = find_study(record.study, *([experiments_dir] if experiments_dir else []))
    except ConfigError as error:
        warnings.append(
            f"decision record of study {record.study}: {error}; its hypotheses are judged on every "
            f"setting here, on every seed"
        )
        return Scope(SEQUENTIAL, record.study, record=record)
    seeds = study.grid["seed"]
    own = tuple(int(seed) for seed in (seeds if isinstance(seeds, (list, tuple)) else [seeds]))
    return Scope(SEQUENTIAL, study.id, tuple(planned_settings(study)), own, record, study.tuned_by)


def judge_in(hypothesis: Hypothesis, scope: Scope, context: Context) -> Judgement:
    if scope.rule != SEQUENTIAL:
        fixed = hypothesis_verdict(hypothesis, dataclasses.replace(context, planned=list(scope.planned)))
        return Judgement(hypothesis, scope, fixed.verdict, fixed.reason, fixed)
    assert scope.record is not None  # a sequential scope holds its decision record
    look, entry = ruling_look(scope.record, hypothesis.id)
    seeds = tuple(look_seeds(list(scope.own_seeds), entry.seeds)) if scope.own_seeds else ()
    # The deciding study's own arms (its tuning's winners, when that record is here), not another tuning's runs
    # of the same settings: the fixed-design line is "the same runs" as the decision.
    tuned = context.winners.get(scope.tuned_by, {})
    fixed = hypothesis_verdict(
        hypothesis, dataclasses.replace(context, planned=list(scope.planned), seeds=seeds, tuned=tuned)
    )
    looks = len(scope.record.looks)
    decision = entry.decision
    where = f"at look {look + 1} of {looks} ({entry.seeds} seeds)"
    reason = {
        CONTINUE: f"not decided yet: the sequential study continues (latest look {look + 1} of {looks}, "
        f"{entry.seeds} seeds; {entry.reason})",
        FUTILITY: f"stopped for futility {where}: {entry.reason}",
    }.get(decision, f"{entry.reason} {where}")
    return Judgement(
        hypothesis,
        scope,
        VERDICT_OF_DECISION.get(decision, INCONCLUSIVE),
        reason,
        fixed,
        decision,
        look + 1,
        looks,
        entry.seeds,
    )


def ruling_look(record: DecisionRecord, hypothesis_id: str) -> tuple[int, HypothesisDecision]:
    """(look index, decision) of the look that decided the hypothesis; the latest look with it when none has yet,
    and "continue" at the first look when no look has it."""
    ruling = record.ruling(hypothesis_id)
    if ruling is None:
        return 0, HypothesisDecision(CONTINUE, "no look taken yet", record.looks[0], None, {}, None)
    return ruling


# ---- the verdict table --------------------------------------------------------------------------------


def rule_text(judgement: Judgement) -> str:
    if judgement.scope.rule == SEQUENTIAL:
        return f"sequential rule, look {judgement.look} of {judgement.looks}"
    return "fixed design"


def scope_text(judgement: Judgement) -> str:
    study = {SEQUENTIAL: f"{judgement.scope.study}, run until decided", STUDY: f"study {judgement.scope.study}"}.get(
        judgement.scope.rule, "every setting here"
    )
    return f"{'; '.join(judgement.settings)} ({study})"


def seeds_text(judgement: Judgement) -> str:
    """The seeds behind the verdict: those spent by the sequential study, else the range of the tests' seeds."""
    if judgement.scope.rule == SEQUENTIAL:
        return str(judgement.seeds_spent)
    counts = sorted(
        {
            int(check.numbers.get("n_pairs") or min(check.numbers.get("n_subject", 0), check.numbers.get("n_other", 0)))
            for check in judgement.fixed.checks
            if check.testable
        }
    )
    return "—" if not counts else str(counts[0]) if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"


def verdict_table(judgements: list[Judgement], untested: list[NotTested]) -> pd.DataFrame:
    """tables/verdicts.csv: one row per (hypothesis, scope), then one per hypothesis not tested."""
    rows = [
        {
            "hypothesis": judgement.hypothesis.id,
            "title": judgement.hypothesis.title,
            "verdict": judgement.verdict,
            "rule": rule_text(judgement),
            "study": judgement.scope.study,
            "settings": "; ".join(judgement.settings),
            "scope": scope_text(judgement),
            "seeds": seeds_text(judgement),
            "why": judgement.reason,
            "fixed_design_verdict": judgement.fixed.verdict,
            "exact_verdict": judgement.fixed.exact_verdict,
        }
        for judgement in judgements
    ]
    rows += [
        {"hypothesis": entry.hypothesis.id, "title": entry.hypothesis.title, "verdict": NOT_TESTED, "why": entry.why}
        for entry in untested
    ]
    return pd.DataFrame(rows, columns=list(aggregate_tables.COLUMNS[aggregate_tables.VERDICTS]))
