"""The cross-workload report (scripts/cross_workload_study.py): every statistic equals a hand computation, a loss
workload ranks low-first, a workload without runs is named, bad input is one `error:` line, the tau interval's
coverage is measured in the hard case, and the published tables and README block come from the committed runs.

The synthetic study has three workloads of five optimizers x six seeds, with means far apart relative to the seed
noise, so every order is certain and every number below is worked out by hand:
- A (cifar10, accuracy): muon 0.77 > sgd 0.72 > adam 0.71 > adamw 0.70 > lion 0.68;
- B (mnist1d, accuracy): adam 0.92 > adamw 0.91 > muon 0.90 > sgd 0.85 > lion 0.80;
- C (char_lm, validation loss, LOWER is better): muon 1.50 < adamw 1.60 < adam 1.70 < sgd 1.80 < lion 1.90.
"""

import importlib.util
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import REPO
from fixtures.aggregate.fake_runs import record, write_run

from optbench.analysis.judging.cross_workload import judge_cross
from optbench.analysis.statistics.exact_tests import holm
from optbench.analysis.statistics.profile_score import performance_ratios, profile, profile_score
from optbench.analysis.statistics.rank_agreement import (
    bootstrap_interval,
    interval_coverage,
    kendall_tau,
    projection_interval,
    ranks,
    tau_of_means,
)
from optbench.analysis.writing.cross_workload_report import write_report
from optbench.errors import ConfigError
from optbench.formats import aggregate_tables
from optbench.specs.cross_workload_spec import load_parts, part_study


