"""bf16 autocast against fp32 for one ResNet-18 train step on the CPU: does this processor's bf16 pay?

The device policy's CPU rule (optbench.device.policy._cpu_amp) rests on this measurement: the
project's model at widths 16 and 64, batch 128, channels_last, SGD with momentum, random data, 2
warm-up steps then N timed steps, once in fp32 and once under torch.autocast(bfloat16).

    .venv/bin/python benchmarks/cpu_amp.py            # about a minute on the 2-core CPU
"""

import argparse
import time

import torch

from optbench.training.models import build_model


def images_per_second(width: int, dtype: torch.dtype | None, steps: int, batch_size: int = 128) -> float:
    torch.manual_seed(0)
    model = build_model("resnet18", 10, width).to(memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    images = torch.randn(batch_size, 3, 32, 32).to(memory_format=torch.channels_last)
    labels = torch.randint(0, 10, (batch_size,))
    for step in range(steps + 2):  # the first two steps pay for allocation and oneDNN's kernel choice
        if step == 2:
            started = time.perf_counter()
        with torch.autocast("cpu", dtype=dtype, enabled=dtype is not None):
            loss = torch.nn.functional.cross_entropy(model(images), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return steps * batch_size / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--widths", default="16,64")
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    for width in (int(text) for text in args.widths.split(",")):
        steps = 12 if width <= 16 else 4
        fp32, bf16 = (images_per_second(width, dtype, steps) for dtype in (None, torch.bfloat16))
        print(f"width {width}: fp32 {fp32:.0f} img/s, bf16 {bf16:.0f} img/s, bf16/fp32 {bf16 / fp32:.2f}")


if __name__ == "__main__":
    main()
