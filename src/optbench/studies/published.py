"""Planned runs that are already published: found in a folder of run records, named by the dry run, copied in.

A published study keeps its run records in the checkout (docs/cpu-study/runs, scripts/publish_runs.py): the same
layout as a results folder, without checkpoints. A run a study plans is *published* there when the folder holds,
at the run's path relative to the study's results folder, a finished summary and a record naming the planned
run id: the same experiment, already trained. A study file's `published: FOLDER` says to use them: before its
sweeps start, each such run still new in the results folder is copied in at its planned directory (record,
metrics, predictions, log, .hydra/, summary: the mirror's copy), with the tuning records of the study's tuning
studies, and is then done, not trained. Its dry run says so and prices the rest from their metrics. A study
without `published:` is told which of its new runs the checkout's docs/*/runs hold, and the two ways to use them.
Nothing here trains.
"""

import dataclasses
import shlex
from pathlib import Path

from omegaconf import OmegaConf

from optbench import run_states, rundir
from optbench.config.hydra_glue import dataset_dir_name
from optbench.errors import ConfigError, DamagedRunFile
from optbench.formats import run_record, run_summary, tuning_record
from optbench.specs.study_spec import REPO, Study
from optbench.studies.plan import PlannedRun, Sweep, planned_run_id
from optbench.training.mirror import copy_atomically, copy_small_files

PUBLISHED_FOLDERS = "docs/*/runs"  # where the checkout keeps its published studies' run records


@dataclasses.dataclass(frozen=True)
class Found:
    """A planned run still new here, and its published twin."""

    run: PlannedRun
    source: Path


def study_folder(study: Study) -> Path | None:
    """The study's `published:` folder, checked; None when it names none."""
    if not study.published:
        return None
    folder = Path(study.published)
    if not folder.is_dir():
        raise ConfigError(
            f"{study.source}: published: {study.published} is not a folder of run records (from the working "
            "directory; e.g. docs/cpu-study/runs)"
        )
    return folder


def checkout_folders() -> list[Path]:
    """The published studies' run folders of this checkout (docs/*/runs)."""
    return sorted(path for path in REPO.glob(PUBLISHED_FOLDERS) if path.is_dir())


def find(runs_by_sweep: list[tuple[Sweep, list[PlannedRun]]], folder: Path) -> list[Found]:
    """The planned runs still new here whose published twin in `folder` is finished and the same experiment."""
    found = []
    for _, runs in runs_by_sweep:
        for run in runs:
            source = twin(run, folder)
            if run.status == run_states.NEW and source is not None:
                found.append(Found(run, source))
    return found


def twin(run: PlannedRun, folder: Path) -> Path | None:
    """The run's directory in `folder` when it holds the planned run, finished; else None. The dataset level is
    the folder's own for the same data (a folder of images may be named by an older scheme there: rundir.data_level),
    the rest of the path the run's."""
    try:
        relative = Path(run.run_dir).relative_to(Path(str(run.cfg.paths.results_dir)))
    except ValueError:  # a run outside its results folder (hydra.run.dir=...): no published twin
        return None
    cfg = run.cfg
    level = dataset_dir_name(
        cfg.dataset.name,
        OmegaConf.select(cfg, "dataset.root"),
        OmegaConf.select(cfg, "dataset.image_size", default=32),
        cfg.paths.data_dir,
        str(folder),
    )
    source = Path(folder) / level / Path(*relative.parts[1:])
    try:
        summary, record = run_summary.read(source), run_record.read(source)
    except DamagedRunFile:
        return None
    if summary is None or record is None or not summary.finished:
        return None
    return source if record.run_id == planned_run_id(run.cfg) else None


def as_done(runs_by_sweep: list[tuple[Sweep, list[PlannedRun]]], found: list[Found]):
    """The plan with each found run done at its published directory: what the estimate prices the rest from."""
    sources = {id(item.run): item.source for item in found}

    def done_there(run: PlannedRun) -> PlannedRun:
        return dataclasses.replace(run, status=run_states.DONE, run_dir=sources[id(run)])

    return [(sweep, [done_there(run) if id(run) in sources else run for run in runs]) for sweep, runs in runs_by_sweep]


def dry_run_lines(study: Study, runs_by_sweep: list[tuple[Sweep, list[PlannedRun]]]) -> tuple[list[str], list[Found]]:
    """What the dry run says about published runs, and the runs the study will copy in (its `published:`)."""
    new = sum(run.status == run_states.NEW for _, runs in runs_by_sweep for run in runs)
    if not new:
        return [], []
    folder = study_folder(study)
    if folder is not None:
        found = find(runs_by_sweep, folder)
        return [
            f"published: {len(found)} of the {new} new runs are in {folder} (finished, the same run ids): copied "
            "into the results folder before the sweeps start, not trained; the estimate leaves them out"
        ], found
    lines = []
    for candidate in checkout_folders():
        found = find(runs_by_sweep, candidate)
        if found:
            results = str(found[0].run.cfg.paths.results_dir)
            shown = _shown(candidate)
            lines.append(
                f"note: {len(found)} of the {new} new runs are published in {shown} (finished, the same run ids): "
                f"add `published: {shown}` to {study.source.name} to copy them in instead of training them, or copy "
                f"them now: python scripts/publish_runs.py {shlex.quote(shown)} {shlex.quote(results)}"
            )
    return lines, []


def _shown(folder: Path) -> str:
    """A folder as the user would type it: relative to the working directory when it is below it."""
    try:
        return str(folder.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(folder)


def copy_in(study: Study, runs_by_sweep: list[tuple[Sweep, list[PlannedRun]]], tuning_ids: list[str]) -> int:
    """Copy the study's published runs still new here (and its tuning studies' records, when absent) into the
    results folder; returns how many runs were copied."""
    folder = study_folder(study)
    if folder is None:
        return 0
    found = find(runs_by_sweep, folder)
    for item in found:
        target = Path(item.run.run_dir)
        target.mkdir(parents=True, exist_ok=True)
        copy_small_files(item.source, target)
        # the summary last: the run counts as finished here only once everything else is
        copy_atomically(item.source / rundir.SUMMARY_FILE, target / rundir.SUMMARY_FILE)
    results_dirs = {Path(str(run.cfg.paths.results_dir)) for _, runs in runs_by_sweep for run in runs}
    for results_dir in results_dirs:
        for study_id in tuning_ids:
            source, target = (
                tuning_record.record_path(folder, study_id),
                tuning_record.record_path(results_dir, study_id),
            )
            if source.is_file() and not target.exists():
                copy_atomically(source, target)
    return len(found)
