"""Replay a run: train it again from its record and say whether its numbers come back, epoch by epoch.

    python src/replay.py results/cifar10/none-0.0/sgd/seed0
    python src/replay.py RUN_DIR --epochs 1                 # only the first epoch: a quick check
    python src/replay.py RUN_DIR --out replays/sgd-seed0    # keep the replayed run (compare.py it with the original)

The run is trained again from scratch from its record.json config under the device policy it recorded (device
kind, precision, memory format, compile, and the intra-op thread count), into a scratch folder (removed
afterwards, or --out DIR, kept), never into the run's own folder, and without its trackers. Then every number
of metrics.jsonl but the wall-clock timings is compared epoch by epoch: "bit-identical", or the largest difference
per metric (a key only one side has, as in runs recorded before it existed, is named as missing, not as a
difference; an unreadable metrics.jsonl line is named with the epochs it leaves uncompared); and what differs
between the run's recorded environment and this machine's (processor kind, threads, device, precision, library
versions, code commit, uncommitted changes), which explains a difference.
Relative paths in the record (dataset.root, paths.data_dir) are resolved from the working directory, as train.py
does: run it from the folder the run was trained from (the published runs in docs/: the checkout's root), or give
--data-root / --data-dir. Exit status: 0 bit-identical, 1 different, 2 bad input (one `error:` line, nothing
written).
"""

import argparse
import logging
import sys
from pathlib import Path

import optbench  # noqa: F401  (first: sets PYTORCH_ENABLE_MPS_FALLBACK before torch loads)
from optbench.command_line import OneLineParser
from optbench.errors import EXIT_BAD_INPUT, ConfigError

EXIT_IDENTICAL, EXIT_DIFFERENT = 0, 1


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = OneLineParser(
        prog="python src/replay.py",
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("run_dir", type=Path, help="the run directory (holding record.json and summary.json)")
    parser.add_argument("--epochs", type=int, default=None, help="replay only the first N epochs (default: all)")
    parser.add_argument("--out", type=Path, default=None, help="a new or empty folder to keep the replayed run in")
    parser.add_argument(
        "--data-root", type=Path, default=None, help="dataset.root for an image folder, when the record's is elsewhere"
    )
    parser.add_argument(
        "--data-dir", type=Path, default=None, help="paths.data_dir (downloads, decoded caches), when not the record's"
    )
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    from optbench.training import replay

    try:
        args = parse_args(argv)
        recorded = replay.read_recorded(args.run_dir)
        epochs = recorded.last_epoch if args.epochs is None else args.epochs
        cfg = replay.replay_config(recorded, args.data_root, args.data_dir)
        replay.check_replayable(recorded, cfg, epochs, args.out)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    logging.basicConfig(level=logging.INFO, format="[%(asctime)s] %(message)s", stream=sys.stderr)
    try:
        with replay.scratch_folder(args.out) as folder:
            print(replay.start_line(recorded, cfg, epochs, folder, kept=args.out is not None), flush=True)
            replayed = replay.replay(recorded, cfg, epochs, folder)
    except ConfigError as error:  # met only once the data load (an image that cannot be decoded)
        print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print("\n".join(replay.report_lines(replayed)))
    return EXIT_IDENTICAL if replayed.identical else EXIT_DIFFERENT


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
