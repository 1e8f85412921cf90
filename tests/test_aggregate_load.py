"""Reading run directories into tables: statuses, damaged files, group keys, and exact table numbers.

Every run here is hand-made (tests/fixtures/aggregate/fake_runs.py) so each number is known.
"""

import json
import math
import shutil

import pytest
from fixtures.aggregate.fake_runs import ramp_records, record, write_run

from optbench import identity
from optbench.analysis.groups import REPLICATE_KEYS, is_excluded
from optbench.analysis.judging.pairwise_tables import pairwise_table
from optbench.analysis.load import GROUPING_COLUMN_SOURCES
from optbench.analysis.pipeline import analyse
from optbench.analysis.writing.tables import completed, display_table, problem_runs, results_table

T_975_DF2 = 0.95 / math.sqrt(2 * 0.975 * 0.025)  # t(0.975, 2), closed form


def results_for(root, target_acc=0.9):
    analysis = analyse(root, target_acc)
    tests = pairwise_table(completed(analysis.runs), "test_acc_at_best_val", analysis.settings, analysis.arms)
    table = results_table(analysis.runs, analysis.grouping, analysis.settings, analysis.arms, tests)
    return analysis, table.set_index("arm")


@pytest.fixture
def messy_study(tmp_path):
    """sgd: three completed seeds (0.90, 0.92, 0.97) and one run of every other status; adam: three seeds."""
    root = tmp_path / "results"
    for seed, accuracy in enumerate([0.90, 0.92, 0.97]):
        write_run(root, ramp_records(accuracy), optimizer="sgd", seed=seed)
    for seed, accuracy in enumerate([0.88, 0.91, 0.93]):
        write_run(root, ramp_records(accuracy), optimizer="adam", seed=seed)
    diverged = ramp_records(0.99)[:2]
    diverged[-1]["train/loss"] = math.nan
    write_run(root, diverged, optimizer="sgd", seed=3, status="diverged", epochs_planned=3)
    write_run(
        root,
        ramp_records(0.99)[:1],
        optimizer="sgd",
        seed=4,
        status="failed",
        epochs_planned=3,
        error="RuntimeError: CUDA out of memory",
    )
    write_run(
        root,
        ramp_records(0.99)[:2],
        optimizer="sgd",
        seed=5,
        status="running",
        epochs_planned=3,
        torn_tail='{"epoch": 3, "train/lo',
    )
    write_run(root, [], optimizer="sgd", seed=6, write_summary=False, epochs_planned=3)  # never started
    broken = write_run(root, ramp_records(0.99), optimizer="sgd", seed=7)
    (broken / "summary.json").write_text('{"status": "compl')  # unreadable
    return root


def test_every_run_is_a_row_with_its_status(messy_study):
    analysis = analyse(messy_study)
    runs = analysis.runs.set_index("run_id")
    assert len(runs) == 11
    assert runs.loc["cifar10/none-0.0/sgd/seed3", "status"] == "diverged"
    assert runs.loc["cifar10/none-0.0/sgd/seed4", "status"] == "failed"
    assert runs.loc["cifar10/none-0.0/sgd/seed5", "status"] == "running"
    assert runs.loc["cifar10/none-0.0/sgd/seed6", "status"] == "unfinished"
    assert runs.loc["cifar10/none-0.0/sgd/seed7", "status"] == "unreadable"
    assert math.isnan(runs.loc["cifar10/none-0.0/sgd/seed3", "final_train_loss"])  # the NaN token is read


def test_torn_metrics_line_is_ignored_with_a_warning(messy_study):
    analysis = analyse(messy_study)
    assert any("seed5: metrics.jsonl: 1 line(s) not valid JSON" in warning for warning in analysis.warnings)
    assert any("seed5: status 'running': still training, or killed" in warning for warning in analysis.warnings)
    torn = analysis.curves[analysis.curves["run_id"] == "cifar10/none-0.0/sgd/seed5"]
    assert list(torn["epoch"]) == [1, 2]


