"""`python src/study.py`: run a study (plain Hydra multiruns of src/train.py), list it, or select tuned values.

    python src/study.py full                         # every run of the study; finished runs are skipped
    python src/study.py H3 --dry-run  # each run: overrides, directory, done/unfinished/new; time estimate
    python src/study.py H3 --status                  # a table of the runs as they stand, progress, time left
    python src/study.py full --launcher parallel     # joblib, local processes (slurm, local: submitit)
    python src/study.py H1 --set epochs=1 dataset=synthetic model.width=8   # extra Hydra overrides (smoke tests)
    python src/study.py tune_lr_wd && python src/study.py --select-tuned tune_lr_wd
    python src/study.py full --tuned                 # the tuned lr / weight decay of conf/optimizer/tuned/
    python src/study.py cpu_demo                     # `tuned_by: tune_cpu_demo`: tune, select, then the study
    python src/study.py H2 --plan-seeds --pilot results/   # seeds each hypothesis needs, from pilot runs
    python src/study.py H2 --until-decided --max-seeds 16   # add seeds at looks 3, 6, 10, 16 until decided
    python src/study.py cpu_fidelity --rung epochs=200      # one rung of a fidelity ladder (docs/fidelity.md)

Every run of every sweep is composed and validated before anything starts, so a bad study or
override is one line `error: ...` and exit status 2. Runs land in their deterministic directories
(conf/config.yaml); a sweep whose runs are all finished is not started at all, and within a sweep
train() skips finished runs and resumes unfinished ones. After each sweep every run whose summary.json
is not completed or diverged is named (studies/outcome.py); the exit status is the worst of the sweeps',
and 1 when a run did not finish.
"""

import argparse
import math
import os
import shlex
import sys
from collections import Counter
from pathlib import Path

from hydra import initialize_config_dir
from omegaconf import OmegaConf

from optbench import run_states
from optbench.command_line import OneLineParser
from optbench.config.config_path import tuned_config_path
from optbench.config.hydra_glue import compose_checked, register_resolvers
from optbench.config.plain import plain_dict
from optbench.errors import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_SIGNAL_BASE, ConfigError
from optbench.formats import decision_record
from optbench.registry.choices import LAUNCHERS
from optbench.specs.study_spec import (
    EXPERIMENTS_DIR,
    REPO,
    Study,
    find_study,
    load_study,
    only_rung,
    seeds_shared_with_tuning,
    study_files,
    tuning_studies_of,
)
from optbench.studies import (
    dry_run,
    estimate_record,
    newcomers,
    outcome,
    published,
    reuse_note,
    stopping,
    tuning_protocol,
)
from optbench.studies import status as live_status
from optbench.studies.launchers import TRAIN_SCRIPT, job_environment
from optbench.studies.plan import OTHER_EXPERIMENT, PlannedRun, Sweep, plan, planned_run_id
from optbench.studies.request import StudyRequest

CONF_DIR = REPO / "conf"


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="python src/study.py", description=__doc__.split("\n\n")[0])
    add_run_options(parser)
    add_planning_options(parser)
    parser.add_argument("--experiments", type=Path, default=EXPERIMENTS_DIR, help=argparse.SUPPRESS)
    parser.add_argument("--conf-dir", type=Path, default=CONF_DIR, help=argparse.SUPPRESS)  # tests: a copy of conf/
    return parser


def parse_args(argv: list[str]) -> StudyRequest:
    args = build_parser().parse_args(argv)
    take_study_from_overrides(args)
    if not (args.study or args.select_tuned or args.list):
        raise ConfigError("name a study (python src/study.py --list shows them)")
    check_numbers(args)
    return StudyRequest.from_arguments(args)


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """Which study, and how to run, list, estimate or show it."""
    parser.add_argument("study", nargs="?", help="study id or file stem (see experiments/README.md), or a .yaml path")
    parser.add_argument("--dry-run", action="store_true", help="list the runs and estimate the time; run nothing")
    parser.add_argument(
        "--status",
        action="store_true",
        help="one table of the runs as they stand, progress and time left (studies/status.py); run nothing",
    )
    parser.add_argument("--launcher", choices=LAUNCHERS, default="basic", help="conf/hydra/launcher/ (basic: serial)")
    parser.add_argument(
        "--set",
        nargs="+",
        action="extend",
        default=[],
        metavar="KEY=VALUE",
        help="extra Hydra overrides for every run (hydra.* ones reach the launcher)",
    )
    parser.add_argument(
        "--rung",
        nargs="+",
        metavar="KEY=VALUE",
        help="run the study at this rung only: one of its fidelity ladder's, or a new budget "
        "(--rung epochs=200); the grid's other settings unchanged (docs/fidelity.md)",
    )
    parser.add_argument("--tuned", action="store_true", help="use conf/optimizer/tuned/<name>.yaml for each optimizer")
    parser.add_argument("--select-tuned", metavar="STUDY", help="pick the best lr / weight decay of a tuning study")
    parser.add_argument(
        "--no-estimate",
        action="store_true",
        help="no time estimate: a dry run prints none, a launch records none (estimate-STUDY.json)",
    )
    parser.add_argument("--list", action="store_true", help="list the studies")


