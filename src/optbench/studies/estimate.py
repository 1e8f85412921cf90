"""How long a study's remaining runs will take on this device, from runs already trained or a short measured run.

Where runs of the study's own shape are already on disk (its done or unfinished runs: a pilot, the first
seeds; or any run of that shape under its results folders, `runs_on_disk`), their metrics.jsonl gives the
rates (`recorded_rates`: the median training images/s, evaluated images/s from each epoch's time outside
training, and the seconds an epoch spent outside both, from summary.json's wall time), data loading included,
and the start-up summary.json's `startup_s` records (`startup_parts`): a run's own, and what a sweep's first run
adds for starting Python and the imports, once per sweep (its `process_startup_s` tells which runs started their
process; for runs trained before it was kept, the median and the largest less the median). Runs trained before
start-up was recorded price it as nothing. Otherwise, for every distinct shape (device, model, width, classes,
batch size, input, and the runs' thread count) among the runs still to do, train a few steps on random data
(`optbench.device.fastest.images_per_second`: 2 warm-up + 5 timed steps) at the runs' thread count
(`torch_threads`: the study's process has torch's default, every core, which on a busy CPU times a 1-thread run's
small model up to 100x too slow) and take the images/s, cached per machine and shape
(`$OPTBENCH_CACHE_DIR/estimate-rates.json`, as device=fastest caches its timing), so two estimates on one machine
agree (a rate timed on a busy machine is marked and timed again once it is quiet); `measure_rates` says before it
measures, because at width 64 on a busy CPU that takes minutes. One epoch then costs its training images / rate,
plus its validation and test images / (EVAL_SPEEDUP x rate) (or / the recorded evaluation rate), and a run costs
its remaining epochs of that. A folder of images (dataset=imagefolder) is counted from its listing. Timed steps
leave out data loading, start-up and each epoch's records, most of a small model's run: where a shape's epochs are
cheap, a probe sweep measures them (studies/probe.py, priced as runs on disk). The estimate is the serial time: a
parallel launcher divides it by its concurrent jobs.
"""

import contextlib
import functools
import os
import statistics
from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from optbench import rundir
from optbench.errors import ConfigError, DamagedRunFile
from optbench.formats import metrics_log, run_record, run_summary
from optbench.registry import datasets

FORWARD_SHARE = 1 / 3  # evaluation forward pass vs a full training step (forward + backward ~ 3 forwards)
# Evaluated images per second over trained ones, per device. CPU: measured 7.1x inside one run with BatchNorm
# folded and the CPU's evaluation batch (benchmarks/study_time.py, docs/benchmarks.md "A study's epoch");
# elsewhere the forward-pass share (a forward is about a third of a training step).
EVAL_SPEEDUP = {"cpu": 7.0}
RATE_CACHE = "estimate-rates.json"
BUSY_LOAD = 1.0  # load per usable core above which other processes competed for the cores while timing
TEXT_WINDOWS_PER_SPLIT = 871  # Tiny Shakespeare's held-out halves in windows of 64 (dataset.eval_windows: null)


@dataclass(frozen=True)
class Workload:
    """One run's remaining work."""

    # (device, model name, width, classes, batch size, channels, image size, intra-op threads (0: torch's own)):
    # what the rate depends on; the threads as much as the model on a busy CPU (docs/studies.md "The estimate")
    shape: tuple
    train_images: int  # per epoch
    eval_images: int  # validation + test, per epoch
    epochs_left: int


def dataset_sizes(dataset: DictConfig) -> tuple[int, int, int] | None:
    """(training, validation, test) images of a run's dataset; None when unknown before loading (imagefolder)."""
    sizes = datasets.official_sizes(dataset) or folder_sizes(dataset.get("root"))
    if sizes is None:
        return None
    full_train, test = sizes[:2]
    val = int(dataset.val_size)
    train = full_train - val
    if dataset.get("train_subset"):
        train = min(train, int(dataset.train_subset))
    return train, val, test


