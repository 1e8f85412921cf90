"""summary.json: how a run stands (status, epochs, final and best metrics, provenance), replaced atomically.

The statuses a run can be in live here, and the schema: `Summary`, the one parsed view every reader gets.
The trainer builds the content here too, so the writer and every reader share one definition of the keys:
`started` (the first summary), `after_epoch` (progress, totals, the best epoch), `mark` (a new status),
`diverged` and `failed`; the content is a plain dict (what the file holds), which the trainer carries across a
resume and the mirror adds its own status to. `write` stamps the format version and parses the content
before it replaces the file; every reader goes through `read`, which follows the run files' one error policy
(missing: None; unreadable, a field of the wrong type, a non-finite number, a newer format: DamagedRunFile
naming the file, the field and the way out). A summary without `format` was written before versions existed
and reads as format 1. A `completed` summary without its headline number (best.test/acc) is unreadable, not
completed: no table may count it completed while its mean leaves it out.
"""

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from optbench import rundir
from optbench.fileio import json_text, read_json, write_bytes_atomically
from optbench.formats import metrics_log
from optbench.formats.fields import Fields
from optbench.formats.metrics_log import epoch_record

FORMAT = 1
RUNNING, COMPLETED, DIVERGED, FAILED, INTERRUPTED = "running", "completed", "diverged", "failed", "interrupted"
STATUSES = (COMPLETED, DIVERGED, FAILED, INTERRUPTED, RUNNING)
FINAL_STATUSES = (COMPLETED, DIVERGED)  # results: the same command skips them
WAY_OUT = "move it away to resume from the checkpoint, or train.rerun=true to start this run over"
HEADLINE = (
    metrics_log.TEST_ACC
)  # of `best`: the test accuracy at the epoch chosen on validation, what the tables report


@dataclass(frozen=True)
class DatasetFacts:
    """The data the run trained on, as the trainer found it (sizes after the split and any subset)."""

    name: str | None = None
    num_classes: int | None = None  # chance accuracy is 1 / num_classes
    num_train: int | None = None
    num_val: int | None = None
    num_test: int | None = None


@dataclass(frozen=True)
class NoiseFacts:
    """The label noise the run trained under: configured (`kind`, `rate`) and realised on the training split."""

    kind: str | None = None
    rate: float | None = None
    realised_rate: float | None = None
    num_noisy: int | None = None
    label_set: str | None = None  # human label noise (CIFAR-N) only: the set, whose annotations, and the
    annotated_dataset: str | None = None  # counts of who was mistaken for whom (true class x given class)
    transition_matrix: list[list[int]] | None = None


@dataclass(frozen=True)
class ModelFacts:
    name: str | None = None
    width: int | None = None
    num_parameters: int | None = None


@dataclass(frozen=True)
class GitFacts:
    commit: str | None = None  # of the checkout the run trained from; None outside a git checkout
    dirty: bool | None = None  # uncommitted changes at the start


UNKNOWN = "unknown"  # how a summary written before the environment was recorded describes it


@dataclass(frozen=True)
class Environment:
    """What besides config, seed and code changes a run's numbers (training/provenance.py measures it when the
    run starts). None throughout for a summary written before it was recorded: `kind` then says "unknown"."""

    processor: str | None = None  # the CPU's model name ("AMD EPYC", "Apple M2")
    machine: str | None = None  # x86_64, arm64
    os: str | None = None
    cpu_capability: str | None = None  # the instruction set torch dispatches CPU kernels to (AVX2, AVX512, ...)
    cpu_features: tuple[str, ...] | None = None  # bf16 and AMX features present (they change oneDNN's kernels)
    threads: int | None = None  # torch intra-op threads in use
    interop_threads: int | None = None
    torch: str | None = None
    cuda: str | None = None  # CUDA torch was built with
    cudnn: int | None = None
    gpu_name: str | None = None
    gpu_compute_capability: str | None = None
    mps_chip: str | None = None
    deterministic: dict | None = None  # algorithms, cudnn_deterministic, cudnn_benchmark

    @property
    def recorded(self) -> bool:
        return self.processor is not None or self.cpu_capability is not None or self.threads is not None

    @property
    def processor_kind(self) -> str:
        """One label for what makes two processors compute differently: GPU name, else CPU model, dispatch level
        and its bf16/AMX features ("AMD EPYC / AVX512 +avx512_bf16"); "unknown" when not recorded."""
        if not self.recorded:
            return UNKNOWN
        if self.gpu_name:
            return f"{self.gpu_name} (sm {self.gpu_compute_capability})"
        if self.mps_chip:
            return f"{self.mps_chip} (MPS)"
        features = "".join(f" +{name}" for name in self.cpu_features or ())
        return f"{self.processor or UNKNOWN} / {self.cpu_capability or UNKNOWN}{features}"


