"""optbench: train and compare optimizers on CIFAR ResNet-18 (see README.md).

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
