"""`python src/study.py H2 --plan-seeds --pilot results/`: how many seeds a study's hypotheses need.

The pilot's runs are read and each hypothesis evaluated on them exactly as the aggregator judges it, on the
same scope (optbench.analysis.verdicts: the settings of a study in the pilot folder that ran until decided, else
every setting there matching its `where:`); optbench.analysis.seed_planner turns each required comparison's
spread into the seeds it needs, checks the hypothesis-level figure by simulation and prices the extra runs. A
hypothesis study (H1, H2, H3) plans its own hypothesis; any other study the hypotheses it tests (its
`hypotheses:` list), or every hypothesis in experiments/hypotheses/ when it names none.
"""

import sys
from pathlib import Path

from optbench.analysis.hypotheses import Context, evaluate
from optbench.analysis.load import UNREADABLE
from optbench.analysis.pipeline import analyse, read_decision_records
from optbench.analysis.seed_planner import SeedPlan, comparison_units, plan_seeds, plan_table
from optbench.analysis.tables import to_markdown
from optbench.analysis.tuning_report import read_tuning
from optbench.analysis.verdicts import judge
from optbench.errors import ConfigError
from optbench.specs.hypothesis_spec import Hypothesis, load_hypotheses
from optbench.specs.study_spec import Study, tested_hypotheses


def hypotheses_of(study: Study, experiments_dir: Path) -> list[Hypothesis]:
    if study.test is not None:
        return [Hypothesis(study.id, study.title, study.statement, study.test, str(study.source))]
    hypotheses = load_hypotheses(experiments_dir)
    tested = tested_hypotheses(study, [hypothesis.id for hypothesis in hypotheses])
    return [hypothesis for hypothesis in hypotheses if hypothesis.id in tested]


def plans_from_pilot(study: Study, pilot: Path, experiments_dir: Path, delta: float | None) -> list[SeedPlan]:
    """`delta`: the effect to detect in points (accuracies) or the metric's own units; None: the observed one."""
    if not Path(pilot).is_dir():
        raise ConfigError(f"--pilot {pilot} is not a folder: give the results folder of the pilot runs")
    tuning = read_tuning(Path(pilot))
    analysis = analyse(Path(pilot), set_aside=tuning.run_dirs)
    for warning in unreadable_runs(analysis.warnings):  # planned without them: say so, as the aggregator does
        print(f"warning: pilot run {warning}; left out of the plan", file=sys.stderr)
    context = Context(analysis.runs, analysis.curves, analysis.grouping.setting_keys, tuning.seeds_tuned_on())
    hypotheses = hypotheses_of(study, experiments_dir)
    unreadable: list[str] = []
    records = read_decision_records(Path(pilot), None, unreadable)
    for warning in unreadable:  # the pilot is judged without it: say so, as the aggregator does
        print(f"warning: {warning}", file=sys.stderr)
    judged = {
        judgement.hypothesis.id: judgement.fixed
        for judgement in judge(hypotheses, context, records, None, experiments_dir)[0]
    }
    plans = []
    for hypothesis in hypotheses:
        verdict = judged.get(hypothesis.id) or evaluate(hypothesis, context)  # not tested here: nothing to plan from
        in_units = None if delta is None else delta / comparison_units(hypothesis.test)[0]
        plans.append(plan_seeds(verdict, verdict.runs, in_units))
    return plans


def unreadable_runs(warnings: list[str]) -> list[str]:
    """The loader's warnings about runs it counted unreadable (a truncated summary, one without its headline
    number): `RUN_ID: what is wrong`, one per run."""
    return [warning for warning in warnings if f"run counted as '{UNREADABLE}'" in warning]


def print_plans(plans: list[SeedPlan], tests: dict) -> None:
    for plan in plans:
        scale, unit = comparison_units(tests[plan.hypothesis])
        print(
            f"## {plan.hypothesis}: seeds needed (paired t, alpha {plan.alpha}, 80 % power, sd at its 80 % upper bound)"
        )
        print(to_markdown(plan_table(plan, scale, unit)) if plan.comparisons else "_(nothing to plan from)_\n")
        print(plan.advice())
        print()


def plan_seeds_command(study: Study, pilot: Path, experiments_dir: Path, delta: float | None) -> int:
    plans = plans_from_pilot(study, pilot, experiments_dir, delta)
    tests = {hypothesis.id: hypothesis.test for hypothesis in hypotheses_of(study, experiments_dir)}
    print_plans(plans, tests)
    return 0