def test_only_completed_runs_enter_the_means_and_the_others_are_counted(messy_study):
    _, table = results_for(messy_study)
    sgd = table.loc["sgd"]
    assert (
        sgd["runs"],
        sgd["seeds"],
        sgd["diverged"],
        sgd["failed"],
        sgd["running"],
        sgd["unfinished"],
        sgd["other"],
    ) == (8, 3, 1, 1, 1, 1, 1)
    assert sgd["test_acc_at_best_val_mean"] == pytest.approx(0.93, abs=1e-15)
    assert sgd["test_acc_at_best_val_std"] == pytest.approx(math.sqrt(0.0013), rel=1e-12)
    half = T_975_DF2 * math.sqrt(0.0013) / math.sqrt(3)
    assert sgd["test_acc_at_best_val_ci_low"] == pytest.approx(0.93 - half, rel=1e-12)
    assert sgd["test_acc_at_best_val_ci_high"] == pytest.approx(0.93 + half, rel=1e-12)
    assert sgd["final_train_loss_mean"] == pytest.approx(0.25)


def test_ranking_counts_diverged_and_failed_runs_at_their_recorded_score(messy_study):
    """sgd's three completed runs average 93 % against adam's 90.7 %, but its diverged run recorded 66 % at
    its best epoch and its failed run 33 %: a result each, so sgd ranks second."""
    _, table = results_for(messy_study)
    assert table.loc["sgd", "score_mean"] == pytest.approx((0.90 + 0.92 + 0.97 + 0.66 + 0.33) / 5)
    assert (table.loc["adam", "rank"], table.loc["sgd", "rank"]) == (1, 2)
    assert math.isnan(table.loc["adam", "p_vs_best"]) and 0 < table.loc["sgd", "p_vs_best"] <= 1
    analysis = analyse(messy_study)  # p vs best is the Holm-adjusted p of the pair: the best was chosen after looking
    tests = pairwise_table(
        analysis.runs[analysis.runs["status"] == "completed"], "test_acc_at_best_val", analysis.settings, analysis.arms
    )
    assert table.loc["sgd", "p_vs_best"] == tests["p_holm"].iloc[0]


def test_problem_runs_are_listed_with_their_error(messy_study):
    analysis = analyse(messy_study)
    problems = problem_runs(analysis.runs).set_index("run_id")
    assert set(problems["status"]) == {"diverged", "failed", "running", "unfinished", "unreadable"}
    assert problems.loc["cifar10/none-0.0/sgd/seed4", "error"] == "RuntimeError: CUDA out of memory"


def test_display_table_shows_percentages_and_counts(messy_study):
    analysis, table = results_for(messy_study)
    shown = display_table(table.reset_index(), 0.9).set_index("optimizer")
    assert shown.loc["sgd", "test acc @ best val (%)"] == "93.00 ± 3.61"
    assert shown.loc["sgd", "seeds"] == "3/8"
    assert "1 diverged" in shown.loc["sgd", "not completed"] and "1 unfinished" in shown.loc["sgd", "not completed"]


def test_runs_with_different_lr_are_separate_groups_not_averaged(tmp_path):
    root = tmp_path / "results"
    for seed, accuracy in enumerate([0.90, 0.92]):
        write_run(root, ramp_records(accuracy), optimizer="adam", seed=seed)
    for seed, accuracy in enumerate([0.80, 0.84]):
        write_run(
            root,
            ramp_records(accuracy),
            optimizer="adam",
            seed=seed,
            overrides={"optimizer.lr": 0.003},
            variant="optimizer.lr=0.003",
        )
    write_run(root, ramp_records(0.95), optimizer="sgd", seed=0)
    analysis, table = results_for(root)
    assert analysis.grouping.arm_keys == ["optimizer", "cfg.optimizer.lr"]
    assert table.loc["adam lr=0.001", "test_acc_at_best_val_mean"] == pytest.approx(0.91)
    assert table.loc["adam lr=0.003", "test_acc_at_best_val_mean"] == pytest.approx(0.82)
    assert table.loc["sgd lr=0.1", "seeds"] == 1


