"""Studies as data: the study files, the dry-run plan, one real study run, bad input, and tuning selection."""

import json
import shutil
from pathlib import Path

import pytest
import yaml
from conftest import CONF_DIR, TINY, compose_config
from hydra import compose, initialize_config_dir

from optbench.device.gpu_per_job import gpu_for_job
from optbench.errors import ConfigError
from optbench.registry.choices import OPTIMIZERS
from optbench.registry.optimizers import REGISTRY
from optbench.specs.study_spec import find_study, study_files
from optbench.studies import study_command, tuning_protocol
from optbench.studies.plan import quasirandom_trials

SMALL = [override for override in TINY if not override.startswith(("dataset=", "epochs="))]


def write_study(path: Path, grid: dict, **extra) -> Path:
    path.write_text(yaml.safe_dump({"id": path.stem, "statement": "a test study", "grid": grid, **extra}))
    return path


def synthetic_grid(**changes) -> dict:
    return {
        "optimizer": ["sgd", "adam"],
        "seed": [0, 1],
        "dataset": ["synthetic"],
        "noise": [{"name": "none"}],
        "epochs": 1,
        **changes,
    }


def write_summary(run_dir: Path, status: str, epochs_done: int = 1, val_acc: float = 0.5) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    record = {"epoch": epochs_done, "val/acc": val_acc, "test/acc": val_acc}
    (run_dir / "summary.json").write_text(
        json.dumps({"status": status, "epochs_done": epochs_done, "epochs_planned": 1, "best": record, "final": record})
    )


def test_every_study_file_parses():
    ids = [find_study(path.stem).id for path in study_files()]
    assert {"full", "tune_lr_wd", "H1", "H2", "H3"} <= set(ids)
    assert len(ids) == len(set(ids))


def test_full_study_grid():
    grid = find_study("full").grid
    assert grid["optimizer"] == ["sgd", "adam", "adamw", "lion", "muon"]
    assert grid["seed"] == [0, 1, 2]
    assert grid["dataset"] == ["cifar10", "cifar100"]
    assert grid["noise"] == [{"name": "none"}]
    assert grid["epochs"] == 200


@pytest.mark.parametrize("hypothesis", ["H1", "H2", "H3"])
def test_hypothesis_studies_hold_the_runs_their_test_needs(hypothesis):
    study = find_study(hypothesis)
    test, grid = study.test, study.grid  # the same parsed HypothesisTest the aggregator evaluates
    assert {test.subject, *test.versus} <= set(grid["optimizer"])
    assert len(grid["seed"]) >= test.min_seeds and grid["epochs"] == 200
    noise_names = [entry["name"] for entry in grid["noise"]]
    assert "none" in noise_names  # every test needs clean runs (H3's drop is measured from them)
    if test.kind == "noise_drop":
        noisy = next(entry for entry in grid["noise"] if entry["name"] == test.noise)
        assert sorted(noisy["rate"]) == sorted(test.rates)


def test_tuning_grid_scales_each_default():
    tune = find_study("tune_lr_wd").tune
    lion = tuning_protocol.grid_values(compose_config(["optimizer=lion"]).optimizer, tune)
    assert lion["optimizer.lr"] == ["1e-05", "3e-05", "0.0001", "0.0003", "0.001"]
    assert lion["optimizer.weight_decay"] == ["0.01", "0.1", "1"]
    adam = tuning_protocol.grid_values(compose_config(["optimizer=adam"]).optimizer, tune)
    assert "optimizer.weight_decay" not in adam  # Adam's default of 0 stays 0


def test_the_grid_method_keeps_a_learning_rate_free_optimizers_lr():
    prodigy = tuning_protocol.grid_values(
        compose_config(["optimizer=prodigy"]).optimizer, find_study("tune_lr_wd").tune
    )
    assert list(prodigy) == ["optimizer.weight_decay"]  # lr stays 1.0


