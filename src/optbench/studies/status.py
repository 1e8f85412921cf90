"""`python src/study.py NAME --status`: where a study stands, read from its run directories. No torch.

One table, one row per planned run: its state (new; running, with the epoch in progress of the planned
ones; completed; diverged; failed; interrupted, which the same study command resumes; other experiment,
when the directory's record.json holds a run with another identity; unreadable), its best validation
accuracy so far and its directory; then the study's progress (runs and epochs), rung by rung for a fidelity
ladder, and the time left. The time left is the epochs still to train at the rate this study's runs have
trained so far (their own wall time, so data loading and evaluation are in it), serially: a parallel
launcher divides it. Each
directory is read through optbench.rundir only (record, summary, lock), so watching a study changes no byte. Where
a launch recorded its estimate (estimate_record.py), each launch's estimate is set beside what its finished runs
took.
"""

from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from tabulate import tabulate

from optbench import identity, run_states, rundir
from optbench.config.config_path import tuned_config_path
from optbench.config.plain import plain_dict
from optbench.durations import format_duration
from optbench.errors import DamagedRunFile
from optbench.formats import metrics_log, run_record, run_summary
from optbench.specs.study_spec import Study
from optbench.studies import estimate, newcomers
from optbench.studies.estimate_record import comparison_lines
from optbench.studies.plan import PlannedRun, Sweep, plan
from optbench.studies.request import StudyRequest

NEW, OTHER, UNREADABLE = run_states.NEW, run_states.OTHER_EXPERIMENT, "unreadable"
TO_TRAIN = (
    NEW,
    run_summary.RUNNING,
    run_summary.INTERRUPTED,
    run_summary.FAILED,
)  # what the study command will still train


@dataclass
class RunState:
    run: PlannedRun
    state: str
    epochs_done: int = 0
    best_val_acc: float | None = None
    wall_time_s: float = 0.0
    detail: str = ""

    @property
    def epochs_planned(self) -> int:
        return int(self.run.cfg.epochs)

    def epoch_column(self) -> str:
        if self.state == run_summary.RUNNING:
            return f"epoch {min(self.epochs_done + 1, self.epochs_planned)} of {self.epochs_planned}"
        return f"{self.epochs_done}/{self.epochs_planned}"


def run_state(run: PlannedRun) -> RunState:
    """The state of one planned run, from its record.json, summary.json and lock."""
    directory = rundir.RunDir(run.run_dir)
    try:
        record, summary = run_record.read(directory.path), run_summary.read(directory.path)
    except DamagedRunFile as error:
        return RunState(run, UNREADABLE, detail=str(error))
    if record is not None:
        wanted = identity.run_identity(plain_dict(run.cfg, resolve=True), "")["config"]
        differences = identity.identity_differences({"config": record.identity.get("config", {})}, {"config": wanted})
        if differences:
            return RunState(run, OTHER, detail="; ".join(differences[:2]))
    if summary is None:
        return RunState(run, run_summary.RUNNING if rundir.is_being_trained(run.run_dir) else NEW)
    state, detail = summary.status, summary.error or ""
    if state == run_summary.RUNNING and not rundir.is_being_trained(run.run_dir):
        state, detail = run_summary.INTERRUPTED, "its process is gone: the study command resumes it"
    return RunState(
        run,
        state,
        summary.epochs_done,
        (summary.best or {}).get(metrics_log.VAL_ACC),
        summary.wall_time_s or 0.0,
        detail,
    )


def epoch_work(run: PlannedRun) -> float | None:
    """Images one epoch of the run processes, evaluation weighted as a forward pass; None when unknown."""
    load = estimate.workload(run.cfg, 0)
    return None if load is None else load.train_images + load.eval_images * estimate.FORWARD_SHARE


def measured_rates(states: list[RunState]) -> dict:
    """shape -> images/s the study's runs have trained at (wall time), and None -> over all shapes."""
    work: defaultdict[tuple | None, float] = defaultdict(float)
    seconds: defaultdict[tuple | None, float] = defaultdict(float)
    for state in states:
        per_epoch, load = epoch_work(state.run), estimate.workload(state.run.cfg, 0)
        if per_epoch is None or load is None or state.epochs_done == 0 or state.wall_time_s <= 0:
            continue
        for shape in (load.shape, None):
            work[shape] += per_epoch * state.epochs_done
            seconds[shape] += state.wall_time_s
    return {shape: work[shape] / seconds[shape] for shape in work}


def remaining(states: list[RunState]) -> tuple[float | None, int, int]:
    """(seconds left, or None before any epoch was trained; epochs left; runs of unknown size left out)."""
    rates = measured_rates(states)
    seconds: float | None = 0.0
    epochs_left, unknown = 0, 0
    for state in states:
        if state.state not in TO_TRAIN:
            continue
        load = estimate.workload(state.run.cfg, state.epochs_done)
        if load is None:
            unknown += 1
            continue
        epochs_left += load.epochs_left
        rate = rates.get(load.shape, rates.get(None))
        seconds = None if rate is None or seconds is None else seconds + estimate.seconds_left(load, rate)
    return seconds, epochs_left, unknown


