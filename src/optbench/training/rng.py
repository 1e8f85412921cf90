"""Every random number generator a run touches: seed them, save them, restore them.

`seed_everything(seed)` seeds Python, NumPy and torch (CPU, CUDA, MPS). `capture_rng_states()`
returns their states as plain data that `torch.load(weights_only=True)` accepts (NumPy's key array
becomes a tensor), and `restore_rng_states(states)` puts them back, so a resumed run draws exactly
what an uninterrupted one would have. The batch pipeline needs nothing here: its generator is
re-seeded from (seed, epoch) every epoch.
"""

import random

import numpy as np
import torch

from optbench.device.policy import mps_available


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds CUDA and MPS


def capture_rng_states() -> dict:
    state = np.random.get_state(legacy=True)
    if isinstance(state, dict):  # only for a bit generator other than np.random's own MT19937
        raise TypeError(f"np.random holds a {state['bit_generator']} generator, not MT19937")
    kind, keys, position, has_gauss, cached_gaussian = state
    states = {
        "python": random.getstate(),
        "numpy": {
            "kind": kind,
            "keys": torch.from_numpy(keys.astype(np.int64)),
            "position": position,
            "has_gauss": has_gauss,
            "cached_gaussian": cached_gaussian,
        },
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        states["cuda"] = torch.cuda.get_rng_state_all()
    if mps_available():
        states["mps"] = torch.mps.get_rng_state()
    return states


def restore_rng_states(states: dict) -> None:
    random.setstate(states["python"])
    saved = states["numpy"]
    np.random.set_state(
        (
            saved["kind"],
            saved["keys"].numpy().astype(np.uint32),
            saved["position"],
            saved["has_gauss"],
            saved["cached_gaussian"],
        )
    )
    torch.set_rng_state(states["torch"].cpu())
    if "cuda" in states and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([state.cpu() for state in states["cuda"]])
    if "mps" in states and mps_available():
        torch.mps.set_rng_state(states["mps"].cpu())
