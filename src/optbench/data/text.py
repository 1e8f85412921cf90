"""A character corpus (Tiny Shakespeare): its one file, checked by sha256, and its splits.

`corpus_path(data_dir, path)` is where the file is read: `dataset.path` when given (tests, benchmarks and CI
read the shared copy), else `<paths.data_dir>/<dataset>/input.txt`, downloaded there from the corpus's
canonical address when missing (`dataset.download`). Any file whose sha256 is not the descriptor's is
refused in one line: a truncated or edited corpus would train on other data under the same name.

`load_text_splits(...)` cuts the characters as nanoGPT's shakespeare_char does: the first 90 % train; the
last 10 %, nanoGPT's validation text, is cut in two halves here, validation (model selection) then test
(reported at the selected evaluation). Characters are numbered in sorted order (65 symbols). Training draws
random windows (data/pipelines.py WindowPipeline); validation and test are fixed: consecutive
non-overlapping windows of `context` characters from the start of their half (`eval_windows` of them, or
all), each position predicting the next character, so an evaluation is a deterministic set of batches.
"""

import hashlib
import urllib.request
from pathlib import Path
from urllib.error import URLError

import torch

from optbench.errors import ConfigError
from optbench.registry import datasets

TRAIN_FRACTION = 0.9  # nanoGPT shakespeare_char/prepare.py: the first 90 % trains, the rest is held out


def corpus_path(data_dir: Path, name: str, path: str | None = None) -> Path:
    return Path(path).expanduser() if path else Path(data_dir) / name / "input.txt"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _download(url: str, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".part")
    try:
        urllib.request.urlretrieve(url, partial)
    except (URLError, OSError) as error:
        partial.unlink(missing_ok=True)
        raise ConfigError(
            f"{target} is missing and downloading it from {url} failed ({error}): connect to the network once, "
            f"or set dataset.path to a copy of the file (e.g. ../shared/data/tinyshakespeare/input.txt)"
        ) from error
    partial.replace(target)


def read_corpus(data_dir: Path, name: str, path: str | None = None, download: bool = True) -> str:
    """The corpus text, checked against the descriptor's sha256 (downloaded first when missing and allowed)."""
    descriptor = datasets.describe(name)
    file = corpus_path(data_dir, name, path)
    if not file.is_file():
        if path or not download or not descriptor.url:
            raise ConfigError(
                f"{file} does not exist: set dataset.path to a copy of the {name} corpus, or leave dataset.path "
                f"unset with dataset.download=true to fetch it into {Path(data_dir) / name}"
            )
        _download(descriptor.url, file)
    digest = _sha256(file)
    if digest != descriptor.sha256:
        raise ConfigError(
            f"{file} has sha256 {digest[:16]}..., not {name}'s {str(descriptor.sha256)[:16]}...: the file is "
            f"truncated or altered; replace it with the original (delete it and the run downloads it again)"
        )
    return file.read_text(encoding="utf-8")


def load_corpus(data_dir: Path, name: str = "tinyshakespeare", path: str | None = None, download: bool = True, **_):
    """(all characters as int64 token ids, the vocabulary in id order)."""
    text = read_corpus(Path(data_dir), name, path, download)
    vocabulary = sorted(set(text))
    index = {character: position for position, character in enumerate(vocabulary)}
    return torch.tensor([index[character] for character in text], dtype=torch.int64), tuple(vocabulary)


def windows(tokens: torch.Tensor, context: int, count: int | None = None):
    """Consecutive non-overlapping windows (count, context) of `tokens` and the next token of each position."""
    available = (len(tokens) - 1) // context
    count = available if count is None else min(int(count), available)
    inputs = tokens[: count * context].view(count, context)
    targets = tokens[1 : count * context + 1].view(count, context)
    return inputs, targets


def load_text_splits(
    name: str,
    data_dir: str,
    context: int = 64,
    eval_windows: int | None = None,
    path: str | None = None,
    download: bool = True,
    **_,
):
    """The corpus's DatasetSplits: training stream, fixed validation and test windows, the vocabulary."""
    from optbench.data.sources import ImageSet  # one split's type (sources imports this module)
    from optbench.data.splits import DatasetSplits

    tokens, vocabulary = load_corpus(Path(data_dir), name, path, download)
    train_end = int(len(tokens) * TRAIN_FRACTION)
    held_out = tokens[train_end:]
    half = len(held_out) // 2
    train = ImageSet(tokens[: train_end - 1], tokens[1:train_end])
    val = ImageSet(*windows(held_out[:half], context, eval_windows))
    test = ImageSet(*windows(held_out[half:], context, eval_windows))
    return DatasetSplits(name, train, val, test, vocabulary, (0.0,), (1.0,))
