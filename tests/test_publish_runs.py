"""scripts/publish_runs.py: a study's run records without checkpoints, from which the aggregator gives the same
answer."""

import importlib.util

import numpy as np
from conftest import REPO
from fixtures.aggregate.fake_runs import ramp_records, write_predictions, write_run
from fixtures.aggregate.fake_tuning import Trial, write_tuning_study

spec = importlib.util.spec_from_file_location("publish_runs", REPO / "scripts" / "publish_runs.py")
publish_runs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(publish_runs)


def small_study(results):
    """Two optimizers x two seeds with their predictions.npz, one diverged run, a checkpoint beside each, and a
    tuning study."""
    for optimizer, accuracies in {"sgd": (0.61, 0.63), "adam": (0.58, 0.60)}.items():
        for seed, accuracy in enumerate(accuracies):
            run_dir = write_run(results, ramp_records(accuracy), optimizer=optimizer, seed=seed)
            (run_dir / "checkpoint.pt").write_bytes(b"weights")
            write_predictions(run_dir, np.arange(100) < 100 * accuracy, epoch=3)
    write_run(results, ramp_records(0.1)[:2], optimizer="adam", seed=2, status="diverged", epochs_planned=3)
    write_tuning_study(results / "tuning", {"sgd": [Trial(0.05, 1e-3, [0.5, 0.52]), Trial(0.2, 1e-4, [0.4])]})


def test_records_are_copied_checkpoints_are_not_and_every_status_is_kept(tmp_path):
    results, published = tmp_path / "results", tmp_path / "docs" / "runs"
    small_study(results)
    statuses = publish_runs.publish(results, published)
    assert statuses == {"completed": 4 + 3, "diverged": 1}  # 3 tuning runs, completed
    assert not list(published.rglob("checkpoint.pt"))
    copied = sorted(path.relative_to(published) for path in published.rglob("*") if path.is_file())
    expected = sorted(
        path.relative_to(results) for path in results.rglob("*") if path.is_file() and path.name != "checkpoint.pt"
    )
    assert copied == expected
    assert len(list(published.rglob("predictions.npz"))) == 4
    assert (published / "tuning" / "tuning-tune_demo.json").read_bytes() == (
        results / "tuning" / "tuning-tune_demo.json"
    ).read_bytes()


def test_the_aggregator_gives_the_same_tables_from_the_published_copy(tmp_path):
    from optbench.analysis import aggregate

    results, published = tmp_path / "results", tmp_path / "runs"
    small_study(results)
    publish_runs.publish(results, published)
    original = aggregate(results, tmp_path / "from-results", draw_figures=False)
    copy = aggregate(published, tmp_path / "from-copy", draw_figures=False)
    assert original.runs == copy.runs == 5  # tuning trials set aside in both
    for table in ("tables/results.csv", "tables/pairwise.csv", "tables/tuning.csv", "tables/variance.csv"):
        assert (tmp_path / "from-copy" / table).read_text() == (tmp_path / "from-results" / table).read_text()


def test_publishing_into_a_folder_inside_the_results_does_not_copy_itself(tmp_path):
    results = tmp_path / "results"
    small_study(results)
    first = publish_runs.publish(results, results / "published")
    assert publish_runs.publish(results, results / "published") == first


def test_bad_source_is_one_error_line_and_exit_2(tmp_path, capsys):
    assert publish_runs.main([str(tmp_path / "missing"), str(tmp_path / "out")]) == 2
    assert publish_runs.main([str(tmp_path), str(tmp_path / "out")]) == 2
    errors = capsys.readouterr().err.splitlines()
    assert len(errors) == 2 and all(line.startswith("error: ") for line in errors)
    assert not (tmp_path / "out").exists()
