"""CIFAR-N label files (`CIFAR-10_human.pt`, `CIFAR-100_human.pt`): the official human re-annotations, read
without running pickled code, and checked against their schema.

The file is the official release (data/human_labels.py refuses any copy whose md5 differs before it is
opened), so its version is its md5: there is no format field to read, and a release with another md5 is
not this format. Its content is a torch zip of pickled numpy arrays, read by torch's weights-only unpickler
with only the numpy globals those arrays need allowed, so even a file that passed the md5 check cannot run
code. The schema: a mapping of key -> integer label array (a key whose value is None is left out; CIFAR-100N's
coarse labels are plain lists); `read_labels` checks the arrays a run uses (the clean labels and the label
set's) are present, one-dimensional, of equal length and class indices below the dataset's class count.
Anything else is one ConfigError line naming the file and the fix.
"""

from pathlib import Path

import numpy as np

WAY_OUT = "use an unchanged copy of the official file"


def numpy_array_globals() -> list:
    """What a pickled numpy array needs (numpy's own __reduce__): the array rebuilder, under the name the files
    were pickled with (numpy < 2 spelled its module numpy.core), the array and dtype classes. Nothing that runs code."""
    try:
        from numpy._core.multiarray import _reconstruct
    except ImportError:  # numpy < 2
        from numpy.core.multiarray import _reconstruct  # type: ignore[no-redef]
    return [
        (_reconstruct, "numpy.core.multiarray._reconstruct"),
        _reconstruct,
        np.ndarray,
        np.dtype,
        type(np.dtype(np.int64)),
    ]  # the rebuilder under its own name too: arrays pickled by numpy >= 2


def read_label_arrays(path: Path) -> dict[str, np.ndarray]:
    """The file's arrays (key -> int64 array), through torch's weights-only unpickler with only the numpy
    globals allowed: anything else in the pickle (a call to os.system, any other global) is refused as a
    ConfigError, never executed."""
    import torch  # only where a label file is read: the planning commands stay free of torch

    from optbench.errors import ConfigError

    try:
        with torch.serialization.safe_globals(numpy_array_globals()):
            content = torch.load(path, weights_only=True, map_location="cpu")
    except Exception as error:  # pickle.UnpicklingError for a refused global; zip and format errors  # noqa: BLE001
        raise ConfigError(
            f"{path} is not a label file that can be read without running code ({type(error).__name__}): {WAY_OUT}"
        ) from None
    if not isinstance(content, dict):
        raise ConfigError(f"{path} does not hold a mapping of label arrays: {WAY_OUT}")
    try:
        return {key: np.asarray(value, dtype=np.int64) for key, value in content.items() if value is not None}
    except (TypeError, ValueError, OverflowError) as error:
        raise ConfigError(f"{path}: an entry is not an array of labels ({type(error).__name__}): {WAY_OUT}") from None


def read_labels(path: Path, keys: tuple[str, ...], num_classes: int) -> dict[str, np.ndarray]:
    """The arrays `keys` names, checked: present, 1-D, of equal length, class indices in [0, num_classes)."""
    from optbench.errors import ConfigError

    arrays = read_label_arrays(path)
    lengths = set()
    for key in keys:
        labels = arrays.get(key)
        if labels is None:
            raise ConfigError(f"{path} holds no {key} array (it holds {', '.join(sorted(arrays))}): {WAY_OUT}")
        if labels.ndim != 1 or (len(labels) and not (0 <= labels.min() and labels.max() < num_classes)):
            raise ConfigError(f"{path}: {key} is not one class index in [0, {num_classes}) per image: {WAY_OUT}")
        lengths.add(len(labels))
    if len(lengths) > 1:
        raise ConfigError(f"{path}: {', '.join(keys)} differ in length ({sorted(lengths)}): {WAY_OUT}")
    return {key: arrays[key] for key in keys}