@pytest.mark.slow
def test_the_2026_study_compares_every_registered_optimizer_under_its_own_schedule(tmp_path):
    study = find_study("optimizers_2026")
    assert study.grid["optimizer"] == list(OPTIMIZERS) and study.tuned_by == "tune_optimizers_2026"
    assert {key: study.grid[key] for key in ("seed", "dataset", "noise", "epochs")} == {
        key: find_study("full").grid[key] for key in ("seed", "dataset", "noise", "epochs")
    }  # full's protocol
    planned = study_command.plan(study, CONF_DIR, [f"paths.results_dir={tmp_path}"], "basic", False)
    runs = [run for _, sweep_runs in planned for run in sweep_runs]
    assert len(runs) == len(OPTIMIZERS) * 3 * 2
    for run in runs:  # every run validated; each under the schedule its registry entry gives it
        assert run.cfg.scheduler.name == REGISTRY[run.cfg.optimizer.name].default_schedule
    core = {str(run.run_dir) for run in runs if run.cfg.optimizer.name in find_study("full").grid["optimizer"]}
    full = study_command.plan(find_study("full"), CONF_DIR, [f"paths.results_dir={tmp_path}"], "basic", False)
    assert core == {str(run.run_dir) for _, sweep_runs in full for run in sweep_runs}  # shared, never re-trained


def test_the_2026_tuning_study_searches_prodigys_d_coef_and_every_optimizer_the_same_way():
    tune = find_study("tune_optimizers_2026")
    assert tune.grid["optimizer"] == find_study("optimizers_2026").grid["optimizer"]
    trials = quasirandom_trials(tune)
    assert set(trials("prodigy")[0].values) == {"optimizer.d_coef", "optimizer.weight_decay"}
    assert trials("sgd") == quasirandom_trials(find_study("tune_quasirandom"))("sgd")  # same trials as before


