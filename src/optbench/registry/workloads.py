"""Every fact about a workload in one entry (standard library only), read by every wing.

A workload is what an optimizer is trained on and judged by: a dataset, a model and its loss, the metrics
with their direction (accuracy: higher is better; loss: lower is better) and the headline among them, the
budget's unit, default and evaluation cadence, the target of time-to-target, the search space its tuning
draws from, and a published reference result with its source. `python src/train.py workload=char_lm`
picks one (conf/workload/<name>.yaml sets its dataset, model and budget); the default, cifar_resnet18,
adds nothing to a run's config, so every CIFAR run keeps its identity and directory.

A run's config names its workload by the `workload` key (absent: cifar_resnet18); `of_config` reads it,
and `describe` answers an unknown name in one line with the closest choice. Ranks, "p vs best", hypothesis
directions, tuning selection and fidelity read `Metric.higher_is_better` from here, never assume it.
"""

import difflib
from dataclasses import dataclass

from optbench.errors import ConfigError
from optbench.registry import datasets

DEFAULT = "cifar_resnet18"
EPOCHS, STEPS = "epochs", "steps"  # budget units


@dataclass(frozen=True)
class Metric:
    """A metrics.jsonl key and its direction."""

    key: str  # `split/name`, e.g. val/loss
    higher_is_better: bool
    meaning: str = ""

    def better(self, value: float, than: float) -> bool:
        return value > than if self.higher_is_better else value < than

    @property
    def direction(self) -> str:
        return "higher is better" if self.higher_is_better else "lower is better"


@dataclass(frozen=True)
class Reference:
    """A published result on this workload: what a correct harness should come close to."""

    metric: str  # a metrics.jsonl key
    value: float
    source: str
    configuration: str


@dataclass(frozen=True)
class Target:
    """Time-to-target: the first evaluation at which `metric` reaches `value` (on its better side)."""

    metric: str
    value: float
    why: str


@dataclass(frozen=True)
class Workload:
    name: str
    datasets: tuple[str, ...]  # dataset choices it takes; the first is its default
    models: tuple[str, ...]  # model choices (conf/model/), the first the default
    loss: str
    metrics: tuple[Metric, ...]
    selection: str  # the metric the best epoch is chosen on (validation)
    headline: str  # the number tables report: its value at the selected epoch
    budget_unit: str  # EPOCHS or STEPS (a step-budgeted workload's "epoch" is an evaluation period)
    default_budget: int  # in budget_unit
    eval_every: str  # the evaluation cadence, in words
    target: Target
    reference: Reference
    search_space: str  # experiments/search_spaces/<this>.yaml: what its tuning draws from
    label_noise: bool  # symmetric/asymmetric label noise applies (classification)
    human_noise: bool = False  # CIFAR-N's human label sets apply
    data_kind: str = ""  # besides `datasets`, any dataset of this kind (registry/datasets.py): a new image dataset

    def takes(self, dataset_name: str) -> bool:
        return dataset_name in self.datasets or datasets.describe(dataset_name).kind == self.data_kind

    def metric(self, key: str) -> Metric:
        for metric in self.metrics:
            if metric.key == key:
                return metric
        raise KeyError(f"workload {self.name} has no metric {key}")

    @property
    def selection_metric(self) -> Metric:
        return self.metric(self.selection)

    @property
    def headline_metric(self) -> Metric:
        return self.metric(self.headline)


def _accuracy(split: str) -> Metric:
    return Metric(f"{split}/acc", True, f"{split} accuracy (fraction)")


def _loss(split: str, unit: str = "nats per example") -> Metric:
    return Metric(f"{split}/loss", False, f"{split} cross-entropy ({unit})")


CLASSIFICATION_METRICS = tuple(
    metric for split in ("train", "val", "test") for metric in (_accuracy(split), _loss(split))
)
LANGUAGE_METRICS = (
    *(_loss(split, "nats per character") for split in ("train", "val", "test")),
    *(Metric(f"{split}/bpc", False, f"{split} bits per character") for split in ("val", "test")),
    *(Metric(f"{split}/acc", True, f"{split} next-character accuracy") for split in ("train", "val", "test")),
)