def add_planning_options(parser: argparse.ArgumentParser) -> None:
    """How many seeds: planned from a pilot (--plan-seeds), or added until the hypotheses are decided."""
    parser.add_argument(
        "--plan-seeds",
        action="store_true",
        help="from the runs in --pilot, the seeds each hypothesis needs (studies/pilot.py); runs nothing",
    )
    parser.add_argument("--pilot", type=Path, metavar="DIR", help="results folder of the pilot runs (--plan-seeds)")
    parser.add_argument(
        "--delta",
        type=float,
        metavar="EFFECT",
        help="effect to detect, in points for accuracies (--plan-seeds; default: the pilot's)",
    )
    parser.add_argument(
        "--until-decided",
        action="store_true",
        help="add seeds at pre-set looks until the hypotheses are decided (studies/until_decided.py)",
    )
    parser.add_argument("--max-seeds", type=int, default=16, metavar="N", help="the last look (--until-decided)")
    parser.add_argument(
        "--hypotheses",
        nargs="+",
        metavar="ID",
        help="the hypotheses --until-decided decides (default: the study's, or all)",
    )


def take_study_from_overrides(args: argparse.Namespace) -> None:
    """`--set epochs=1 smoke`: --set took the study name; a name is accepted anywhere among the overrides."""
    bare = [value for value in args.set if "=" not in value and not value.startswith(("~", "+"))]
    if bare:
        if args.study or len(bare) > 1:
            raise ConfigError(
                f"--set takes KEY=VALUE overrides, not {' '.join(bare)}: name one study, before or "
                "after the overrides (python src/study.py smoke --set epochs=1)"
            )
        args.study, args.set = bare[0], [value for value in args.set if value != bare[0]]


def check_numbers(args: argparse.Namespace) -> None:
    """The numeric options, at the door: before any study is planned, tuned or trained."""
    if args.delta is not None and not (math.isfinite(args.delta) and args.delta > 0):
        raise ConfigError(
            f"--delta {args.delta}: give the effect to detect as a finite number > 0, in points for "
            "accuracies (e.g. --delta 1), or leave it out for the pilot's"
        )
    if args.until_decided and args.max_seeds < 2:
        raise ConfigError(f"--max-seeds {args.max_seeds}: give at least 2 (a test needs two seeds per arm)")


def main(argv: list[str]) -> int:
    register_resolvers()
    try:
        args = parse_args(argv)
        if args.list_studies:
            return list_studies(args.experiments)
        if args.status and args.study:
            study = find_study(args.study, args.experiments)
            return live_status.show(only_rung(study, args.rung) if args.rung else study, args)
        if args.select_tuned:
            return select_tuned(find_study(args.select_tuned, args.experiments), args.conf_dir, args.set)
        study = find_study(args.study or "", args.experiments)  # parse_args: a study is named by now
        published.study_folder(study)  # a `published:` folder that is not there: one line before anything trains
        if args.rung:
            study = only_rung(study, args.rung)
        if args.plan_seeds:
            if args.pilot is None:
                raise ConfigError("--plan-seeds needs --pilot DIR, the results folder of the pilot runs")
            from optbench.studies.pilot import plan_seeds_command  # pandas and scipy: only when asked

            return plan_seeds_command(study, args.pilot, args.experiments, args.delta)
        check_until_decided_options(study, args)
        with stopping.stops_whole():
            if tuning_studies_of(study):
                return run_tuned_by(study, args)
            return run_main(study, args, args.tuned)
    except stopping.StudyStopped as stopped:
        print(stopping.stopped_line(study.id, stopped), file=sys.stderr, flush=True)
        return EXIT_SIGNAL_BASE + stopped.signum
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT


