"""Human label noise in the aggregator: each label set is a noise setting (kind human, its name and realised
rate), its transition matrix is drawn as a heatmap, and H3 can name human label sets."""

import json
import math

import pytest
from conftest import REPO
from fixtures.aggregate.fake_runs import ramp_records, write_run

from optbench.analysis.judging.hypotheses import Context, hypothesis_verdict, parse_hypothesis
from optbench.analysis.pipeline import aggregate, analyse
from optbench.errors import ConfigError
from optbench.specs.study_spec import PlannedSetting, find_study, planned_settings

H3_HUMAN = REPO / "experiments" / "hypotheses" / "h3_noise_robustness_human.yaml"
RATES = {"aggre": 0.090133, "worst": 0.402111}  # realised on the training split (as summary.json records them)


def matrix_for(rate: float, classes: int = 10, per_class: int = 100) -> list[list[int]]:
    """Counts (true x given): each class keeps 1 - rate of its images, the rest go to the next class."""
    wrong = round(rate * per_class)
    return [
        [
            per_class - wrong if given == true else wrong if given == (true + 1) % classes else 0
            for given in range(classes)
        ]
        for true in range(classes)
    ]


def write_human_run(root, accuracy: float, optimizer: str, seed: int, label_set: str):
    run_dir = write_run(
        root,
        ramp_records(accuracy),
        optimizer=optimizer,
        seed=seed,
        noise="human",
        rate=0.0,
        variant=f"set-{label_set}",
        overrides={"noise.label_set": label_set},
    )
    summary = json.loads((run_dir / "summary.json").read_text())
    summary["noise"].update(
        realised_rate=RATES[label_set],
        label_set=label_set,
        annotated_dataset="cifar10",
        transition_matrix=matrix_for(RATES[label_set]),
    )
    (run_dir / "summary.json").write_text(json.dumps(summary))
    return run_dir


def human_study(root, seeds=range(3), lion_drops=(0.02, 0.05), adamw_drops=(0.04, 0.10)):
    for seed in seeds:
        lion_clean, adamw_clean = 0.90 + 0.003 * seed, 0.91 + 0.002 * seed
        write_run(root, ramp_records(lion_clean), optimizer="lion", seed=seed)
        write_run(root, ramp_records(adamw_clean), optimizer="adamw", seed=seed)
        for label_set, lion_drop, adamw_drop in zip(("aggre", "worst"), lion_drops, adamw_drops):
            write_human_run(root, lion_clean - lion_drop - 0.001 * (seed % 2), "lion", seed, label_set)
            write_human_run(root, adamw_clean - adamw_drop, "adamw", seed, label_set)


def test_each_label_set_is_a_setting_named_by_kind_set_and_realised_rate(tmp_path):
    human_study(tmp_path)
    analysis = analyse(tmp_path)
    assert analysis.settings == ["cifar10, clean", "cifar10, human aggre 9.01%", "cifar10, human worst 40.21%"]
    human = analysis.runs[analysis.runs["noise"] == "human"]
    assert set(human["label_set"]) == {"aggre", "worst"} and set(human["noise_rate"]) == {0.0901, 0.4021}
    assert "cfg.noise.label_set" not in analysis.grouping.setting_keys  # the realised rate already tells them apart


def test_the_report_draws_each_label_sets_transition_matrix(tmp_path):
    from optbench.analysis import aggregate

    human_study(tmp_path / "results")
    outcome = aggregate(tmp_path / "results", tmp_path / "out", experiments_dir=REPO / "experiments")
    figures = sorted(path.name for path in (tmp_path / "out" / "figures").glob("transition_matrix_*.png"))
    assert len(figures) == 2 and any("worst" in name for name in figures) and any("aggre" in name for name in figures)
    assert "Human label noise, who was taken for whom: cifar10, human worst 40.21%" in outcome.report.read_text()


def test_h3_names_human_label_sets_and_each_is_a_required_comparison(tmp_path):
    human_study(tmp_path, seeds=range(7))
    analysis = analyse(tmp_path)
    result = hypothesis_verdict(
        parse_hypothesis(H3_HUMAN), Context(analysis.runs, analysis.curves, analysis.grouping.setting_keys)
    )
    assert [check.comparison for check in result.checks] == [
        "lion vs adamw, clean -> human aggre 9.01%",
        "lion vs adamw, clean -> human worst 40.21%",
    ]
    assert result.verdict == "supported"
    worst = result.checks[1].numbers
    assert worst["drop_subject"] == pytest.approx(0.05 + 0.001 * 3 / 7) and worst["drop_other"] == pytest.approx(0.10)


def test_a_planned_label_set_without_runs_is_named_missing(tmp_path):
    human_study(tmp_path)
    for run_dir in tmp_path.rglob("set-worst"):
        for child in sorted(run_dir.rglob("*"), reverse=True):
            child.unlink() if child.is_file() else child.rmdir()
        run_dir.rmdir()
    analysis = analyse(tmp_path)
    planned = [
        PlannedSetting("cifar10", "none", 0.0, ("lion", "adamw")),
        *(
            PlannedSetting("cifar10", "human", math.nan, ("lion", "adamw"), label_set)
            for label_set in ("aggre", "worst")
        ),
    ]
    result = hypothesis_verdict(
        parse_hypothesis(H3_HUMAN),
        Context(analysis.runs, analysis.curves, analysis.grouping.setting_keys, planned=planned),
    )
    assert result.verdict == "inconclusive"
    missing = [check for check in result.checks if check.outcome == "missing"]
    assert missing and all("human worst" in check.comparison for check in missing)


