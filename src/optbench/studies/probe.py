"""The probe sweep: what runs of a shape with none on disk cost, measured by training a few as the study will.

Timed steps on random data (estimate.measure_rates) price a run's training and evaluation passes, but a small
model's run spends most of its time outside them: the sweep's process starting (Python, the imports, Hydra, the
data), each later run's own start-up, each epoch's records. A fresh MNIST-1D study measured 1.5 s of training and
evaluation in 8.9 s of wall time and start-up (docs/studies.md "The estimate"). So where a shape's timed epochs are
cheap (PROBE_MAX_S), `probe_rate` trains PROBE_RUNS runs of PROBE_EPOCHS epoch of the study's first run of that
shape in one child `train.py -m` process, as a study's sweep runs them, into a temporary folder (no logger, no
mirror, no download), and reads them as runs on disk are read (estimate.recorded_rates): the first run's start-up
is the process's, the median of three a later run's. What it measured is cached per machine, shape and dataset in
estimate-rates.json beside the timed steps, under the same rule for a busy machine (estimate.needs_timing), so a
dry run and the launch after it agree. A probe that fails (its data not on disk, a run that failed) prices
nothing: the timed steps stand, and `probe_rate` says why in a line.
"""

import platform
import subprocess
import sys
import tempfile
from dataclasses import asdict, replace
from pathlib import Path

from optbench.studies import estimate
from optbench.studies.launchers import TRAIN_SCRIPT, job_environment
from optbench.studies.plan import PlannedRun

PROBE_RUNS = 3  # the first pays the process's start-up; the median of three is a later run's own
PROBE_EPOCHS = 1  # what an epoch costs outside training and evaluation is per epoch (measured: 0.025 s at 1-16)
PROBE_MAX_S = 60.0  # the probe's epochs at the timed rate, start-up aside: above it the timed steps price alone
PROBE_TIMEOUT_S = 900  # a probe that hangs (a stuck data folder) costs at most this, then prices nothing
SET_BY_PROBE = ("seed", "epochs", "paths.results_dir", "paths.mirror_dir", "logger", "train.progress_bar")


def affordable(work: estimate.Workload, rate: float, device: str) -> bool:
    """Whether PROBE_RUNS x PROBE_EPOCHS epochs of `work` at the timed `rate` fit in PROBE_MAX_S."""
    epoch = estimate.seconds_left(replace(work, epochs_left=1), rate, device)
    return PROBE_RUNS * PROBE_EPOCHS * epoch <= PROBE_MAX_S


def probe_overrides(run: PlannedRun, results_dir: Path) -> list[str]:
    """The run's own overrides, its seed, epochs and output replaced: PROBE_RUNS seeds of PROBE_EPOCHS epochs into
    `results_dir`, with no experiment tracker, no mirror and, where the dataset downloads, no download."""
    kept = [
        override
        for override in run.overrides
        if (key := override.lstrip("+~").split("=", 1)[0]) not in SET_BY_PROBE and not key.startswith("hydra")
    ]
    probe = [
        f"seed={','.join(str(seed) for seed in range(PROBE_RUNS))}",
        f"epochs={PROBE_EPOCHS}",
        f"paths.results_dir={results_dir}",
        "paths.mirror_dir=null",
        "logger=none",
        "train.progress_bar=false",
    ]
    if run.cfg.dataset.get("download") is not None and not any(o.startswith("dataset.download=") for o in kept):
        probe.append("dataset.download=false")  # a dry run fetches nothing: missing data fails the probe instead
    return kept + probe


def cache_key(run: PlannedRun, shape: tuple) -> str:
    import torch  # loaded by now: the shape's steps were timed first

    return f"{platform.node()}|torch {torch.__version__}|probe|{run.cfg.dataset.name}|{' '.join(map(str, shape))}"


def probe_rate(run: PlannedRun, shape: tuple, announce=print) -> tuple[estimate.RecordedRate | None, str]:
    """(the rates a probe sweep of `run` measured, cached or trained now; the line saying so, or why it failed).
    None where the probe failed: the caller prices the shape from its timed steps."""
    from optbench.device import fastest

    cache, key = fastest.read_cache(estimate.RATE_CACHE), cache_key(run, shape)
    load = estimate.machine_load()  # before the probe: its own runs would count as load
    cached = cached_rate(cache.get(key))
    if cached is not None and not estimate.needs_timing(cache[key], load):
        return cached, f"cached in {fastest.cache_path(estimate.RATE_CACHE)}"
    announce(
        f"estimating: a probe sweep of {PROBE_RUNS} runs of {PROBE_EPOCHS} epoch of {run.cfg.model.name} width "
        f"{run.cfg.model.width} on {run.cfg.dataset.name} (its start-up and records, which timed steps leave out; "
        f"once per machine and shape, cached in {fastest.cache_path(estimate.RATE_CACHE)}) ..."
    )
    rate, why = trained_rate(run, shape)
    if rate is None:
        return None, why
    cache[key] = {"images_per_s": rate.train_rate, "load": load, "probe": asdict(rate)}
    fastest.write_cache(cache, estimate.RATE_CACHE)
    return rate, "trained now"


def trained_rate(run: PlannedRun, shape: tuple) -> tuple[estimate.RecordedRate | None, str]:
    """Train the probe sweep in a temporary folder and read its runs; (None, why) where it failed."""
    with tempfile.TemporaryDirectory(prefix="optbench-probe-") as folder:
        command = [sys.executable, str(TRAIN_SCRIPT), "-m", *probe_overrides(run, Path(folder))]
        try:
            done = subprocess.run(
                command, env=job_environment(), capture_output=True, text=True, timeout=PROBE_TIMEOUT_S
            )
        except subprocess.TimeoutExpired:
            return None, f"the probe sweep took over {PROBE_TIMEOUT_S} s"
        if done.returncode != 0:
            said = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
            return None, f"the probe sweep failed ({said})"
        probed = estimate.runs_on_disk({Path(folder)}, set())
        rate = estimate.recorded_rates(probed).get(shape)
    if rate is None or rate.runs < PROBE_RUNS:
        return None, f"the probe sweep left {rate.runs if rate else 0} of {PROBE_RUNS} runs of this shape"
    return rate, ""


def cached_rate(entry) -> estimate.RecordedRate | None:
    """The probe's rates from a cache entry; None where there is none or it is damaged (probed again)."""
    try:
        rate = estimate.RecordedRate(**entry["probe"])
    except (TypeError, KeyError):
        return None
    numbers = [value for value in asdict(rate).values() if value is not None]
    return rate if all(isinstance(value, (int, float)) and value >= 0 for value in numbers) else None