def run_study(study: Study, args: StudyRequest, tuned: "bool | str", defaults_stand_in: bool = False) -> int:
    """Plan, print, and (unless --dry-run) launch; a quasi-random tuning study is planned again after its
    trials ran, because its top-k reruns are known only then. Runs already published (the study's `published:`
    folder) are copied in before the sweeps, and priced from there by the dry run (studies/published.py)."""
    runs_by_sweep = plan(study, args.conf_dir, args.set, args.launcher, tuned, defaults_stand_in)
    dry_run.print_plan(study, runs_by_sweep)
    print_reuse_note(runs_by_sweep, args.launcher)
    published_lines, found = published.dry_run_lines(study, runs_by_sweep)
    for line in published_lines:
        print(line, flush=True)
    if args.dry_run:
        if not args.no_estimate:
            dry_run.print_estimate(published.as_done(runs_by_sweep, found), args.launcher)
        return 0
    refuse_other_experiments(runs_by_sweep)
    tuning_ids = [find_study(name, args.experiments).id for name in tuning_studies_of(study)]
    if published.copy_in(study, runs_by_sweep, tuning_ids):
        runs_by_sweep = plan(study, args.conf_dir, args.set, args.launcher, tuned)  # the copied runs are done now
    record_estimate(study, runs_by_sweep, args)
    tally: Counter[str] = Counter()
    status = launch(runs_by_sweep, args.launcher, tally, study.id)
    if status != EXIT_BAD_INPUT and any(sweep.pending for sweep, _ in runs_by_sweep):
        runs_by_sweep = plan(study, args.conf_dir, args.set, args.launcher, tuned)
        print(f"study {study.id}: the trials have run; the top-k reruns are planned now")
        dry_run.print_plan(study, runs_by_sweep)
        refuse_other_experiments(runs_by_sweep)
        record_estimate(study, runs_by_sweep, args)
        status = max(status, launch(runs_by_sweep, args.launcher, tally, study.id))
    results_dirs = sorted({str(run.cfg.paths.results_dir) for _, runs in runs_by_sweep for run in runs})
    print(
        f"study {study.id}: {outcome.tally_line(tally)}; aggregate with: python src/aggregate.py "
        + " ".join(shlex.quote(path) for path in results_dirs),
        flush=True,
    )
    return status


def record_estimate(study: Study, runs_by_sweep: list[tuple[Sweep, list[PlannedRun]]], args: StudyRequest) -> None:
    """A launch prices what it is about to train as its dry run would, prints it and keeps it in the study's
    estimate record, so --status can set it beside what the runs took (estimate_record.py); --no-estimate skips."""
    if args.no_estimate:
        return
    priced = dry_run.print_estimate(runs_by_sweep, args.launcher)
    if priced is not None:
        estimate_record.record(study.id, results_dir_of(runs_by_sweep), priced, args.launcher)


def print_reuse_note(runs_by_sweep: list[tuple[Sweep, list[PlannedRun]]], launcher: str) -> None:
    """One line when a reused or resumed run was trained on another processor kind or thread count."""
    runs = [run for _, planned in runs_by_sweep for run in planned]
    reused = reuse_note.reused_runs(runs)
    if reused:
        threads = OmegaConf.select(reused[0].cfg, "device_policy.threads")  # a study's --set applies to every run
        here = reuse_note.this_machine(str(reused[0].cfg.device), launcher, threads)
        line = reuse_note.reuse_note(runs, here)
        if line:
            print(line, flush=True)


def refuse_other_experiments(runs_by_sweep: list[tuple[Sweep, list[PlannedRun]]]) -> None:
    """A planned directory whose record names another run: refused before any sweep starts (exit 2)."""
    others = [run for _, runs in runs_by_sweep for run in runs if run.status == OTHER_EXPERIMENT]
    if others:
        more = f" (and {len(others) - 1} more, listed above)" if len(others) > 1 else ""
        raise ConfigError(
            f"{others[0].run_dir} holds another experiment ({others[0].detail}){more}: move it away "
            "(or delete it) so this study's run can use the directory, then run the study again"
        )


