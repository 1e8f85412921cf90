"""Every entry point's bad flag is one `error:` line, exit 2, nothing written, with a suggestion where the flag is
misspelt (README's promise; issue 56, item 7). One parser does it for all: optbench/command_line.py."""

import subprocess
import sys

import pytest
from conftest import REPO

from optbench.errors import ConfigError

MISSPELT = {  # entry point (from the checkout's root) -> (arguments with one flag misspelt, the flag it means)
    "src/aggregate.py": (["results", "--targt-acc", "0.5"], "--target-acc"),
    "src/compare.py": (["a", "b", "--figuer", "x.png"], "--figure"),
    "src/replay.py": (["run", "--epohcs", "1"], "--epochs"),
    "src/download_data.py": (["cifar10", "--data-dri", "x"], "--data-dir"),
    "src/study.py": (["smoke", "--dry-rum"], "--dry-run"),
    "src/device_benchmark.py": (["--widht", "8"], "--width"),
    "test_setup.py": (["--devcie", "cpu"], "--device"),
}


@pytest.mark.parametrize("script", list(MISSPELT))
def test_a_misspelt_flag_is_one_error_line_with_a_suggestion_exit_2_and_nothing_written(script, tmp_path):
    argv, meant = MISSPELT[script]
    done = subprocess.run(
        [sys.executable, str(REPO / script), *argv], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, done.stderr
    assert f"did you mean {meant}?" in done.stderr and f"{script.removeprefix('src/')} --help" in done.stderr
    assert not any(tmp_path.iterdir()), sorted(tmp_path.iterdir())


def test_the_parser_suggests_the_nearest_flag_and_names_its_help():
    from optbench.command_line import OneLineParser

    parser = OneLineParser(prog="python src/x.py")
    parser.add_argument("--target-acc", type=float)
    parser.add_argument("--no-figures", action="store_true")
    with pytest.raises(ConfigError) as error:
        parser.parse_args(["--no-figuers", "--targt-acc=0.5"])
    assert str(error.value) == (
        "unrecognized arguments: --no-figuers --targt-acc=0.5 (did you mean --no-figures? --target-acc?) "
        "(python src/x.py --help)"
    )
    with pytest.raises(ConfigError, match=r"argument --target-acc: invalid float value: 'x' \(python src/x.py"):
        parser.parse_args(["--target-acc", "x"])
    with pytest.raises(ConfigError, match=r"unrecognized arguments: --zzz \(python src/x.py --help\)$"):
        parser.parse_args(["--zzz"])