@functools.lru_cache(maxsize=8)  # a study plans many runs on one folder: list it once
def folder_sizes(root) -> tuple[int, int, int] | None:
    """(training images, test images, classes) of an ImageFolder copy; None without a usable root."""
    from optbench.data.fingerprint import list_image_folder
    from optbench.errors import ConfigError

    if not root:
        return None
    try:
        classes, train, test = list_image_folder(root)
    except (ConfigError, OSError):
        return None
    return len(train), len(test), len(classes)


def text_sizes(cfg: DictConfig) -> tuple[int, int, int]:
    """(characters trained per evaluation period, validation characters, test characters) of a text's run: its
    rates count characters (one example per position)."""
    context = int(cfg.dataset.context)
    windows = int(cfg.dataset.eval_windows or TEXT_WINDOWS_PER_SPLIT)
    return int(cfg.dataset.steps_per_epoch) * int(cfg.batch_size) * context, windows * context, windows * context


def workload(cfg: DictConfig, epochs_done: int) -> Workload | None:
    is_text = datasets.describe(cfg.dataset.name).kind == datasets.TEXT
    sizes = text_sizes(cfg) if is_text else dataset_sizes(cfg.dataset)
    if sizes is None:
        return None
    train, val, test = sizes
    folder = None if datasets.official_sizes(cfg.dataset) else folder_sizes(cfg.dataset.get("root"))
    num_classes = datasets.num_classes(cfg.dataset) or (folder[2] if folder else 10)
    channels, image_size, _ = datasets.image_shape(cfg.dataset)
    shape = (
        str(cfg.device),
        cfg.model.name,
        int(cfg.model.width),
        num_classes,
        int(cfg.batch_size),
        channels,
        image_size,
        run_threads(cfg),
    )
    return Workload(shape, train, val + test, max(0, int(cfg.epochs) - epochs_done))


def run_threads(cfg: DictConfig) -> int:
    """The intra-op threads a run trains with (device_policy.threads), 0 where torch's own count decides."""
    return int(OmegaConf.select(cfg, "device_policy.threads", default=None) or 0)


@dataclass(frozen=True)
class RecordedRate:
    """The rates of a shape's runs on disk: median training and evaluation images/s over their epochs, and the
    median seconds an epoch spent outside training and evaluation (checkpoints, summaries, predictions: most of
    a tiny model's epoch)."""

    runs: int
    train_rate: float
    eval_rate: float | None  # None where no epoch records an evaluation time
    epoch_overhead_s: float = 0.0  # 0 where no run records its wall time (summary.json)
    startup_s: float = 0.0  # a run's own start-up in a running process (startup_parts); 0 where none records it
    process_startup_s: float = 0.0  # what a sweep's first run adds: starting Python, the imports (startup_parts)


def epoch_eval_rate(record: dict, eval_images: int) -> float | None:
    """An epoch's evaluated images/s: recorded (eval/images_per_s), or its time outside training."""
    if record.get(metrics_log.EVAL_IMAGES_PER_S):
        return float(record[metrics_log.EVAL_IMAGES_PER_S])
    outside = float(record.get(metrics_log.TIME_S) or 0) - float(record.get(metrics_log.TRAIN_TIME_S) or 0)
    return eval_images / outside if outside > 0 and eval_images else None


def epoch_overhead(run_dir: Path, records: list[dict]) -> float | None:
    """Seconds per epoch a run spent outside its epochs' own time: its summary's wall time (the training loop,
    checkpoints and summaries included) less the epochs' time_s; None without a readable summary."""
    try:
        summary = run_summary.read(Path(run_dir))
    except DamagedRunFile:
        return None
    if summary is None or not summary.wall_time_s or not records:
        return None
    outside = summary.wall_time_s - sum(float(record.get(metrics_log.TIME_S) or 0) for record in records)
    return max(0.0, outside) / len(records)