@pytest.mark.slow
def test_dry_run_lists_runs_directories_and_statuses(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPTBENCH_CACHE_DIR", str(tmp_path / "cache"))  # no rate cached: it measures, and says so
    study = write_study(
        tmp_path / "tiny.yaml", synthetic_grid(noise=[{"name": "none"}, {"name": "symmetric", "rate": [0.2]}])
    )
    results = tmp_path / "results"
    variant = "batch_size=50,dataset.test_size=200,dataset.train_size=600,dataset.val_size=100,epochs=1,model.width=8"
    write_summary(results / "synthetic/none-0.0/sgd" / variant / "seed0", "completed")
    write_summary(results / "synthetic/symmetric-0.2/adam" / variant / "seed1", "running", epochs_done=0)
    status = study_command.main([str(study), "--dry-run", "--set", *SMALL, f"paths.results_dir={results}"])
    out = capsys.readouterr().out
    assert status == 0
    assert "8 runs in 2 sweep(s): 1 done, 1 unfinished, 6 new" in out
    assert f"done       {results}/synthetic/none-0.0/sgd/{variant}/seed0 (completed, 1/1 epochs)" in out
    assert f"unfinished {results}/synthetic/symmetric-0.2/adam/{variant}/seed1 (running, 0/1 epochs)" in out
    assert f"new        {results}/synthetic/symmetric-0.2/sgd/{variant}/seed1" in out
    assert "noise=symmetric noise.rate=0.2" in out
    assert "estimated time:" in out and "7 run(s) still to do" in out and "training images/s" in out
    assert (
        out.index("noise=symmetric noise.rate=0.2")
        < out.index("estimating: timing 7 training steps of resnet18 width 8")
        < out.index("estimated time:")
    )


def test_a_study_reusing_runs_trained_on_another_processor_or_thread_count_says_so_in_one_line(tmp_path, capsys):
    import torch

    from optbench.studies.reuse_note import this_machine
    from optbench.training.provenance import environment

    study = write_study(tmp_path / "tiny.yaml", synthetic_grid())
    results = tmp_path / "results"
    variant = "batch_size=50,dataset.test_size=200,dataset.train_size=600,dataset.val_size=100,epochs=1,model.width=8"
    argv = [str(study), "--dry-run", "--no-estimate", "--set", *SMALL, f"paths.results_dir={results}"]
    kind, threads = this_machine("cpu", "basic")
    for optimizer, processor in (("sgd", "Other CPU"), ("adam", None)):
        run_dir = results / "synthetic/none-0.0" / optimizer / variant / "seed0"
        write_summary(run_dir, "completed")
        summary = json.loads((run_dir / "summary.json").read_text())
        summary["environment"] = {**environment(torch.device("cpu")), "threads": int(threads)}  # as here
        if processor:
            summary["environment"]["processor"] = processor
        (run_dir / "summary.json").write_text(json.dumps(summary))
    assert study_command.main(argv) == 0
    notes = [line for line in capsys.readouterr().out.splitlines() if line.startswith("note: ")]
    assert len(notes) == 1 and notes[0].startswith("note: 1 of the 2 runs this study reuses or resumes were trained")
    assert f"1 on Other CPU / {kind.split(' / ', 1)[1]} with {threads} thread(s)" in notes[0]
    summary["environment"] = {**environment(torch.device("cpu")), "threads": int(threads)}
    (results / "synthetic/none-0.0/sgd" / variant / "seed0" / "summary.json").write_text(json.dumps(summary))
    assert study_command.main(argv) == 0
    assert not [line for line in capsys.readouterr().out.splitlines() if line.startswith("note: ")]


@pytest.mark.slow
def test_full_study_dry_run_has_thirty_runs_in_the_default_directories(tmp_path, capsys):
    results = tmp_path / "results"
    assert study_command.main(["full", "--dry-run", "--no-estimate", "--set", f"paths.results_dir={results}"]) == 0
    out = capsys.readouterr().out
    assert "30 runs in 1 sweep(s): 0 done, 0 unfinished, 30 new" in out
    assert f"{results}/cifar100/none-0.0/muon/seed2\n" in out  # epochs=200 is the default: no extra directory level


def test_a_dry_run_estimates_from_the_study_s_own_runs_on_disk_without_timing_the_model(tmp_path, capsys, monkeypatch):
    """`study.py H3 --dry-run` took minutes timing width-64 steps even where runs of the same shape had trained;
    their metrics.jsonl now gives the rates. Hand computation: 600 - 100 training images at 100 images/s, and
    100 + 200 evaluated images in the 11 - 5 s outside training (50 images/s): 5 + 6 = 11 s a run, 7 runs 77 s."""
    from optbench.durations import format_duration
    from optbench.studies import estimate

    monkeypatch.setattr(estimate, "measure_rates", lambda *_: pytest.fail("timed the model"))
    study = write_study(
        tmp_path / "tiny.yaml", synthetic_grid(noise=[{"name": "none"}, {"name": "symmetric", "rate": [0.2]}])
    )
    results = tmp_path / "results"
    variant = "batch_size=50,dataset.test_size=200,dataset.train_size=600,dataset.val_size=100,epochs=1,model.width=8"
    done = results / "synthetic/none-0.0/sgd" / variant / "seed0"
    write_summary(done, "completed")
    (done / "metrics.jsonl").write_text(
        json.dumps({"epoch": 1, "train/images_per_s": 100.0, "train/time_s": 5.0, "time_s": 11.0}) + "\n"
    )
    assert study_command.main([str(study), "--dry-run", "--set", *SMALL, f"paths.results_dir={results}"]) == 0
    out = capsys.readouterr().out
    assert f"estimated time: {format_duration(77.0)} for 7 run(s) still to do" in out
    assert "from 1 run(s) of this study on disk: 100 training images/s, 50 evaluated images/s" in out
    assert out.index("8 runs in 2 sweep(s)") < out.index("estimated time:")


def test_recorded_rates_are_the_medians_over_every_epoch_of_the_shape_s_runs(tmp_path):
    from optbench.studies.estimate import Workload, recorded_rates

    shape, other = ("cpu", "resnet18", 8, 10, 50, 3, 32), ("cpu", "resnet18", 16, 10, 50, 3, 32)
    epochs = {"a": [(100.0, 5.0, 8.0), (300.0, 2.0, 3.0)], "b": [(200.0, 3.0, 9.0)], "c": []}
    for name, rows in epochs.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "metrics.jsonl").write_text(
            "".join(
                json.dumps({"epoch": epoch, "train/images_per_s": rate, "train/time_s": train_s, "time_s": epoch_s})
                + "\n"
                for epoch, (rate, train_s, epoch_s) in enumerate(rows, 1)
            )
        )
    work = Workload(shape, 500, 300, 1)
    rates = recorded_rates([(work, tmp_path / "a"), (work, tmp_path / "b"), (Workload(other, 1, 1, 1), tmp_path / "c")])
    # training: median(100, 300, 200) = 200; evaluation: 300 images in 3 s, 1 s, 6 s -> median(100, 300, 50) = 100
    assert rates == {shape: estimate_rate(2, 200.0, 100.0)}


def estimate_rate(runs, train_rate, eval_rate):
    from optbench.studies.estimate import RecordedRate

    return RecordedRate(runs, train_rate, eval_rate)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["no_such_study"], "unknown study 'no_such_study'"),
        (["fulll"], "unknown study 'fulll': did you mean full? choose "),  # misspelt names get the closest
        (["h33", "--dry-run"], "unknown study 'h33': did you mean H3? choose "),
        (["full", "--dry-run", "--no-estimate", "--set", "optimzer=lion"], "did you mean optimizer=lion?"),
        (["full", "--until-decided", "--hypotheses", "H22"], "--hypotheses H22: did you mean H2? not one of "),
        (["full", "--launcher", "moon"], "invalid choice: 'moon'"),
        (["full", "--set", "noise.rate=0.3"], "noise=none changes no label"),
        (["--select-tuned", "full"], "not a tuning study"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, message, capsys):
    assert study_command.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1


