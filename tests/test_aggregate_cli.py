"""`python src/aggregate.py` end to end: on real tiny runs, on a messy hand-made study, and on bad input.

The real runs are trained once per test session (5 runs of 2 epochs on generated data, width 8,
in-process through `train(cfg, run_dir)` with the config saved where Hydra saves it), then the
aggregator runs as a subprocess exactly as a user types it.
"""

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import REPO, compose_config
from fixtures.aggregate.fake_runs import ramp_records, realistic_study, write_run
from omegaconf import OmegaConf

sys.path.insert(0, str(REPO / "src"))
import aggregate as aggregate_cli

REAL_RUNS = [("sgd", 0, "none"), ("sgd", 1, "none"), ("adam", 0, "none"), ("adam", 1, "none"), ("sgd", 0, "symmetric")]


@pytest.fixture(scope="session")
def real_results(tmp_path_factory) -> Path:
    results = tmp_path_factory.mktemp("real") / "results"
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny tensors: threads only add contention on a shared 2-core machine
    try:
        from optbench.training.run import train

        for optimizer, seed, noise in REAL_RUNS:
            cfg = compose_config(
                [
                    "dataset=synthetic",
                    "dataset.train_size=200",
                    "dataset.val_size=50",
                    "dataset.test_size=50",
                    "model.width=8",
                    "epochs=2",
                    "batch_size=50",
                    "device=cpu",
                    "train.progress_bar=false",
                    "train.checkpoint_every=0",
                    f"optimizer={optimizer}",
                    f"seed={seed}",
                    f"noise={noise}",
                    f"paths.results_dir={results}",
                    f"paths.data_dir={results.parent / 'data'}",
                ]
            )
            run_dir = results / "synthetic" / f"{noise}-{cfg.noise.rate}" / optimizer / f"seed{seed}"
            (run_dir / ".hydra").mkdir(parents=True)
            OmegaConf.save(cfg, run_dir / ".hydra" / "config.yaml")  # what Hydra writes: the unresolved job config
            train(cfg, run_dir)
    finally:
        torch.set_num_threads(threads)
    return results


def run_aggregate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "src/aggregate.py", *map(str, args)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "MPLBACKEND": "Agg"},
    )


def snapshot(folder: Path) -> dict:
    return {path: (path.stat().st_mtime_ns, path.read_bytes()) for path in folder.rglob("*") if path.is_file()}