def aggregate_human_study(tmp_path):
    """`aggregate.py tmp_path/results --study human_noise_cpu --target-acc 0.5`, without figures."""
    return aggregate(
        tmp_path / "results",
        tmp_path / "out",
        0.5,
        REPO / "experiments",
        draw_figures=False,
        study=find_study("human_noise_cpu"),
    )


def test_a_study_planning_label_sets_aggregates_a_folder_without_human_runs(tmp_path):
    """`aggregate.py --study human_noise_cpu` on a folder of clean CIFAR-10 runs only (no label_set column at all):
    the study's one hypothesis is judged, its planned data set named as missing runs, the others listed as not
    tested by this study, instead of a KeyError."""
    for seed in range(3):
        for optimizer in ("lion", "adamw"):
            write_run(tmp_path / "results", ramp_records(0.9 - 0.01 * seed), optimizer=optimizer, seed=seed)
    outcome = aggregate_human_study(tmp_path)
    assert outcome.verdicts == {"H3-human": "inconclusive"}
    report = outcome.report.read_text()
    assert "no runs of adamw, lion in this planned setting (imagefolder)" in report
    assert "Not judged here: H1, H2, H3 (not tested by study human_noise_cpu)." in report


def test_a_human_noise_drop_test_needs_label_sets(tmp_path):
    path = tmp_path / "h.yaml"
    path.write_text(
        "id: H9\nstatement: x\ntest: {kind: noise_drop, subject: lion, versus: adamw, noise: human, rates: [0.2]}\n"
    )
    with pytest.raises(ConfigError, match="test.noise: human needs test.label_sets"):
        parse_hypothesis(path)


def test_the_study_plans_human_label_sets_in_their_own_directories():
    from optbench.specs.study_spec import find_study

    study = find_study("H3-human", REPO / "experiments")
    assert {(setting.noise, setting.label_set) for setting in planned_settings(study)} == {
        ("none", ""),
        ("human", "aggre"),
        ("human", "worst"),
    }


@pytest.mark.extended
@pytest.mark.slow
def test_the_cpu_study_plans_clean_aggre_and_worst_runs_with_the_shared_label_file(capsys, tmp_path):
    from optbench.studies.study_command import main

    if not (REPO.parent / "shared" / "data" / "cifar10-jpeg").is_dir():
        pytest.skip("the study plans on ../shared/data/cifar10-jpeg, which this checkout has not beside it")
    # An empty results folder: the plan must not depend on the runs this checkout happens to hold.
    main(["human_noise_cpu", "--dry-run", "--no-estimate", "--set", f"paths.results_dir={tmp_path}"])
    planned = capsys.readouterr().out.split("study human_noise_cpu:")[1]
    assert "18 runs in 4 sweep(s)" in planned and "warning" not in planned
    for level in ("none-0.0", "human-aggre", "human-worst"):
        assert sum(f"/{level}/" in line for line in planned.splitlines() if line.strip().startswith("new")) == 6
    assert "noise.label_file=../shared/data/cifar-n/CIFAR-10_human.pt" in planned


def test_a_folder_without_human_label_noise_is_not_asked_h3_human_and_keeps_its_columns(tmp_path):
    for seed in range(3):
        write_run(tmp_path, ramp_records(0.9), optimizer="lion", seed=seed)
        write_run(tmp_path, ramp_records(0.9), optimizer="adamw", seed=seed)
    analysis = analyse(tmp_path)
    assert "label_set" not in analysis.runs
    result = hypothesis_verdict(
        parse_hypothesis(H3_HUMAN), Context(analysis.runs, analysis.curves, analysis.grouping.setting_keys)
    )
    assert result.checks == [] and result.verdict == "inconclusive"


def test_a_study_planning_label_sets_names_them_missing_where_only_its_clean_runs_are_here(tmp_path):
    """`--study human_noise_cpu` on its clean runs alone: the label sets it planned have no runs, so H3-human is
    inconclusive with both named as missing, not "not tested" as though nobody had asked for them."""
    budget = {"model.width": 16, "dataset.train_subset": 10000}  # the study's: 8 epochs, width 16, 10,000 images
    for seed in range(3):
        for optimizer in ("lion", "adamw"):
            write_run(
                tmp_path / "results",
                ramp_records(0.9 - 0.01 * seed, epochs=8),
                optimizer=optimizer,
                seed=seed,
                dataset="imagefolder",
                overrides=budget,
            )
    outcome = aggregate_human_study(tmp_path)
    assert outcome.verdicts == {"H3-human": "inconclusive"}
    report = outcome.report.read_text()
    assert "2 of 2 missing" in report
    assert "lion: no runs at human aggre" in report and "adamw: no runs at human worst" in report