@pytest.mark.parametrize(
    "fidelity_line, rung, message",
    [
        ("fidelity: {epochs: [2, .nan]}", [], "fidelity: epochs: nan is not a whole number: give whole numbers >= 1"),
        ("fidelity: {epochs: [2, two]}", [], "fidelity: epochs: 'two' is not a whole number"),
        ("fidelity: {epochs: [2, 2.5]}", [], "fidelity: epochs: 2.5 is not a whole number"),
        ("fidelity: {epochs: [1, 2]}", ["--rung", "epochs=abc"], "--rung epochs=abc: epochs: 'abc' is not a whole"),
    ],
)
def test_a_rung_that_is_not_a_whole_number_is_one_error_line_and_writes_nothing(
    tmp_path, capsys, fidelity_line, rung, message
):
    """Each was `ValueError: invalid literal for int()` when the rung was planned."""
    study = write_study(tmp_path / "ladder.yaml", synthetic_grid())
    study.write_text(study.read_text() + fidelity_line + "\n")
    results = tmp_path / "results"
    argv = [str(study), "--no-estimate", "--set", *SMALL, f"paths.results_dir={results}", *rung]
    assert study_command.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1
    assert sorted(path.name for path in tmp_path.iterdir()) == ["ladder.yaml"]


def test_unknown_optimizer_in_a_study_grid_is_refused(tmp_path, capsys):
    study = write_study(tmp_path / "typo.yaml", synthetic_grid(optimizer=["sgd", "lino"]))
    assert study_command.main([str(study), "--dry-run"]) == 2
    error = capsys.readouterr().err  # one line; tuned configs (conf/optimizer/tuned/...) are listed after the five
    assert error.startswith(
        "error: unknown optimizer 'lino': did you mean optimizer=lion? choose optimizer="
        + ", ".join(sorted(OPTIMIZERS))
    )
    assert error.count("\n") == 1 and "tuned/cpu_demo/lion" in error


@pytest.mark.slow
def test_study_runs_end_to_end_then_skips_finished_runs(tmp_path, capsys):
    study = write_study(tmp_path / "one.yaml", synthetic_grid(optimizer=["sgd"], seed=[0]))
    argv = [
        str(study),
        "--set",
        *SMALL,
        f"paths.results_dir={tmp_path / 'results'}",
        f"paths.data_dir={tmp_path / 'data'}",
    ]
    assert study_command.main(argv) == 0  # launches `python src/train.py -m ...` as a subprocess
    summaries = list((tmp_path / "results").rglob("summary.json"))
    assert len(summaries) == 1 and json.loads(summaries[0].read_text())["status"] == "completed"
    aggregate = f"aggregate with: python src/aggregate.py {tmp_path / 'results'}"
    assert (
        capsys.readouterr().out.splitlines()[-1]
        == f"study one: 1 completed, 0 diverged, 0 failed, 0 skipped; {aggregate}"
    )
    assert study_command.main(argv) == 0
    out = capsys.readouterr().out
    assert "1 runs in 1 sweep(s): 1 done" in out and "all 1 runs finished, skipped" in out
    assert out.splitlines()[-1] == f"study one: 0 completed, 0 diverged, 0 failed, 1 skipped; {aggregate}"


