"""The group-sequential rule (optbench.analysis.statistics.sequential_rule), simulated: under the null "supported" and
"rejected" each stay at or below alpha over all looks; under a real effect it stops earlier on average than
the fixed design's maximum seeds. Each simulated study is per-seed differences of m comparisons, tested at
each look by the paired t-test the aggregator uses, its p turned into a signed z as the study does."""

import math

import numpy as np
import pytest
from scipy import stats

from optbench.analysis.statistics.sequential_rule import (
    FUTILITY,
    REJECTED,
    SUPPORTED,
    UNDECIDED,
    Design,
    boundaries,
    decide,
    looks_for,
    signed_z,
    spent,
)

ALPHA = 0.05
LOOKS = (3, 6, 10, 16)


def paired_t_p(differences: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean, two-sided p) of the paired t-test along the last axis."""
    n = differences.shape[-1]
    mean = differences.mean(axis=-1)
    t = mean / (differences.std(axis=-1, ddof=1) / math.sqrt(n))
    return mean, 2 * stats.t.sf(np.abs(t), n - 1)


def simulate(effect: float, comparisons: int, studies: int, seed: int) -> tuple[dict, float]:
    """(share of each final decision, mean seeds spent) over simulated studies."""
    design = Design(LOOKS, ALPHA, comparisons)
    rng = np.random.default_rng(seed)
    differences = rng.normal(effect, 1.0, size=(studies, comparisons, LOOKS[-1]))
    outcomes, seeds = [], []
    for study in differences:
        for look, n in enumerate(LOOKS):
            mean, p = paired_t_p(study[:, :n])
            decision = decide([signed_z(pi, mi, "higher") for pi, mi in zip(p, mean)], look, design)
            if decision.decision != "continue":
                break
        outcomes.append(decision.decision)
        seeds.append(n)
    return {name: outcomes.count(name) / studies for name in (SUPPORTED, REJECTED, FUTILITY, UNDECIDED)}, float(
        np.mean(seeds)
    )


def test_the_rule_decides_in_the_words_the_decision_record_keeps():
    """The rule spells its decisions itself (the statistics import no format); the record must accept each one."""
    from optbench.analysis.statistics import sequential_rule
    from optbench.formats import decision_record

    assert sequential_rule.DECISIONS == decision_record.DECISIONS
    assert set(sequential_rule.STOPPED) == set(decision_record.DECISIONS) - {decision_record.CONTINUE}


def test_boundaries_spend_alpha_the_obrien_fleming_way():
    bounds = boundaries(LOOKS, ALPHA)
    assert bounds[0] == pytest.approx(stats.norm.ppf(1 - ALPHA / 2) / math.sqrt(3 / 16), rel=1e-3)  # first look: exact
    assert list(bounds) == sorted(bounds, reverse=True) and 1.96 < bounds[-1] < 2.1
    assert bounds == pytest.approx((4.53, 3.20, 2.49, 2.01), abs=0.005)  # as experiments/README.md gives them
    assert boundaries((16,), ALPHA)[0] == pytest.approx(1.959964, abs=1e-5)  # one look: the fixed design
    assert spent(1.0, ALPHA) == pytest.approx(ALPHA)
    assert looks_for(3, 16) == (3, 6, 10, 16) and looks_for(3, 10) == (3, 6, 10)


@pytest.mark.parametrize("comparisons", [1, 4])
@pytest.mark.slow
def test_under_the_null_supported_and_rejected_each_stay_at_or_below_alpha(comparisons):
    shares, _ = simulate(0.0, comparisons, 1500, seed=comparisons)
    assert shares[SUPPORTED] <= ALPHA and shares[REJECTED] <= ALPHA, shares


def test_under_a_real_effect_it_stops_earlier_than_the_fixed_design_and_decides_it():
    """d_z = 1: the fixed design runs 16 seeds (power ~0.97); the sequential rule stops earlier on average."""
    shares, mean_seeds = simulate(1.0, 1, 800, seed=5)
    assert mean_seeds < LOOKS[-1]
    assert shares[SUPPORTED] > 0.8 and shares[REJECTED] == 0.0, shares


def test_a_hopeless_comparison_stops_for_futility():
    design = Design(LOOKS, ALPHA, 1)
    assert decide([-0.5], 1, design).decision == FUTILITY
    assert decide([1.5], 1, design).decision == "continue"
    assert decide([math.nan], 1, design).decision == "continue"  # not testable yet: keep going
    assert decide([1.0], 3, design).decision == UNDECIDED  # the last look decides or gives up


# ---- the decision record and the study loop -------------------------------------------------------------------


def test_a_decision_once_taken_is_kept_at_later_looks(tmp_path):
    from optbench.formats import decision_record
    from optbench.formats.decision_record import HypothesisDecision, HypothesisDesign

    def taken(decision, reason, seeds):
        return HypothesisDecision(decision, reason, seeds, None, {"c10, clean: sgd vs adam": None}, {})

    design = HypothesisDesign(1, (4.3, 2.0), (4.3, 2.0))
    record = decision_record.new_record("s", (3, 6), ALPHA, "rule", {"H1": design, "H2": design})
    record = decision_record.add_look(record, {"H1": taken("futility", "r", 3), "H2": taken("continue", "r", 3)})
    record = decision_record.add_look(
        record, {"H1": taken("supported", "more data", 6), "H2": taken("supported", "r", 6)}
    )
    assert record.decisions[1].hypotheses["H1"].decision == "futility"
    assert record.stopped() == {"H1": taken("futility", "r", 3), "H2": taken("supported", "r", 6)}
    assert [look.seeds for look in record.decisions] == [3, 6]
    path = decision_record.record_path(tmp_path, "s")
    decision_record.write(path, record)
    assert decision_record.read(path) == record and not list(tmp_path.glob(".*tmp*"))
    path.write_text("{torn")
    with pytest.raises(Exception, match="sequential-s.json is damaged"):
        decision_record.read(path)


STUDY = """id: seqtiny
title: tiny
statement: sgd and adam on synthetic data, until decided
grid: {optimizer: [sgd, adam], seed: [0, 1, 2], dataset: [synthetic], noise: [{name: none}], epochs: 1}
overrides: [dataset.train_size=200, dataset.val_size=100, dataset.test_size=100, model.width=8, batch_size=50,
            device=cpu, train.progress_bar=false]
