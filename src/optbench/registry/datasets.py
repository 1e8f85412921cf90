"""Every fact about a dataset in one descriptor (standard library only), read by every wing.

One `Dataset` entry per name in `DATASETS`: its classes, image size and channels, split sizes,
normalisation, the asymmetric-noise mapping, the human label sets it has (CIFAR-N), and which loader
(data/sources.py SOURCES) and fingerprint (data/fingerprint.py) serve it. Config validation, the study
estimate, the device timing's input shape and the data wing all read it here, so adding a dataset is
one entry (plus its loader when it needs a new one), and an unknown name is one line at validation
(`describe`), never a KeyError half-way through a run. A value that is None comes from the dataset's
config (synthetic: `num_classes`, `train_size`, ...) or from the data once loaded (an image folder).
"""

from dataclasses import dataclass, field

from optbench.errors import ConfigError

CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
# Patrini et al. 2017, the usual CIFAR-10 asymmetric noise: source class -> the class it is mistaken for.
CIFAR10_ASYMMETRIC = {"truck": "automobile", "bird": "airplane", "deer": "horse", "cat": "dog", "dog": "cat"}

# The 20 CIFAR-100 superclasses with their 5 classes each, from the dataset's description
# (cs.toronto.edu/~kriz/cifar.html); superclasses in coarse-label order, names as torchvision spells them.
CIFAR100_SUPERCLASSES = (
    ("aquatic_mammals", ("beaver", "dolphin", "otter", "seal", "whale")),
    ("fish", ("aquarium_fish", "flatfish", "ray", "shark", "trout")),
    ("flowers", ("orchid", "poppy", "rose", "sunflower", "tulip")),
    ("food_containers", ("bottle", "bowl", "can", "cup", "plate")),
    ("fruit_and_vegetables", ("apple", "mushroom", "orange", "pear", "sweet_pepper")),
    ("household_electrical_devices", ("clock", "keyboard", "lamp", "telephone", "television")),
    ("household_furniture", ("bed", "chair", "couch", "table", "wardrobe")),
    ("insects", ("bee", "beetle", "butterfly", "caterpillar", "cockroach")),
    ("large_carnivores", ("bear", "leopard", "lion", "tiger", "wolf")),
    ("large_man-made_outdoor_things", ("bridge", "castle", "house", "road", "skyscraper")),
    ("large_natural_outdoor_scenes", ("cloud", "forest", "mountain", "plain", "sea")),
    ("large_omnivores_and_herbivores", ("camel", "cattle", "chimpanzee", "elephant", "kangaroo")),
    ("medium_mammals", ("fox", "porcupine", "possum", "raccoon", "skunk")),
    ("non-insect_invertebrates", ("crab", "lobster", "snail", "spider", "worm")),
    ("people", ("baby", "boy", "girl", "man", "woman")),
    ("reptiles", ("crocodile", "dinosaur", "lizard", "snake", "turtle")),
    ("small_mammals", ("hamster", "mouse", "rabbit", "shrew", "squirrel")),
    ("trees", ("maple_tree", "oak_tree", "palm_tree", "pine_tree", "willow_tree")),
    ("vehicles_1", ("bicycle", "bus", "motorcycle", "pickup_truck", "train")),
    ("vehicles_2", ("lawn_mower", "rocket", "streetcar", "tank", "tractor")),
)
# CIFAR-100's fine labels are numbered in alphabetical order of their names (torchvision's `classes`).
CIFAR100_CLASSES = tuple(sorted(name for _, members in CIFAR100_SUPERCLASSES for name in members))

CIFAR_N_RELEASE = "https://github.com/UCSC-REAL/cifar-10-100n/raw/main/data/"  # the paper's official repository
CIFAR_N_LICENCE = "CC BY-NC 4.0; cite Wei et al., ICLR 2022 (arXiv 2110.12088)"


@dataclass(frozen=True)
class HumanLabels:
    """A release of human re-annotations of a dataset's training set (CIFAR-N), in its training order."""

    file_name: str  # the official file name, also the cached copy's name
    md5: str  # of the official file; any copy with another md5 is refused
    label_sets: dict  # noise.label_set -> the key of its array in the file
    clean_key: str = "clean_label"  # the dataset's own labels, to check the order against

    @property
    def url(self) -> str:
        return CIFAR_N_RELEASE + self.file_name


