"""`python src/study.py NAME --until-decided --max-seeds 16`: add seeds at pre-set looks until decided.

The study's own seeds are the first look; later looks add seeds (the next integers) up to --max-seeds
(default looks 3, 6, 10, 16: optbench.analysis.statistics.sequential_rule), for the optimizers the hypotheses still open
compare (a decided hypothesis's other arms get no more seeds). At each look the runs are trained as
ordinary runs in their deterministic directories (finished ones skipped), the results folder is read
as the aggregator reads it, each open hypothesis is evaluated on the study's planned settings and on that
look's seeds only (never on more seeds the folder happens to hold), and the group-sequential rule says
continue, stop for efficacy (supported), rejected, stop for futility, or undecided at the last look; a
comparison the evaluation calls not testable gives no z. Each look records, per comparison, its z and the
seeds its test used.
Every look is appended to `sequential-<study>.json` beside the runs (optbench.formats.decision_record): a stopped
or killed study resumes from it, and a decision once taken is never re-decided. The design (looks,
boundaries) is fixed in the record at the first look.
"""

import dataclasses
from pathlib import Path

from optbench.analysis.judging.hypotheses import Context, hypothesis_verdict
from optbench.analysis.judging.hypothesis_rule import comparison_z
from optbench.analysis.judging.tuning_report import read_tuning
from optbench.analysis.pipeline import analyse
from optbench.analysis.statistics.sequential_rule import CONTINUE, Design, decide, look_seeds, looks_for
from optbench.errors import ConfigError, did_you_mean
from optbench.formats import decision_record
from optbench.formats.decision_record import DecisionRecord, HypothesisDecision, HypothesisDesign, no_number
from optbench.specs.study_spec import Study, planned_settings
from optbench.studies.pilot import hypotheses_of
from optbench.studies.request import StudyRequest

RULE = (
    "group-sequential, Lan-DeMets O'Brien-Fleming-type alpha spending (Lan & DeMets 1983); supported when every "
    "comparison crosses the efficacy bound, rejected when one crosses the alpha/m bound the other way, futility "
    "when under the current trend neither has a conditional power of 10 % (Lan & Wittes 1988)"
)


def own_seeds(study: Study) -> list[int]:
    seeds = study.grid["seed"]
    return [int(seed) for seed in (seeds if isinstance(seeds, (list, tuple)) else [seeds])]


def with_seeds(study: Study, count: int) -> Study:
    return dataclasses.replace(study, grid={**study.grid, "seed": look_seeds(own_seeds(study), count)})


def needed_optimizers(study: Study, hypotheses) -> list:
    """The grid's optimizers that the hypotheses still open compare: once the others' hypotheses are decided,
    more seeds of them would decide nothing, so later looks train only these (in the grid's order)."""
    grid = study.grid["optimizer"]
    listed = list(grid) if isinstance(grid, (list, tuple)) else [grid]
    named = {name for hypothesis in hypotheses for name in (hypothesis.test.subject, *hypothesis.test.versus)}
    return [optimizer for optimizer in listed if optimizer in named] or listed


def study_for_look(study: Study, count: int, open_hypotheses) -> Study:
    """The study's runs at a look of `count` seeds, for the optimizers the open hypotheses compare."""
    seeded = with_seeds(study, count)
    if "optimizer" not in study.grid:  # one optimizer from the overrides or defaults: nothing to narrow
        return seeded
    return dataclasses.replace(seeded, grid={**seeded.grid, "optimizer": needed_optimizers(study, open_hypotheses)})


def chosen_hypotheses(study: Study, experiments_dir: Path, names: list[str]):
    hypotheses = hypotheses_of(study, experiments_dir)
    if not names:
        return hypotheses
    known = {hypothesis.id.lower(): hypothesis for hypothesis in hypotheses}
    unknown = [name for name in names if name.lower() not in known]
    if unknown:
        ids = [known[key].id for key in known]
        raise ConfigError(f"--hypotheses {unknown[0]}: {did_you_mean(unknown[0], ids)}not one of {', '.join(ids)}")
    return [known[name.lower()] for name in names]


def design_record(study: Study, hypotheses, looks: tuple[int, ...]) -> DecisionRecord:
    """A new record; each hypothesis's boundaries depend on its number of required comparisons, known once
    it is evaluated, so they are stored at the first look (hypothesis_design)."""
    alpha = hypotheses[0].test.alpha if hypotheses else 0.05
    return decision_record.new_record(study.id, looks, alpha, RULE, {})


