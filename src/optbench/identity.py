"""A run's identity: every setting that can change its numbers, the one list of those that cannot, its id.

Standard library only. **The run identity** (`run_identity(resolved config, data fingerprint)`) is the
resolved config flattened to dotted keys, less `NUMBERS_FREE_KEYS` (the one list of settings that cannot
change a run's numbers), plus a fingerprint of the data (data/fingerprint.py); `run_id` is its hash.
Training records it in record.json; skipping, resuming, the mirror and the study planner compare it, so a
run directory only ever holds one experiment; the aggregator groups runs on the keys it keeps. The run
directory's name leaves out the same settings: conf/config.yaml's `exclude_keys` is
`left_out_of_directory_name` applied by a resolver (config/hydra_glue.py) to each job's overrides.
"""

import hashlib
import json

# Settings that do not change a run's numbers: where files go, logging and trackers, checkpoint cadence, the device
# choice and its data-loading knobs (the device policy that does change numbers is recorded in summary.json),
# and dataset.root, which the data fingerprint covers. The directory name (conf/config.yaml exclude_keys),
# the resume check and the aggregator's grouping all use this list.
NUMBERS_FREE_KEYS = (
    "paths",
    "device",
    "device_policy.num_workers",
    "device_policy.pin_memory",
    "device_policy.persistent_workers",
    "device_policy.keep_awake",
    "device_policy.threads",
    "dataset.root",
    "dataset.path",  # a text corpus's file: refused unless its sha256 is the dataset's, which the fingerprint names
    "dataset.download",
    "noise.label_file",  # a local copy of a human label file: refused unless its md5 is the official one
    "train.rerun",
    "train.progress_bar",
    "train.tensorboard",
    "train.checkpoint_every",
    "train.divergence_factor",
    "train.eval_batch_size",
    "train.test_every",
    "train.mirror_every_s",
    "logger",
    "study",  # experiment trackers (conf/logger/) and the study tag they carry
    "optimizer_defaults",  # which group options came from the optimizer's registry entry; the options are recorded
    # an own optimizer's registry facts (registry/optimizers.py REGISTRY_KEY): how the harness treats it (its search
    # ranges, source, library); what it computes is the rest of its config, so widening a range keeps its runs
    "optimizer.registry",
)


# Settings the run directory's own levels already name (conf/config.yaml hydra.sweep.subdir:
# <dataset>/<noise>-<rate or label set>/<optimizer>/[<variant>/]seed<N>), so its variant level leaves them out
# (the dataset level names the workload: each dataset belongs to one).
DIRECTORY_LEVEL_KEYS = ("seed", "dataset", "optimizer", "noise", "noise.rate", "noise.label_set", "workload")


def is_numbers_free(key: str) -> bool:
    """True for a dotted config key under NUMBERS_FREE_KEYS (`paths.data_dir` is under `paths`)."""
    return any(key == free or key.startswith(free + ".") for free in NUMBERS_FREE_KEYS)


def left_out_of_directory_name(key: str) -> bool:
    """True for an override key the run directory's variant level leaves out: a level of the directory names it
    already, or it cannot change the numbers (so moving results or switching trackers keeps a run's directory)."""
    return key in DIRECTORY_LEVEL_KEYS or is_numbers_free(key)


def flatten(tree: dict, prefix: str = "") -> dict:
    """{'a': {'b': 1}, 'c': [1, 2]} -> {'a.b': 1, 'c': '[1, 2]'}: lists as JSON text, so values stay
    hashable (the aggregator groups on them) and compare by content."""
    flat = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten(value, f"{name}."))
        elif isinstance(value, (list, tuple)):
            flat[name] = json.dumps(value)
        else:
            flat[name] = value
    return flat


def run_identity(resolved_config: dict, data_fingerprint: str) -> dict:
    """The run identity record.json stores and resuming, reuse and the mirror compare: what a run's numbers
    depend on, the flattened config less NUMBERS_FREE_KEYS, and the data's fingerprint."""
    config = {key: value for key, value in flatten(resolved_config).items() if not is_numbers_free(key)}
    return {"config": dict(sorted(config.items())), "data": data_fingerprint}


def run_id(identity: dict) -> str:
    """A short stable hash of a run identity: equal identities, equal ids."""
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def identity_differences(recorded: dict, wanted: dict) -> list[str]:
    """'key: recorded -> wanted' for each config key that differs, and 'the data differ' when they do."""
    then, now = recorded.get("config", {}), wanted.get("config", {})
    changed = [
        f"{key}: {then.get(key)!r} -> {now.get(key)!r}"
        for key in sorted(then.keys() | now.keys())
        if then.get(key) != now.get(key)
    ]
    if recorded.get("data") != wanted.get("data"):
        changed.append("the data differ")
    return changed
