"""The tuning protocol: search spaces as data, quasi-random trials, top-k reruns, the winner, the edge
warning, the tuning record, dry-run and resuming a half-done tuning study."""

import json
import shutil
import uuid

import numpy as np
import pytest
import yaml
from conftest import CONF_DIR, TINY
from scipy.stats import qmc

from optbench.specs.study_spec import find_study, load_study
from optbench.studies import search_space, study_command

SMALL = [override for override in TINY if not override.startswith(("dataset=", "epochs="))]
LION = (search_space.Range("lr", 1e-5, 1e-3, "log"), search_space.Range("weight_decay", 0.01, 1.0, "log"))


def write_study(path, tune: dict, **grid_changes):
    grid = {
        "optimizer": ["lion", "sgd"],
        "seed": [0],
        "dataset": ["synthetic"],
        "noise": [{"name": "none"}],
        "epochs": 1,
        **grid_changes,
    }
    tune = {
        "method": "quasirandom",
        "space": "cifar_resnet18",
        "trials": 4,
        "top_k": 2,
        "confirm_seeds": [1, 2],
        **tune,
    }
    path.write_text(yaml.safe_dump({"id": path.stem, "statement": "a tuning test", "grid": grid, "tune": tune}))
    return path


def finish(run_dir, val_acc: float, wall_time_s: float = 10.0, status: str = "completed") -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    record = {"epoch": 1, "val/acc": val_acc, "test/acc": 0.0}  # test accuracy never enters the selection
    (run_dir / "summary.json").write_text(
        json.dumps(
            {
                "status": status,
                "epochs_done": 1,
                "epochs_planned": 1,
                "best": record,
                "final": record,
                "wall_time_s": wall_time_s,
                "device": "cpu",
            }
        )
    )


# ---------------------------------------------------------------- trials


def test_trials_are_deterministic_by_seed_and_cover_the_space():
    first = search_space.trials(LION, 16, "sobol", seed=3)
    assert first == search_space.trials(LION, 16, "sobol", seed=3)
    assert first != search_space.trials(LION, 16, "sobol", seed=4)
    units = np.array(
        [[space.to_unit(float(trial.values[f"optimizer.{space.key}"])) for space in LION] for trial in first]
    )
    assert ((units >= 0) & (units <= 1)).all()
    # Sobol's balance: each hyperparameter alone has one trial in each sixteenth of its (log) range
    raw = search_space.unit_points(2, 16, "sobol", seed=3)
    for column in raw.T:
        assert sorted(np.floor(column * 16).astype(int)) == list(range(16))
    # and the rounded trials spread more evenly than random points do (centred L2 discrepancy)
    random_draws = [qmc.discrepancy(np.random.default_rng(seed).random((16, 2))) for seed in range(50)]
    assert qmc.discrepancy(units) < 0.5 * float(np.mean(random_draws))


def test_halton_trials_and_the_same_points_for_every_optimizer():
    halton = search_space.trials(LION, 12, "halton", seed=0)
    assert len({tuple(trial.values.values()) for trial in halton}) == 12
    adamw = (search_space.Range("lr", 1e-4, 1e-2, "log"), search_space.Range("weight_decay", 1e-3, 0.1, "log"))
    # the same unit points for every optimizer: its trial i sits where lion's trial i sits in its own ranges
    for lion_trial, adamw_trial in zip(
        search_space.trials(LION, 8, "sobol", 0), search_space.trials(adamw, 8, "sobol", 0)
    ):
        for lion_range, adamw_range in zip(LION, adamw):
            key = f"optimizer.{lion_range.key}"
            assert lion_range.to_unit(float(lion_trial.values[key])) == pytest.approx(
                adamw_range.to_unit(float(adamw_trial.values[key])), abs=0.01
            )


def test_edges_warn_only_in_the_outer_tenth():
    assert search_space.edges(LION, {"optimizer.lr": 1.2e-5, "optimizer.weight_decay": 0.1}) == [
        "optimizer.lr = 1.2e-05 sits at the low edge of [1e-05, 0.001] (log): widen the range"
    ]
    assert search_space.edges(LION, {"optimizer.lr": 1e-4, "optimizer.weight_decay": 0.1}) == []
    assert "high edge" in search_space.edges(LION, {"optimizer.lr": 9e-4})[0]


