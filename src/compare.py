"""Compare two runs: the config keys that differ, the headline numbers, what differs in their environments
(processor kind, threads, versions, code: what besides the config moves the numbers), and both runs' curves in
one figure.

    python src/compare.py results/cifar10/none-0.0/sgd/seed0 results/cifar10/none-0.0/adam/seed0
    python src/compare.py RUN_A RUN_B --figure sgd_vs_adam.png

The figure goes to --figure (.png, .pdf or .svg), by default compare-<A's run id>-<B's run id>.png in the
working directory; never into a run directory. Reads the runs through optbench.rundir and changes none
of their files. Bad input gives one line `error: ...` naming the fix and exit status 2.
"""

import argparse
import sys
from pathlib import Path

from optbench import fileio, rundir
from optbench.command_line import OneLineParser
from optbench.errors import EXIT_BAD_INPUT, ConfigError

FIGURE_SUFFIXES = (".png", ".pdf", ".svg")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = OneLineParser(prog="python src/compare.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("run_a", type=Path, help="a run directory (holding record.json and summary.json)")
    parser.add_argument("run_b", type=Path, help="the run directory to compare it with")
    parser.add_argument(
        "--figure",
        type=Path,
        default=None,
        help="where the curves go (.png, .pdf, .svg); default compare-<run ids>.png here",
    )
    return parser.parse_args(argv)


def figure_path(wanted: Path | None, run_ids: tuple[str, str]) -> Path:
    """The figure's file: named on the command line or in the working directory; a folder holding a run refused."""
    path = wanted or Path(f"compare-{run_ids[0][:8]}-{run_ids[1][:8]}.png")
    if path.suffix.lower() not in FIGURE_SUFFIXES:
        raise ConfigError(f"--figure {path}: name a .png, .pdf or .svg file")
    if not path.parent.resolve().is_dir():
        raise ConfigError(f"--figure {path}: the folder {path.parent} does not exist: create it, or name another")
    for folder in (path.parent.resolve(), *path.parent.resolve().parents):
        if rundir.RunDir(folder).holds_results():
            raise ConfigError(
                f"--figure {path}: {folder} is a run directory, and a run directory holds only its "
                "run's files: save the figure elsewhere"
            )
    return path


def main(argv: list[str]) -> int:
    try:
        args = parse_args(argv)
        from optbench.analysis.writing.run_pair import read_compared

        a, b = read_compared(args.run_a, "RUN_A"), read_compared(args.run_b, "RUN_B")
        if a.path.resolve() == b.path.resolve():
            raise ConfigError(f"RUN_A and RUN_B are the same run ({a.path}): name two different run directories")
        path = figure_path(args.figure, (a.summary.run_id or "a", b.summary.run_id or "b"))
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    report(a, b, path)
    return 0


def report(a, b, path: Path) -> None:
    """The two tables on stdout, the figure into `path` (written whole or not at all)."""
    from tabulate import tabulate

    from optbench.analysis.writing.run_pair import config_differences, curves_figure, headline_rows, run_label

    numbers, numbers_free = config_differences(a, b)
    labels = {"A": run_label("A", a, numbers), "B": run_label("B", b, numbers)}
    print(f"A: {a.path}\nB: {b.path}")
    if numbers:
        print(
            tabulate(numbers, headers=["config (keys that differ)", "A", "B"], tablefmt="simple", disable_numparse=True)
        )
    else:
        print("config: the same in every setting that can change the numbers")
    if numbers_free:
        print("also differ, without changing the numbers: " + ", ".join(numbers_free))
    print()
    print(tabulate(headline_rows(a, b), headers=["", "A", "B"], tablefmt="simple", disable_numparse=True))
    print()
    print(environment_text(a, b))
    figure = curves_figure(a, b, labels)
    fileio.write_atomically(path, lambda handle: figure.savefig(handle, format=path.suffix.lower()[1:], dpi=150))
    print(f"\nfigure: {path}")


def environment_text(a, b) -> str:
    """What besides the config moves the numbers (processor kind, threads, device, precision, versions, code),
    where the two runs differ or one did not record it."""
    from tabulate import tabulate

    from optbench.reproducibility import environment_rows

    rows = environment_rows(a.summary, b.summary)
    if not rows:
        return "environment: the same processor kind, threads, device, precision, versions and code"
    return tabulate(
        rows, headers=["environment (differs, or not recorded)", "A", "B"], tablefmt="simple", disable_numparse=True
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