def test_settings_that_differ_are_never_mixed_and_irrelevant_keys_do_not_split(tmp_path):
    root = tmp_path / "results"
    for seed in range(2):
        # Paths, device, logging and the seed differ between these runs: still one group.
        write_run(
            root,
            ramp_records(0.9),
            seed=seed,
            overrides={"paths.data_dir": f"/data{seed}", "device": f"cuda:{seed}", "train.progress_bar": bool(seed)},
        )
        # A key the aggregator has never heard of, changing the numbers: its own group.
        write_run(root, ramp_records(0.7), seed=seed, overrides={"train.grad_accum": 4}, variant="train.grad_accum=4")
        write_run(root, ramp_records(0.6), seed=seed, overrides={"model.width": 16}, variant="model.width=16")
    analysis, _ = results_for(root)
    assert analysis.grouping.setting_keys == [
        "dataset",
        "noise",
        "noise_rate",
        "cfg.model.width",
        "cfg.train.grad_accum",
    ]
    assert analysis.runs.groupby("setting").size().to_dict() == {  # a key unset in a setting is left out of its name
        "cifar10, clean, model.width=64": 2,
        "cifar10, clean, model.width=64, train.grad_accum=4": 2,
        "cifar10, clean, model.width=16": 2,
    }


def test_settings_that_differ_in_a_number_are_ordered_by_its_size_not_its_text(tmp_path):
    """The MNIST-1D ladder's settings read epochs=15, 30, 6, 60 in "Results by setting": sorted as text."""
    root = tmp_path / "results"
    for epochs in (15, 30, 6, 60):
        write_run(root, ramp_records(0.9), overrides={"epochs": epochs}, variant=f"epochs={epochs}")
    assert analyse(root, 0.9).settings == [f"cifar10, clean, epochs={epochs}" for epochs in (6, 15, 30, 60)]


def test_seeds_trained_at_different_precisions_are_different_settings_whatever_the_config_said(tmp_path):
    root = tmp_path / "results"
    # amp: null resolved to fp32 on one machine and bf16 on another; an explicit off is the same fp32.
    for seed, (configured, used) in enumerate([(None, "off"), ("off", "off"), (None, "bf16")]):
        run_dir = write_run(
            root, ramp_records(0.9 - 0.1 * seed), seed=seed, overrides={"device_policy.amp": configured}
        )
        summary = json.loads((run_dir / "summary.json").read_text())
        summary["device_policy"]["amp"] = used
        (run_dir / "summary.json").write_text(json.dumps(summary))
    analysis, _ = results_for(root)
    assert "cfg.device_policy.amp" in analysis.grouping.setting_keys
    assert sorted(analysis.runs.groupby("cfg.device_policy.amp").size().items()) == [("bf16", 1), ("off", 2)]


def test_keys_that_only_differ_between_optimizers_or_datasets_add_no_group(tmp_path):
    root = tmp_path / "results"
    for optimizer in ("sgd", "lion"):  # lr, betas, momentum differ: that is what "optimizer" means
        for dataset, classes in (("cifar10", 10), ("cifar100", 100)):
            write_run(
                root,
                ramp_records(0.8),
                optimizer=optimizer,
                dataset=dataset,
                overrides={"dataset.num_classes": classes},
            )
    analysis, _ = results_for(root)
    assert analysis.grouping.group_keys == ["dataset", "noise", "noise_rate", "optimizer"]


