"""Fetch datasets now, for runs that start later on machines without internet (a cluster's compute nodes).

    python src/download_data.py cifar10 cifar100  # into paths.data_dir ($OPTBENCH_DATA_DIR, else data/)
    python src/download_data.py cifar10 --human-labels --data-dir /shared/optbench/data   # and CIFAR-10N's labels

Each file is fetched by the code a run uses (optbench/data/download.py), into the folder runs read, so a run
with the same paths.data_dir finds it and downloads nothing; what is there and intact is not fetched again.
Bad input or a failed download is one line `error: ...` naming the fix, exit status 2.
"""

import argparse
import sys
from pathlib import Path

import optbench  # noqa: F401  (first: sets PYTORCH_ENABLE_MPS_FALLBACK before torch loads)
from optbench.command_line import OneLineParser
from optbench.errors import EXIT_BAD_INPUT, ConfigError

CONF_DIR = Path(__file__).resolve().parent.parent / "conf"


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = OneLineParser(prog="python src/download_data.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("datasets", nargs="+", metavar="DATASET", help="cifar10, cifar100")
    parser.add_argument(
        "--human-labels", action="store_true", help="also the dataset's CIFAR-N human label file (noise=human)"
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="where to put them (default: conf/config.yaml's paths.data_dir: $OPTBENCH_DATA_DIR, else data/)",
    )
    return parser.parse_args(argv)


def configured_data_dir() -> Path:
    """paths.data_dir as a run composes it, so both name the same folder."""
    from hydra import initialize_config_dir

    from optbench.config.hydra_glue import compose_checked, register_resolvers

    register_resolvers()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return Path(compose_checked([], CONF_DIR).paths.data_dir)


def main(argv: list[str]) -> int:
    try:
        args = parse_args(argv)
        from optbench.data.download import check_request, fetch  # torch and torchvision: after the arguments

        data_dir = args.data_dir or configured_data_dir()
        check_request(args.datasets, data_dir)
        for name in dict.fromkeys(args.datasets):
            for line in fetch(name, data_dir, args.human_labels):
                print(line, flush=True)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(f"runs find them with paths.data_dir={data_dir} (or OPTBENCH_DATA_DIR={data_dir})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