@dataclass(frozen=True, kw_only=True)
class Summary:
    """One run's summary.json, checked. Epoch records (`best`, `final`, `best_clean_val`) map a metric name
    (metrics.jsonl's keys: "val/acc", "test/acc", "train/loss", ...) to a finite number or None. Only `status`
    has no default: `Summary(status=...)` is a run that recorded nothing else (the aggregator's stand-in for a
    run without summary.json); `parse` gives every field."""

    version: int = FORMAT
    status: str
    run_id: str | None = None
    epochs_done: int = 0
    epochs_planned: int | None = None
    seed: int | None = None
    optimizer: str | None = None
    device: str | None = None
    error: str | None = None
    best: dict | None = None  # the epoch chosen on validation accuracy (the last one without a split)
    final: dict | None = None  # the last epoch's record
    best_clean_val: dict | None = None  # under label noise: the epoch chosen on clean validation labels
    wall_time_s: float | None = None
    startup_s: float | None = None  # before the training loop, every session summed; absent in older summaries
    # of startup_s, the sessions that counted from the process's start (Python, the imports: a sweep's first run);
    # 0 for a later run of a multirun; absent in summaries written before it was kept
    process_startup_s: float | None = None
    train_time_s: float | None = None
    train_images_per_s: float | None = None
    dataset: DatasetFacts = field(default_factory=DatasetFacts)
    noise: NoiseFacts = field(default_factory=NoiseFacts)
    model: ModelFacts = field(default_factory=ModelFacts)
    git: GitFacts = field(default_factory=GitFacts)
    precision: str | None = None  # device_policy.amp: the precision the run trained in (bf16, fp16, off)
    device_policy: dict = field(default_factory=dict)  # the policy the run trained under (a resumed run keeps it)
    environment: Environment = field(default_factory=Environment)  # processor, threads, versions where it started
    diverged_at: dict | None = None  # epoch, train/loss, reason, batch
    content: dict = field(default_factory=dict)  # the file as written: the trainer carries it on when it resumes
    versions: dict = field(default_factory=dict)  # library name -> version where the run started (python included)

    @property
    def finished(self) -> bool:
        return self.status in FINAL_STATUSES

    @property
    def headline(self) -> float | None:
        return (self.best or {}).get(HEADLINE)


def path_in(run_dir: Path) -> Path:
    return Path(run_dir) / rundir.SUMMARY_FILE


def read(run_dir: Path) -> Summary | None:
    content = read_json(path_in(run_dir), WAY_OUT)
    return None if content is None else parse(content, path_in(run_dir))