def test_epochs_to_target_is_the_crossing_interpolated_between_evaluations(tmp_path):
    """Validation accuracy 0.5 after epoch 1, 0.91 after epoch 2: 0.9 is reached 0.4 / 0.41 of the way through
    epoch 2 (linear between the two evaluations), not at the whole epoch 2."""
    root = tmp_path / "results"
    write_run(root, [record(1, 0.5, 0.5, 1.0), record(2, 0.91, 0.9, 0.5), record(3, 0.95, 0.94, 0.3)], seed=0)
    write_run(root, [record(1, 0.5, 0.5, 1.0), record(2, 0.8, 0.8, 0.5), record(3, 0.85, 0.84, 0.3)], seed=1)
    write_run(
        root, [record(1, 0.93, 0.9, 1.0), record(2, 0.95, 0.9, 0.5), record(3, 0.96, 0.9, 0.3)], seed=2
    )  # already there at its first evaluation: nothing before it to interpolate from
    analysis, table = results_for(root, target_acc=0.9)
    by_seed = analysis.runs.set_index("seed")["epochs_to_target"]
    assert by_seed[0] == pytest.approx(1 + 0.4 / 0.41) and math.isnan(by_seed[1]) and by_seed[2] == 1.0
    assert table.loc["sgd", "reached_target"] == 2
    shown = display_table(table.reset_index(), 0.9).set_index("optimizer")
    assert shown.loc["sgd", "epochs to val acc ≥ 90%"] == "1.5 ± 0.7 (2/3 reached)"


def test_best_test_accuracy_is_the_optimistic_maximum_and_best_val_picks_the_epoch(tmp_path):
    root = tmp_path / "results"
    write_run(root, [record(1, 0.80, 0.95, 1.0), record(2, 0.90, 0.85, 0.5), record(3, 0.88, 0.86, 0.3)])
    run = analyse(root).runs.iloc[0]
    assert (run["best_epoch"], run["test_acc_at_best_val"]) == (2, 0.85)
    assert (run["final_test_acc"], run["best_test_acc"]) == (0.86, 0.95)


def test_a_run_without_record_or_hydra_config_is_read_from_its_summary(tmp_path):
    root = tmp_path / "results"
    run_dir = write_run(root, ramp_records(0.9), optimizer="lion", noise="symmetric", rate=0.2, write_record=False)
    (run_dir / ".hydra" / "config.yaml").unlink()
    run = analyse(root).runs.iloc[0]
    assert (run["optimizer"], run["noise"], run["noise_rate"], run["status"]) == ("lion", "symmetric", 0.2, "completed")
    assert "no record.json and no .hydra/config.yaml" in run["notes"]


def test_the_record_not_a_rewritten_hydra_config_says_how_a_run_is_grouped(tmp_path):
    """Hydra's .hydra/config.yaml of seed 1 was rewritten to another lr: the record still groups it with seed 0."""
    root = tmp_path / "results"
    for seed in (0, 1):
        write_run(root, ramp_records(0.9), optimizer="adam", seed=seed)
    stale = root / "cifar10/none-0.0/adam/seed1/.hydra/config.yaml"
    stale.write_text(stale.read_text().replace("lr: 0.001", "lr: 0.003"))
    analysis = analyse(root)
    assert list(analysis.runs["cfg.optimizer.lr"]) == [0.001, 0.001]
    assert analysis.arms == ["adam"] and "cfg.optimizer.lr" not in analysis.grouping.group_keys
    assert not any("hydra" in warning for warning in analysis.warnings)


def test_an_older_run_without_a_record_is_read_from_hydra_with_a_warning(tmp_path):
    root = tmp_path / "results"
    write_run(root, ramp_records(0.9), optimizer="adam", overrides={"optimizer.lr": 0.003}, write_record=False)
    analysis = analyse(root)
    assert analysis.runs.iloc[0]["cfg.optimizer.lr"] == 0.003
    assert analysis.runs.iloc[0]["cfg.noise.seed"] == 0  # Hydra's interpolation, resolved
    assert any(
        "no record.json (an older run): config read from .hydra/config.yaml" in warning for warning in analysis.warnings
    )


