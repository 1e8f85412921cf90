"""Short, stable file names for each setting, the index that maps them back, and what every run shares.

A setting's label (groups.setting_label) reads well in a title but can be long and holds `=` and
commas; a file name must be short and safe in a shell, a URL and a LaTeX label. `file_stems` gives
each setting the label in lower case, anything but letters, digits, '.' and '_' turned into '-'
('imagefolder, symmetric 40%' -> 'imagefolder-symmetric-40'). A stem longer than STEM_LIMIT, or one
two labels would share, keeps its beginning and ends in an 8-character hash of the full setting (its
dataset, noise and every config value that changes the numbers, optimizer's aside): a name never
depends on the order settings are found in, and a setting whose label stays keeps its name.
`settings_index` is settings.csv: each stem with its label and its full setting. `constant_keys` are
the values every run shares, said once in the report.
"""

import hashlib
import json
import math

import pandas as pd

from optbench.analysis.groups import BASE_ARM_KEYS, BASE_SETTING_KEYS, format_value, is_excluded, owner_of, short_key
from optbench.analysis.writing.output import slug

# learning_curves_<stem>.png stays within 60 characters.
STEM_LIMIT = 40
HASH_LENGTH = 8


def is_unset(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def setting_columns(runs: pd.DataFrame) -> list[str]:
    """The config columns that describe a setting: those that change the numbers and are not the optimizer's."""
    return sorted(
        column
        for column in runs.columns
        if column.startswith("cfg.") and not is_excluded(column) and owner_of(column) != BASE_ARM_KEYS
    )


def values_of(series: pd.Series) -> list:
    """The distinct set values of one column, in a stable order (one, for a setting's own config column)."""
    distinct = {json.dumps(value, sort_keys=True, default=str): value for value in series if not is_unset(value)}
    return [distinct[key] for key in sorted(distinct)]


def full_setting(runs: pd.DataFrame, setting: str) -> dict[str, list]:
    """{'dataset': ['cifar10'], 'noise': ['symmetric'], 'noise_rate': [0.4], 'epochs': [8], ...} of one setting:
    each key's distinct values (one: a setting's runs share every key that changes the numbers, but a
    hand-edited config could break that and must still be seen); unset keys left out."""
    here = runs[runs["setting"] == setting]
    full = {}
    for column in [*BASE_SETTING_KEYS, *setting_columns(runs)]:
        values = values_of(here[column])
        if values:
            full[short_key(column)] = values
    return full


def setting_hash(full: dict) -> str:
    text = json.dumps(full, sort_keys=True, default=str)
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:HASH_LENGTH]


def shortened(stem: str, digest: str) -> str:
    """The stem's beginning and the hash, within STEM_LIMIT characters."""
    head = stem[: STEM_LIMIT - HASH_LENGTH - 1].rstrip("-.")
    return f"{head}-{digest}" if head else digest


def file_stems(runs: pd.DataFrame, settings: list[str]) -> dict[str, str]:
    """setting label -> a file-name stem unique among these settings (see the module docstring)."""
    digests = {setting: setting_hash(full_setting(runs, setting)) for setting in settings}
    plain = {setting: slug(setting) for setting in settings}
    shared = {stem for stem in plain.values() if list(plain.values()).count(stem) > 1}
    return {
        setting: shortened(stem, digests[setting]) if len(stem) > STEM_LIMIT or stem in shared else stem
        for setting, stem in plain.items()
    }


def short_name(text: str) -> str:
    """A file-name stem for a free name (a tuning study's): its slug, or its beginning and a hash when too long."""
    stem = slug(text)
    return stem if len(stem) <= STEM_LIMIT else shortened(stem, setting_hash({"name": text}))


def settings_index(runs: pd.DataFrame, settings: list[str], stems: dict[str, str]) -> pd.DataFrame:
    """settings.csv: one row per setting: its file-name stem, its label, its run count and its full setting."""
    rows = []
    for setting in settings:
        full = {key: " | ".join(map(format_value, values)) for key, values in full_setting(runs, setting).items()}
        rows.append(
            {"name": stems[setting], "setting": setting, "runs": int((runs["setting"] == setting).sum()), **full}
        )
    return pd.DataFrame(rows)


def constant_keys(runs: pd.DataFrame) -> dict[str, str]:
    """Config values (not the optimizer's) that every run shares and that no setting label shows: key -> value."""
    constant = {}
    for column in setting_columns(runs):
        distinct = values_of(runs[column])
        if len(distinct) == 1 and not runs[column].map(is_unset).any():
            constant[short_key(column)] = format_value(distinct[0])
    return constant