def hypothesis_design(record: DecisionRecord, hypothesis, comparisons: int) -> tuple[DecisionRecord, Design]:
    """The design stored for this hypothesis, or a new one from its comparisons at the first look (and the record
    with it stored)."""
    stored = record.hypotheses.get(hypothesis.id)
    if stored is not None:
        return record, Design(record.looks, hypothesis.test.alpha, stored.comparisons)
    design = Design(record.looks, hypothesis.test.alpha, comparisons)
    stored = HypothesisDesign(comparisons, design.efficacy, design.rejection)
    return decision_record.with_design(record, hypothesis.id, stored), design


def look_decisions(
    results_dir: Path, hypotheses, record: DecisionRecord, look: int, study: Study
) -> tuple[DecisionRecord, dict[str, HypothesisDecision]]:
    """Each open hypothesis's decision at this look, over the study's planned settings and the look's seeds only,
    and the record with the designs of hypotheses evaluated for the first time."""
    tuning = read_tuning(results_dir)
    analysis = analyse(results_dir, set_aside=tuning.run_dirs)
    seeds = tuple(look_seeds(own_seeds(study), record.looks[look]))
    context = Context(
        analysis.runs,
        analysis.curves,
        analysis.grouping.setting_keys,
        tuning.seeds_tuned_on(),
        planned_settings(study),
        seeds,
    )
    taken = {}
    for hypothesis in hypotheses:
        verdict = hypothesis_verdict(hypothesis, context)
        record, design = hypothesis_design(record, hypothesis, len(verdict.checks))
        z = {f"{check.setting}: {check.comparison}": comparison_z(check) for check in verdict.checks}
        decision = decide(list(z.values()), look, design)
        taken[hypothesis.id] = HypothesisDecision(
            decision=decision.decision,
            reason=decision.reason,
            seeds=design.looks[look],
            conditional_power=no_number(decision.conditional_power),
            z={comparison: no_number(value) for comparison, value in z.items()},
            n={f"{check.setting}: {check.comparison}": seeds_tested(check) for check in verdict.checks},
        )
    return record, taken


def seeds_tested(check) -> int:
    """The seeds the check's test used: its pairs, else its smaller arm (0 when it has no test)."""
    numbers = check.numbers
    return int(numbers.get("n_pairs") or min(numbers.get("n_subject", 0), numbers.get("n_other", 0)))


def run_until_decided(study: Study, args: StudyRequest, tuned, run_study, results_dir: Path) -> int:
    """`run_study(study, args, tuned)` trains a study's runs (cli.run_study); `results_dir` is where they land."""
    hypotheses = chosen_hypotheses(study, args.experiments, args.hypotheses or [])
    path = decision_record.record_path(results_dir, study.id)
    record = decision_record.read(path)
    if record is None:
        record = design_record(study, hypotheses, looks_for(len(own_seeds(study)), args.max_seeds))
    looks = record.looks
    print(f"study {study.id} until decided: looks at {', '.join(map(str, looks))} seeds; {RULE}")
    if args.dry_run:  # the next look's runs; nothing trained, nothing decided
        look = min(record.looks_done, len(looks) - 1)
        return run_study(
            study_for_look(study, looks[look], open_hypotheses(hypotheses, record) or hypotheses), args, tuned
        )
    for look in range(record.looks_done, len(looks)):
        open_ones = open_hypotheses(hypotheses, record)
        if not open_ones:
            break
        status = run_study(study_for_look(study, looks[look], open_ones), args, tuned)
        if status:
            return status
        record, taken = look_decisions(results_dir, open_ones, record, look, study)
        record = decision_record.add_look(record, taken)
        decision_record.write(path, record)
        for name, entry in record.decisions[-1].hypotheses.items():
            print(f"look {look + 1} ({looks[look]} seeds): {name}: {entry.decision}: {entry.reason}")
    print_summary(record, path)
    return 0


def open_hypotheses(hypotheses, record: DecisionRecord) -> list:
    stopped = record.stopped()
    return [hypothesis for hypothesis in hypotheses if hypothesis.id not in stopped]


def print_summary(record: DecisionRecord, path: Path) -> None:
    final = record.stopped()
    latest = record.decisions[-1].seeds if record.decisions else 0
    for name in record.hypotheses:
        if name in final:
            decision, reason, seeds = final[name].decision, final[name].reason, final[name].seeds
        else:
            decision, reason, seeds = CONTINUE, "not decided yet", latest
        print(f"{name}: {decision} ({reason}); seeds spent: {seeds}")
    print(f"decision record: {path}")