def recorded_rates(trained: list[tuple[Workload, Path]]) -> dict[tuple, RecordedRate]:
    """shape -> the rates its runs on disk recorded (their metrics.jsonl), for the shapes that have any."""
    train_rates: dict[tuple, list[float]] = {}
    eval_rates: dict[tuple, list[float]] = {}
    overheads: dict[tuple, list[float]] = {}
    startups: dict[tuple, list[tuple[float, float | None]]] = {}
    runs: dict[tuple, int] = {}
    for work, run_dir in trained:
        every_epoch = metrics_log.read(Path(run_dir))[0]
        records = [record for record in every_epoch if record.get(metrics_log.TRAIN_IMAGES_PER_S)]
        if not records:
            continue
        runs[work.shape] = runs.get(work.shape, 0) + 1
        train_rates.setdefault(work.shape, []).extend(
            float(record[metrics_log.TRAIN_IMAGES_PER_S]) for record in records
        )
        eval_rates.setdefault(work.shape, []).extend(
            rate for record in records if (rate := epoch_eval_rate(record, work.eval_images))
        )
        if (overhead := epoch_overhead(run_dir, every_epoch)) is not None:
            overheads.setdefault(work.shape, []).append(overhead)
        if (startup := recorded_startup(run_dir)) is not None:
            startups.setdefault(work.shape, []).append(startup)
    return {
        shape: RecordedRate(
            runs[shape],
            statistics.median(rates),
            statistics.median(eval_rates[shape]) if eval_rates[shape] else None,
            statistics.median(overheads[shape]) if overheads.get(shape) else 0.0,
            *startup_parts(startups.get(shape, [])),
        )
        for shape, rates in train_rates.items()
    }


def recorded_startup(run_dir: Path) -> tuple[float, float | None] | None:
    """(a run's recorded start-up seconds, the part counted from its process's start, None where not recorded) from
    summary.json; None for runs trained before start-up was kept."""
    try:
        summary = run_summary.read(Path(run_dir))
    except DamagedRunFile:
        return None
    if summary is None or summary.startup_s is None:
        return None
    return summary.startup_s, summary.process_startup_s


def startup_parts(startups: list[tuple[float, float | None]]) -> tuple[float, float]:
    """(a run's own start-up, what starting the sweep's process adds) from the runs' recorded (start-up, the part
    counted from the process's start). Runs that say which they were: the median of the runs started in a process
    already running, and the median of the process-starting runs' part less it. Runs trained before that was kept:
    most runs of a sweep start in a process already running (the median), its first run paid for starting Python
    and the imports as well (the largest, less that median); two or three such runs cannot tell the first apart."""
    told = [(total, from_process) for total, from_process in startups if from_process is not None]
    if told:
        later = [total for total, from_process in told if from_process == 0]
        own = statistics.median(later) if later else 0.0
        firsts = [from_process for _, from_process in told if from_process > 0]
        return own, max(0.0, statistics.median(firsts) - own) if firsts else 0.0
    if not startups:
        return 0.0, 0.0
    totals = [total for total, _ in startups]
    typical = statistics.median(totals)
    return typical, max(totals) - typical


def recorded_seconds(work: Workload, rate: RecordedRate) -> float:
    """The serial seconds of a workload at the rates its shape's runs on disk recorded, their overhead and a run's
    own start-up included (a sweep's process start-up is added once per sweep: dry_run.print_estimate)."""
    return (
        seconds_left(work, rate.train_rate, eval_rate=rate.eval_rate)
        + work.epochs_left * rate.epoch_overhead_s
        + (rate.startup_s if work.epochs_left else 0.0)
    )


def runs_on_disk(roots: set[Path], planned: set[Path]) -> list[tuple[Workload, Path]]:
    """The runs under `roots` (a study's results folders) that the plan does not name, each with its own shape
    (from its record.json), so that runs of the study's shape trained by another study or optimizer price it."""
    found = []
    for root in sorted(roots):
        for record_path in sorted(Path(root).rglob(rundir.RECORD_FILE)):
            run_dir = record_path.parent
            if run_dir not in planned and (work := recorded_workload(run_dir)) is not None:
                found.append((work, run_dir))
    return found