@pytest.mark.parametrize(
    "tune, message",
    [
        ({"method": "random"}, "method must be grid or quasirandom"),
        ({"trials": 6}, "use a power of two"),
        ({"top_k": 5}, "top_k=5 exceeds trials=4"),
        ({"confirm_seeds": [0, 1]}, "confirm_seeds repeat a grid seed"),
        ({"lr_factors": [1, 2]}, "lr_factors is not a quasirandom setting"),
        ({"space": "nowhere"}, "search space"),
        ({"select_on": "test_acc"}, "select_on must be one of"),
    ],
)
def test_bad_tune_blocks_are_one_line(tmp_path, capsys, tune, message):
    study = write_study(tmp_path / "bad.yaml", tune)
    assert (
        study_command.main([str(study), "--dry-run", "--no-estimate", "--set", *SMALL, f"paths.results_dir={tmp_path}"])
        == 2
    )
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1


def test_a_search_space_must_cover_every_optimizer(tmp_path, capsys):
    space = tmp_path / "space.yaml"
    space.write_text(yaml.safe_dump({"optimizers": {"lion": {"lr": {"low": 1e-5, "high": 1e-3, "scale": "log"}}}}))
    study = write_study(tmp_path / "t.yaml", {"space": str(space)})
    assert study_command.main([str(study), "--dry-run", "--no-estimate", "--set", *SMALL]) == 2
    assert "has no ranges for sgd" in capsys.readouterr().err


# ---------------------------------------------------------------- top-k, winner, record


def test_top_k_reruns_and_the_winner_by_mean_over_all_seeds(tmp_path, capsys):
    conf = tmp_path / "conf"
    shutil.copytree(CONF_DIR, conf)
    study_path = write_study(tmp_path / "tq.yaml", {"output": "tuned/tq"}, optimizer=["lion"])
    argv = ["--conf-dir", str(conf), "--set", *SMALL, f"paths.results_dir={tmp_path / 'results'}"]
    study = find_study(str(study_path))
    trial_sweep, trials = study_command.plan(study, conf, argv[3:], "basic", False)[0]
    assert [run.trial.index for run in trials] == [0, 1, 2, 3]
    seed0 = {0: 0.50, 1: 0.70, 2: 0.65, 3: 0.20}  # trial 1 leads on seed 0 ...
    for run in trials:
        finish(run.run_dir, seed0[run.trial.index], wall_time_s=100)
    (_, _), (confirm, reruns) = study_command.plan(study, conf, argv[3:], "basic", False)
    assert [trial.index for trial in confirm.trials] == [1, 2] and not confirm.pending
    assert sorted((run.trial.index, run.cfg.seed) for run in reruns) == [(1, 1), (1, 2), (2, 1), (2, 2)]
    for run in reruns:  # ... but trial 2 is better on the two confirm seeds, and on the mean of three
        finish(run.run_dir, {1: 0.55, 2: 0.68}[run.trial.index], wall_time_s=50)
    assert study_command.main(["--select-tuned", str(study_path), *argv]) == 0
    tuned = (conf / "optimizer" / "tuned" / "tq" / "lion.yaml").read_text()
    winner = trials[2].trial.values
    assert f"lr: {float(winner['optimizer.lr'])}" in tuned and "trial 2." in tuned
    assert "mean of 3 seed(s) [0.65, 0.68, 0.68]" in tuned and "4 sobol trials (seed 0)" in tuned
    tuned_lines = tuned.splitlines()  # every value says where it comes from (conf/'s rule: no bare default)
    assert f"lr: {float(winner['optimizer.lr'])}  # tuned by {study.id}" in tuned_lines
    assert any(line.startswith("weight_decay: ") and line.endswith(f"# tuned by {study.id}") for line in tuned_lines)
    assert "decay_norms_and_biases: false  # default, conf/optimizer/lion.yaml" in tuned_lines
    record = json.loads((tmp_path / "results" / "tuning-tq.json").read_text())["optimizers"]["lion"]
    assert record["winner"]["index"] == 2 and record["winner"]["seeds"] == [0, 1, 2]
    assert record["device_hours"] == pytest.approx((4 * 100 + 4 * 50) / 3600)
    assert [trial["top_k"] for trial in record["trials"]] == [False, True, True, False]
    assert record["runs"] == 8 and record["epochs_trained"] == 8