@pytest.mark.slow
def test_tuning_selection_writes_a_config_that_composes(tmp_path, capsys):
    conf = tmp_path / "conf"
    shutil.copytree(CONF_DIR, conf)
    study = write_study(
        tmp_path / "tune.yaml",
        synthetic_grid(optimizer=["lion", "sgd"], seed=[0, 1]),
        tune={"lr_factors": [0.1, 1, 10], "weight_decay_factors": [1, 10]},
    )
    results = tmp_path / "results"
    argv = ["--conf-dir", str(conf), "--set", *SMALL, f"paths.results_dir={results}"]
    runs = [
        run
        for _, sweep_runs in study_command.plan(study_command.find_study(str(study)), conf, argv[3:], "basic", False)
        for run in sweep_runs
    ]
    assert len(runs) == 2 * 3 * 2 * 2
    for run in runs:  # lion wins at 10x its lr and 1x its weight decay; sgd at 0.1x, 10x
        lr_factor = run.cfg.optimizer.lr / {"lion": 1e-4, "sgd": 0.1}[run.cfg.optimizer.name]
        good = (round(lr_factor, 3), run.cfg.optimizer.weight_decay) in ((10.0, 0.1), (0.1, 0.005))
        write_summary(run.run_dir, "completed", val_acc=0.8 + 0.01 * run.cfg.seed if good else 0.3)
    first = runs[0].run_dir / "summary.json"
    finished = first.read_text()
    write_summary(runs[0].run_dir, "running", val_acc=0.99)  # unfinished: no winner until every run is done
    assert study_command.main(["--select-tuned", str(study), *argv]) == 2
    assert "1 tuning run(s) not finished" in capsys.readouterr().err
    assert not (conf / "optimizer" / "tuned" / "lion.yaml").exists()
    first.write_text(finished)
    assert study_command.main(["--select-tuned", str(study), *argv]) == 0
    text = (conf / "optimizer" / "tuned" / "lion.yaml").read_text()
    assert "val_acc_best (validation, never test): 0.8050, mean of 2 seed(s)" in text
    with initialize_config_dir(config_dir=str(conf), version_base="1.3"):
        lion = compose(config_name="config", overrides=["optimizer=tuned/lion"]).optimizer
        sgd = compose(config_name="config", overrides=["optimizer=tuned/sgd"]).optimizer
    assert (lion.name, lion.lr, lion.weight_decay, list(lion.betas)) == ("lion", 0.001, 0.1, [0.9, 0.99])
    assert (sgd.name, sgd.lr, sgd.weight_decay, sgd.momentum) == ("sgd", 0.01, 0.005, 0.9)
    capsys.readouterr()
    main_study = write_study(tmp_path / "main.yaml", synthetic_grid(optimizer=["lion"], seed=[0]))
    assert study_command.main([str(main_study), "--tuned", "--dry-run", "--no-estimate", *argv]) == 0
    assert "optimizer=tuned/lion" in capsys.readouterr().out
    (conf / "optimizer" / "tuned" / "sgd.yaml").unlink()
    sgd_study = write_study(tmp_path / "main_sgd.yaml", synthetic_grid(optimizer=["sgd"], seed=[0]))
    assert study_command.main([str(sgd_study), "--tuned", "--dry-run", *argv]) == 2
    assert "no tuned config for sgd" in capsys.readouterr().err


def test_gpu_for_job_outside_a_hydra_job_is_auto():
    assert gpu_for_job() == "auto"


@pytest.mark.parametrize("launcher, status", [("local", 1), ("parallel", 2)])
@pytest.mark.slow
def test_a_run_failing_in_a_launcher_worker_is_named_and_the_study_exits_non_zero(tmp_path, capsys, launcher, status):
    # bad data: the image folder's files cannot be decoded. A submitit job refuses the run and ends normally
    # (the sweep exits 0), a joblib worker's exit 2 reaches the sweep; either way the runner reads
    # summary.json and names the run.
    images = tmp_path / "images"
    for part in ("train", "test"):
        for label in ("cat", "dog"):
            (images / part / label).mkdir(parents=True)
            for index in range(3):
                (images / part / label / f"{index}.png").write_bytes(b"not an image")
    study = write_study(
        tmp_path / "bad_data.yaml", synthetic_grid(optimizer=["sgd"], seed=[0], dataset=["imagefolder"])
    )
    results = tmp_path / "results"
    small = [override for override in SMALL if not override.startswith("dataset.")]
    argv = [
        str(study),
        "--launcher",
        launcher,
        "--set",
        *small,
        f"dataset.root={images}",
        "dataset.val_size=2",
        f"paths.results_dir={results}",
        f"paths.data_dir={tmp_path / 'data'}",
    ]
    assert study_command.main(argv) == status
    errors = capsys.readouterr().err
    assert "run not finished:" in errors and "no summary.json" in errors and str(results) in errors
    assert "1 of 1 runs did not finish" in errors