@dataclass(frozen=True)
class Dataset:
    name: str
    loader: str  # the key of its loader in data/sources.py LOADERS
    fingerprint: str  # the key of its fingerprint in data/fingerprint.py FINGERPRINTS
    classes: tuple = ()  # class names in label order; () = from the config or the data
    image_size: int | None = None  # pixels (square); None = dataset.image_size of the config
    channels: int = 3
    train_size: int | None = None  # official training images (validation is held out of them); None = config/data
    test_size: int | None = None
    mean: tuple | None = None  # per-channel, fraction of 255, of the official training set; None = measured
    std: tuple | None = None
    asymmetric: bool = False  # the class set has an asymmetric-noise mapping (data/noise.py finds it by names)
    human: HumanLabels | None = None
    config_keys: tuple = field(default=())  # dataset.* keys its source reads besides the common ones
    # What one example is: IMAGES (uint8, C x H x W, crop+flip), SIGNALS (float32, C x L, no augmentation) or
    # TEXT (a character stream cut into windows; "classes" are the vocabulary)
    kind: str = "images"
    sha256: str | None = None  # of the one file a TEXT dataset reads: any other copy is refused
    url: str | None = None  # its canonical address, downloaded from when the file is missing

    @property
    def num_classes(self) -> int | None:
        return len(self.classes) or None


IMAGES, SIGNALS, TEXT = "images", "signals", "text"
MNIST1D_CLASSES = tuple(str(digit) for digit in range(10))
# Patrini et al. 2017, the usual MNIST asymmetric noise: 2 -> 7, 3 -> 8, 5 <-> 6, 7 -> 1 (MNIST-1D's digits too).
DIGITS_ASYMMETRIC = {"2": "7", "3": "8", "5": "6", "6": "5", "7": "1"}
# The char-rnn corpus (Karpathy 2015), from where nanoGPT's shakespeare_char example downloads it.
TINY_SHAKESPEARE_URL = "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt"
TINY_SHAKESPEARE_SHA256 = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"

CIFAR10_N = HumanLabels(
    "CIFAR-10_human.pt",
    "96644db5574813cae939af5f7f2a0aec",
    {
        "aggre": "aggre_label",
        "random1": "random_label1",
        "random2": "random_label2",
        "random3": "random_label3",
        "worst": "worse_label",
    },
)
CIFAR100_N = HumanLabels("CIFAR-100_human.pt", "a67b45c1d7992051865b5c755bd68bb1", {"noisy": "noisy_label"})

