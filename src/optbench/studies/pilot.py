"""`python src/study.py H2 --plan-seeds --pilot results/`: how many seeds a study's hypotheses need.

A fidelity ladder study (`python src/study.py cpu_fidelity --plan-seeds --pilot DIR [--delta POINTS]`) plans its
ladder instead: from the pilot's ladder of the study's rungs (analysis/judging/ladder_runs.py, judged by
fidelity.py), for each of a rung's two answers the seeds at which an unchanged rung gets it with 80 % power, at
that rung's own spread (certified within the resolution: seeds shared by the rung and the top; the top's orders
kept: seeds at the rung), each with the power simulated at that number, and the seeds per optimizer at the top
that establish orders the resolution apart (`--delta`, else the study's `fidelity: {resolution: ...}`, else 2 points).

The pilot's runs are read and each hypothesis evaluated on them exactly as the aggregator judges it, on the
same scope (optbench.analysis.judging.verdicts: the settings of a study in the pilot folder that ran until decided, else
every setting there matching its `where:`); optbench.analysis.judging.seed_planner turns each required comparison's
spread into the seeds it needs, checks the hypothesis-level figure by simulation and prices the extra runs. A
hypothesis study (H1, H2, H3) plans its own hypothesis; any other study the hypotheses it tests (its
`hypotheses:` list), or every hypothesis in experiments/hypotheses/ when it names none.
"""

import sys
from pathlib import Path

from optbench.analysis.judging.hypotheses import Context, hypothesis_verdict
from optbench.analysis.judging.seed_planner import SeedPlan, comparison_units, plan_seeds, plan_table
from optbench.analysis.judging.tuning_report import read_tuning
from optbench.analysis.judging.verdicts import judge
from optbench.analysis.load import UNREADABLE
from optbench.analysis.pipeline import analyse, read_decision_records
from optbench.analysis.writing.tables import to_markdown
from optbench.errors import ConfigError
from optbench.specs.hypothesis_spec import Hypothesis, load_hypotheses
from optbench.specs.study_spec import Study, hypotheses_folder, tested_hypotheses


def hypotheses_of(study: Study, experiments_dir: Path) -> list[Hypothesis]:
    if study.test is not None:
        return [Hypothesis(study.id, study.title, study.statement, study.test, str(study.source))]
    hypotheses = load_hypotheses(hypotheses_folder(study, experiments_dir))
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
        # not tested here: nothing to plan from
        verdict = judged.get(hypothesis.id) or hypothesis_verdict(hypothesis, context)
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


def fidelity_plans(
    study: Study, pilot: Path, resolution: float | None, experiments_dir: Path = Path("experiments")
) -> list[tuple]:
    """A ladder study's pilot: per ladder found in it (the study's rungs), the seeds that reach the resolution
    (`resolution` points; default the study's, else fidelity_stats.DEFAULT_RESOLUTION_POINTS), each rung's from its
    own spread.
    Tuning trials that are the study's own runs count, as the aggregator counts them (study_trials.py), so the
    plan is the report's."""
    from optbench.analysis.judging import fidelity, ladder_runs
    from optbench.analysis.judging.study_trials import study_runs_among_trials
    from optbench.analysis.statistics import fidelity_stats
    from optbench.analysis.writing.tables import PRIMARY_METRIC

    if not Path(pilot).is_dir():
        raise ConfigError(f"--pilot {pilot} is not a folder: give the results folder of the pilot runs")
    tuning = read_tuning(Path(pilot))
    own_runs = study_runs_among_trials(study, tuning.studies, Path(pilot), experiments_dir)
    analysis = analyse(Path(pilot), set_aside=tuning.run_dirs - own_runs)
    keys = ladder_runs.fidelity_keys([override.split("=", 1)[0] for rung in study.rungs for override in rung.overrides])
    planned = ladder_runs.planned_rungs(study, tuning.studies)
    points = resolution or study.fidelity_resolution or fidelity_stats.DEFAULT_RESOLUTION_POINTS
    plans = []
    for ladder in ladder_runs.find_ladders(analysis.runs, analysis.grouping, keys, planned):
        ladder = fidelity.analyse_ladder(ladder, PRIMARY_METRIC, resolution=points / 100)
        plans.append((ladder, fidelity.fidelity_plan(ladder, PRIMARY_METRIC)))
    return plans


def print_fidelity_plans(plans: list[tuple]) -> None:
    from optbench.analysis.judging.fidelity import (
        certify_phrase,
        cheapest_faithful_rung,
        keep_phrase,
        seeds_phrase,
        why_none,
    )

    if not plans:
        print("_(the pilot's runs form no ladder of this study's rungs: nothing to plan from)_")
    for ladder, plan in plans:
        points = ladder.resolution * 100
        print(f"## {ladder.setting}: the fidelity ladder against {ladder.top.label} (resolution {points:g} points)")
        changes = ", ".join(f"{certify.rung} {certify.change_sd * 100:.2f}" for certify in plan.certifies)
        print(
            f"- spread: a pair's per-seed difference at the top sd {plan.difference_sd * 100:.2f} points; an "
            f"optimizer's change between a rung and the top sd, per rung: {changes or 'no rung below the top'} "
            "(root mean square over the optimizers; each at its 80 % upper bound)"
        )
        print(
            f"- magnitude: an unchanged rung certified at {points:g} points with 80 % power, at each rung's own "
            "spread of change (80 % upper bound), on seeds shared by the rung and the top: "
            f"{', '.join(certify_phrase(certify) for certify in plan.certifies) or 'no rung below the top'}"
        )
        print(
            "- order kept: an unchanged rung keeps the top's orders with 80 % power, at each rung's own spread (80 % "
            f"upper bound): {', '.join(keep_phrase(keep) for keep in plan.keeps) or 'no rung below the top'}"
        )
        establish = seeds_phrase(plan.seeds_to_establish)
        print(f"- to establish the top's orders {points:g} points apart: {establish} per optimizer")
        cheapest = cheapest_faithful_rung(ladder)
        print(f"- now: cheapest faithful rung {cheapest}" if cheapest else f"- now: {why_none(ladder, plan)}")
        print()


def plan_seeds_command(study: Study, pilot: Path, experiments_dir: Path, delta: float | None) -> int:
    """A ladder study plans its ladder (delta: the resolution in points); any other study its hypotheses."""
    if study.rungs:
        print_fidelity_plans(fidelity_plans(study, pilot, delta, experiments_dir))
        return 0
    plans = plans_from_pilot(study, pilot, experiments_dir, delta)
    tests = {hypothesis.id: hypothesis.test for hypothesis in hypotheses_of(study, experiments_dir)}
    print_plans(plans, tests)
    return 0