def parse(content: dict, path: Path) -> Summary:
    """The checked Summary of `content` (summary.json's JSON object); DamagedRunFile on the first field off it."""
    fields = Fields(content, path, way_out=WAY_OUT)
    version = fields.version(FORMAT)
    status = fields.text("status", required=True, choices=STATUSES)
    best = epoch_record(fields.inner("best"))
    if status == COMPLETED and (best is None or best.get(HEADLINE) is None):
        fields.fail(f"says completed but holds no best.{HEADLINE} (the headline number)")
    policy = fields.inner("device_policy")
    return Summary(
        version=version,
        status=status,
        run_id=fields.text("run_id"),
        epochs_done=fields.whole("epochs_done") or 0,
        epochs_planned=fields.whole("epochs_planned", low=1),
        seed=fields.whole("seed"),
        optimizer=fields.text("optimizer"),
        device=fields.text("device"),
        error=fields.text("error"),
        best=best,
        final=epoch_record(fields.inner("final")),
        best_clean_val=epoch_record(fields.inner("best_clean_val")),
        wall_time_s=fields.number("wall_time_s", low=0),
        startup_s=fields.number("startup_s", low=0),
        process_startup_s=fields.number("process_startup_s", low=0),
        train_time_s=fields.number("train_time_s", low=0),
        train_images_per_s=fields.number("train_images_per_s", low=0),
        dataset=dataset_facts(fields.inner("dataset")),
        noise=noise_facts(fields.inner("noise")),
        model=model_facts(fields.inner("model")),
        git=git_facts(fields.inner("git")),
        precision=policy.text("amp") if policy else None,
        device_policy=policy.value if policy else {},
        environment=environment_facts(fields.inner("environment")),
        diverged_at=fields.mapping("diverged_at"),
        content=content,
        versions=fields.mapping("versions") or {},
    )


def dataset_facts(fields: Fields | None) -> DatasetFacts:
    if fields is None:
        return DatasetFacts()
    return DatasetFacts(
        name=fields.text("name"),
        num_classes=fields.whole("num_classes", low=1),
        num_train=fields.whole("num_train"),
        num_val=fields.whole("num_val"),
        num_test=fields.whole("num_test"),
    )


def noise_facts(fields: Fields | None) -> NoiseFacts:
    if fields is None:
        return NoiseFacts()
    return NoiseFacts(
        kind=fields.text("kind"),
        rate=fields.number("rate", low=0, high=1),
        realised_rate=fields.number("realised_rate", low=0, high=1),
        num_noisy=fields.whole("num_noisy"),
        label_set=fields.text("label_set"),
        annotated_dataset=fields.text("annotated_dataset"),
        transition_matrix=counts_matrix(fields, "transition_matrix"),
    )


def counts_matrix(fields: Fields, key: str) -> list[list[int]] | None:
    """A square matrix of whole counts (a list of equally long lists), or None when absent."""
    rows = fields.listing(key)
    if rows is None:
        return None
    if not all(isinstance(row, list) and len(row) == len(rows) for row in rows) or not all(
        isinstance(count, int) and not isinstance(count, bool) and count >= 0 for row in rows for count in row
    ):
        fields.wrong(key, rows if len(str(rows)) < 60 else "...", "a square matrix of whole counts")
    return rows


def model_facts(fields: Fields | None) -> ModelFacts:
    if fields is None:
        return ModelFacts()
    return ModelFacts(
        name=fields.text("name"), width=fields.whole("width", low=1), num_parameters=fields.whole("num_parameters")
    )


def environment_facts(fields: Fields | None) -> Environment:
    if fields is None:
        return Environment()
    gpu = fields.inner("gpu")
    return Environment(
        processor=fields.text("processor"),
        machine=fields.text("machine"),
        os=fields.text("os"),
        cpu_capability=fields.text("cpu_capability"),
        cpu_features=fields.texts("cpu_features"),
        threads=fields.whole("threads", low=1),
        interop_threads=fields.whole("interop_threads", low=1),
        torch=fields.text("torch"),
        cuda=fields.text("cuda"),
        cudnn=fields.whole("cudnn"),
        gpu_name=gpu.text("name") if gpu else None,
        gpu_compute_capability=gpu.text("compute_capability") if gpu else None,
        mps_chip=fields.text("mps_chip"),
        deterministic=fields.mapping("deterministic"),
    )


def git_facts(fields: Fields | None) -> GitFacts:
    if fields is None:
        return GitFacts()
    return GitFacts(commit=fields.text("commit"), dirty=fields.flag("dirty"))


