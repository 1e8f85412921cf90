"""CIFAR ResNet-18 (He et al. 2016, as in kuangliu/pytorch-cifar) with a width knob.

`build_model(name, num_classes, width)`: a 3x3 stride-1 stem without max-pool (32x32 inputs are too
small to downsample early), four stages of two BasicBlocks with widths w, 2w, 4w, 8w, global
average pooling and a linear head. width=64 is the standard model (11,173,962 parameters at 10
classes); tests and CPU runs use 8-16. torchvision's resnet18 cannot be reused: it hard-codes the
64..512 widths and the ImageNet stem. Modules are named `stem`, `stages`, `head` so the optimizer
factory can tell Muon's hidden weights from the stem and head. `build_model(name, ...)` builds any model a
config may choose: this ResNet, MNIST-1D's CNN and MLP (training/mnist1d_models.py), the character GPT
(training/gpt.py).
"""

from collections.abc import Callable

import torch
from torch import nn

from optbench.training.gpt import CharGPT
from optbench.training.mnist1d_models import ConvNet1d, MLP1d


class BasicBlock(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_channels != out_channels:  # projection shortcut (option B)
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1, stride, bias=False), nn.BatchNorm2d(out_channels)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return torch.relu(out + self.shortcut(x))


class CifarResNet(nn.Module):
    def __init__(self, blocks_per_stage: tuple[int, ...], num_classes: int, width: int):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU())
        stages, in_channels = [], width
        for stage_index, num_blocks in enumerate(blocks_per_stage):
            out_channels = width * 2**stage_index
            for block_index in range(num_blocks):
                stride = 2 if stage_index > 0 and block_index == 0 else 1
                stages.append(BasicBlock(in_channels, out_channels, stride))
                in_channels = out_channels
        self.stages = nn.Sequential(*stages)
        self.head = nn.Linear(in_channels, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = self.stages(self.stem(x))
        return self.head(torch.flatten(nn.functional.adaptive_avg_pool2d(features, 1), 1))


BLOCKS_PER_STAGE = {"resnet18": (2, 2, 2, 2)}


# Every model a config may choose (keyed by optbench.registry.choices.ARCHITECTURES): (classes or vocabulary
# size, width, the model's other options) -> the module. The workloads' models live in their own modules.
def _resnet18(num_classes: int, width: int) -> nn.Module:
    return CifarResNet(BLOCKS_PER_STAGE["resnet18"], num_classes, width)


BUILDERS: dict[str, Callable[..., nn.Module]] = {
    "resnet18": _resnet18,
    "cnn1d": ConvNet1d,
    "mlp1d": MLP1d,
    "gpt": CharGPT,  # (vocabulary size, width, layers, heads, context)
}


def build_model(name: str, num_classes: int, width: int = 64, **options) -> nn.Module:
    """`options`: a model's own config keys besides name and width (the GPT's layers, heads and context)."""
    return BUILDERS[name](num_classes, width, **options)