@pytest.mark.slow
def test_a_planned_directory_holding_another_experiment_is_its_own_state_and_never_launched(
    tmp_path, tiny_config, capsys
):
    """A finished run of another experiment in a planned run's directory was "all 2 runs finished, skipped"
    (or, launched, read as completed): the planner reads the record, shows it, and refuses to launch."""
    from optbench.studies.plan import plan
    from optbench.training.run import train

    study = write_study(tmp_path / "one.yaml", synthetic_grid(optimizer=["sgd"], seed=[0]))
    argv = [
        str(study),
        "--set",
        *SMALL,
        f"paths.results_dir={tmp_path / 'results'}",
        f"paths.data_dir={tmp_path / 'data'}",
    ]
    [(_, [planned])] = plan(find_study(str(study)), CONF_DIR, argv[2:], "basic", False)
    train(tiny_config("optimizer.lr=0.5"), planned.run_dir)  # another experiment, finished, in the planned directory
    before = {path: path.read_bytes() for path in planned.run_dir.rglob("*") if path.is_file()}
    assert study_command.main([*argv, "--dry-run", "--no-estimate"]) == 0
    out = capsys.readouterr().out
    assert "1 runs in 1 sweep(s): 0 done, 0 unfinished, 0 new, 1 holding another experiment" in out
    assert f"other experiment {planned.run_dir} (optimizer.lr: 0.5 -> 0.1)" in out
    assert study_command.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {planned.run_dir} holds another experiment") and err.count("\n") == 1
    assert {path: path.read_bytes() for path in planned.run_dir.rglob("*") if path.is_file()} == before


def test_the_outcome_check_compares_run_ids(tmp_path):
    from optbench.studies import outcome

    write_summary(tmp_path / "run", "completed")
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    (tmp_path / "run" / "summary.json").write_text(json.dumps({**summary, "run_id": "abc"}))
    assert outcome.run_outcome(tmp_path / "run", "abc") == "completed"
    assert outcome.run_outcome(tmp_path / "run", "def").startswith("other experiment: its summary names run abc")
    assert outcome.unfinished([tmp_path / "run"], ["def"]) and not outcome.unfinished([tmp_path / "run"], ["abc"])


@pytest.mark.slow
def test_grid_values_hydra_respells_name_the_directories_hydra_makes(tmp_path, capsys):
    """A grid value of 1000 or more: the planner expected `optimizer.lr=1e+11`, Hydra trained into
    `optimizer.lr=100000000000.0`; the study exited 1 and its dry run showed the run as new for ever."""
    study = write_study(
        tmp_path / "tune.yaml",
        synthetic_grid(optimizer=["sgd"], seed=[0]),
        tune={"lr_factors": [1, 1.0e12], "weight_decay_factors": [1]},
    )
    argv = [
        str(study),
        "--set",
        *SMALL,
        f"paths.results_dir={tmp_path / 'results'}",
        f"paths.data_dir={tmp_path / 'data'}",
    ]
    assert study_command.main(argv) == 0  # the 1e11 run diverges: a result
    assert study_command.main([*argv, "--dry-run", "--no-estimate"]) == 0
    out = capsys.readouterr().out
    assert "2 runs in 1 sweep(s): 2 done, 0 unfinished, 0 new" in out and "optimizer.lr=100000000000.0" in out


def test_a_misspelt_key_in_a_hypothesis_test_block_is_refused(tmp_path):
    """`metrc:` was ignored and the default metric tested."""
    from optbench.specs.hypothesis_spec import parse_hypothesis

    (tmp_path / "h9.yaml").write_text(
        "id: H9\nstatement: x\ntest: {kind: metric_comparison, subject: sgd, versus: adam, metrc: final_test_acc}\n"
    )
    with pytest.raises(ConfigError, match=r"test.metrc is not a test setting: did you mean test.metric\?") as error:
        parse_hypothesis(tmp_path / "h9.yaml")
    assert "h9.yaml" in str(error.value) and "\n" not in str(error.value)


