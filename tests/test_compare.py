"""`python src/compare.py RUN_A RUN_B`: the differing config keys, the headline numbers and one figure, on
two published CPU-study runs; bad input is one `error:` line, exit status 2, and nothing written."""

import json
import shutil
import subprocess
import sys

import pytest
from conftest import REPO

sys.path.insert(0, str(REPO / "src"))
import compare

PUBLISHED = REPO / "docs" / "cpu-study" / "runs" / "imagefolder-cifar10-jpeg-3bcb403b" / "none-0.0"


def published_run(optimizer: str):
    return next((PUBLISHED / optimizer).glob("*epochs=8*/seed0"))


@pytest.fixture
def two_runs(tmp_path):
    """Copies of the published SGD and Lion runs (seed 0, 8 epochs), so a test can damage them."""
    runs = []
    for optimizer in ("sgd", "lion"):
        copy = tmp_path / "results" / optimizer / "seed0"
        shutil.copytree(published_run(optimizer), copy)
        runs.append(copy)
    return runs


def snapshot(folder):
    return {path: path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def test_compare_shows_the_differing_keys_the_headline_numbers_and_draws_the_curves(two_runs, tmp_path, capsys):
    before = snapshot(tmp_path / "results")
    figure = tmp_path / "sgd_vs_lion.png"
    assert compare.main([str(two_runs[0]), str(two_runs[1]), "--figure", str(figure)]) == 0
    out = capsys.readouterr().out
    lines = [" ".join(line.split()) for line in out.splitlines()]
    assert "optimizer.name sgd lion" in lines
    assert not any(line.startswith(("model.width", "dataset.")) for line in lines) and "epochs 8 8" not in lines
    best = [json.loads((run / "summary.json").read_text())["best"] for run in two_runs]
    assert f"test acc at best-val epoch {100 * best[0]['test/acc']:.2f} % {100 * best[1]['test/acc']:.2f} %" in lines
    assert "status completed completed" in lines and "epochs done 8 of 8 8 of 8" in lines
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f"figure: {figure}" in lines
    assert snapshot(tmp_path / "results") == before  # the runs are only read


def test_compare_shows_where_the_two_runs_environments_differ(two_runs, tmp_path, capsys):
    """What besides the config moves the numbers, beside them: here the thread count and the processor's bf16
    instructions differ, the versions do not; a run from before it was recorded says unknown."""
    environment = {
        "processor": "AMD EPYC",
        "cpu_capability": "AVX512",
        "cpu_features": ["avx512_bf16"],
        "threads": 2,
        "torch": "2.14.1",
        "deterministic": {"algorithms": False},
    }
    for run, changes in ((two_runs[0], {"threads": 1, "cpu_features": []}), (two_runs[1], {})):
        summary = json.loads((run / "summary.json").read_text())
        summary["environment"] = {**environment, **changes}
        summary["versions"] = json.loads((two_runs[1] / "summary.json").read_text())["versions"]
        (run / "summary.json").write_text(json.dumps(summary))
    assert compare.main([str(two_runs[0]), str(two_runs[1]), "--figure", str(tmp_path / "c.png")]) == 0
    lines = [" ".join(line.split()) for line in capsys.readouterr().out.splitlines()]
    assert "threads 1 2" in lines and "processor AMD EPYC / AVX512 AMD EPYC / AVX512 +avx512_bf16" in lines
    assert not any(line.startswith(("torch ", "device ", "precision ")) for line in lines)
    summary = json.loads((two_runs[1] / "summary.json").read_text())
    del summary["environment"]
    (two_runs[1] / "summary.json").write_text(json.dumps(summary))
    assert compare.main([str(two_runs[0]), str(two_runs[1]), "--figure", str(tmp_path / "c.png")]) == 0
    lines = [" ".join(line.split()) for line in capsys.readouterr().out.splitlines()]
    assert "processor AMD EPYC / AVX512 unknown" in lines


def test_the_figure_goes_to_the_working_directory_by_default(two_runs, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert compare.main([str(two_runs[0]), str(two_runs[1])]) == 0
    ids = [json.loads((run / "summary.json").read_text())["run_id"][:8] for run in two_runs]
    assert (tmp_path / f"compare-{ids[0]}-{ids[1]}.png").is_file()


@pytest.mark.parametrize(
    "case, message",
    [
        ("missing", "RUN_B {missing}: no such directory"),
        ("not a run", "RUN_B {empty}: not a run directory (no record.json)"),
        ("same run", "RUN_A and RUN_B are the same run"),
        ("damaged", "RUN_B: {b}/summary.json is damaged"),
        ("figure in a run", "--figure {b}/plots/c.png: {b} is a run directory"),
        ("not a figure", "--figure {tmp}/c.txt: name a .png, .pdf or .svg file"),
        ("no folder", "--figure {tmp}/nowhere/c.png: the folder {tmp}/nowhere does not exist"),
        ("flag", "unrecognized arguments: --colour"),
    ],
)
def test_bad_input_is_one_error_line_exit_2_and_writes_nothing(two_runs, tmp_path, capsys, case, message):
    a, b = two_runs
    (tmp_path / "empty").mkdir()
    (b / "plots").mkdir()
    argv = {
        "missing": [a, tmp_path / "missing"],
        "not a run": [a, tmp_path / "empty"],
        "same run": [a, a],
        "damaged": [a, b],
        "figure in a run": [a, b, "--figure", b / "plots" / "c.png"],
        "not a figure": [a, b, "--figure", tmp_path / "c.txt"],
        "no folder": [a, b, "--figure", tmp_path / "nowhere" / "c.png"],
        "flag": [a, b, "--colour", "red"],
    }[case]
    if case == "damaged":
        (b / "summary.json").write_text('{"status": "compl')
    before = snapshot(tmp_path)
    assert compare.main([str(part) for part in argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
    assert message.format(missing=tmp_path / "missing", empty=tmp_path / "empty", b=b, tmp=tmp_path) in err
    assert snapshot(tmp_path) == before


def test_the_command_line(two_runs, tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "src" / "compare.py"),
            str(two_runs[0]),
            str(two_runs[1]),
            "--figure",
            str(tmp_path / "c.svg"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "c.svg").read_text().lstrip().startswith("<?xml")