def recorded_workload(run_dir: Path) -> Workload | None:
    """A run's workload from its record.json; None where the record or its config cannot say (another
    harness version's keys, a damaged file): such a run only cannot help the estimate."""
    try:
        record = run_record.read(run_dir)
        return None if record is None else workload(OmegaConf.create(record.config), 0)
    except (DamagedRunFile, ConfigError, OmegaConfBaseException, KeyError, ValueError, TypeError, AttributeError):
        return None


def measure_rates(shapes: set[tuple], announce=print) -> dict[tuple, tuple[str, float, float | None]]:
    """shape -> (device measured on, training images/s, load per core while it was measured): from the cache
    of this machine, else measured once and cached (a missing or damaged cache only costs a new
    measurement), announced first by `announce` (a line). A load above BUSY_LOAD says other processes kept the
    cores busy: the rate is too low, so it is cached marked with that load and timed again once the machine is
    quiet; the quiet rate then stands."""
    from optbench.device import fastest  # torch: only when an estimate is asked for
    from optbench.device.policy import resolve_device
    from optbench.training.timing import timed_model

    cache, rates = fastest.read_cache(RATE_CACHE), {}
    for shape in sorted(shapes):
        requested, model_name, width, num_classes, batch_size, channels, image_size, threads = shape
        model = timed_model(model_name, width, num_classes, batch_size, channels, image_size)
        if requested == "fastest":
            device = fastest.fastest_device(model)[0]
        else:
            device = resolve_device(requested if requested.startswith(("cpu", "cuda", "mps")) else "auto")
        key = fastest.cache_key([device], model) + (f" threads {threads}" if threads else "")
        load = machine_load()  # before timing: the timing's own steps would count as load
        if needs_timing(cache.get(key), load):
            announce(
                f"estimating: timing 7 training steps of {model_name} width {width}, batch {batch_size} on "
                f"{device}{f' with {threads} thread(s)' if threads else ''} (once per machine and shape; cached "
                f"in {fastest.cache_path(RATE_CACHE)}) ..."
            )
            with torch_threads(threads):
                cache[key] = {"images_per_s": fastest.images_per_second(device, model), "load": load}
            fastest.write_cache(cache, RATE_CACHE)
        rates[shape] = (str(device), cache[key]["images_per_s"], cache[key].get("load"))
    return rates


@contextlib.contextmanager
def torch_threads(threads: int):
    """Time at the runs' thread count (0: leave torch's own): the study's process has torch's default, every core,
    and on a busy 2-core CPU a 1-thread run of MNIST-1D's CNN trains 100x faster than 2 threads time it
    (docs/studies.md "The estimate")."""
    import torch

    before = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def is_busy(load: float | None) -> bool:
    return (load or 0.0) > BUSY_LOAD


def needs_timing(entry, load_now: float | None) -> bool:
    """Time the shape when the cache has no usable rate, or only one timed on a busy machine that is quiet now."""
    if not (isinstance(entry, dict) and "images_per_s" in entry):  # absent or damaged
        return True
    return is_busy(entry.get("load")) and not is_busy(load_now)


def machine_load() -> float | None:
    """The 1-minute load average per usable core (above 1: other processes were competing for the cores)."""
    from optbench.device.sharing import usable_cores

    try:
        return os.getloadavg()[0] / usable_cores()
    except (AttributeError, OSError):
        return None


def eval_speedup(device: str) -> float:
    """Evaluated over trained images per second on `device` ('' when unknown: a forward pass's share)."""
    return EVAL_SPEEDUP.get(device.split(":")[0], 1 / FORWARD_SHARE)


def seconds_left(work: Workload, rate: float, device: str = "", eval_rate: float | None = None) -> float:
    """`eval_rate`: evaluated images/s where runs recorded it; else `rate` x the device's evaluation speed-up."""
    return work.epochs_left * (work.train_images / rate + work.eval_images / (eval_rate or eval_speedup(device) * rate))
