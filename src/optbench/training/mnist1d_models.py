"""The MNIST-1D models of Greydanus & Kobak (ICML 2024, the mnist1d repository's models.py), written here.

`ConvNet1d` is the paper's CNN (`ConvBase`): three 1-D convolutions of `width` channels (25 in the paper),
kernel 5 then 3 and 3, stride 2, padding 1, ReLU between, and a linear head over the 5 positions left of
the 40-point input; about 94 % test accuracy in the paper. `MLP1d` is its MLP: two hidden layers of `width`
units (100 in the paper), ReLU; about 68 %. Both take (N, 1, 40) float sequences. The modules are named
`stem` (the first layer), `body` and `head`, as the optimizer factory expects: Muon trains the hidden
weights, AdamW the first and last layers (training/optim.py).
"""

import torch
from torch import nn

SEQUENCE_LENGTH = 40  # points per MNIST-1D sequence (make_dataset's default)


class ConvNet1d(nn.Module):
    def __init__(self, num_classes: int = 10, width: int = 25, length: int = SEQUENCE_LENGTH):
        super().__init__()
        self.stem = nn.Conv1d(1, width, 5, stride=2, padding=1)
        self.body = nn.Sequential(
            nn.ReLU(),
            nn.Conv1d(width, width, 3, stride=2, padding=1),
            nn.ReLU(),
            nn.Conv1d(width, width, 3, stride=2, padding=1),
            nn.ReLU(),
        )
        positions = length
        for kernel in (5, 3, 3):  # each stride-2 convolution with padding 1: 40 -> 19 -> 10 -> 5
            positions = (positions + 2 - kernel) // 2 + 1
        self.head = nn.Linear(width * positions, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.flatten(self.body(self.stem(x)), 1))


class MLP1d(nn.Module):
    def __init__(self, num_classes: int = 10, width: int = 100, length: int = SEQUENCE_LENGTH):
        super().__init__()
        self.stem = nn.Linear(length, width)
        self.body = nn.Sequential(nn.ReLU(), nn.Linear(width, width), nn.ReLU())
        self.head = nn.Linear(width, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(self.stem(torch.flatten(x, 1))))