"""
HYPOTHESIS = "id: HS\nstatement: sgd beats adam\ntest: {kind: metric_comparison, subject: sgd, versus: [adam]}\n"


@pytest.mark.slow
@pytest.mark.extended
def test_a_study_runs_until_decided_records_each_look_and_resumes_without_retraining(tmp_path):
    import subprocess
    import sys

    from conftest import REPO

    from optbench.formats import decision_record

    (tmp_path / "experiments" / "studies").mkdir(parents=True)
    (tmp_path / "experiments" / "hypotheses").mkdir()
    (tmp_path / "experiments" / "studies" / "seqtiny.yaml").write_text(STUDY)
    (tmp_path / "experiments" / "hypotheses" / "hs.yaml").write_text(HYPOTHESIS)
    results = tmp_path / "results"
    command = [
        sys.executable,
        str(REPO / "src" / "study.py"),
        "seqtiny",
        "--until-decided",
        "--max-seeds",
        "4",
        "--experiments",
        str(tmp_path / "experiments"),
        "--set",
        f"paths.results_dir={results}",
    ]
    first = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr[-2000:]
    written = (results / "sequential-seqtiny.json").read_bytes()
    record = decision_record.read(results / "sequential-seqtiny.json")
    assert record.looks == (3, 4) and record.hypotheses["HS"].comparisons == 1
    final = record.decisions[-1].hypotheses["HS"]
    assert final.decision in ("supported", "rejected", "futility", "undecided")  # the last look always decides
    assert b"NaN" not in written  # strict JSON: no number is null
    spent = final.seeds
    seeds = sorted(int(path.name.removeprefix("seed")) for path in results.rglob("seed*") if path.is_dir())
    assert seeds == sorted([*range(spent)] * 2)  # new seeds are ordinary runs; none beyond the stop
    assert f"HS: {final.decision}" in first.stdout and f"seeds spent: {spent}" in first.stdout
    again = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and (results / "sequential-seqtiny.json").read_bytes() == written
    assert "sweep" not in again.stdout  # nothing planned or trained again
    aggregated = subprocess.run(
        [
            sys.executable,
            str(REPO / "src" / "aggregate.py"),
            str(results),
            "--out",
            str(tmp_path / "out"),
            "--experiments",
            str(tmp_path / "experiments"),
            "--no-figures",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert aggregated.returncode == 0, aggregated.stderr
    report = (tmp_path / "out" / "report.md").read_text()
    assert "## Sequential decisions" in report and f"| {final.decision}" in report
    published = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "publish_runs.py"), str(results), str(tmp_path / "published")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert published.returncode == 0, published.stderr
    assert (tmp_path / "published" / "sequential-seqtiny.json").read_bytes() == written


def test_a_hypothesis_heading_for_rejection_is_kept_going_not_abandoned():
    design = Design(LOOKS, ALPHA, 1)
    heading_the_other_way = decide([-2.8], 1, design)
    assert heading_the_other_way.decision == "continue" and "rejected" in heading_the_other_way.reason


def test_later_looks_train_only_the_optimizers_the_open_hypotheses_compare():
    from pathlib import Path
    from types import SimpleNamespace

    from optbench.specs.study_spec import Study
    from optbench.studies.until_decided import study_for_look

    study = Study(
        "s",
        "t",
        "s",
        Path("s.yaml"),
        {"optimizer": ["sgd", "adam", "adamw", "lion", "muon"], "seed": [0, 1, 2], "epochs": 8},
    )
    h1 = SimpleNamespace(id="H1", test=SimpleNamespace(subject="lion", versus=("adamw",)))
    h2 = SimpleNamespace(id="H2", test=SimpleNamespace(subject="sgd", versus=("adam", "adamw", "lion", "muon")))
    both = study_for_look(study, 6, [h1, h2])
    assert both.grid == {**study.grid, "seed": [0, 1, 2, 3, 4, 5]}
    only_h1 = study_for_look(study, 10, [h1])  # H2 decided: sgd, adam and muon get no more seeds
    assert only_h1.grid["optimizer"] == ["adamw", "lion"] and only_h1.grid["seed"] == list(range(10))
    assert only_h1.grid["epochs"] == 8 and study.grid["seed"] == [0, 1, 2]
    no_axis = Study("s", "t", "s", Path("s.yaml"), {"seed": [0, 1, 2]})  # the optimizer comes from overrides
    assert study_for_look(no_axis, 6, [h1]).grid == {"seed": [0, 1, 2, 3, 4, 5]}


def look_folder(root):
    """sgd ahead of adam on seeds 0-9 by 0.05, the per-seed gap wobbling by up to 0.01."""
    from fixtures.aggregate.fake_runs import ramp_records, write_run

    for seed in range(10):
        wobble = 0.001 * ((seed * 7) % 10)
        write_run(root, ramp_records(0.95 + wobble), optimizer="sgd", seed=seed)
        write_run(root, ramp_records(0.90 + 0.002 * (seed % 3)), optimizer="adam", seed=seed)


def look_study():
    from pathlib import Path

    from optbench.specs.study_spec import Study

    return Study(
        "seqlook",
        "t",
        "s",
        Path("seqlook.yaml"),
        {
            "optimizer": ["sgd", "adam"],
            "seed": [0, 1, 2],
            "dataset": ["cifar10"],
            "noise": [{"name": "none"}],
            "epochs": 3,
        },
    )


def hypothesis_with(min_seeds: int):
    from optbench.specs.hypothesis_spec import Hypothesis, HypothesisTest

    return Hypothesis(
        "HX",
        "x",
        "sgd beats adam",
        HypothesisTest("metric_comparison", "sgd", ("adam",), min_seeds=min_seeds),
        "hx.yaml",
    )


def test_a_look_is_decided_on_its_own_seeds_not_every_run_in_the_folder(tmp_path):
    """The folder holds 10 seeds (a later look's, or published runs copied back): look 1 of (3, 6, 10) is decided
    on seeds 0-2. It took its z from all 10 pairs while its record said 3 seeds."""
    from optbench.studies.until_decided import design_record, look_decisions

    look_folder(tmp_path)
    hypothesis, study = hypothesis_with(3), look_study()
    record = design_record(study, [hypothesis], (3, 6, 10))
    record, taken = look_decisions(tmp_path, [hypothesis], record, 0, study)
    entry = taken["HX"]
    key = "cifar10, clean: sgd vs adam"
    sgd = [0.95 + 0.001 * ((seed * 7) % 10) for seed in range(3)]
    adam = [0.90 + 0.002 * (seed % 3) for seed in range(3)]
    mean_gap, p = paired_t_p(np.array(sgd) - np.array(adam))
    assert entry.n == {key: 3} and entry.seeds == 3 and record.hypotheses["HX"].comparisons == 1
    assert entry.z[key] == pytest.approx(signed_z(float(p), float(mean_gap), "higher"), rel=1e-9)


def test_a_comparison_the_verdict_calls_not_testable_gives_the_rule_no_z(tmp_path):
    """min_seeds 4 at a first look of 3 seeds: the verdict calls the comparison not testable, yet its p went
    into decide() as a z. Now it has none, and the study continues until the test has its seeds."""
    from optbench.studies.until_decided import design_record, look_decisions

    look_folder(tmp_path)
    hypothesis, study = hypothesis_with(4), look_study()
    record = design_record(study, [hypothesis], (3, 6, 10))
    entry = look_decisions(tmp_path, [hypothesis], record, 0, study)[1]["HX"]
    assert entry.z == {"cifar10, clean: sgd vs adam": None}  # written as null
    assert entry.decision == "continue" and "not testable" in entry.reason


@pytest.mark.extended
@pytest.mark.slow
def test_the_price_the_docs_quote_comes_from_the_script():
    """experiments/README.md, docs/results.md and sequential_rule's docstring quote scripts/sequential_price.py's
    figures (power at d_z = 1 against the fixed design, effects dropped at the first look, the null's crossing
    rate with and without the futility stop), not figures typed by hand."""
    import importlib.util

    from conftest import REPO

    from optbench.analysis.statistics import sequential_rule

    spec = importlib.util.spec_from_file_location("sequential_price", REPO / "scripts" / "sequential_price.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    found = script.figures()
    quoted = " ".join(script.price_text(found).split())
    for page in ("experiments/README.md", "docs/results.md"):
        assert quoted in " ".join((REPO / page).read_text().split()), page
    full = found[script.LOOK_SETS[0]]
    docstring = " ".join(sequential_rule.__doc__.split())
    assert f"{100 * full['null crossing, without futility']:.1f} % of the time without the futility stop" in docstring
    assert f"{100 * full['null crossing, with futility (as shipped)']:.1f} % with it, as shipped" in docstring
    assert full["power at d_z = 1"] < [v for k, v in full.items() if k.startswith("fixed")][0]  # the price is real


def test_until_decided_on_a_study_that_tests_no_hypothesis_is_one_error_line_and_trains_nothing(tmp_path, capsys):
    """`hypotheses: []` leaves --until-decided nothing to decide; it had gone on to train, and its summary named a
    decision record it never wrote."""
    from optbench.studies import study_command

    (tmp_path / "experiments" / "studies").mkdir(parents=True)
    (tmp_path / "experiments" / "hypotheses").mkdir()
    (tmp_path / "experiments" / "studies" / "seqtiny.yaml").write_text(STUDY + "hypotheses: []\n")
    (tmp_path / "experiments" / "hypotheses" / "hs.yaml").write_text(HYPOTHESIS)
    argv = ["seqtiny", "--until-decided", "--experiments", str(tmp_path / "experiments")]
    code = study_command.main([*argv, "--set", f"paths.results_dir={tmp_path / 'results'}"])
    errors = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(errors) == 1, errors
    assert errors[0].startswith("error: study seqtiny tests no hypothesis") and "without --until-decided" in errors[0]
    assert not (tmp_path / "results").exists()