WORKLOADS = {
    "cifar_resnet18": Workload(
        "cifar_resnet18",
        datasets=("cifar10", "cifar100", "imagefolder", "synthetic"),
        models=("resnet18",),
        loss="cross-entropy over classes",
        metrics=CLASSIFICATION_METRICS,
        selection="val/acc",
        headline="test/acc",
        budget_unit=EPOCHS,
        default_budget=200,
        eval_every="every epoch",
        target=Target(
            "val/acc", 0.60, "the CPU study's 8-epoch runs all pass 60 % validation accuracy; fixed beforehand"
        ),
        reference=Reference(
            "test/acc",
            0.9302,
            "kuangliu/pytorch-cifar README",
            "width 64, batch 128, SGD lr 0.1 momentum 0.9 wd 5e-4, cosine, 200 epochs, crop+flip",
        ),
        search_space="cifar_resnet18",
        label_noise=True,
        human_noise=True,
        data_kind=datasets.IMAGES,
    ),
    "mnist1d": Workload(
        "mnist1d",
        datasets=("mnist1d",),
        models=("cnn1d", "mlp1d"),
        loss="cross-entropy over 10 digits",
        metrics=CLASSIFICATION_METRICS,
        selection="val/acc",
        headline="test/acc",
        budget_unit=EPOCHS,
        default_budget=60,
        eval_every="every epoch",
        target=Target("val/acc", 0.85, "fixed before the main runs: between the MLP's 68 % and the CNN's 94 %"),
        reference=Reference(
            "test/acc",
            0.94,
            "Greydanus & Kobak, ICML 2024 (the CNN; the MLP ~68 %)",
            "ConvBase (3 conv layers of 25 channels), Adam lr 1e-2, batch 100, 6,000 steps, make_dataset defaults",
        ),
        search_space="mnist1d",
        label_noise=True,
    ),
    "char_lm": Workload(
        "char_lm",
        datasets=("tinyshakespeare",),
        models=("gpt",),
        loss="next-character cross-entropy",
        metrics=LANGUAGE_METRICS,
        selection="val/loss",
        headline="val/loss",
        budget_unit=STEPS,
        default_budget=2000,
        eval_every="every 250 steps (dataset.steps_per_epoch)",
        target=Target(
            "val/loss", 2.2, "fixed before the main runs: every nanoGPT-shape CPU run passes it by 2,000 steps"
        ),
        reference=Reference(
            "val/loss",
            1.88,
            "nanoGPT README, shakespeare_char on a CPU",
            "4 layers, 4 heads, width 128, context 64, batch 12, 2,000 iterations, no dropout, AdamW lr 1e-3",
        ),
        search_space="char_lm",
        label_noise=False,
    ),
}
NAMES = tuple(WORKLOADS)


def describe(name: str) -> Workload:
    """The entry of `name`; a ConfigError naming the closest choice for an unknown one."""
    if name not in WORKLOADS:
        close = difflib.get_close_matches(str(name), NAMES, n=1)
        hint = f"did you mean workload={close[0]}? " if close else ""
        raise ConfigError(f"workload={name}: not a known workload; {hint}choose workload={', '.join(NAMES)}")
    return WORKLOADS[name]


def of_config(cfg) -> Workload:
    """The workload a (composed or resolved) config runs: its `workload` key, cifar_resnet18 without one."""
    name = cfg.get("workload") if hasattr(cfg, "get") else None
    return describe(name or DEFAULT)


def of_model(model_name: str) -> Workload:
    """The workload whose model this is."""
    return next((workload for workload in WORKLOADS.values() if model_name in workload.models), WORKLOADS[DEFAULT])


def of_dataset(dataset_name: str) -> Workload:
    """The workload whose data this is (each dataset belongs to one workload)."""
    for workload in WORKLOADS.values():
        if workload.takes(dataset_name):
            return workload
    return WORKLOADS[DEFAULT]
