"""Comparing one optimizer against a published study (docs/your-own-optimizer.md, step 4), end to end at a tiny
scale: the page's study file, pointed at a tiny published study, tunes only the newcomer with the baselines'
protocol (its tuned config beside its own, none in conf/), copies the published baseline runs in instead of
training them, trains the newcomer's seeds, and the aggregator ranks it. The dry run says what is published and
writes nothing; a protocol edited since the baselines were tuned is warned about; bad keys are one line."""

import importlib.util
import json
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import yaml
from conftest import CONF_DIR, REPO, TINY, copy_of
from test_own_optimizer import OWN_PAGE, fenced_blocks, write_own_folder

from optbench.config.config_path import CONFIG_PATH_VARIABLE
from optbench.studies import study_command

SMALL = [override for override in TINY if not override.startswith(("dataset=", "epochs="))]
spec = importlib.util.spec_from_file_location("publish_runs", REPO / "scripts" / "publish_runs.py")
publish_runs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(publish_runs)


def grid(optimizers: list[str], seeds: list[int], epochs: int) -> dict:
    return {
        "optimizer": optimizers,
        "seed": seeds,
        "dataset": ["synthetic"],
        "noise": [{"name": "none"}],
        "epochs": epochs,
    }


def write(path: Path, document: dict) -> Path:
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def build_published_study(folder: Path) -> None:
    """A tiny published study, trained once for the tests that start from it (built_once): sgd tuned (2 trials, the
    top one on seeds 1), then trained on seeds 0 and 1; its run and tuning records in folder/published, its tuning
    study file and the tuned sgd config it selected in folder/ (the config moved out of conf/ once written)."""
    output = f"tuned/test-{uuid.uuid4().hex[:8]}"  # under the real conf/: train.py composes from there
    results = folder / "results"
    overrides = [*SMALL, f"paths.results_dir={results}"]
    tuning = write(
        folder / "tune_tiny.yaml",
        {
            "id": "tune_tiny",
            "statement": "tiny tuning",
            "grid": grid(["sgd"], [0], 1),
            "tune": {
                "method": "quasirandom",
                "space": "cifar_resnet18",
                "trials": 2,
                "top_k": 1,
                "confirm_seeds": [1],
                "output": output,
            },
            "overrides": overrides,
        },
    )
    main = write(
        folder / "tiny.yaml",
        {
            "id": "tiny",
            "statement": "tiny main",
            "tuned_by": str(tuning),
            "grid": grid(["sgd"], [0, 1], 2),
            "overrides": overrides,
        },
    )
    try:
        assert study_command.main([str(main)]) == 0
        publish_runs.publish(results, folder / "published")
        shutil.copytree(CONF_DIR / "optimizer" / output, folder / "tuned")
    finally:
        shutil.rmtree(CONF_DIR / "optimizer" / output, ignore_errors=True)
    shutil.rmtree(results)  # the newcomer starts where a fresh checkout does: nothing trained here


@pytest.fixture
def published_study(tmp_path, built_once):
    """The tiny published study (build_published_study, trained once per test run) as this test's own: its
    published records in tmp/published, its tuning study file in tmp/ (results in tmp/results, where the newcomer's
    go, as the CPU study's tuning and main runs share results/cpu-demo) and the tuned sgd config back under the
    real conf/ in a conf/optimizer/tuned/test-* folder of this test's (removed after). The winners' values name
    the runs, not the folder, so the published runs are this study's."""
    built = built_once("newcomer-published-study", build_published_study)
    copy_of(built / "published", tmp_path / "published")
    output = f"tuned/test-{uuid.uuid4().hex[:8]}"
    document = yaml.safe_load((built / "tune_tiny.yaml").read_text())
    document["tune"]["output"] = output
    document["overrides"] = [*SMALL, f"paths.results_dir={tmp_path / 'results'}"]
    tuning = write(tmp_path / "tune_tiny.yaml", document)
    try:
        shutil.copytree(built / "tuned", CONF_DIR / "optimizer" / output)
        yield tuning, output
    finally:
        shutil.rmtree(CONF_DIR / "optimizer" / output, ignore_errors=True)


def newcomer_study(tmp_path: Path, tuning: Path, **changes) -> Path:
    """The page's study file, pointed at the tiny published study."""
    document = yaml.safe_load(fenced_blocks(OWN_PAGE, "yaml")[1])
    document.update(
        tuned_by=str(tuning),
        published=str(tmp_path / "published"),
        grid=grid(["sgd", "radam"], [0, 1], 2),
        overrides=[*SMALL, f"paths.results_dir={tmp_path / 'results'}"],
        hypotheses=["H1"],  # the page's H1 and H2 need lion and adamw; H1 is judged "not tested" here
    )
    document.update(changes)
    (tmp_path / "my_conf" / "studies").mkdir(parents=True, exist_ok=True)
    return write(tmp_path / "my_conf" / "studies" / "radam_vs_tiny.yaml", document)


def summaries(folder: Path) -> dict[str, bytes]:
    return {str(path.parent.relative_to(folder)): path.read_bytes() for path in folder.rglob("summary.json")}