def test_an_older_run_whose_hydra_config_is_a_list_is_read_from_its_summary_with_a_warning(tmp_path):
    """A .hydra/config.yaml holding a YAML list (not a config) stopped the aggregator with an AttributeError."""
    root = tmp_path / "results"
    run_dir = write_run(root, ramp_records(0.9), optimizer="lion", write_record=False)
    (run_dir / ".hydra" / "config.yaml").write_text("- optimizer\n- lion\n")
    analysis = analyse(root)
    assert analysis.runs.iloc[0]["optimizer"] == "lion"
    assert any(".hydra/config.yaml unreadable (not a mapping)" in warning for warning in analysis.warnings)


def test_a_damaged_record_makes_the_run_unreadable(tmp_path):
    root = tmp_path / "results"
    run_dir = write_run(root, ramp_records(0.9), optimizer="adam")
    (run_dir / "record.json").write_text('{"format": 1, "conf')
    run = analyse(root).runs.iloc[0]
    assert (run["status"], run["optimizer"]) == ("unreadable", "adam")
    assert "record.json is damaged" in run["notes"]


def test_a_folder_with_only_a_record_is_a_run_that_never_finished_an_epoch(tmp_path):
    root = tmp_path / "results"
    run_dir = write_run(root, [], optimizer="lion", write_summary=False)
    (run_dir / "metrics.jsonl").unlink()
    shutil.rmtree(run_dir / ".hydra")
    run = analyse(root).runs.iloc[0]
    assert (run["status"], run["optimizer"]) == ("unfinished", "lion")


def test_grouping_excludes_exactly_the_numbers_free_keys_and_the_replicate_axes():
    keys = [
        "seed",
        "noise.seed",
        "optimizer.lr",
        "epochs",
        "model.width",
        "dataset.val_size",
        "hydra.job.name",
        *identity.NUMBERS_FREE_KEYS,
        *(f"{free}.child" for free in identity.NUMBERS_FREE_KEYS),
    ]
    excluded = {key for key in keys if is_excluded(f"cfg.{key}")} - set(GROUPING_COLUMN_SOURCES.values())
    expected = {*identity.NUMBERS_FREE_KEYS, *(f"{free}.child" for free in identity.NUMBERS_FREE_KEYS), *REPLICATE_KEYS}
    assert excluded == expected
    assert REPLICATE_KEYS == ("seed", "noise.seed")
    assert all(is_excluded(f"cfg.{key}") for key in GROUPING_COLUMN_SOURCES.values())


def test_loading_never_writes_into_run_directories(messy_study):
    before = {path: path.read_bytes() for path in messy_study.rglob("*") if path.is_file()}
    analyse(messy_study)
    after = {path: path.read_bytes() for path in messy_study.rglob("*") if path.is_file()}
    assert before == after


def test_summary_nan_tokens_and_json_round_trip(tmp_path):
    """A diverged summary.json written by json.dumps holds NaN tokens; they must load as NaN, not crash."""
    root = tmp_path / "results"
    records = ramp_records(0.5)
    records[-1]["train/loss"] = math.nan
    run_dir = write_run(root, records, status="diverged")
    assert "NaN" in (run_dir / "summary.json").read_text()
    assert json.loads((run_dir / "metrics.jsonl").read_text().splitlines()[-1])["train/loss"] != 0
    assert analyse(root).runs.iloc[0]["status"] == "diverged"


def test_headline_oracle_and_final_test_accuracy_side_by_side_under_noise(tmp_path):
    """Noisy validation peaks at epoch 3 (test 0.80), clean validation at epoch 2 (test 0.84), final test 0.78."""
    root = tmp_path / "results"
    records = [
        record(1, 0.60, 0.70, 1.0),
        record(2, 0.65, 0.84, 0.5),
        record(3, 0.70, 0.80, 0.3),
        record(4, 0.66, 0.78, 0.2),
    ]
    for entry, clean in zip(records, (0.70, 0.90, 0.85, 0.80)):
        entry["val/acc_clean"] = clean
    for seed in (0, 1):
        write_run(root, records, optimizer="lion", seed=seed, noise="symmetric", rate=0.4)
    analysis, table = results_for(root)
    run = analysis.runs.iloc[0]
    assert (run["test_acc_at_best_val"], run["test_acc_at_best_clean_val"], run["final_test_acc"]) == (0.80, 0.84, 0.78)
    shown = display_table(table.reset_index(), 0.9).set_index("optimizer")
    assert shown.loc["lion", "test acc @ best val (%)"] == "80.00 ± 0.00"
    assert shown.loc["lion", "test acc @ best clean val (%, oracle)"] == "84.00 ± 0.00"
    assert shown.loc["lion", "final test acc (%)"] == "78.00 ± 0.00"
    clean_only = tmp_path / "clean"
    write_run(clean_only, ramp_records(0.9), optimizer="sgd")
    _, clean_table = results_for(clean_only)
    assert "test acc @ best clean val (%, oracle)" not in display_table(clean_table.reset_index(), 0.9)


