"""What `study.py --dry-run` prints: the plan (sweeps, runs, directories and their states), a tuning study's
budget, and the estimate of the time the runs still to do will take.

study_command.py plans and hands the planned runs here; `print_plan` lists them (the run still prints it before
launching), `print_estimate` prices them through studies/estimate.py, preferring the rates that runs of the same
shape recorded on disk over a measured timing and saying which it used, and adds a fidelity ladder's cost per
rung; it returns what it printed (StudyEstimate), which a launch records (estimate_record.py). Printing only:
nothing here plans, launches or writes.
"""

import shlex
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from optbench import run_states
from optbench.durations import format_duration
from optbench.specs.study_spec import Study
from optbench.studies import estimate, probe
from optbench.studies.plan import OTHER_EXPERIMENT, PlannedRun, Sweep


def print_plan(study: Study, runs_by_sweep: list[tuple[Sweep, list[PlannedRun]]]) -> None:
    counts = Counter(run.status for _, runs in runs_by_sweep for run in runs)
    total = sum(counts.values())
    print(f"study {study.id}: {study.statement}")
    others = f", {counts[OTHER_EXPERIMENT]} holding another experiment" if counts[OTHER_EXPERIMENT] else ""
    print(
        f"{total} runs in {len(runs_by_sweep)} sweep(s): {counts[run_states.DONE]} done, "
        f"{counts[run_states.UNFINISHED]} unfinished, {counts[run_states.NEW]} new{others}"
    )
    for number, (sweep, runs) in enumerate(runs_by_sweep, 1):
        if sweep.pending:
            print(f"sweep {number} ({sweep.label}): {sweep.pending}")
            continue
        print(
            f"sweep {number} ({sweep.label}): python src/train.py -m "
            f"{' '.join(shlex.quote(override) for override in sweep.command_overrides())}"
        )
        for trial in sweep.trials:
            print(f"  trial {trial.index}: {' '.join(trial.overrides())}")
        for run in runs:
            detail = f" ({run.detail})" if run.detail else ""
            print(f"  {run.status:<10} {run.run_dir}{detail}")
    if study.tune:
        print_budget(study, runs_by_sweep)


def print_budget(study: Study, runs_by_sweep: list[tuple[Sweep, list[PlannedRun]]]) -> None:
    """Runs and epochs per optimizer, the reruns still to be chosen included: the budget is the same for all."""
    assert study.tune is not None  # a tuning study
    runs_per_optimizer: Counter = Counter()
    epochs = 0
    for sweep, runs in runs_by_sweep:
        name = sweep.values["optimizer"][0] if len(sweep.values["optimizer"]) == 1 else "all"
        runs_per_optimizer[name] += len(runs) or study.tune.top_k * len(sweep.runs_without_trials())
        epochs = max([epochs, *(int(run.cfg.epochs) for run in runs)])
    print(
        f"tuning budget ({study.tune.method}), per optimizer: "
        + ", ".join(f"{name} {count} runs x {epochs} epochs" for name, count in runs_per_optimizer.items())
        + f"; {sum(runs_per_optimizer.values())} runs, {sum(runs_per_optimizer.values()) * epochs} epochs in all"
    )


@dataclass(frozen=True)
class StudyEstimate:
    """The serial seconds of the runs still to do, each run's share, and where the rates came from."""

    runs: list[tuple[PlannedRun, float]]  # each run still to do whose size is known, with its predicted seconds
    seconds: float
    how: str  # the rates' sources, in a phrase: recorded on disk (how many runs), or measured (on which device)