def status_lines(study_id: str, runs_by_sweep: list[tuple[Sweep, list[PlannedRun]]]) -> list[str]:
    states = [run_state(run) for _, runs in runs_by_sweep for run in runs]
    roots = {Path(state.run.cfg.paths.results_dir) for state in states}
    root = roots.pop() if len(roots) == 1 else None  # directories are shown below it, to keep the table narrow
    rows = [
        [
            state.state,
            state.epoch_column(),
            "-" if state.best_val_acc is None else f"{state.best_val_acc:.4f}",
            shown_path(state.run.run_dir, root) + (f"  ({state.detail})" if state.detail else ""),
        ]
        for state in states
    ]
    lines = [f"run directories under {root}/"] if root else []
    lines.append(
        tabulate(
            rows, headers=["state", "epochs", "best val acc", "run directory"], tablefmt="simple", disable_numparse=True
        )
    )
    lines += [f"waits: {sweep.label}: {sweep.pending}" for sweep, _ in runs_by_sweep if sweep.pending]
    lines.append(progress_line(states))
    lines += rung_lines(runs_by_sweep, states)
    lines.append(remaining_line(study_id, states))
    return lines


def rung_lines(runs_by_sweep: list[tuple[Sweep, list[PlannedRun]]], states: list[RunState]) -> list[str]:
    """A fidelity ladder's progress rung by rung (`rung epochs=16: progress: 5 of 15 runs finished ...`)."""
    rung_of = {id(run): sweep.rung for sweep, runs in runs_by_sweep for run in runs}
    rungs = list(dict.fromkeys(rung for rung in rung_of.values() if rung))
    return [
        f"  rung {rung}: " + progress_line([state for state in states if rung_of[id(state.run)] == rung])
        for rung in rungs
    ]


def shown_path(run_dir: Path, root: Path | None) -> str:
    try:
        return str(Path(run_dir).relative_to(root)) if root else str(run_dir)
    except ValueError:
        return str(run_dir)


def progress_line(states: list[RunState]) -> str:
    counts = Counter(state.state for state in states)
    finished = counts[run_summary.COMPLETED] + counts[run_summary.DIVERGED]
    epochs_planned = sum(state.epochs_planned for state in states)
    # a diverged run is finished: its remaining epochs will never be trained
    epochs_done = sum(
        state.epochs_planned if state.state == run_summary.DIVERGED else min(state.epochs_done, state.epochs_planned)
        for state in states
        if state.state != OTHER
    )
    others = ", ".join(
        f"{counts[name]} {name}"
        for name in (run_summary.RUNNING, run_summary.INTERRUPTED, run_summary.FAILED, OTHER, UNREADABLE, NEW)
        if counts[name]
    )
    share = f" ({100 * epochs_done / epochs_planned:.0f}%)" if epochs_planned else ""
    return (
        f"progress: {finished} of {len(states)} runs finished ({counts[run_summary.COMPLETED]} completed, "
        f"{counts[run_summary.DIVERGED]} diverged)"
        + (f"; {others}" if others else "")
        + f"; {epochs_done} of {epochs_planned} epochs{share}"
    )


def remaining_line(study_id: str, states: list[RunState]) -> str:
    seconds, epochs_left, unknown = remaining(states)
    skipped = f"; {unknown} run(s) on a dataset of unknown size not included" if unknown else ""
    if epochs_left == 0:
        return "remaining: nothing to train" + skipped
    if seconds is None:
        return (
            f"remaining: {epochs_left} epochs; the time is known once a run has trained an epoch "
            f"(python src/study.py {study_id} --dry-run measures an estimate){skipped}"
        )
    trained = sum(state.epochs_done for state in states if state.wall_time_s > 0)
    return (
        f"remaining: about {format_duration(seconds)} for {epochs_left} epochs, one run after another, at the "
        f"rate of the {trained} epochs this study has trained (divide by a parallel launcher's jobs){skipped}"
    )


def print_status(study_id: str, statement: str, runs_by_sweep: list[tuple[Sweep, list[PlannedRun]]]) -> int:
    print(f"study {study_id}: {statement}")
    print("\n".join(status_lines(study_id, runs_by_sweep)))
    results_dirs = sorted({Path(run.cfg.paths.results_dir) for _, runs in runs_by_sweep for run in runs})
    for line in (line for results_dir in results_dirs for line in comparison_lines(study_id, results_dir)):
        print(line)
    return 0


def show(study: Study, args: StudyRequest) -> int:
    """--status of a study planned as `python src/study.py` would (args: its --set, --launcher, --tuned, folders).
    A study tuned by others (its tuned_by, its rungs') shows each tuning study first, and itself once every tuned
    value exists."""
    tuned: bool | str = args.tuned
    tuning_studies = newcomers.tuning_studies(study, args.experiments)  # with newcomers: theirs only
    for tuning_study in tuning_studies:
        print_status(
            tuning_study.id, tuning_study.statement, plan(tuning_study, args.conf_dir, args.set, args.launcher, False)
        )
    outputs = [tuning_study.tune.output if tuning_study.tune else "tuned" for tuning_study in tuning_studies]
    missing = [
        tuning_study.id
        for tuning_study, output in zip(tuning_studies, outputs)
        if not all(tuned_config_path(args.conf_dir, output, name).is_file() for name in study.grid["optimizer"])
    ]
    if missing:
        print(
            f"study {study.id}: planned once `python src/study.py --select-tuned {' '.join(missing)}` has written "
            "the tuned values"
        )
        return 0
    if study.tuned_by:
        tuned = outputs[0]  # the study's own tuning study comes first (tuning_studies_of)
    elif study.rungs and tuning_studies:
        tuned = True  # every rung names its own tuning study (specs/study_spec.py checks it)
    return print_status(study.id, study.statement, plan(study, args.conf_dir, args.set, args.launcher, tuned))