def test_a_plus_key_in_a_study_override_is_refused(capsys):
    assert study_command.main(["smoke", "--dry-run", "--no-estimate", "--set", "+epoch=1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: +epoch=1: epoch is not a setting") and err.count("\n") == 1


def test_the_study_name_is_accepted_after_set_overrides(capsys):
    """`--set epochs=1 smoke` answered "name a study": --set took the name."""
    assert study_command.main(["--set", "epochs=1", "smoke", "--dry-run", "--no-estimate"]) == 0
    assert "study smoke:" in capsys.readouterr().out
    assert study_command.main(["H1", "--set", "epochs=1", "smoke", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --set takes KEY=VALUE overrides, not smoke") and err.count("\n") == 1


def test_a_deletion_override_is_spelled_alone_in_the_sweep_command(capsys):
    """`--set ~key` planned its runs, then crashed (a TypeError) printing the multirun's command line."""
    assert study_command.main(["smoke", "--dry-run", "--no-estimate", "--set", "~train.tensorboard"]) == 0
    assert " '~train.tensorboard'\n" in capsys.readouterr().out


def test_grid_noise_is_parsed_once_for_the_sweeps_and_for_the_planned_settings():
    """study_spec.noise_entries is the one grid.noise parser: the sweeps' override values (studies/plan.py) and the
    settings a verdict's family is (planned_settings) read the same entries, and refuse the same mistakes."""
    import dataclasses
    import math

    from optbench.specs.study_spec import noise_entries, planned_settings
    from optbench.studies.plan import noise_settings

    grid = {
        "optimizer": ["sgd", "lion"],
        "seed": [0],
        "dataset": ["cifar10"],
        "epochs": 2,
        "noise": [
            "none",
            {"name": "symmetric", "rate": [0.2, "4e-1"], "optimizer": ["lion"]},
            {"name": "human", "label_set": ["aggre"]},
        ],
    }
    assert [entry.name for entry in noise_entries(grid)] == ["none", "symmetric", "human"]
    assert noise_settings(grid)[1] == {"noise": ["symmetric"], "noise.rate": ["0.2", "4e-1"], "optimizer": ["lion"]}
    study = dataclasses.replace(find_study("smoke"), grid=grid)
    planned = [
        (setting.noise, setting.rate, setting.optimizers, setting.label_set) for setting in planned_settings(study)
    ]
    assert planned[:3] == [
        ("none", 0.0, ("sgd", "lion"), ""),
        ("symmetric", 0.2, ("lion",), ""),
        ("symmetric", 0.4, ("lion",), ""),
    ]
    assert planned[3][0] == "human" and math.isnan(planned[3][1]) and planned[3][3] == "aggre"
    for noise, message in (
        ({"name": "human"}, "grid.noise entry human needs label_set"),
        ({"name": "symmetric", "rate": 0.2, "optimizer": ["adam"]}, "optimizer adam is not in the grid's optimizers"),
    ):
        bad = {**grid, "noise": [noise]}
        for parse in (noise_settings, lambda grid: planned_settings(dataclasses.replace(study, grid=grid))):
            with pytest.raises(ConfigError, match=message):
                parse(bad)


def test_the_thread_note_names_the_threads_the_runs_will_use():
    """With `--set device_policy.threads=1` a new run here trains with 1 thread, whatever torch's own count: the
    reuse note said 'a new run here: ... with 2 thread(s)' (issue 56, item 6)."""
    import torch

    from optbench.studies.reuse_note import this_machine

    assert this_machine("cpu", "basic", threads=1)[1] == "1"
    assert this_machine("cpu", "basic", threads=None)[1] == str(torch.get_num_threads())


def test_a_dry_run_prices_from_same_shape_runs_on_disk_that_the_study_does_not_plan(tmp_path, capsys, monkeypatch):
    """Issue 56: a newcomer's dry run timed a busy machine (120 h) although runs of the same shape had trained in
    the results folder under another optimizer. They now price it: the same hand computation as above, 11 s a run,
    8 runs 88 s, and the line says where the rate came from."""
    from omegaconf import OmegaConf

    from optbench.durations import format_duration
    from optbench.formats import run_record
    from optbench.studies import estimate

    monkeypatch.setattr(estimate, "measure_rates", lambda *_: pytest.fail("timed the model"))
    study = write_study(
        tmp_path / "tiny.yaml", synthetic_grid(noise=[{"name": "none"}, {"name": "symmetric", "rate": [0.2]}])
    )
    results = tmp_path / "results"
    variant = "batch_size=50,dataset.test_size=200,dataset.train_size=600,dataset.val_size=100,epochs=1,model.width=8"
    elsewhere = results / "synthetic/none-0.0/lion" / variant / "seed0"  # lion: not in the study's grid
    sizes = [override for override in variant.split(",") if not override.startswith("epochs=")]
    cfg = compose_config([*SMALL, "dataset=synthetic", "optimizer=lion", *sizes])
    write_summary(elsewhere, "completed")
    run_record.write(elsewhere, run_record.new_record(OmegaConf.to_container(cfg), {"config": {}}, "2026-01-01"))
    (elsewhere / "metrics.jsonl").write_text(
        json.dumps({"epoch": 1, "train/images_per_s": 100.0, "train/time_s": 5.0, "time_s": 11.0}) + "\n"
    )
    assert study_command.main([str(study), "--dry-run", "--set", *SMALL, f"paths.results_dir={results}"]) == 0
    out = capsys.readouterr().out
    assert f"estimated time: {format_duration(88.0)} for 8 run(s) still to do" in out
    assert "from 1 run(s) on disk of the same shape (0 of this study): 100 training images/s" in out


def test_recorded_rates_count_the_time_a_run_spends_outside_its_epochs(tmp_path):
    """A tiny model's run is mostly checkpoints and summaries, not training: wall time 10 s over epochs of 1 s
    each (2 epochs) leaves 8 s, 4 s an epoch, which the estimate adds to each epoch left."""
    from optbench.studies import estimate

    run = tmp_path / "a"
    write_summary(run, "completed", epochs_done=2)
    summary = json.loads((run / "summary.json").read_text())
    (run / "summary.json").write_text(json.dumps({**summary, "wall_time_s": 10.0}))
    (run / "metrics.jsonl").write_text(
        "".join(
            json.dumps({"epoch": epoch, "train/images_per_s": 100.0, "train/time_s": 0.5, "time_s": 1.0}) + "\n"
            for epoch in (1, 2)
        )
    )
    work = estimate.Workload(("cpu", "mlp", 8, 10, 50, 1, 40), 50, 100, 3)
    rate = estimate.recorded_rates([(work, run)])[work.shape]
    assert rate.epoch_overhead_s == pytest.approx(4.0)
    # 3 epochs x (50 / 100 training + 100 / 200 evaluated + 4 outside) = 15 s
    assert estimate.recorded_seconds(work, rate) == pytest.approx(15.0)


def test_the_typed_request_carries_every_flag_the_command_line_parses():
    """status.show and run_until_decided get a StudyRequest, not argparse's Namespace: a flag the parser gains
    without a field would be dropped silently, so every parsed name must be one of its fields."""
    from dataclasses import fields

    from optbench.studies.request import StudyRequest

    parsed = set(vars(study_command.build_parser().parse_args(["smoke"])))
    assert parsed == {"list" if item.name == "list_studies" else item.name for item in fields(StudyRequest)}
    request = study_command.parse_args(["smoke", "--dry-run", "--set", "epochs=1"])
    assert isinstance(request, StudyRequest) and request.study == "smoke" and request.set == ["epochs=1"]
    assert request.dry_run and not request.list_studies


def test_a_study_reads_its_hypotheses_from_its_own_folder(tmp_path):
    """`hypotheses_from: experiments/cross-workload`: cross_mnist1d's X1/X3 parts are kept apart from
    experiments/hypotheses (whose published verdicts they must not join), yet --until-decided and --plan-seeds find
    them; without the key they were refused ("not one of H1, H2, H3, H3-human")."""
    from optbench.specs.study_spec import EXPERIMENTS_DIR, load_study
    from optbench.studies.until_decided import chosen_hypotheses

    study = find_study("cross_mnist1d")
    assert [h.id for h in chosen_hypotheses(study, EXPERIMENTS_DIR, [])] == ["X1-mnist1d", "X3-mnist1d"]
    assert [h.id for h in chosen_hypotheses(study, EXPERIMENTS_DIR, ["x3-mnist1d"])] == ["X3-mnist1d"]
    path = write_study(tmp_path / "s.yaml", synthetic_grid(), hypotheses_from="experiments/nowhere")
    with pytest.raises(ConfigError, match=r"hypotheses_from names a folder of the repository holding hypotheses/"):
        load_study(path)


def test_an_empty_hypotheses_list_tests_none_and_the_key_left_out_tests_every_one(tmp_path):
    """`hypotheses: []` is a study that judges no hypothesis (a fidelity ladder measuring its rungs, as
    fidelity_mnist1d); the key left out still says nothing, so every hypothesis is the study's. Both read as "every
    one" before, and the MNIST-1D ladder's report judged H1-H3 on MNIST-1D runs."""
    from optbench.specs.study_spec import load_study, tested_hypotheses

    known = ["H1", "H2", "H3"]
    none = load_study(write_study(tmp_path / "none.yaml", synthetic_grid(), hypotheses=[]))
    silent = load_study(write_study(tmp_path / "silent.yaml", synthetic_grid()))
    listed = load_study(write_study(tmp_path / "listed.yaml", synthetic_grid(), hypotheses=["H2"]))
    assert tested_hypotheses(none, known) == []
    assert tested_hypotheses(silent, known) == known
    assert tested_hypotheses(listed, known) == ["H2"]
    assert tested_hypotheses(find_study("fidelity_mnist1d"), known) == []
    with pytest.raises(ConfigError, match="hypotheses must list hypothesis ids"):
        load_study(write_study(tmp_path / "bad.yaml", synthetic_grid(), hypotheses="H1"))