def print_estimate(runs_by_sweep: list[tuple[Sweep, list[PlannedRun]]], launcher: str) -> StudyEstimate | None:
    """After the plan (flushed first, so it shows while a rate is measured): the serial time of the runs still to
    do, from the study's own runs on disk where its shapes have some, else from the cached or measured rate. The
    estimate printed is returned (None when nothing is left to run): a launch records it (estimate_record.py)."""
    sys.stdout.flush()
    planned = [(run, estimate.workload(run.cfg, run.epochs_done)) for _, runs in runs_by_sweep for run in runs]
    to_do = [(run, load) for run, load in planned if run.status != run_states.DONE]
    unknown = [run for run, load in to_do if load is None]
    work = [(run, load) for run, load in to_do if load is not None]
    if not work:
        print("estimated time: nothing to run" + (f" ({len(unknown)} run(s) of unknown size)" if unknown else ""))
        return None
    every_shape = {load.shape for _, load in planned if load is not None}  # a ladder's per-rung cost needs each
    own = [(load, run.run_dir) for run, load in planned if load is not None and run.status in run_states.REUSED]
    elsewhere = [(load, run_dir) for load, run_dir in same_shape_runs(planned) if load.shape in every_shape]
    recorded = estimate.recorded_rates(own + elsewhere)
    own_runs = estimate.recorded_rates(own)
    to_measure = every_shape - set(recorded)
    measured = estimate.measure_rates(to_measure, lambda line: print(line, flush=True)) if to_measure else {}
    probed = probe_shapes(planned, measured)
    recorded.update({shape: rate for shape, (rate, _) in probed.items()})
    measured = {shape: rate for shape, rate in measured.items() if shape not in probed}
    priced = with_sweep_startups(
        [(run, load_seconds(load, recorded, measured)) for run, load in work], runs_by_sweep, recorded
    )
    seconds = sum(run_seconds for _, run_seconds in priced)
    print(
        f"estimated time: {format_duration(seconds)} for {len(work)} run(s) still to do, one after another"
        + (" (divide by the launcher's concurrent jobs)" if launcher != "basic" else "")
    )
    shapes = {load.shape for _, load in work}
    for shape in sorted(shapes & set(recorded)):
        print_recorded(shape, recorded[shape], own_runs[shape].runs if shape in own_runs else 0, probed.get(shape))
    if measured:
        print_measured(measured)
    if unknown:
        print(f"  {len(unknown)} run(s) on a dataset of unknown size are not included")
    print_rung_estimates(runs_by_sweep, recorded, measured)
    return StudyEstimate(priced, seconds, sources(shapes, recorded, measured, probed))


def probe_shapes(planned: list, measured: dict) -> dict[tuple, tuple[estimate.RecordedRate, str]]:
    """shape -> (its probe sweep's rates, cached or trained now) for the timed shapes whose epochs are cheap
    (studies/probe.py), each probed with the study's first run of it still to do; a probe that failed leaves its
    shape to the timed steps, and a line says why."""
    probed = {}
    for shape, (device, rate, _) in sorted(measured.items()):
        run, load = min(
            ((run, load) for run, load in planned if load is not None and load.shape == shape),
            key=lambda pair: pair[0].status == run_states.DONE,
        )
        if not probe.affordable(load, rate, device):
            continue
        found, how = probe.probe_rate(run, shape, lambda line: print(line, flush=True))
        if found is None:
            print(f"  {how}: priced from the timed steps alone", flush=True)
            continue
        probed[shape] = (found, how)
    return probed


def with_sweep_startups(priced: list, runs_by_sweep: list[tuple[Sweep, list[PlannedRun]]], recorded: dict) -> list:
    """Each sweep starts one process and passes over its finished runs on the way (train() skips them); a run still
    to do carries what its sweep spent since the run before it ended, as its startup_s will: the process's start-up
    (estimate.startup_parts) for the sweep's first, and a run's own start-up for each finished run passed over
    since (a skip composes the job and checks the run's identity, as a run's start-up does; the data and the model
    it does not build). Finished runs after the last one to do are passed over by no run that records them."""
    extra: dict[int, float] = {}
    for _, runs in runs_by_sweep:
        passed_over, first = 0, True
        for run in runs:
            if run.status == run_states.DONE:
                passed_over += 1
                continue
            load = estimate.workload(run.cfg, run.epochs_done)
            rate = recorded.get(load.shape) if load is not None else None
            if rate is not None:
                extra[id(run)] = (rate.process_startup_s if first else 0.0) + passed_over * rate.startup_s
            passed_over, first = 0, False
    return [(run, seconds + extra.get(id(run), 0.0)) for run, seconds in priced]


def sources(shapes: set[tuple], recorded: dict, measured: dict, probed: dict) -> str:
    """`recorded rates of 3 run(s) of the same shape on disk; a probe sweep ...; rates measured on cpu` for the
    shapes priced."""
    runs = sum(recorded[shape].runs for shape in shapes if shape in recorded and shape not in probed)
    probes = sum(shape in probed for shape in shapes)
    devices = sorted({measured[shape][0] for shape in shapes if shape in measured})
    return "; ".join(
        ([f"recorded rates of {runs} run(s) of the same shape on disk"] if runs else [])
        + (
            [f"a probe sweep of {probe.PROBE_RUNS} runs of {probe.PROBE_EPOCHS} epoch for {probes} shape(s)"]
            if probes
            else []
        )
        + ([f"rates measured on {', '.join(devices)} (5 timed steps, or the cached timing)"] if devices else [])
    )


