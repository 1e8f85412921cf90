"""Which device trains this model fastest here? Times a few steps on each device; caches the answer.

    python src/device_benchmark.py [--width 64] [--batch-size 128] [--classes 10] [--refresh]

The same measurement `device=fastest` uses (optbench.device.fastest): each available device (CPU, every
CUDA GPU, Apple MPS) trains ResNet-18 at the given width and batch size under its default policy.
The answer is cached per machine and model shape; --refresh measures again.
"""

import sys

import optbench  # noqa: F401  (first: sets PYTORCH_ENABLE_MPS_FALLBACK before torch loads)
from optbench.command_line import OneLineParser
from optbench.device.fastest import available_devices, cache_path, fastest_device, images_per_second
from optbench.errors import EXIT_BAD_INPUT, ConfigError
from optbench.training.timing import timed_model


def main(argv: list[str]) -> int:
    parser = OneLineParser(prog="python src/device_benchmark.py", description=__doc__.splitlines()[0])
    parser.add_argument("--width", type=int, default=64, help="ResNet-18 width (64 = standard)")
    parser.add_argument("--batch-size", type=int, default=128, help="images per step")
    parser.add_argument("--classes", type=int, default=10, help="output classes (10 or 100)")
    parser.add_argument("--refresh", action="store_true", help="measure again instead of reading the cache")
    try:
        args = parser.parse_args(argv)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.width < 1 or args.batch_size < 1 or args.classes < 2:
        print("error: --width and --batch-size must be >= 1 and --classes >= 2", file=sys.stderr)
        return EXIT_BAD_INPUT
    model = timed_model("resnet18", args.width, args.classes, args.batch_size)
    device, measured = fastest_device(model, refresh=args.refresh)
    if not measured:  # a single device: nothing to choose, but still say how fast it is
        measured = {str(device): images_per_second(device, model)}
    for name in (str(candidate) for candidate in available_devices()):
        print(f"{name:>8}: {measured[name]:8.1f} images/s")
    print(f"fastest: {device} (cache: {cache_path()})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