@pytest.mark.extended
@pytest.mark.slow  # 11 tiny runs: the published study's 5, the newcomer's 3 trials and 2 seeds
def test_a_newcomer_is_tuned_with_the_baselines_protocol_beside_their_published_runs(
    published_study, tmp_path, monkeypatch, capsys
):
    tuning, output = published_study
    own = tmp_path / "my_conf"
    write_own_folder(own)
    monkeypatch.setenv(CONFIG_PATH_VARIABLE, str(own))
    study = newcomer_study(tmp_path, tuning)
    capsys.readouterr()

    assert study_command.main([str(study), "--dry-run", "--no-estimate"]) == 0
    out = capsys.readouterr().out
    assert "radam tuned here with tune_tiny's protocol (2 trials x 1 epochs on seeds [0], top 1 on seeds [1])" in out
    assert "sgd keep tune_tiny's winners" in out
    assert "published: 2 of the 4 new runs are in" in out  # sgd's two seeds; radam's defaults stand in
    assert not (tmp_path / "results").exists()  # a dry run writes nothing

    assert study_command.main([str(study)]) == 0
    out = capsys.readouterr().out
    tuned = own / "optimizer" / output / "radam.yaml"
    assert tuned.is_file() and not (CONF_DIR / "optimizer" / output / "radam.yaml").exists()
    assert (
        "tuned by tune_tiny+radam" in tuned.read_text() and str(own / "optimizer" / "radam.yaml") in tuned.read_text()
    )
    results = tmp_path / "results"
    assert (results / "tuning-tune_tiny+radam.json").is_file() and (results / "tuning-tune_tiny.json").is_file()
    copied = {key: value for key, value in summaries(results).items() if "/sgd/" in key}
    published = {key: value for key, value in summaries(tmp_path / "published").items() if "epochs=2" in key}
    assert len(copied) == 2 and sorted(copied.values()) == sorted(published.values())  # copied, not trained again
    radam = [json.loads(value) for key, value in summaries(results).items() if "/radam/" in key]
    assert len(radam) == 3 + 2 and {summary["status"] for summary in radam} == {"completed"}
    assert re.search(r"study radam_vs_cpu_demo: 2 completed, 0 diverged, 0 failed, 2 skipped", out), out[-2000:]

    report = tmp_path / "report"
    done = subprocess.run(
        [sys.executable, "src/aggregate.py", str(results), "--study", str(study), "--out", str(report)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "radam" in (report / "report.md").read_text()


@pytest.mark.extended
@pytest.mark.slow
def test_a_protocol_edited_since_the_baselines_were_tuned_is_warned_about(published_study, tmp_path, monkeypatch):
    tuning, _ = published_study
    write_own_folder(tmp_path / "my_conf")
    monkeypatch.setenv(CONFIG_PATH_VARIABLE, str(tmp_path / "my_conf"))
    document = yaml.safe_load(tuning.read_text())
    document["tune"]["trials"] = 4  # the newcomer would get 4 trials, the published sgd got 2
    write(tuning, document)
    done = subprocess.run(
        [sys.executable, "src/study.py", str(newcomer_study(tmp_path, tuning)), "--dry-run", "--no-estimate"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert "warning: the arms are tuned with different budgets: tune_tiny's record" in done.stderr
    assert "got 2 trials x 1 epochs on seeds [0], top 1 on seeds [1], the newcomers radam get 4 trials" in done.stderr


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"newcomers": ["rdam"]}, "newcomers names rdam, which the grid's optimizers do not: add it there"),
        ({"newcomers": "radam"}, "newcomers lists optimizers of the grid, e.g. newcomers: [radam]"),
        ({"tuned_by": None}, "newcomers are tuned with the protocol of the study's tuned_by: give tuned_by"),
        ({"published": "no/such/folder"}, "published: no/such/folder is not a folder of run records"),
    ],
    ids=["not in the grid", "not a list", "no tuned_by", "no such published folder"],
)
def test_bad_newcomer_keys_are_one_line_and_nothing_is_written(tmp_path, monkeypatch, capsys, changes, message):
    write_own_folder(tmp_path / "my_conf")
    monkeypatch.setenv(CONFIG_PATH_VARIABLE, str(tmp_path / "my_conf"))
    study = newcomer_study(tmp_path, REPO / "experiments" / "studies" / "tune_cpu_demo.yaml", **changes)
    assert study_command.main([str(study), "--dry-run", "--no-estimate"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "results").exists()


@pytest.mark.slow  # plans the CPU study's 15 clean runs on the real images
@pytest.mark.extended
def test_the_dry_run_names_the_runs_the_checkout_has_published_and_how_to_use_them(
    decoded_real_cifar10, tmp_path, capsys
):
    results = tmp_path / "results"
    argv = ["cpu_demo_clean", "--dry-run", "--no-estimate", "--set", f"paths.results_dir={results}"]
    assert study_command.main([*argv, f"paths.data_dir={decoded_real_cifar10}"]) == 0
    out = capsys.readouterr().out
    assert (
        "note: 15 of the 15 new runs are published in docs/cpu-study/runs (finished, the same run ids): add "
        "`published: docs/cpu-study/runs` to cpu_demo_clean.yaml to copy them in instead of training them, or copy "
        f"them now: python scripts/publish_runs.py docs/cpu-study/runs {results}"
    ) in out
    assert not results.exists()