# ---- the trainer's content: built and updated here, so no other module spells summary.json's keys ----
NO_VALIDATION_SPLIT = "last epoch (no validation split)"  # best's `selected_by` when there is no validation split


def started(
    *,
    run_id: str,
    epochs_planned: int,
    seed: int,
    optimizer: str,
    dataset: DatasetFacts,
    noise: NoiseFacts,
    model: ModelFacts,
    device: str,
    device_policy: dict,
    versions: dict,
    git: dict,
    environment: dict,
    validation_labels: dict | None = None,
    workload: dict | None = None,
) -> dict:
    """A new run's first summary: running, no epoch done. `validation_labels`: under label noise, the labels
    selection sees (`validation_labels_facts`); `versions`, `git`, `environment`: training/provenance.py's.
    `workload`: `workload_facts(...)` of a workload other than CIFAR ResNet-18, whose summaries (all written
    before workloads existed) keep their keys: selection on val/acc, headline best.test/acc."""
    extra = {} if workload is None else {"workload": workload}
    return {
        "format": FORMAT,
        "status": RUNNING,
        "run_id": run_id,
        "epochs_done": 0,
        "epochs_planned": epochs_planned,
        "seed": seed,
        "optimizer": optimizer,
        "final": None,
        "best": None,
        "error": None,
        "dataset": asdict(dataset),
        "noise": noise_content(noise, validation_labels),
        "model": asdict(model),
        "device": device,
        "device_policy": device_policy,
        "versions": versions,
        "git": git,
        "environment": environment,
        "wall_time_s": 0.0,
        "train_time_s": 0.0,
        "train_images": 0,
        "train_images_per_s": None,
        **extra,
    }


def workload_facts(name: str, selection: str, selection_higher_is_better: bool, headline: str, budget: dict) -> dict:
    """summary.json's workload: its name, the metric the best epoch is chosen on and its direction, the headline
    metric (its value at that epoch is what tables report) and the budget in its unit."""
    return {
        "name": name,
        "selection": selection,
        "selection_higher_is_better": selection_higher_is_better,
        "headline": headline,
        "budget": budget,
    }


def selection_rule(content: dict) -> tuple[str, bool]:
    """(the metric the best epoch is chosen on, whether higher is better): the workload's, else val/acc."""
    workload = content.get("workload") or {}
    return workload.get("selection", metrics_log.VAL_ACC), bool(workload.get("selection_higher_is_better", True))


def noise_content(noise: NoiseFacts, validation_labels: dict | None) -> dict:
    """summary.json's noise: the configured and realised noise; human label noise adds its set, source and
    transition matrix."""
    content: dict = {
        "kind": noise.kind,
        "rate": noise.rate,
        "realised_rate": noise.realised_rate,
        "num_noisy": noise.num_noisy,
    }
    if validation_labels is not None:
        content["validation"] = validation_labels
    if noise.label_set is not None:
        content.update(
            label_set=noise.label_set,
            annotated_dataset=noise.annotated_dataset,
            transition_matrix=noise.transition_matrix,
        )
    return content


def validation_labels_facts(num_noisy: int | None = None, num_val: int = 0) -> dict:
    """Which validation labels selection saw under label noise: noisy ones (`num_noisy` of `num_val` wrong, and
    the realised rate), or the clean ones (`num_noisy` None)."""
    if num_noisy is None:
        return {"labels": "clean"}
    return {"labels": "noisy", "realised_rate": num_noisy / num_val, "num_noisy": num_noisy}


def after_epoch(content: dict, record: dict, wall_time_s: float) -> None:
    """After an epoch (its metrics.jsonl `record`): progress, totals, and the best epoch by the workload's selection
    metric, validation accuracy by default (the last one without a validation split); under label noise the oracle
    choice on clean labels beside it."""
    content["epochs_done"] = record[metrics_log.EPOCH]
    content["final"] = record
    content["wall_time_s"] = wall_time_s
    content["train_time_s"] += record[metrics_log.TRAIN_TIME_S]
    content["train_images"] += record[metrics_log.TRAIN_IMAGES]
    content["train_images_per_s"] = content["train_images"] / content["train_time_s"]
    key, higher = selection_rule(content)
    content["best"] = _better(content["best"], record, key, NO_VALIDATION_SPLIT, higher)
    if metrics_log.VAL_ACC_CLEAN in record:
        content["best_clean_val"] = _better(content.get("best_clean_val"), record, metrics_log.VAL_ACC_CLEAN, None)