@pytest.mark.slow
def test_real_tiny_runs_end_to_end(real_results, tmp_path):
    before = snapshot(real_results)
    out = tmp_path / "aggregate"
    done = run_aggregate(real_results, "--out", out, "--target-acc", "0.3")
    assert done.returncode == 0, done.stderr
    assert snapshot(real_results) == before  # run directories are never touched
    with open(out / "summary.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == len(REAL_RUNS)
    assert {row["status"] for row in rows} == {"completed"}
    for name in ("results", "pairwise"):
        for extension in ("csv", "md", "tex"):
            assert (out / "tables" / f"{name}.{extension}").stat().st_size > 0
    report = (out / "report.md").read_text()
    pngs = sorted((out / "figures").glob("*.png"))
    assert {path.stem for path in pngs} >= {
        "final_accuracy",
        "accuracy_vs_noise",
        "accuracy_vs_wall_time",
        "learning_curves_synthetic-clean",
        "memorization_synthetic-symmetric-20",
    }
    for png in pngs:
        assert png.with_suffix(".pdf").stat().st_size > 0
        assert f"](figures/{png.name})" in report  # every figure is embedded
    assert "## Hypotheses" in report and "H2" in report  # verdicts from experiments/hypotheses
    assert "`experiments/hypotheses/h2_generalisation.yaml`" in report and str(REPO) not in report  # no machine's path
    assert "\\begin{tabular}" in (out / "tables" / "results.tex").read_text()


def test_messy_study_report_shows_every_status_and_keeps_user_files(tmp_path):
    from optbench.analysis import aggregate

    results = tmp_path / "results"
    realistic_study(results, seeds=(0, 1), rates=(0.0, 0.2), epochs=6)
    write_run(
        results,
        ramp_records(0.9)[:1],
        optimizer="adamw",
        seed=9,
        status="failed",
        epochs_planned=6,
        error="RuntimeError: boom",
    )
    out = results / "aggregate"
    out.mkdir()
    (out / "my_notes.txt").write_text("keep me")
    outcome = aggregate(results, experiments_dir=REPO / "experiments", draw_figures=False)
    report = outcome.report.read_text()
    assert outcome.report == out / "report.md"
    assert "1 diverged" in report and "1 interrupted" in report and "1 failed" in report
    assert "RuntimeError: boom" in report
    assert "Only **completed** runs enter means" in report
    assert (out / "my_notes.txt").read_text() == "keep me"
    assert outcome.runs == 2 * 5 * 2 + 3  # the output folder inside results/ is not scanned as runs


def test_the_report_names_a_setting_whose_runs_come_from_more_than_one_processor_kind(tmp_path):
    import json

    from optbench.analysis import aggregate

    results = tmp_path / "results"
    for seed in (0, 1, 2):
        for optimizer in ("sgd", "adam"):
            run = write_run(results, ramp_records(0.9 - 0.01 * seed), optimizer=optimizer, seed=seed)
            summary = json.loads((run / "summary.json").read_text())
            bf16 = ["avx512_bf16"] if optimizer == "adam" and seed == 2 else []
            summary["environment"] = {"processor": "EPYC", "cpu_capability": "AVX512", "cpu_features": bf16}
            summary["environment"]["threads"] = 1
            (run / "summary.json").write_text(json.dumps(summary))
    report = aggregate(results, draw_figures=False).report.read_text()
    (line,) = [line for line in report.splitlines() if line.startswith("**Mixed environments.**")]
    assert "The runs of 1 setting(s)" in line and "processor EPYC / AVX512 / EPYC / AVX512 +avx512_bf16" in line
    assert "threads" not in line.split("): ")[1]  # one thread count throughout


def test_stale_outputs_of_an_earlier_aggregation_are_removed_but_nothing_else(tmp_path):
    from optbench.analysis.writing.output import OutputDir

    out = tmp_path / "out"
    first = OutputDir(out)
    first.write_text("figures/learning_curves_old-setting.png", "old")
    first.write_text("report.md", "first")
    first.finish()
    (out / "figures" / "mine.png").write_text("user file")
    second = OutputDir(out)
    second.write_text("report.md", "second")
    assert second.finish() == ["figures/learning_curves_old-setting.png"]
    assert not (out / "figures" / "learning_curves_old-setting.png").exists()
    assert (out / "figures" / "mine.png").read_text() == "user file"
    assert (out / "report.md").read_text() == "second"
    assert not [path for path in out.rglob("*tmp*")]  # atomic writes leave no temporary files


def test_bad_input_exits_2_with_one_line(tmp_path):
    done = run_aggregate(tmp_path / "missing")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: ") and "does not exist" in done.stderr


@pytest.mark.parametrize(
    "case",
    ["empty", "target", "experiments", "bad_hypothesis", "out_is_a_run", "out_in_a_run", "results_is_a_run", "study"],
)
def test_bad_input_cases_name_the_fix(tmp_path, capsys, case):
    results = tmp_path / "results"
    results.mkdir()
    if case != "empty":
        write_run(results, ramp_records(0.9))
    args = {
        "empty": [results],
        "target": [results, "--target-acc", "90"],
        "experiments": [results, "--experiments", tmp_path / "nope"],
        "bad_hypothesis": [results, "--experiments", tmp_path / "experiments"],
        "out_is_a_run": [results, "--out", results / "cifar10" / "none-0.0" / "sgd" / "seed0"],
        "out_in_a_run": [results, "--out", results / "cifar10" / "none-0.0" / "sgd" / "seed0" / "aggregate"],
        "results_is_a_run": [results / "cifar10" / "none-0.0" / "sgd" / "seed0"],
        "study": [results, "--study", "nosuch"],
    }[case]
    if case == "bad_hypothesis":
        (tmp_path / "experiments" / "hypotheses").mkdir(parents=True)
        (tmp_path / "experiments" / "hypotheses" / "h.yaml").write_text("id: H1\nstatement: s\n")
    before = snapshot(results)
    assert aggregate_cli.main([str(arg) for arg in args]) == 2
    error = capsys.readouterr().err
    assert error.startswith("error: ") and error.count("\n") == 1
    expected = {
        "empty": "no run directories",
        "target": "fraction",
        "experiments": "does not exist",
        "bad_hypothesis": "missing 'test'",
        "out_is_a_run": "is a run directory",
        "out_in_a_run": "inside one",
        "results_is_a_run": "give the folder above it",
        "study": "unknown study 'nosuch': choose",
    }[case]
    assert expected in error
    assert snapshot(results) == before and not (results / "aggregate").exists()


def test_the_one_line_names_the_runs_that_did_not_finish(tmp_path, capsys):
    results = tmp_path / "results"
    realistic_study(results, seeds=(0, 1), rates=(0.0,), epochs=3)
    write_run(
        results,
        ramp_records(0.9)[:1],
        optimizer="adamw",
        seed=9,
        status="failed",
        epochs_planned=3,
        error="RuntimeError: boom",
    )
    assert aggregate_cli.main([str(results), "--no-figures"]) == 0
    [line] = capsys.readouterr().out.splitlines()
    assert " runs -> " in line and "did not finish: " in line and "seed9 (failed)" in line


def test_a_study_that_names_no_hypotheses_is_judged_on_every_hypothesis_without_a_traceback(tmp_path, capsys):
    """Fault 4 of issue 56: `aggregate.py RESULTS --study smoke` (a study file with no `hypotheses:`, so it tests
    every hypothesis) ended in `KeyError: 'seed'` where a hypothesis's family is empty (H3-human on clean runs)."""
    results = tmp_path / "results"
    for optimizer in ("sgd", "lion"):
        write_run(results, ramp_records(0.5, epochs=1), optimizer=optimizer, seed=0, dataset="synthetic")
    assert aggregate_cli.main([str(results), "--study", "smoke", "--no-figures", "--out", str(tmp_path / "out")]) == 0
    verdicts = list(csv.DictReader((tmp_path / "out" / "tables" / "verdicts.csv").open()))
    assert {row["hypothesis"] for row in verdicts} >= {"H1", "H2", "H3", "H3-human"}
    assert all(row["verdict"] != "supported" for row in verdicts)  # one seed of two optimizers shows nothing


def test_only_study_without_a_study_is_one_error_line_and_writes_nothing(tmp_path, capsys):
    results = tmp_path / "results"
    write_run(results, ramp_records(0.5, epochs=1), optimizer="sgd", seed=0)
    assert aggregate_cli.main([str(results), "--only-study", "--out", str(tmp_path / "out")]) == 2
    error = capsys.readouterr().err
    assert (
        error.startswith("error: --only-study reports the runs of the study named with --study")
        and error.count("\n") == 1
    )
    assert not (tmp_path / "out").exists()
