"""Choose the training device: `auto` means CUDA, then Apple MPS, then CPU.

`resolve_device(requested)` returns a `torch.device`. An explicitly requested device that is not
available is a ConfigError, never a silent fallback: a study that meant to run on a GPU must not
quietly take a week on the CPU.
"""

import torch

from optbench.errors import ConfigError


def mps_available() -> bool:
    return bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())


def resolve_device(requested: str) -> torch.device:
    if requested == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        return torch.device("mps" if mps_available() else "cpu")
    try:
        device = torch.device(requested)
    except RuntimeError as error:
        raise ConfigError(f"device={requested} is not a device name: choose auto, cpu, cuda, cuda:N or mps") from error
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"device={requested} was asked for but CUDA is not available here: use device=auto or device=cpu")
    if device.type == "cuda" and device.index is not None and device.index >= torch.cuda.device_count():
        raise ConfigError(f"device={requested}: only {torch.cuda.device_count()} CUDA device(s) here; choose cuda:0..")
    if device.type == "mps" and not mps_available():
        raise ConfigError(f"device={requested} was asked for but MPS is not available here: use device=auto or device=cpu")
    if device.type not in ("cpu", "cuda", "mps"):
        raise ConfigError(f"device={requested} is not supported: choose auto, cpu, cuda, cuda:N or mps")
    return device
