"""The names a config may choose from, in one place (standard library only).

Config validation, the study planner and the entry points check names against these tuples without
importing torch; the modules that implement each choice (data/, training/, device/) key their
registries by the same tuples, and tests/test_house.py checks that each registry covers its names.
The optimizer names come from the optimizer registry (optbench/registry/optimizers.py), itself standard library.
"""

from optbench.registry import datasets, optimizers

DATASETS = datasets.NAMES  # one descriptor each (optbench/registry/datasets.py)
# imagefolder gets a mapping when its class names are CIFAR's; that is checked once the data is loaded.
DATASETS_WITH_ASYMMETRIC_MAPPING = tuple(name for name, entry in datasets.DATASETS.items() if entry.asymmetric)
NOISE_KINDS = ("none", "symmetric", "asymmetric", "human")  # human: a real annotators' label set (CIFAR-N)
NOISE_VALIDATION = ("noisy", "clean")  # noise.validation: labels model selection sees under label noise
TEST_EVERY = ("epoch", "improved")  # train.test_every: test after every epoch, or where validation improves
ARCHITECTURES = ("resnet18", "cnn1d", "mlp1d", "gpt")  # conf/model/; the workloads say which data each takes
SCHEDULES = ("cosine", "step", "constant")
PARAM_GROUP_SCHEMES = ("standard", "muon")
PIPELINES = ("device", "dataloader")  # data.pipeline: on-device batches (default) or the classic DataLoader
DEVICE_PATTERN = r"auto|fastest|cpu|mps|cuda(:\d+)?"
DEVICE_CHOICES = "auto, fastest, cpu, cuda, cuda:N or mps"
AMP_CHOICES = ("bf16", "fp16", "off")
POLICY_KEYS = (
    "pin_memory",
    "num_workers",
    "persistent_workers",
    "amp",
    "channels_last",
    "cudnn_benchmark",
    "tf32",
    "compile",
    "mode",
    "keep_awake",
    "threads",
)
POLICY_SWITCHES = (
    "pin_memory",
    "persistent_workers",
    "channels_last",
    "cudnn_benchmark",
    "tf32",
    "compile",
    "keep_awake",
)
POLICY_MODES = ("rules", "measured")  # device_policy.mode: the device's fixed defaults, or the uncertain ones timed
LOGGERS = ("tensorboard", "mlflow", "wandb", "csv")  # conf/logger/ (and none); several at once: logger=[mlflow,csv]
LOGGER_PACKAGES = {"tensorboard": "tensorboard", "mlflow": "mlflow", "wandb": "wandb", "csv": None}
WANDB_MODES = ("offline", "online", "disabled")
LAUNCHERS = ("basic", "parallel", "local", "slurm")  # all but basic are conf/hydra/launcher/*.yaml
# The optimizers with a config and a registry entry (conf/optimizer/<name>.yaml + optbench/registry/optimizers.py).
OPTIMIZERS = optimizers.NAMES