def test_seconds_to_target_sum_each_epoch_up_to_the_interpolated_crossing(tmp_path):
    """0.80 after epoch 1 (12 s), 0.91 after epoch 2 (11 s): 0.9 is reached 0.1 / 0.11 of the way through epoch 2,
    so after 12 s + (0.1 / 0.11) x 11 s = 22 s."""
    root = tmp_path / "results"
    write_run(
        root,
        [
            record(1, 0.80, 0.8, 1.0, epoch_seconds=12.0),
            record(2, 0.91, 0.9, 0.5, epoch_seconds=11.0),
            record(3, 0.95, 0.9, 0.4, epoch_seconds=10.0),
        ],
    )
    run = analyse(root, 0.9).runs.iloc[0]
    assert (run["epochs_to_target"], run["seconds_to_target"]) == pytest.approx((1 + 0.1 / 0.11, 22.0))
    assert math.isnan(analyse(root, 0.99).runs.iloc[0]["seconds_to_target"])


@pytest.mark.usefixtures("one_thread")
@pytest.mark.slow
def test_every_metric_a_hypothesis_or_tuning_can_name_is_a_column_of_a_real_run(tiny_config, tmp_path):
    """The aggregator's metric names (study_spec.METRICS, SELECTION_METRICS) against the columns load.py
    produces from a run the training wing really wrote: a renamed summary key or column fails here."""
    from optbench.analysis.load import load_runs
    from optbench.formats import run_summary
    from optbench.specs.hypothesis_spec import LANGUAGE_MODEL_METRICS
    from optbench.specs.hypothesis_spec import METRICS as ALL_METRICS
    from optbench.specs.study_spec import SELECTION_METRICS
    from optbench.studies.tuning_protocol import score_of
    from optbench.training.run import train

    METRICS = [name for name in ALL_METRICS if name not in LANGUAGE_MODEL_METRICS]  # a CIFAR run has no bpc
    train(tiny_config(), tmp_path / "results" / "run")
    summary = run_summary.read(tmp_path / "results" / "run")
    runs = load_runs(tmp_path / "results", target_acc=0.0).runs
    assert len(runs) == 1 and runs.loc[0, "status"] == "completed"
    assert set(METRICS) | set(SELECTION_METRICS) <= set(runs.columns)
    assert not [name for name in METRICS if runs[name].isna().any()]
    for name in SELECTION_METRICS:  # tuning scores a run by the same number the aggregator loads
        assert score_of(summary, name) == pytest.approx(runs.loc[0, name])


def test_a_metric_null_in_every_epoch_of_a_diverged_run_stays_a_number_column(tmp_path):
    """A diverged language-model run writes null for its NaN losses; with that column null in every epoch of the
    run, the concatenated curves were object-typed and every learning-curve figure failed (`isfinite`)."""
    root = tmp_path / "results"
    write_run(root, ramp_records(0.9), optimizer="adam", seed=0)
    nulls = [{**line, "train/loss": None} for line in ramp_records(0.9)[:2]]
    write_run(root, nulls, optimizer="adam", seed=1, status="diverged", epochs_planned=3)
    analysis = analyse(root, 0.5)
    assert analysis.curves["train/loss"].dtype == float
    assert analysis.curves["train/loss"].isna().sum() == 2
