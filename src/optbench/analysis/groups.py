"""Which runs may be averaged together: group keys from the config fields that differ between runs.

Every run is identified by dataset, noise kind, noise rate and optimizer. Any other config field that
changes the numbers and differs between runs also becomes a group key, so runs with different
settings are never averaged together silently. Keys split in two:
- setting keys (dataset, noise, rate, and varying non-optimizer fields such as epochs or model.width):
  runs that share them are compared with one another;
- arm keys (optimizer, and optimizer.* fields that vary within one optimizer, e.g. an LR sweep):
  the things being compared.
An optimizer.* field that differs only between optimizers (SGD's lr 0.1 vs Adam's 1e-3) is part of
what "optimizer" means and adds no key. Fields that do not change the numbers (paths, device,
logging: exactly optbench.identity.NUMBERS_FREE_KEYS), the replicate axes (seed, noise.seed) and the
grouping columns' own keys (load.GROUPING_COLUMN_SOURCES) never become keys.

Labels name a setting by its dataset, its noise and the keys that vary here, never by a key that is
unset in it (an older config, another dataset's key) nor by one every run shares (names.constant_keys
says those once); two settings that would read alike get a short hash of their values.
"""

import hashlib
import numbers
from dataclasses import dataclass

import numpy as np
import pandas as pd

from optbench.analysis.load import GROUPING_COLUMN_SOURCES, is_clean
from optbench.identity import is_numbers_free
from optbench.registry.choices import OPTIMIZERS

CONFIG_PREFIX = "cfg."
# The replicate axes: runs that differ only in these are repeats of one experiment, to be averaged.
REPLICATE_KEYS = ("seed", "noise.seed")
# Every grouping starts from the grouping columns: these name a setting, BASE_ARM_KEYS an arm.
BASE_SETTING_KEYS = ["dataset", "noise", "noise_rate"]
BASE_ARM_KEYS = ["optimizer"]
# A config section is owned by a grouping column: dataset.* fields may differ between datasets
# (cifar10 vs cifar100 class counts) without splitting anything; they become keys only when they
# differ within one dataset. Fields outside these sections become keys when they differ at all.
OWNERS = {"dataset.": ["dataset"], "noise.": ["noise", "noise_rate"], "optimizer.": ["optimizer"]}
KNOWN_OPTIMIZERS = OPTIMIZERS  # the registry's optimizers, in its reading order (the five first)


@dataclass(frozen=True)
class Grouping:
    setting_keys: list[str]  # columns of the run table that define a comparable setting
    arm_keys: list[str]  # columns that tell the compared arms apart within a setting

    @property
    def group_keys(self) -> list[str]:
        return [*self.setting_keys, *self.arm_keys]

    @property
    def varying_config(self) -> list[str]:
        return [key for key in self.group_keys if key.startswith(CONFIG_PREFIX)]


def is_excluded(config_key: str) -> bool:
    """Never a group key: settings that do not change the numbers, replicate axes, grouping columns' keys."""
    key = config_key.removeprefix(CONFIG_PREFIX)
    return is_numbers_free(key) or key in REPLICATE_KEYS or key in GROUPING_COLUMN_SOURCES.values()


def owner_of(config_key: str) -> list[str]:
    key = config_key.removeprefix(CONFIG_PREFIX)
    for prefix, owner in OWNERS.items():
        if key.startswith(prefix):
            return owner
    return []


def varies(runs: pd.DataFrame, column: str, within: list[str]) -> bool:
    """True when `column` takes more than one value (missing counts as a value) within any group of `within`."""
    values = runs[column].map(repr)  # repr: NaN, None and 1 vs 1.0 vs True stay distinguishable and hashable
    if not within:
        return values.nunique() > 1
    return bool((values.groupby([runs[key] for key in within], dropna=False).nunique() > 1).any())


def find_grouping(runs: pd.DataFrame, config_keys: list[str]) -> Grouping:
    setting_extra: list[str] = []
    arm_extra: list[str] = []
    for key in config_keys:
        if is_excluded(key) or not varies(runs, key, owner_of(key)):
            continue
        (arm_extra if owner_of(key) == BASE_ARM_KEYS else setting_extra).append(key)
    return Grouping(setting_keys=[*BASE_SETTING_KEYS, *setting_extra], arm_keys=[*BASE_ARM_KEYS, *arm_extra])


def short_key(column: str) -> str:
    return column.removeprefix(CONFIG_PREFIX)