def same_shape_runs(planned: list) -> list:
    """Runs under the study's results folders that it does not plan (another optimizer's, another study's): runs
    of its shape among them price the estimate before a busy machine's timing would."""
    roots = {Path(run.cfg.paths.results_dir) for run, _ in planned}
    return estimate.runs_on_disk({root for root in roots if root.is_dir()}, {Path(run.run_dir) for run, _ in planned})


def print_recorded(shape: tuple, rate, own: int, probed: tuple | None = None) -> None:
    """Where a recorded rate came from: the study's own runs, runs of the same shape elsewhere on disk, or a probe
    sweep (`probed`: its rates and whether it trained now or was cached)."""
    _, model, width, classes, batch, *_ = shape
    evaluated = f", {rate.eval_rate:.0f} evaluated images/s" if rate.eval_rate else ""
    if probed:
        source = f"a probe sweep of {rate.runs} runs of {probe.PROBE_EPOCHS} epoch ({probed[1]})"
    elif own == rate.runs:
        source = f"{rate.runs} run(s) of this study on disk"
    else:
        source = f"{rate.runs} run(s) on disk of the same shape ({own} of this study)"
    overhead = f", {rate.epoch_overhead_s:.2g} s an epoch outside both" if rate.epoch_overhead_s else ""
    if rate.startup_s or rate.process_startup_s:
        overhead += (
            f", {rate.startup_s:.2g} s a run's start-up and {rate.process_startup_s:.2g} s more for a sweep's process"
        )
    print(
        f"  from {source}: {rate.train_rate:.0f} training images/s{evaluated}{overhead} "
        f"for {model} width {width}, {classes} classes, batch {batch} (the median over their epochs, data "
        "loading included)"
    )


def print_measured(measured: dict[tuple, tuple[str, float, float | None]]) -> None:
    from optbench.device.fastest import cache_path  # torch is loaded by now: the rates were measured or read

    for (requested, model, width, classes, batch, *_), (device, rate, load) in sorted(measured.items()):  # noqa: B007
        print(
            f"  measured on {device}: {rate:.0f} training images/s for {model} width {width}, {classes} classes, "
            f"batch {batch} (5 timed steps on random data, cached in {cache_path(estimate.RATE_CACHE)}; "
            "delete it to measure again)"
        )
        if estimate.is_busy(load):
            print(
                f"  the machine was busy while this rate was measured (load {load:.1f} per core): the estimate is "
                "too long; the rate is cached marked busy and timed again when the machine is quiet"
            )
        print(
            f"  per epoch: training images / rate + (validation + test images) / "
            f"({estimate.eval_speedup(device):.0f} x rate); data loading and start-up not included"
        )


def load_seconds(load, recorded: dict, measured: dict) -> float:
    """The serial seconds of a workload at the study's recorded rate for its shape, else the measured one."""
    if load.shape in recorded:
        return estimate.recorded_seconds(load, recorded[load.shape])
    return estimate.seconds_left(load, measured[load.shape][1], measured[load.shape][0])


def print_rung_estimates(runs_by_sweep: list[tuple[Sweep, list[PlannedRun]]], recorded: dict, measured: dict) -> None:
    """A fidelity ladder's cost per rung: each rung's runs from scratch at the rates above, and what is left."""
    rungs = list(dict.fromkeys(sweep.rung for sweep, _ in runs_by_sweep if sweep.rung))
    if not rungs:
        return
    print("per rung (every run of the rung from scratch, one after another; what is still to do):")
    for rung in rungs:
        runs = [run for sweep, sweep_runs in runs_by_sweep if sweep.rung == rung for run in sweep_runs]
        whole = rung_seconds(runs, recorded, measured, everything=True)
        left = rung_seconds(runs, recorded, measured, everything=False)
        done = sum(run.status == run_states.DONE for run in runs)
        print(
            f"  rung {rung}: {len(runs)} runs, {done} done; {format_duration(whole)} in all, "
            f"{format_duration(left)} left"
        )


def rung_seconds(runs: list[PlannedRun], recorded: dict, measured: dict, everything: bool) -> float:
    seconds = 0.0
    for run in runs:
        if not everything and run.status == run_states.DONE:
            continue
        load = estimate.workload(run.cfg, 0 if everything else run.epochs_done)
        if load is not None and (load.shape in recorded or load.shape in measured):
            seconds += load_seconds(load, recorded, measured)
    return seconds