def test_the_record_and_config_warn_when_the_winner_sits_at_an_edge(tmp_path, capsys):
    conf = tmp_path / "conf"
    shutil.copytree(CONF_DIR, conf)
    study_path = write_study(
        tmp_path / "te.yaml", {"output": "tuned/te", "trials": 8, "top_k": 1, "confirm_seeds": [1]}, optimizer=["lion"]
    )
    argv = ["--conf-dir", str(conf), "--set", *SMALL, f"paths.results_dir={tmp_path / 'results'}"]
    study = find_study(str(study_path))
    _, trials = study_command.plan(study, conf, argv[3:], "basic", False)[0]
    edge = min(trials, key=lambda run: float(run.trial.values["optimizer.lr"]))  # the smallest lr trial wins
    for run in trials:
        finish(run.run_dir, 0.9 if run is edge else 0.5)
    for run in study_command.plan(study, conf, argv[3:], "basic", False)[1][1]:
        finish(run.run_dir, 0.9)
    lr = float(edge.trial.values["optimizer.lr"])
    expects_warning = LION[0].to_unit(lr) < 0.1  # the lowest of 8 Sobol lrs may or may not sit in the outer tenth
    assert study_command.main(["--select-tuned", str(study_path), *argv]) == 0
    out = capsys.readouterr().out
    record = json.loads((tmp_path / "results" / "tuning-te.json").read_text())["optimizers"]["lion"]
    assert bool(record["edges"]) == expects_warning == ("warning: lion: optimizer.lr" in out)


def test_dry_run_lists_every_trial_and_the_budget(tmp_path, capsys):
    study = write_study(tmp_path / "td.yaml", {})
    assert (
        study_command.main([str(study), "--dry-run", "--no-estimate", "--set", *SMALL, f"paths.results_dir={tmp_path}"])
        == 0
    )
    out = capsys.readouterr().out
    expected = search_space.trials(
        search_space.load_space(CONF_DIR.parent / "experiments" / "search_spaces" / "cifar_resnet18.yaml")["sgd"],
        4,
        "sobol",
        0,
    )
    for trial in expected:
        assert f"trial {trial.index}: {' '.join(trial.overrides())}" in out
    assert "top 2 of 4 trials on seeds [1, 2]: chosen once every trial has finished" in out
    assert "lion 8 runs x 1 epochs, sgd 8 runs x 1 epochs; 16 runs, 16 epochs in all" in out


def test_grid_tuning_still_plans_and_warns_at_the_grid_edge():
    from optbench.studies.tuning_protocol import grid_edges

    space = {"optimizer.lr": {"values": [0.01, 0.1, 1.0], "scale": "grid"}}
    assert "low edge of the grid" in grid_edges(space, {"optimizer.lr": 0.01})[0]
    assert grid_edges(space, {"optimizer.lr": 0.1}) == []
    assert load_study(CONF_DIR.parent / "experiments" / "studies" / "tune_lr_wd.yaml").tune.method == "grid"


# ---------------------------------------------------------------- real runs: resume, then the chain