def noise_label(noise: str, rate: float, label_set=None) -> str:
    """'clean', 'symmetric 40%', or for human label noise its label set and realised rate: 'human worst 40.21%'."""
    if noise in (None, "none") or is_clean(rate):
        return "clean"
    if isinstance(label_set, str) and label_set:
        return f"{noise} {label_set} {float(rate) * 100:.10g}%"
    return f"{noise} {float(rate) * 100:.10g}%"


def format_value(value) -> str:
    if value is None:
        return "unset"  # the key is absent from this run's config (an older config, or another optimizer's key)
    if isinstance(value, float):  # numpy's too: its repr would say np.float64(0.4)
        return repr(float(value))  # shortest exact form: 0.001, 3e-05; two different rates never share a label
    return str(value)


def is_set(value) -> bool:
    return value is not None and not (isinstance(value, float) and value != value)


def setting_label(row, grouping: Grouping) -> str:
    """'cifar10, symmetric 20%, epochs=100': dataset, noise, then any other varying setting that is set."""
    extra = [
        f"{short_key(key)}={format_value(row[key])}"
        for key in grouping.setting_keys
        if key not in BASE_SETTING_KEYS and is_set(row[key])
    ]
    return ", ".join([str(row["dataset"]), noise_label(row["noise"], row["noise_rate"], row.get("label_set")), *extra])


def arm_label(row, grouping: Grouping) -> str:
    """'adam' or 'adam lr=0.003': the optimizer, then any optimizer field that varies within it and is set."""
    extra = [
        f"{short_key(key).removeprefix('optimizer.')}={format_value(row[key])}"
        for key in grouping.arm_keys
        if key not in BASE_ARM_KEYS and is_set(row[key])
    ]
    return " ".join([str(row["optimizer"]), ", ".join(extra)]).strip()


def distinct_labels(runs: pd.DataFrame, keys: list[str], labels: list[str]) -> list[str]:
    """The labels, with ' [hash]' added where two different key tuples read alike (16 and '16' in a hand-edited
    config; None and NaN, both unset and left out): the label is what tables and verdicts group by, so it
    must tell them apart."""
    tuples = [tuple(repr(row[key]) for key in keys) for _, row in runs[keys].iterrows()]
    meanings = pd.Series(tuples, dtype=object).groupby(pd.Series(labels)).nunique()
    shared = set(meanings[meanings > 1].index)
    return [
        f"{label} [{hashlib.sha1(repr(values).encode()).hexdigest()[:6]}]" if label in shared else label
        for label, values in zip(labels, tuples)
    ]


def label_runs(runs: pd.DataFrame, grouping: Grouping) -> pd.DataFrame:
    """Add `setting` and `arm` text columns, the names tables, figures and verdicts use."""
    labelled = runs.copy()
    labelled["setting"] = distinct_labels(
        runs, grouping.setting_keys, [setting_label(row, grouping) for _, row in runs.iterrows()]
    )
    labelled["arm"] = distinct_labels(runs, grouping.arm_keys, [arm_label(row, grouping) for _, row in runs.iterrows()])
    return labelled


def optimizer_rank(name) -> tuple:
    """Sort key: the five studied optimizers in their usual order, then any other by name."""
    name = str(name)
    return (KNOWN_OPTIMIZERS.index(name), "") if name in KNOWN_OPTIMIZERS else (len(KNOWN_OPTIMIZERS), name)


def ordered_settings(runs: pd.DataFrame, grouping: Grouping) -> list[str]:
    """Setting labels sorted by dataset, then noise rate (clean first), noise kind, then the other setting keys, a
    number by its size (epochs=6 before epochs=15)."""

    def sort_key(row) -> tuple:
        others = tuple(value_sort_key(row[key]) for key in grouping.setting_keys if key not in BASE_SETTING_KEYS)
        return str(row["dataset"]), float(row["noise_rate"]), str(row["noise"]), others

    firsts = runs.drop_duplicates("setting")
    return [label for _, label in sorted((sort_key(row), row["setting"]) for _, row in firsts.iterrows())]


def value_sort_key(value) -> tuple:
    """Numbers before text, numbers by size (lr 1e-05 < 0.0003 < 0.001; numpy's too: a column of epochs holds
    int64)."""
    if isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)) and value == value:
        return 0, float(value), ""
    return 1, 0.0, str(value)


def ordered_arms(runs: pd.DataFrame, grouping: Grouping) -> list[str]:
    """Arm labels: sgd, adam, adamw, lion, muon, then other optimizers; variants of one optimizer by value."""

    def sort_key(row) -> tuple:
        return optimizer_rank(row["optimizer"]), tuple(value_sort_key(row[key]) for key in grouping.arm_keys[1:])

    firsts = runs.drop_duplicates("arm")
    return [label for _, label in sorted((sort_key(row), row["arm"]) for _, row in firsts.iterrows())]
