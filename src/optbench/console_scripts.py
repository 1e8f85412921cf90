"""The console commands of pyproject.toml's [project.scripts]: `optbench-train ARGS` is `python src/train.py ARGS`.

Each command runs its entry point file of this checkout as `python FILE` does (runpy, as `__main__`, with the
file's folder first on sys.path and its path as argv[0]), so the two spellings take the same arguments, print the
same help and errors, name the same Hydra job and directories, and exit with the same status; nothing is copied
out of the files. The files and conf/ live in the checkout, not in the package, so the commands need an editable
install (`pip install -e .`, what `make setup` does); without the checkout a command says so in one line (exit 2).
Standard library only; it imports nothing from optbench, which the file it runs imports itself.
"""

import runpy
import sys
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]
EXIT_BAD_INPUT = 2  # errors.EXIT_BAD_INPUT, kept here so a broken install fails before any import
# command -> the entry point it runs, relative to the checkout; pyproject.toml's [project.scripts] lists the same
ENTRY_POINTS = {
    "optbench-train": "src/train.py",
    "optbench-study": "src/study.py",
    "optbench-aggregate": "src/aggregate.py",
    "optbench-compare": "src/compare.py",
    "optbench-replay": "src/replay.py",
    "optbench-device-benchmark": "src/device_benchmark.py",
    "optbench-download-data": "src/download_data.py",
    "optbench-test-setup": "test_setup.py",
    "optbench-run-single-experiment": "run_single_experiment.py",
}


def run_entry_point(command: str) -> None:
    """Run the command's file as `python FILE sys.argv[1:]`; its sys.exit is this command's exit."""
    path = CHECKOUT / ENTRY_POINTS[command]
    if not path.is_file():
        print(
            f"error: {command} runs {path}, which is not there: the optbench commands need the checkout "
            "installed in place (pip install -e <checkout>)",
            file=sys.stderr,
        )
        sys.exit(EXIT_BAD_INPUT)
    sys.argv[0] = str(path)
    sys.path.insert(0, str(path.parent))  # what `python FILE` puts first, so the file's own imports resolve alike
    runpy.run_path(str(path), run_name="__main__")


def train() -> None:
    run_entry_point("optbench-train")


def study() -> None:
    run_entry_point("optbench-study")


def aggregate() -> None:
    run_entry_point("optbench-aggregate")


def compare() -> None:
    run_entry_point("optbench-compare")


def replay() -> None:
    run_entry_point("optbench-replay")


def device_benchmark() -> None:
    run_entry_point("optbench-device-benchmark")


def download_data() -> None:
    run_entry_point("optbench-download-data")


def test_setup() -> None:
    run_entry_point("optbench-test-setup")


def run_single_experiment() -> None:
    run_entry_point("optbench-run-single-experiment")
