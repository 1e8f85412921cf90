"""Which claims hold on every workload: each claim's part judged by the harness's own verdicts, then across parts.

A claim ("Muon beats AdamW on every workload") is one hypothesis per workload (the parts file's `claims`,
specs/cross_workload_spec.py; files in experiments/cross-workload/hypotheses/). Each part is judged on its
workload's runs alone (cross_parts.py) by verdicts.judge, the rule every hypothesis of the harness is judged by
(intersection-union for supported, Holm for rejected; a study run until decided is judged by its decision record),
so a cross-workload verdict is the same verdict the aggregator gives that workload's folder. Across workloads
(`across`): the claim *holds on every workload* when every part is supported, *fails* when any part is rejected (a
significant difference the other way), and is otherwise *not decided*, naming the parts inconclusive or not yet run.
A part is *not yet* judged while it has no runs, or while its fixed-design grid has runs that have not ended.
"""

from dataclasses import dataclass

import pandas as pd

from optbench.analysis.judging.cross_parts import CrossRuns, PartRuns
from optbench.analysis.judging.hypotheses import REJECTED, SUPPORTED, Context
from optbench.analysis.judging.verdicts import judge, seeds_text
from optbench.errors import ConfigError
from optbench.specs.cross_workload_spec import CrossWorkload
from optbench.specs.hypothesis_spec import Hypothesis, load_hypotheses
from optbench.specs.study_spec import EXPERIMENTS_DIR

NOT_YET = "not yet"  # a part whose workload has no runs here, or whose grid has not ended
HOLDS, FAILS, NOT_DECIDED = "holds on every workload", "fails", "not decided"


@dataclass(frozen=True)
class PartVerdict:
    claim: str
    workload: str
    hypothesis: str
    verdict: str  # supported, rejected, inconclusive, not tested, or NOT_YET
    seeds: str
    why: str


def hypotheses_by_id(spec: CrossWorkload) -> dict[str, Hypothesis]:
    """The hypotheses the claims name (ConfigError naming a claim's hypothesis that no file defines)."""
    known = {hypothesis.id: hypothesis for hypothesis in load_hypotheses(spec.hypotheses_dir)}
    for claim in spec.claims:
        for workload, hypothesis_id in claim.hypotheses.items():
            if hypothesis_id not in known:
                raise ConfigError(
                    f"{spec.source}: claim {claim.id} names hypothesis {hypothesis_id} for {workload}, which no file "
                    f"in {spec.hypotheses_dir / 'hypotheses'} defines (known: {', '.join(sorted(known)) or 'none'})"
                )
    return known


def part_verdicts(spec: CrossWorkload, cross: CrossRuns, experiments_dir=EXPERIMENTS_DIR) -> list[PartVerdict]:
    """Every claim's part judged on its workload's runs (verdicts.judge), or NOT_YET where the workload has none."""
    hypotheses = hypotheses_by_id(spec)
    parts = {part.workload: part for part in cross.parts}
    verdicts = []
    for claim in spec.claims:
        for workload, hypothesis_id in claim.hypotheses.items():
            part = parts[workload]
            waiting = part.missing or part.unended()
            if waiting:
                verdicts.append(PartVerdict(claim.id, workload, hypothesis_id, NOT_YET, "", waiting))
                continue
            verdicts.append(judged(claim.id, part, hypotheses[hypothesis_id], cross, experiments_dir))
    return verdicts


def judged(claim: str, part: PartRuns, hypothesis: Hypothesis, cross: CrossRuns, experiments_dir) -> PartVerdict:
    """The hypothesis's verdict on the part's runs: the folder rule on them (its `where:`), or the decision of its
    study's record when that study ran until decided."""
    winners = (
        {
            part.study.tuned_by: {
                name: entry.winner.values for name, entry in part.tuning.optimizers.items() if entry.winner
            }
        }
        if part.tuning
        else {}
    )
    context = Context(part.runs, cross.curves, ["setting"], part.tuned_on(), winners=winners)
    records = [record for record in cross.records if record.study == part.study.id]
    judgements, untested = judge([hypothesis], context, records, None, experiments_dir, [])
    if not judgements:
        why = untested[0].why if untested else "no verdict"
        return PartVerdict(claim, part.workload, hypothesis.id, "not tested", "", why)
    judgement = judgements[0]
    return PartVerdict(claim, part.workload, hypothesis.id, judgement.verdict, seeds_text(judgement), judgement.reason)


def part_table(verdicts: list[PartVerdict]) -> pd.DataFrame:
    return pd.DataFrame([vars(verdict) for verdict in verdicts], columns=PART_COLUMNS)


PART_COLUMNS = ["claim", "workload", "hypothesis", "verdict", "seeds", "why"]


def across(verdicts: list[PartVerdict]) -> tuple[str, str]:
    """(the claim across its workloads, why): HOLDS when every part is supported, FAILS when any is rejected, else
    NOT_DECIDED naming the parts that are not supported."""
    rejected = [verdict.workload for verdict in verdicts if verdict.verdict == REJECTED]
    if rejected:
        return FAILS, f"rejected on {', '.join(rejected)}"
    open_parts = [f"{verdict.workload} {verdict.verdict}" for verdict in verdicts if verdict.verdict != SUPPORTED]
    if not open_parts:
        return HOLDS, f"supported on {', '.join(verdict.workload for verdict in verdicts)}"
    return NOT_DECIDED, "; ".join(open_parts)


def claims_table(spec: CrossWorkload, verdicts: list[PartVerdict]) -> pd.DataFrame:
    """One row per claim: its title, its verdict on each workload of the study ('' where it has no part) and
    across them, and why."""
    rows = []
    for claim in spec.claims:
        mine = [verdict for verdict in verdicts if verdict.claim == claim.id]
        overall, why = across(mine)
        by_workload = {verdict.workload: verdict.verdict for verdict in mine}
        rows.append(
            {
                "claim": claim.id,
                "title": claim.title,
                **{workload: by_workload.get(workload, "") for workload in spec.workloads},
                "every_workload": overall,
                "why": why,
            }
        )
    return pd.DataFrame(rows, columns=["claim", "title", *spec.workloads, "every_workload", "why"])