# Per-channel mean and std of the official training sets (fractions of 255), as used by
# kuangliu/pytorch-cifar and most CIFAR papers.
DATASETS = {
    "cifar10": Dataset(
        "cifar10",
        loader="torchvision_cifar",
        fingerprint="cifar",
        classes=CIFAR10_CLASSES,
        image_size=32,
        train_size=50_000,
        test_size=10_000,
        mean=(0.4914, 0.4822, 0.4465),
        std=(0.2470, 0.2435, 0.2616),
        asymmetric=True,
        human=CIFAR10_N,
    ),
    "cifar100": Dataset(
        "cifar100",
        loader="torchvision_cifar",
        fingerprint="cifar",
        classes=CIFAR100_CLASSES,
        image_size=32,
        train_size=50_000,
        test_size=10_000,
        mean=(0.5071, 0.4865, 0.4409),
        std=(0.2673, 0.2564, 0.2762),
        asymmetric=True,
        human=CIFAR100_N,
    ),
    # Any folder of images; a copy of CIFAR-10/100 (its class names) gets that dataset's noise mapping and
    # human label sets, checked once the folder is listed (data/noise.py, data/human_labels.py).
    "imagefolder": Dataset(
        "imagefolder",
        loader="imagefolder",
        fingerprint="imagefolder",
        asymmetric=True,
        config_keys=("root", "image_size"),
    ),
    "synthetic": Dataset(
        "synthetic",
        loader="synthetic",
        fingerprint="synthetic",
        config_keys=("num_classes", "train_size", "test_size", "image_size", "generator_seed"),
    ),
    # MNIST-1D (Greydanus & Kobak 2024): generated by the mnist1d package's make_dataset with its default
    # arguments (4,000 training and 1,000 test sequences of 40 points, its fixed seed), never downloaded.
    # Its points are already centred and unit-scaled (measured: mean -0.0003, sd 0.998), so they are not rescaled.
    "mnist1d": Dataset(
        "mnist1d",
        loader="mnist1d",
        fingerprint="mnist1d",
        classes=MNIST1D_CLASSES,
        image_size=40,  # points per sequence
        channels=1,
        train_size=4000,
        test_size=1000,
        mean=(0.0,),
        std=(1.0,),
        asymmetric=True,
        kind=SIGNALS,
    ),
    # Tiny Shakespeare at character level: 1,115,394 characters, 65 symbols; split as nanoGPT splits it (the first
    # 90 % trains); the last 10 % is cut in two halves, validation then test (data/text.py).
    "tinyshakespeare": Dataset(
        "tinyshakespeare",
        loader="text",
        fingerprint="text",
        config_keys=("path", "context", "steps_per_epoch", "eval_windows"),
        kind=TEXT,
        sha256=TINY_SHAKESPEARE_SHA256,
        url=TINY_SHAKESPEARE_URL,
    ),
}
NAMES = tuple(DATASETS)
# Datasets whose files may be a copy of another's (found by class names once loaded).
COPIES_OF = {"imagefolder": ("cifar10", "cifar100")}


def describe(name: str) -> Dataset:
    """The descriptor of `name`; a ConfigError naming the choices for an unknown one."""
    if name not in DATASETS:
        raise ConfigError(
            f"dataset={name}: not a known dataset; choose dataset={', '.join(NAMES)} "
            f"(a new one is an entry in optbench/registry/datasets.py)"
        )
    return DATASETS[name]


def by_classes(classes) -> Dataset | None:
    """The descriptor whose class names these are (an image-folder copy of CIFAR-10 is CIFAR-10), or None."""
    for dataset in DATASETS.values():
        if dataset.classes and tuple(classes) == dataset.classes:
            return dataset
    return None


def human_label_sets(name: str) -> dict[str, Dataset]:
    """noise.label_set -> the dataset whose human labels it is, for dataset `name` (copies: every candidate's)."""
    candidates = [describe(name)] + [describe(source) for source in COPIES_OF.get(name, ())]
    return {label_set: dataset for dataset in candidates if dataset.human for label_set in dataset.human.label_sets}


def _config_value(dataset_cfg, key: str):
    return dataset_cfg.get(key) if hasattr(dataset_cfg, "get") else None


def num_classes(dataset_cfg) -> int | None:
    """Classes of a configured dataset (a mapping with `name`); None when only the data can tell (a folder)."""
    descriptor = describe(dataset_cfg["name"])
    if descriptor.num_classes:
        return descriptor.num_classes
    value = _config_value(dataset_cfg, "num_classes")
    return int(value) if value is not None and "num_classes" in descriptor.config_keys else None


def image_shape(dataset_cfg) -> tuple[int, int, int]:
    """(channels, height, width) of the images a configured dataset gives: what device timing should feed the
    model. A folder's images are resized to dataset.image_size at decode time, so it is known before loading."""
    descriptor = describe(dataset_cfg["name"])
    if descriptor.kind == TEXT:  # one window of `context` tokens
        context = int(_config_value(dataset_cfg, "context") or 64)
        return 1, context, context
    size = descriptor.image_size or int(_config_value(dataset_cfg, "image_size") or 32)
    return descriptor.channels, size, size


def official_sizes(dataset_cfg) -> tuple[int, int] | None:
    """(training images including validation, test images); None when unknown before loading (a folder)."""
    descriptor = describe(dataset_cfg["name"])
    if descriptor.train_size and descriptor.test_size:
        return descriptor.train_size, descriptor.test_size
    if "train_size" in descriptor.config_keys:
        return int(dataset_cfg["train_size"]), int(dataset_cfg["test_size"])
    return None