def load_script(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


cross_workload_study = load_script("cross_workload_study")
readme_cross_workload = load_script("readme_cross_workload")
tau_coverage = load_script("tau_coverage")

OPTIMIZERS = ("sgd", "adam", "adamw", "lion", "muon")
SEEDS = range(6)
MEANS = {
    "A": {"muon": 0.77, "sgd": 0.72, "adam": 0.71, "adamw": 0.70, "lion": 0.68},
    "B": {"adam": 0.92, "adamw": 0.91, "muon": 0.90, "sgd": 0.85, "lion": 0.80},
    "C": {"muon": 1.50, "adamw": 1.60, "adam": 1.70, "sgd": 1.80, "lion": 1.90},
}
# The evaluation (of 4) at which each optimizer first reaches its workload's target; None: never.
CROSSES = {
    "A": {"muon": 1, "sgd": 2, "adam": 2, "adamw": 2, "lion": 2},  # val acc >= 0.60
    "B": {"adam": 1, "adamw": 3, "muon": 3, "sgd": 3, "lion": None},  # val acc >= 0.85
    "C": {"muon": 2, "adamw": 2, "adam": 4, "sgd": 4, "lion": 4},  # val loss <= 2.2
}
WORKLOADS = {"A": ("cifar_resnet18", "cifar10"), "B": ("mnist1d", "mnist1d"), "C": ("char_lm", "tinyshakespeare")}
OVERRIDES = {
    "A": {},
    "B": {"workload": "mnist1d", "batch_size": 100},
    "C": {"workload": "char_lm", "dataset.steps_per_epoch": 250},
}
STUDY_OVERRIDES = {
    "A": [],
    "B": ["workload=mnist1d", "batch_size=100"],
    "C": ["workload=char_lm", "dataset.steps_per_epoch=250"],
}
WALL_TIME_S = 360.0  # every synthetic run: 30 runs are 3 device-hours


def curve(part: str, optimizer: str, seed: int) -> list[dict]:
    """Four evaluations: short of the target before the optimizer's crossing, past it from then on, the last the best
    (its headline the optimizer's mean plus a small seed offset)."""
    noise = 0.002 * math.sin(7 * seed + 3 * OPTIMIZERS.index(optimizer))  # spread, never an order change
    crosses, headline = CROSSES[part][optimizer], MEANS[part][optimizer] + noise
    entries = []
    for epoch in range(1, 5):
        past = crosses is not None and epoch >= crosses
        if part == "C":
            entry = record(epoch, 0.1 * epoch, 0.1 * epoch, 1.0)
            entry["val/loss"] = (headline if epoch == 4 else 2.15 - 0.01 * epoch) if past else 2.5 - 0.01 * epoch
        else:
            target = 0.60 if part == "A" else 0.85
            val = target + 0.01 * epoch if past else target - 0.2 + 0.01 * epoch
            entry = record(epoch, val, headline if epoch == 4 else 0.5, 1.0)
        entries.append(entry)
    return entries


def write_part(root: Path, part: str) -> None:
    for optimizer in OPTIMIZERS:
        for seed in SEEDS:
            write_run(
                root,
                curve(part, optimizer, seed),
                optimizer=optimizer,
                seed=seed,
                dataset=WORKLOADS[part][1],
                epochs_planned=4,
                overrides=OVERRIDES[part],
                wall_time_s=WALL_TIME_S,
            )


def hypothesis(folder: Path, name: str, part: str, subject: str) -> None:
    loss = part == "C"
    (folder / f"{name}.yaml").write_text(
        yaml.safe_dump(
            {
                "id": name,
                "title": name,
                "statement": f"{subject} beats adamw",
                "test": {
                    "kind": "metric_comparison",
                    "subject": subject,
                    "versus": ["adamw"],
                    "metric": "val_loss_best" if loss else "test_acc_at_best_val",
                    "better": "lower" if loss else "higher",
                    "where": {"dataset": WORKLOADS[part][1]},
                },
            }
        )
    )


def experiments(root: Path) -> Path:
    """A study file per workload and a parts file with two claims, each a hypothesis per workload."""
    folder = root / "experiments"
    (folder / "studies").mkdir(parents=True)
    for part, (_, dataset) in WORKLOADS.items():
        study = {
            "id": f"study_{part}",
            "statement": f"workload {part}",
            "grid": {
                "optimizer": list(OPTIMIZERS),
                "seed": list(SEEDS),
                "dataset": [dataset],
                "noise": [{"name": "none"}],
                "epochs": 4,
            },
            "overrides": STUDY_OVERRIDES[part],
        }
        (folder / "studies" / f"study_{part}.yaml").write_text(yaml.safe_dump(study))
    cross = folder / "cross"
    (cross / "hypotheses").mkdir(parents=True)
    for part in WORKLOADS:
        hypothesis(cross / "hypotheses", f"X1-{part}", part, "muon")
        hypothesis(cross / "hypotheses", f"X3-{part}", part, "lion")
    parts = {
        "optimizers": list(OPTIMIZERS),
        "parts": [{"workload": workload, "study": f"study_{part}"} for part, (workload, _) in WORKLOADS.items()],
        "claims": [
            {
                "id": claim,
                "title": claim,
                "hypotheses": {workload: f"{claim}-{part}" for part, (workload, _) in WORKLOADS.items()},
            }
            for claim in ("X1", "X3")
        ],
    }
    (cross / "parts.yaml").write_text(yaml.safe_dump(parts))
    return folder


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    root = tmp_path_factory.mktemp("cross")
    for part in WORKLOADS:
        write_part(root / "runs", part)
    folder = experiments(root)
    return root / "runs", folder


def judged(study, **kwargs):
    runs, folder = study
    return judge_cross(runs, load_parts(folder / "cross" / "parts.yaml"), folder, **kwargs)


# ---- statistics against hand computations ------------------------------------------------------------------


def test_kendall_tau_counts_concordant_and_discordant_pairs_by_hand():
    # one of ten pairs swapped: (9 - 1) / 10
    assert kendall_tau([5, 4, 3, 2, 1], [5, 4, 3, 1, 2]) == pytest.approx(0.8)
    assert kendall_tau([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(50, 5)), rng.normal(size=(50, 5))
    assert tau_of_means(a, b) == pytest.approx([kendall_tau(x, y) for x, y in zip(a, b)])


def test_a_loss_ranks_its_lowest_mean_first():
    assert list(ranks([2.1, 2.6, 2.4], higher_is_better=False)) == [1, 3, 2]
    assert list(ranks([0.7, 0.9, 0.8], higher_is_better=True)) == [3, 1, 2]


def test_the_projection_interval_counts_only_orders_both_workloads_establish():
    rng = np.random.default_rng(1)
    noise = rng.normal(0, 0.001, (3, 6))
    # optimizers 0 and 1 tied, both far above 2, on both workloads: pairs (0, 2) and (1, 2) certain, (0, 1) open:
    # tau lies in [(2 x 2 - 3) / 3, (3 - 2 x 0) / 3]
    tied = np.array([10.0, 10.0, 0.0])[:, None] + noise
    assert projection_interval(tied, tied + rng.normal(0, 0.001, (3, 6))) == pytest.approx((1 / 3, 1.0))
    ordered = np.array([3.0, 2.0, 1.0])[:, None] + noise
    assert projection_interval(ordered, ordered[::-1]) == pytest.approx((-1.0, -1.0))


def test_the_profile_score_is_the_area_under_the_profile_by_hand():
    costs = np.array([[100.0, 200.0, math.inf], [50.0, 50.0, 400.0]])  # 2 workloads x 3 optimizers
    assert performance_ratios(costs).tolist() == [[1.0, 2.0, math.inf], [1.0, 1.0, 8.0]]
    # (4 - r)+ / 3 averaged over workloads: [1, 1] -> 1; [2/3, 1] -> 5/6; [0, 0] -> 0
    assert profile_score(costs) == pytest.approx([1.0, 5 / 6, 0.0])
    assert profile(costs, [1.0, 2.0, 4.0]).tolist() == [[1.0, 1.0, 1.0], [0.5, 1.0, 1.0], [0.0, 0.0, 0.0]]
    integral = [np.trapezoid(profile(costs, grid := np.linspace(1, 4, 30001))[arm], grid) / 3 for arm in range(3)]
    assert integral == pytest.approx(profile_score(costs), abs=1e-3)  # the exact area is the integral


def test_holm_by_hand():
    assert holm([0.01, 0.04, 0.03]).tolist() == pytest.approx([0.03, 0.06, 0.06])


# ---- the synthetic study ----------------------------------------------------------------------------------


def test_each_workload_ranks_in_its_direction_and_the_matrix_holds_the_ranks(study):
    result = judged(study)
    matrix = result.ranks.set_index("optimizer")
    assert list(matrix.columns) == ["cifar_resnet18", "mnist1d", "char_lm"]
    for part, (workload, _) in WORKLOADS.items():
        wanted = sorted(MEANS[part], key=MEANS[part].get, reverse=part != "C")
        assert [matrix.loc[name, workload] for name in wanted] == [1, 2, 3, 4, 5], workload
    loss = result.ranking[result.ranking["workload"] == "char_lm"].set_index("optimizer")
    assert loss.loc["muon", "mean"] == pytest.approx(1.50, abs=0.003) and not loss["higher_is_better"].any()


def test_pairwise_tests_are_holm_adjusted_within_each_workload(study):
    pairwise = judged(study).pairwise
    assert len(pairwise) == 3 * 10
    for _, tests in pairwise.groupby("workload"):
        assert tests["p_holm"].tolist() == pytest.approx(holm(tests["p_value"]).tolist())
        assert tests["significant"].all()  # gaps of a point or more over a 0.2-point seed noise


def test_tau_between_workloads_is_the_hand_count_and_respects_the_loss_direction(study):
    tau = judged(study).tau.set_index(["workload_a", "workload_b"])
    # A vs B: 6 concordant, 4 discordant pairs; A vs C and B vs C: 7 and 3 (C read low-first; read high-first
    # it would be -0.4)
    assert tau.loc[("cifar_resnet18", "mnist1d"), "tau"] == pytest.approx(0.2)
    assert tau.loc[("cifar_resnet18", "char_lm"), "tau"] == pytest.approx(0.4)
    assert tau.loc[("mnist1d", "char_lm"), "tau"] == pytest.approx(0.4)
    # every order is certain on every workload: the projection interval is the point itself
    assert tau["low"].tolist() == pytest.approx(tau["tau"].tolist())
    assert tau["high"].tolist() == pytest.approx(tau["tau"].tolist())


def test_time_to_target_is_counted_in_steps_at_the_first_evaluation_past_the_target(study):
    result = judged(study)
    steps = result.targets.set_index(["workload", "optimizer"])["median_steps"]
    # A: ceil(45,000 images / 128) = 352 steps an epoch; B: 450 at batch 100; C: 250 steps per evaluation
    assert steps[("cifar_resnet18", "muon")] == 352 and steps[("cifar_resnet18", "sgd")] == 704
    assert steps[("mnist1d", "adam")] == 450 and steps[("mnist1d", "muon")] == 1350
    assert steps[("mnist1d", "lion")] == math.inf  # never reached: infinity, and no run counts as reached
    assert result.targets.set_index(["workload", "optimizer"]).loc[("mnist1d", "lion"), "reached"] == 0
    assert steps[("char_lm", "muon")] == 500 and steps[("char_lm", "lion")] == 1000
    score = result.profile.set_index("optimizer")["score"]
    # ratios muon (1, 3, 1), sgd (2, 3, 2), adam (2, 1, 2), adamw (2, 3, 1), lion (2, inf, 2); each adds (4 - r)+ / 3
    assert score.to_dict() == pytest.approx({"muon": 7 / 9, "sgd": 5 / 9, "adam": 7 / 9, "adamw": 2 / 3, "lion": 4 / 9})


def test_claims_are_judged_per_workload_by_the_harness_rule_and_across_them(study):
    claims = judged(study).claims.set_index("claim")
    # Muon beats AdamW on A and on C (a lower loss), loses on B: rejected there, so it fails across workloads
    assert claims.loc["X1", ["cifar_resnet18", "mnist1d", "char_lm"]].tolist() == ["supported", "rejected", "supported"]
    assert claims.loc["X1", "every_workload"] == "fails" and "mnist1d" in claims.loc["X1", "why"]
    assert claims.loc["X3", "every_workload"] == "fails"


def test_device_hours_add_every_main_run(study):
    cost = judged(study).cost.set_index("workload")
    assert cost.loc["mnist1d", "main_runs"] == 30 and cost.loc["mnist1d", "main_hours"] == pytest.approx(3.0)
    assert cost.loc["total", "main_hours"] == pytest.approx(9.0) and cost.loc["total", "tuning_hours"] == 0


def test_a_workload_without_runs_is_named_missing_and_the_rest_is_reported(study, tmp_path, capsys):
    runs, folder = study
    partial = tmp_path / "runs"
    shutil.copytree(runs, partial, ignore=shutil.ignore_patterns("tinyshakespeare"))
    code = cross_workload_study.main(
        [
            str(partial),
            "--out",
            str(tmp_path / "out"),
            "--parts",
            str(folder / "cross" / "parts.yaml"),
            "--experiments",
            str(folder),
            "--no-figures",
        ]
    )
    assert code == 0
    assert "char_lm: missing (no runs of study_C" in capsys.readouterr().out
    parts = aggregate_tables.read(tmp_path / "out", aggregate_tables.CROSS_PARTS).set_index("workload")
    assert parts.loc["char_lm", "status"] == "missing" and parts.loc["mnist1d", "status"] == "ranked"
    claims = aggregate_tables.read(tmp_path / "out", aggregate_tables.CROSS_CLAIMS).set_index("claim")
    assert claims.loc["X1", "char_lm"] == "not yet"
    assert len(aggregate_tables.read(tmp_path / "out", aggregate_tables.CROSS_TAU)) == 1  # A vs B only
    assert "**char_lm: missing**" in (tmp_path / "out" / "report.md").read_text()


def test_a_workload_some_optimizer_has_not_finished_is_shown_but_neither_ranked_nor_profiled(study, tmp_path):
    runs, folder = study
    partial = tmp_path / "runs"
    shutil.copytree(runs, partial)
    shutil.rmtree(partial / "mnist1d" / "none-0.0" / "muon")
    result = judge_cross(partial, load_parts(folder / "cross" / "parts.yaml"), folder)
    parts = result.parts_table.set_index("workload")
    assert (
        parts.loc["mnist1d", "status"] == "incomplete" and "no completed run yet: muon" in parts.loc["mnist1d", "note"]
    )
    assert list(result.ranks.columns) == ["optimizer", "cifar_resnet18", "char_lm"]
    assert result.ranking.loc[result.ranking["workload"] == "mnist1d", "rank"].isna().all()
    assert list(result.tau["workload_b"]) == ["char_lm"]  # cifar_resnet18 vs char_lm only
    assert list(result.costs.index) == ["cifar_resnet18", "char_lm"]  # the profile compares the same workloads
    assert (result.profile["workloads"] == 2).all()


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda root, folder: ["/no/such/folder", "--experiments", str(folder)], "is not a folder"),
        (lambda root, folder: [str(root), "--parts", str(root / "absent.yaml")], "no such parts file"),
    ],
)
def test_bad_input_is_one_error_line_exit_2_and_writes_nothing(study, tmp_path, capsys, make, words):
    runs, folder = study
    out = tmp_path / "out"
    assert cross_workload_study.main([*make(runs, folder), "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert error.startswith("error: ") and words in error and error.count("\n") == 1
    assert not out.exists()


def test_a_parts_file_naming_an_unknown_workload_or_a_claim_outside_its_parts_is_refused(tmp_path):
    bad = tmp_path / "parts.yaml"
    bad.write_text(yaml.safe_dump({"optimizers": ["sgd"], "parts": [{"workload": "mnist1", "study": "cross_mnist1d"}]}))
    with pytest.raises(ConfigError, match="did you mean workload=mnist1d"):
        load_parts(bad)
    bad.write_text(
        yaml.safe_dump(
            {
                "optimizers": ["sgd"],
                "parts": [{"workload": "mnist1d", "study": "cross_mnist1d"}],
                "claims": [{"id": "X9", "hypotheses": {"char_lm": "X2"}}],
            }
        )
    )
    with pytest.raises(ConfigError, match="claim X9 names workload char_lm, which no part has"):
        load_parts(bad)


def test_the_cifar_part_is_cpu_fidelitys_sixteen_epoch_rung_and_a_wrong_rung_is_named():
    spec = load_parts()
    cifar = next(part for part in spec.parts if part.workload == "cifar_resnet18")
    study = part_study(cifar)
    assert study.grid["epochs"] == 16 and study.tuned_by == "tune_cpu_demo" and not study.rungs
    with pytest.raises(ConfigError, match="epochs=32 is no rung of study cpu_fidelity"):
        part_study(type(cifar)("cifar_resnet18", "cpu_fidelity", ("epochs=32",)))


def test_the_published_cifar_runs_give_the_readme_ranking():
    """cpu_fidelity at 16 epochs, selected from the fidelity study's folder (every rung, both tunings, noisy runs)."""
    spec = load_parts()
    result = judge_cross(REPO / "docs" / "fidelity-study" / "runs", spec)
    cifar = result.ranking[result.ranking["workload"] == "cifar_resnet18"].set_index("optimizer")
    assert cifar["completed"].tolist() == [6] * 5
    assert (100 * cifar["mean"]).round(1).to_dict() == {
        "sgd": 71.8,
        "adam": 71.1,
        "adamw": 70.8,
        "lion": 68.2,
        "muon": 77.3,
    }
    claims = result.claims.set_index("claim")
    assert claims.loc["X1", "cifar_resnet18"] == "supported" and claims.loc["X3", "cifar_resnet18"] == "rejected"


# ---- the interval's coverage, measured in the hard case -------------------------------------------------------


def test_the_projection_interval_covers_in_the_hard_case_where_the_bootstrap_does_not():
    """Five optimizers, six seeds, sd 1 point, all five within 1.2 points: the percentile bootstrap centres on the
    scrambled observed ranking and misses tau = 1 about half the time; the projection interval keeps 95 %."""
    near = tau_coverage.WITHIN_A_POINT
    projection = interval_coverage(near, near, 6, 1.0, projection_interval, 300, np.random.default_rng(2))
    bootstrap = interval_coverage(
        near, near, 6, 1.0, lambda a, b: bootstrap_interval(a, b, resamples=500), 300, np.random.default_rng(2)
    )
    assert projection.truth == pytest.approx(1.0) and projection.covered / projection.simulations >= 0.95
    assert bootstrap.covered / bootstrap.simulations < 0.7


def test_the_coverage_table_states_its_monte_carlo_interval(tmp_path):
    assert tau_coverage.main(["--out", str(tmp_path), "--simulations", "40"]) == 0
    table = aggregate_tables.read(tmp_path, aggregate_tables.TAU_COVERAGE)
    assert len(table) == len(tau_coverage.SCENARIOS) * len(tau_coverage.INTERVALS)
    assert (table["coverage"] == table["covered"] / table["simulations"]).all()
    assert ((table["mc_low"] <= table["coverage"]) & (table["coverage"] <= table["mc_high"])).all()


@pytest.mark.slow
def test_the_committed_coverage_table_is_what_the_script_gives(tmp_path):
    committed = REPO / "docs" / "cross-workload-study" / aggregate_tables.TAU_COVERAGE
    assert tau_coverage.main(["--out", str(tmp_path)]) == 0
    assert (tmp_path / aggregate_tables.TAU_COVERAGE).read_text() == committed.read_text()


# ---- what is published ------------------------------------------------------------------------------------------

STUDY_DOCS = REPO / "docs" / "cross-workload-study"


def test_committed_tables_are_what_the_committed_runs_give(tmp_path):
    result = judge_cross(STUDY_DOCS / "runs", load_parts())
    write_report(result, tmp_path, "command", draw_figures=False)
    written = sorted(path.name for path in (tmp_path / "tables").glob("*.csv"))
    others = ("tau_coverage.csv", "tuning_budget")  # written beside it by tau_coverage.py and tuning_budget.py
    committed = sorted(path.name for path in (STUDY_DOCS / "tables").glob("*.csv") if not path.name.startswith(others))
    assert written == committed
    for name in written:
        assert (tmp_path / "tables" / name).read_text() == (STUDY_DOCS / "tables" / name).read_text(), name


def test_readme_block_is_the_one_the_committed_docs_give(capsys):
    current = readme_cross_workload.README.read_text()
    wanted = readme_cross_workload.with_block(current, readme_cross_workload.cross_workload_block())
    assert current == wanted, "README's cross-workload block is stale: run python scripts/readme_cross_workload.py"
    assert readme_cross_workload.main(["--check"]) == 0, capsys.readouterr().err
    block = current.split(readme_cross_workload.BEGIN)[1].split(readme_cross_workload.END)[0].strip()
    assert len(block.splitlines()) <= 12


def test_the_readme_block_reads_the_tables_and_names_a_workload_not_yet_ranked(study, tmp_path):
    runs, folder = study
    partial = tmp_path / "runs"
    shutil.copytree(runs, partial, ignore=shutil.ignore_patterns("tinyshakespeare"))
    result = judge_cross(partial, load_parts(folder / "cross" / "parts.yaml"), folder)
    write_report(result, tmp_path / "out", "command", draw_figures=False)
    block = readme_cross_workload.cross_workload_block(tmp_path / "out")
    assert "| rank (mean) | cifar_resnet18 (test acc) | mnist1d (test acc) | char_lm |" in block
    muon = next(line for line in block.splitlines() if line.startswith("| Muon |"))
    assert muon.startswith("| Muon | 1 (77.") and "| 3 (90." in muon and muon.endswith("| not yet |")
    assert "cifar_resnet18 vs mnist1d 0.20 [0.20, 0.20]" in block
    assert "Not yet ranked: char_lm (study_C: missing)" in block
    assert len(block.strip().splitlines()) <= 12


def test_a_trial_in_two_tuning_records_costs_once():
    """A range a revision left as it was keeps its trials: the same run directory in an earlier record and the
    current one is one run, its hours counted once (summing the records counted SGD's MNIST-1D trials twice)."""
    from optbench.analysis.judging.cross_cost import tuning_totals
    from optbench.analysis.judging.tuning_report import read_tuning_file

    path = REPO / "docs/cross-workload-study/first-space/tuning-tune_mnist1d.json"
    first = read_tuning_file(path, str(path)).record
    runs, hours, devices = tuning_totals([first])
    assert runs == 170 and hours > 0 and devices == {"cpu"}
    assert tuning_totals([first, first]) == (runs, hours, devices)


def test_a_run_of_the_same_settings_on_another_seed_is_not_the_parts_evidence(study, tmp_path):
    """A fidelity ladder's top rung shares a main study's settings (fidelity_mnist1d's 60-epoch seeds 6-29 beside
    cross_mnist1d's 0-5): selected by settings alone, those seeds joined the workload's ranking and its cost."""
    runs, folder = study
    extra = tmp_path / "runs"
    shutil.copytree(runs, extra)
    part = next(iter(WORKLOADS))
    write_run(
        extra,
        curve(part, OPTIMIZERS[0], 99),
        optimizer=OPTIMIZERS[0],
        seed=99,
        dataset=WORKLOADS[part][1],
        epochs_planned=4,
        overrides=OVERRIDES[part],
        wall_time_s=WALL_TIME_S,
    )
    before, after = judged(study), judge_cross(extra, load_parts(folder / "cross" / "parts.yaml"), folder)
    assert after.cost.equals(before.cost) and after.ranking.equals(before.ranking)


def test_a_part_whose_grid_has_not_ended_is_neither_ranked_nor_judged_yet(study, tmp_path):
    """Three of a fixed-design study's seeds do not make its verdict: judged on part of its grid, the claim would
    read as the study's answer at a sample size nobody fixed (the language model's first main runs did)."""
    runs, folder = study
    partial = tmp_path / "runs"
    shutil.copytree(runs, partial)
    some_run = next((partial / "mnist1d" / "none-0.0" / "muon").rglob("summary.json"))
    shutil.rmtree(some_run.parent)
    result = judge_cross(partial, load_parts(folder / "cross" / "parts.yaml"), folder)
    claims = result.claims.set_index("claim")
    assert claims.loc["X1", "mnist1d"] == "not yet"
    parts = result.parts_table.set_index("workload")  # nor ranked, though every optimizer has completed runs
    assert parts.loc["mnist1d", "status"] == "incomplete" and "runs study" in parts.loc["mnist1d", "note"]
    assert claims.loc["X1", ["cifar_resnet18", "char_lm"]].tolist() == ["supported", "supported"]
    assert claims.loc["X1", "every_workload"] == "not decided"