@pytest.mark.extended
@pytest.mark.slow
def test_a_half_done_tuning_study_resumes_and_tuned_by_runs_the_main_study(tmp_path, capsys):
    output = f"tuned/test-{uuid.uuid4().hex[:8]}"  # under the real conf/: train.py composes from there
    results = tmp_path / "results"
    tune = write_study(
        tmp_path / "tr.yaml", {"trials": 2, "top_k": 1, "confirm_seeds": [1], "output": output}, optimizer=["lion"]
    )
    main = tmp_path / "mr.yaml"
    main.write_text(
        yaml.safe_dump(
            {
                "id": "mr",
                "statement": "main",
                "tuned_by": str(tune),
                "grid": {
                    "optimizer": ["lion"],
                    "seed": [0],
                    "dataset": ["synthetic"],
                    "noise": [{"name": "none"}],
                    "epochs": 2,
                },
            }
        )
    )
    argv = ["--set", *SMALL, "train.progress_bar=false", f"paths.results_dir={results}"]
    try:
        assert study_command.main([str(tune), *argv]) == 0  # 2 trials, then the top one on seed 1
        summaries = sorted(results.rglob("summary.json"))
        assert len(summaries) == 3
        shutil.rmtree(summaries[0].parent)  # a trial lost ...
        kept = {path: path.stat().st_mtime_ns for path in summaries[1:]}
        capsys.readouterr()
        assert study_command.main([str(main), *argv]) == 0  # ... is run again, the rest skipped
        out = capsys.readouterr().out
        assert "2 runs in 2 sweep(s): 1 done, 0 unfinished, 1 new" in out  # the top-k waits for the lost trial
        assert all(path.stat().st_mtime_ns == mtime for path, mtime in kept.items())
        assert f"optimizer={output}/lion" in out and (results / "tuning-tr.json").is_file()
        main_runs = [path for path in results.rglob("summary.json") if "epochs=2" in str(path)]
        assert len(main_runs) == 1 and json.loads(main_runs[0].read_text())["status"] == "completed"
    finally:
        shutil.rmtree(CONF_DIR / "optimizer" / output, ignore_errors=True)


@pytest.mark.extended
@pytest.mark.slow  # eight tiny runs through four Hydra multiruns
def test_schedule_free_and_prodigy_go_through_tuning_and_a_tuned_by_study(tmp_path, capsys, monkeypatch):
    """The registry's rules survive the whole chain: Schedule-Free is tuned and run under scheduler=constant
    (its own sweep), Prodigy's trials search d_coef and its tuned config keeps lr 1.0."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # the training subprocesses: tiny tensors, shared cores
    output = f"tuned/test-{uuid.uuid4().hex[:8]}"  # under the real conf/: train.py composes from there
    results = tmp_path / "results"
    tune = write_study(
        tmp_path / "tr26.yaml",
        {"trials": 2, "top_k": 1, "confirm_seeds": [1], "output": output},
        optimizer=["schedulefree_adamw", "prodigy"],
    )
    main = tmp_path / "mr26.yaml"
    main.write_text(
        yaml.safe_dump(
            {
                "id": "mr26",
                "statement": "main",
                "tuned_by": str(tune),
                "grid": {
                    "optimizer": ["schedulefree_adamw", "prodigy"],
                    "seed": [0],
                    "dataset": ["synthetic"],
                    "noise": [{"name": "none"}],
                    "epochs": 2,
                },
            }
        )
    )
    argv = ["--set", *SMALL, "train.progress_bar=false", f"paths.results_dir={results}"]
    try:
        assert study_command.main([str(main), *argv]) == 0  # tunes, selects, then runs the main study
        records = [json.loads(path.read_text()) for path in results.rglob("record.json")]
        assert len(records) == 2 * (2 + 1) + 2
        for record in records:
            config = record["config"]
            assert config["scheduler"]["name"] == (
                "constant" if config["optimizer"]["name"] == "schedulefree_adamw" else "cosine"
            )
            if config["optimizer"]["name"] == "prodigy":
                assert config["optimizer"]["lr"] == 1.0
        statuses = {json.loads(path.read_text())["status"] for path in results.rglob("summary.json")}
        assert statuses == {"completed"}
        prodigy = yaml.safe_load((CONF_DIR / "optimizer" / output / "prodigy.yaml").read_text())
        assert prodigy["lr"] == 1.0 and prodigy["d_coef"] != 1.0  # d_coef tuned, lr left alone
    finally:
        shutil.rmtree(CONF_DIR / "optimizer" / output, ignore_errors=True)