def run_tuned_by(study: Study, args: StudyRequest) -> int:
    """A main study with `tuned_by:` (its own or its rungs'): run each tuning study, select its winners, then run
    the study with them."""
    if args.tuned:
        raise ConfigError(
            f"study {study.id} takes its tuned values from {', '.join(tuning_studies_of(study))} "
            "(tuned_by): drop --tuned"
        )
    tuning_studies = newcomers.tuning_studies(study, args.experiments)  # with newcomers: theirs only
    # The whole command is checked before a tuning study trains, selects or writes a tuned config: the main
    # study is planned once with the default values standing in for the tuned ones (its --set, grid, folders),
    # and a run until decided reads its decision record now, so a damaged one stops the command here.
    planned = plan(study, args.conf_dir, args.set, args.launcher, False)
    if args.until_decided:
        decision_record.read(decision_record.record_path(results_dir_of(planned), study.id))
    if study.newcomers:
        print_newcomers(study, args, results_dir_of(planned))
    statuses = [tune_first(study, tuning_study, args) for tuning_study in tuning_studies]
    outputs = [tuning_study.tune.output for tuning_study in tuning_studies if tuning_study.tune]  # all: checked
    output = outputs[0] if study.tuned_by else True
    if args.dry_run:
        ready = all(
            tuned_config_path(args.conf_dir, folder, name).is_file()
            for folder in outputs
            for name in study.grid["optimizer"]
        )
        if not ready:
            # Its budget does not depend on the tuned values: show it with the defaults in their place.
            print(
                f"study {study.id}: planned once `python src/study.py --select-tuned "
                f"{' '.join(tuning_study.id for tuning_study in tuning_studies)}` has written its tuned values; "
                "its budget, with the default values standing in for the tuned ones not selected yet:"
            )
            return run_study(study, args, output, defaults_stand_in=True)
        folders = ", ".join(f"conf/optimizer/{folder}/" for folder in outputs)
        print(f"study {study.id}, with the tuned values now in {folders} (tuning may still change them)")
        return run_main(study, args, output)
    if any(statuses):
        print(f"study {study.id}: not started, a tuning study did not finish", file=sys.stderr)
        return max(statuses)
    for tuning_study in tuning_studies:
        select_tuned(tuning_study, args.conf_dir, args.set)
    return run_main(study, args, output)


def print_newcomers(study: Study, args: StudyRequest, results_dir: Path) -> None:
    """Who is tuned here and with what, and a warning when the baselines' record states another budget."""
    baseline = newcomers.baseline_tuning(study, args.experiments)
    print(newcomers.protocol_line(study, baseline))
    folder = published.study_folder(study)
    warning = newcomers.budget_warning(study, baseline, [results_dir, *([folder] if folder else [])])
    if warning:
        print(warning, file=sys.stderr)


def tune_first(study: Study, tuning_study: Study, args: StudyRequest) -> int:
    print(f"study {study.id} is tuned by {tuning_study.id}: tuning first")
    shared = seeds_shared_with_tuning(study, tuning_study)
    if shared:
        print(
            f"warning: seeds {', '.join(map(str, shared))} of {study.id} also tuned {tuning_study.id}: its tests "
            f"will be post-selection; give the main study seeds the tuning does not use",
            file=sys.stderr,
        )
    return run_study(tuning_study, args, False)


def run_main(study: Study, args: StudyRequest, tuned: "bool | str") -> int:
    """The study once, or, with --until-decided, look by look until its hypotheses are decided."""
    if not args.until_decided:
        return run_study(study, args, tuned)
    from optbench.studies.until_decided import run_until_decided  # pandas and scipy: only when asked

    planned = plan(study, args.conf_dir, args.set, args.launcher, tuned)
    return run_until_decided(study, args, tuned, run_study, results_dir_of(planned))


def results_dir_of(planned: list[tuple[Sweep, list[PlannedRun]]]) -> Path:
    """Where a planned study's runs land (and its decision record lies)."""
    return Path(next(run for _, runs in planned for run in runs).cfg.paths.results_dir)


def check_until_decided_options(study: Study, args: StudyRequest) -> None:
    """--hypotheses, at the door: the names must be the study's before a tuning study trains anything, and
    only --until-decided reads them (elsewhere they would be silently ignored). A study that tests no hypothesis
    (`hypotheses: []`) gives --until-decided nothing to decide: refused before anything trains."""
    if args.until_decided and not args.hypotheses and study.hypotheses == () and study.test is None:
        raise ConfigError(
            f"study {study.id} tests no hypothesis (hypotheses: [] in {study.source}), so --until-decided has nothing "
            "to decide: run it without --until-decided, or name the hypotheses it tests in its file"
        )
    if not args.hypotheses:
        return
    if not args.until_decided:
        raise ConfigError(
            "--hypotheses names the hypotheses --until-decided decides: add --until-decided, or drop --hypotheses "
            "(the aggregator judges a study's hypotheses with python src/aggregate.py DIR --study ID)"
        )
    from optbench.studies.until_decided import chosen_hypotheses  # pandas and scipy: only when asked

    chosen_hypotheses(study, args.experiments, args.hypotheses)