def _better(best: dict | None, record: dict, key: str, fallback: str | None, higher: bool = True) -> dict:
    selected_by = key if key in record else fallback
    if best is None or key not in record or (record[key] > best[key] if higher else record[key] < best[key]):
        return {metrics_log.SELECTED_BY: selected_by, **record}
    return best


def best_so_far(content: dict) -> dict:
    """Selection key -> the best value of the epochs done (the workload's selection metric, val/acc by default;
    val/acc_clean under label noise)."""
    key, _ = selection_rule(content)
    chosen = {key: content.get("best"), metrics_log.VAL_ACC_CLEAN: content.get("best_clean_val")}
    return {key: record[key] for key, record in chosen.items() if record and key in record}


def selected_epoch(content: dict) -> int | None:
    """The epoch `best` holds (None before the first)."""
    return (content.get("best") or {}).get(metrics_log.EPOCH)


def mark(content: dict, status: str, error: BaseException | None = None) -> None:
    """The run's new status; a failure records its error ('Type: message'), a run that starts again clears it."""
    content["status"] = status
    if status == RUNNING or error is not None:
        content["error"] = None if error is None else f"{type(error).__name__}: {error}"


def diverged(content: dict, where: dict) -> None:
    """A diverged run (a result, not a crash) and where: `diverged_at(...)`."""
    content.update(status=DIVERGED, diverged_at=where)


def diverged_at(epoch: int, train_loss: float, reason: str, batch: int | None = None) -> dict:
    """summary.json's diverged_at: the epoch, its training loss, why, and the first non-finite batch (counted
    from 0 within the epoch) when there was one."""
    where = {"epoch": epoch, metrics_log.TRAIN_LOSS: train_loss, "reason": reason}
    if batch is not None:
        where["batch"] = batch
    return where


def failed(content: dict | None, error: BaseException) -> dict:
    """The summary of a run that failed (`content` None: before its first summary)."""
    failed_content = {"epochs_done": 0, "final": None, "best": None, **(content or {})}
    mark(failed_content, FAILED, error)
    return failed_content


def resumed(content: dict) -> None:
    """One more session: a resume from the checkpoint."""
    content["resumes"] = content.get("resumes", 0) + 1


def add_startup(content: dict, seconds: float | None, from_process: bool = False) -> None:
    """A session's start-up (process start, or the multirun's previous run's end, to the training loop) added to
    the run's `startup_s`: its wall time leaves it out, and a study's estimate is checked against both. One counted
    from the process's start (`from_process`) is added to `process_startup_s` too, so the estimate can tell a
    sweep's first run, which paid for Python and the imports, from the runs after it."""
    if seconds is not None:
        content["startup_s"] = float(content.get("startup_s") or 0.0) + seconds
        content["process_startup_s"] = float(content.get("process_startup_s") or 0.0) + (
            seconds if from_process else 0.0
        )


def set_wall_time(content: dict, seconds: float) -> None:
    content["wall_time_s"] = seconds


def wall_time(content: dict) -> float:
    """The wall time earlier sessions recorded."""
    return float(content.get("wall_time_s", 0.0))


def write(run_dir: Path, summary: dict) -> None:
    """Replace summary.json with `summary` (the trainer's content), stamped with this format version; parsed
    first, exactly as it will be read, so the trainer never writes a summary its readers refuse."""
    text = json_text({**summary, "format": FORMAT})
    parse(json.loads(text), path_in(run_dir))
    write_bytes_atomically(path_in(run_dir), (text + "\n").encode())
