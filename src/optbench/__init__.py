"""optbench: train and compare optimizers on CIFAR ResNet-18 (see README.md; the map: docs/extending.md).

On top:
    console_scripts.py  the console commands (optbench-train, ...): each runs its entry point file of the checkout
The wings (each package's __init__ lists its modules):
    training/    one run, from a composed config to a finished run directory
    studies/     studies of many runs, planned without torch and launched through Hydra
    analysis/    the aggregator: run directories in; tables, figures, statistics and verdicts out
What they stand on:
    data/        images in, batches out: sources, splits, label noise, human labels, pipelines
    device/      which device trains, and the frozen per-device policy
    config/      composing and checking a run's config without torch
The contract, standard library (specs/: PyYAML) only, so planning and checking never load torch:
    errors.py    error types and exit codes
    durations.py seconds as text, one rule
    fileio.py    strict JSON, atomic writes, one JSON reader, file locks
    identity.py  a run's identity and id; the one list of settings that cannot change its numbers
    rundir.py    the run-directory layout: file names, paths, lock, data levels
    run_states.py  where a planned run stands (new, done, unfinished, other experiment): the one vocabulary
    reproducibility.py  why two runs of one config differ: their environments and their epochs side by side
    command_line.py  the one-line argument parser every entry point uses (a bad flag: one error: line)
    values.py    config values compared as values: same_value (1e-3, 0.001 and 1.0e-3 are one learning rate)
    formats/     one module per file the harness writes and reads back
    registry/    every name a config may choose, and what the harness knows about each
    specs/       studies and hypotheses as data (experiments/)

Importing the package sets PYTORCH_ENABLE_MPS_FALLBACK=1 unless the user set it: PyTorch reads it
only when it loads, so it must be in the environment before the first `import torch`. With it, an
operator Apple's MPS backend lacks runs on the CPU instead of stopping the run. Entry points import
optbench before torch for this reason.
"""

import os
import sys

MPS_FALLBACK_VARIABLE = "PYTORCH_ENABLE_MPS_FALLBACK"
TORCH_LOADED_BEFORE_OPTBENCH = "torch" in sys.modules  # then the variable comes too late to matter
os.environ.setdefault(MPS_FALLBACK_VARIABLE, "1")
