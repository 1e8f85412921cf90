"""The console commands (pyproject.toml [project.scripts]): each entry point file has one, and once the checkout
is installed in place (`pip install -e .`) each command answers exactly as `python FILE` does, with its exit
status; without the checkout a command is one line and exit 2."""

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from conftest import REPO

from optbench import console_scripts

SCRIPTS = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]


def test_every_entry_point_file_has_a_command_and_every_command_a_function():
    entry_files = {f"src/{path.name}" for path in (REPO / "src").glob("*.py")} | {
        "test_setup.py",
        "run_single_experiment.py",
    }
    assert set(console_scripts.ENTRY_POINTS.values()) == entry_files
    assert set(SCRIPTS) == set(console_scripts.ENTRY_POINTS)
    for command, target in SCRIPTS.items():
        module, _, function = target.partition(":")
        assert module == "optbench.console_scripts" and callable(getattr(console_scripts, function)), command
        assert function.replace("_", "-") == command.removeprefix("optbench-"), command


def test_a_command_without_its_checkout_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(console_scripts, "CHECKOUT", tmp_path)
    with pytest.raises(SystemExit) as stopped:
        console_scripts.train()
    assert stopped.value.code == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("error: optbench-train runs ") and "pip install -e" in line


def setuptools_version(folder: Path) -> tuple[int, ...]:
    """The version of the setuptools installed in a site-packages folder, () when it holds none."""
    found = [
        tuple(int(part) for part in path.name.split("-")[1].removesuffix(".dist-info").split(".")[:2])
        for path in folder.glob("setuptools-*.dist-info")
    ]
    return max(found, default=())


def installed_in_place(venv: Path) -> Path:
    """A fresh venv with this checkout installed in place (no network: the running interpreter's packages are
    its dependencies, with no other copy of optbench among them); its bin/ folder."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    dependencies = [
        folder for folder in sys.path if folder.endswith("site-packages") and not (Path(folder) / "optbench").is_dir()
    ]
    # pip builds the install with the first setuptools it finds: the newest first (pyproject: setuptools>=68)
    dependencies.sort(key=lambda folder: setuptools_version(Path(folder)), reverse=True)
    site_packages = next((venv / "lib").glob("python3*/site-packages"))
    (site_packages / "dependencies.pth").write_text("\n".join(dependencies) + "\n")
    python = venv / "bin" / "python"
    subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-e",
            str(REPO),
        ],
        check=True,
        timeout=300,
        capture_output=True,
    )
    return venv / "bin"


@pytest.mark.slow
def test_the_installed_commands_answer_as_the_files_do(tmp_path):
    bin_dir = installed_in_place(tmp_path / "venv")
    assert {path.name for path in bin_dir.glob("optbench-*")} == set(SCRIPTS)
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    asked = {
        "optbench-compare": ["--help"],
        "optbench-replay": ["--help"],
        "optbench-study": ["--list"],
        "optbench-train": ["--help"],
        "optbench-aggregate": [str(tmp_path / "missing")],
        "optbench-run-single-experiment": ["--help"],
    }
    for command, arguments in asked.items():
        by_command = subprocess.run(
            [str(bin_dir / command), *arguments],
            cwd=tmp_path,
            env=environment,
            capture_output=True,
            text=True,
            timeout=300,
        )
        by_file = subprocess.run(
            [sys.executable, str(REPO / console_scripts.ENTRY_POINTS[command]), *arguments],
            cwd=tmp_path,
            env=environment,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert (by_command.returncode, by_command.stdout, by_command.stderr) == (
            by_file.returncode,
            by_file.stdout,
            by_file.stderr,
        ), command
        assert by_command.stdout or by_command.stderr
    refused = subprocess.run(
        [str(bin_dir / "optbench-aggregate"), str(tmp_path / "missing")],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert refused.returncode == 2 and refused.stderr.startswith("error: results folder")