def list_studies(experiments_dir: Path) -> int:
    for path in study_files(experiments_dir):
        study = load_study(path)
        print(f"{study.id:<12} {path.relative_to(experiments_dir.parent)}: {study.statement}")
    return 0


# ---------------------------------------------------------------- running


def launch(
    runs_by_sweep: list[tuple[Sweep, list[PlannedRun]]], launcher: str, tally: Counter, study_id: str = ""
) -> int:
    """Run each sweep, then name every run of it that did not finish: a launcher that runs jobs elsewhere
    (joblib, submitit, SLURM) exits 0 when one of its runs failed, so summary.json is what counts, and
    only a summary naming the planned run id. `tally` gains each run's ending (and skipped, for runs
    already done)."""
    worst = 0
    for number, (sweep, runs) in enumerate(runs_by_sweep, 1):
        if sweep.pending:
            print(f"sweep {number}: waits: {sweep.pending}")
            continue
        tally["skipped"] += sum(run.status == run_states.DONE for run in runs)
        if all(run.status == run_states.DONE for run in runs):
            print(f"sweep {number}: all {len(runs)} runs finished, skipped")
            continue
        command = [sys.executable, str(TRAIN_SCRIPT), "-m", *sweep.command_overrides()]
        print(f"sweep {number}: {' '.join(command[1:])}", flush=True)
        status = stopping.run_sweep(command, os.getcwd(), job_environment(study_id))
        launched = [run for run in runs if run.status != run_states.DONE]
        outcomes = [outcome.run_outcome(run.run_dir, planned_run_id(run.cfg)) for run in launched]
        tally.update(outcome.tally(outcomes))
        not_done = [
            (run.run_dir, what)
            for run, what in zip(launched, outcomes)
            if what.split(":")[0] not in outcome.FINAL_STATUSES
        ]
        for run_dir, what in not_done:
            print(f"sweep {number}: run not finished: {run_dir}: {what}", file=sys.stderr)
        if not_done:
            print(f"sweep {number}: {len(not_done)} of {len(runs)} runs did not finish", file=sys.stderr, flush=True)
            status = max(status, EXIT_FAILED)
        if status == EXIT_BAD_INPUT:
            return status  # the same input would be refused by every later sweep too
        worst = max(worst, status)
    return worst


# ---------------------------------------------------------------- selecting tuned values


def select_tuned(study: Study, conf_dir: Path, extra: list[str]) -> int:
    if not study.tune:
        raise ConfigError(f"study {study.id} is not a tuning study (it has no `tune:` block)")
    runs_by_sweep = plan(study, conf_dir, extra, "basic", tuned=False)
    if any(sweep.pending for sweep, _ in runs_by_sweep):
        raise ConfigError(
            f"study {study.id}: the top-k reruns have not run yet: run `python src/study.py {study.id}` first"
        )
    runs = [run for _, sweep_runs in runs_by_sweep for run in sweep_runs]
    with initialize_config_dir(config_dir=str(Path(conf_dir).resolve()), version_base="1.3"):
        defaults = {
            name: plain_dict(compose_checked([f"optimizer={name}"], conf_dir).optimizer, resolve=True)
            for name in dict.fromkeys(str(run.cfg.optimizer.name) for run in runs)
        }
    selections = tuning_protocol.select(runs, study, defaults)
    for path in tuning_protocol.write_tuned_configs(selections, defaults, study, conf_dir):
        best = selections[path.stem].winner
        values = ", ".join(f"{key.removeprefix('optimizer.')} {value:g}" for key, value in best.values.items())
        print(f"{path}: {values}; {study.tune.select_on} {best.mean:.4f} (mean of {len(best.scores)} seed(s))")
    print(f"tuning record: {tuning_protocol.write_record(selections, study, Path(runs[0].cfg.paths.results_dir))}")
    for selection in selections.values():
        for warning in selection.edges:
            print(f"warning: {selection.optimizer}: {warning}")
    return 0
