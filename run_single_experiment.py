"""Run one experiment with plain flags instead of Hydra overrides.

    python run_single_experiment.py --optimizer adam --dataset cifar10 --seed 42 --label-noise 0.2
    python run_single_experiment.py --optimizer lion --epochs 2 model.width=16 dataset.train_subset=5000

Flags become Hydra overrides; anything after the flags is passed to Hydra as is (its own flags too:
`--cfg job`, `-m`). It then runs src/train.py itself, so the run is exactly what `python src/train.py
<overrides>` would do: same config, same run directory, same train(cfg). A flag that is neither this
command's nor Hydra's (`--optimzer`) is one `error:` line naming the nearest flag, exit 2, nothing run.
"""

import argparse
import runpy
import sys
from pathlib import Path

TRAIN_SCRIPT = Path(__file__).resolve().parent / "src" / "train.py"
sys.path.insert(0, str(TRAIN_SCRIPT.parent))  # this checkout's optbench, as `python src/train.py` imports it

from optbench.command_line import OneLineParser  # noqa: E402
from optbench.config.hydra_glue import is_hydra_flag  # noqa: E402
from optbench.errors import EXIT_BAD_INPUT, ConfigError  # noqa: E402


def parse_args(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    parser = OneLineParser(
        prog="python run_single_experiment.py",
        description=__doc__.split("\n\n")[0],
        epilog="Extra arguments are Hydra overrides, e.g. model.width=16 batch_size=256.",
    )
    parser.add_argument(
        "--optimizer",
        help="a conf/optimizer/ option, e.g. sgd, adamw, lion, muon, schedulefree_adamw (default: conf/config.yaml's)",
    )
    parser.add_argument("--dataset", help="cifar10, cifar100, imagefolder or synthetic")
    parser.add_argument("--seed", type=int, help="run seed")
    parser.add_argument("--epochs", type=int, help="training epochs")
    parser.add_argument("--label-noise", type=float, default=0.0, help="noise rate in [0, 1); 0 = clean labels")
    parser.add_argument("--noise-type", default="symmetric", help="symmetric or asymmetric (with --label-noise > 0)")
    parser.add_argument("--device", help="auto, cpu, cuda, cuda:N or mps")
    args, extra = parser.parse_known_args(argv)
    strays = [word for word in extra if word.startswith("-") and not is_hydra_flag(word)]
    if strays:  # passed on, Hydra would take a misspelt flag for an override and word it as one
        parser.error(f"unrecognized arguments: {' '.join(strays)}")
    return args, extra


def to_overrides(args: argparse.Namespace) -> list[str]:
    overrides = [
        f"{key}={value}"
        for key, value in (
            ("optimizer", args.optimizer),
            ("dataset", args.dataset),
            ("seed", args.seed),
            ("epochs", args.epochs),
            ("device", args.device),
        )
        if value is not None
    ]
    if args.label_noise:
        overrides += [f"noise={args.noise_type}", f"noise.rate={args.label_noise}"]
    return overrides


def main(argv: list[str]) -> None:
    try:
        args, extra = parse_args(argv)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)
    sys.argv = [str(TRAIN_SCRIPT), *to_overrides(args), *extra]
    runpy.run_path(str(TRAIN_SCRIPT), run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
