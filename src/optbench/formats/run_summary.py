"""summary.json: how a run stands (status, epochs, final and best metrics, provenance), replaced atomically.

The statuses a run can be in live here, and the schema: `Summary`, the one parsed view every reader gets.
Training builds the content (training/progress.py) and writes it through `write`, which stamps the format
version; every reader goes through `read`, which follows the run files' one error policy (missing: None;
unreadable, a field of the wrong type, a non-finite number, a newer format: DamagedRunFile naming the file,
the field and the way out). A summary without `format` was written before versions existed and reads as
format 1. A `completed` summary without its headline number (best.test/acc) is unreadable, not completed:
no table may count it completed while its mean leaves it out.
"""

import json
from dataclasses import dataclass, field
from pathlib import Path

from optbench import rundir
from optbench.fileio import json_text, read_json, write_bytes_atomically
from optbench.formats.fields import Fields
from optbench.formats.metrics_log import epoch_record

FORMAT = 1
RUNNING, COMPLETED, DIVERGED, FAILED, INTERRUPTED = "running", "completed", "diverged", "failed", "interrupted"
STATUSES = (COMPLETED, DIVERGED, FAILED, INTERRUPTED, RUNNING)
FINAL_STATUSES = (COMPLETED, DIVERGED)  # results: the same command skips them
WAY_OUT = "move it away to resume from the checkpoint, or train.rerun=true to start this run over"
HEADLINE = "test/acc"  # of `best`: the test accuracy at the epoch chosen on validation, what the tables report


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


@dataclass(frozen=True)
class Summary:
    """One run's summary.json, checked. Epoch records (`best`, `final`, `best_clean_val`) map a metric name
    (metrics.jsonl's keys: "val/acc", "test/acc", "train/loss", ...) to a finite number or None."""

    version: int
    status: str
    run_id: str | None
    epochs_done: int
    epochs_planned: int | None
    seed: int | None
    optimizer: str | None
    device: str | None
    error: str | None
    best: dict | None  # the epoch chosen on validation accuracy (the last one without a split)
    final: dict | None  # the last epoch's record
    best_clean_val: dict | None  # under label noise: the epoch chosen on clean validation labels
    wall_time_s: float | None
    train_time_s: float | None
    train_images_per_s: float | None
    dataset: DatasetFacts
    noise: NoiseFacts
    model: ModelFacts
    git: GitFacts
    precision: str | None  # device_policy.amp: the precision the run trained in (bf16, fp16, off)
    device_policy: dict  # the policy the run trained under, as the trainer wrote it (a resumed run keeps it)
    environment: Environment  # processor, threads, versions where the run started (Environment() when unrecorded)
    diverged_at: dict | None  # epoch, train/loss, reason, batch
    content: dict  # the file as written: the trainer carries it on when it resumes
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


def write(run_dir: Path, summary: dict) -> None:
    """Replace summary.json with `summary` (the trainer's dict), stamped with this format version; parsed
    first, exactly as it will be read, so the trainer never writes a summary its readers refuse."""
    text = json_text({**summary, "format": FORMAT})
    parse(json.loads(text), path_in(run_dir))
    write_bytes_atomically(path_in(run_dir), (text + "\n").encode())
