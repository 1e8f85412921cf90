"""One verdict per hypothesis and scope (optbench.analysis.judging.verdicts), read from outside through the aggregator:
a hypothesis is judged on the settings of the study that tests it, a sequential study's decision is its verdict,
the named study's other hypotheses and those without runs get no verdict, and tables/verdicts.csv holds one row
per hypothesis."""

import csv

import pytest
from fixtures.aggregate.fake_runs import ramp_records, write_run

from optbench.formats import decision_record
from optbench.formats.decision_record import HypothesisDecision, HypothesisDesign

STUDY = """id: clean_study
title: clean only
statement: sgd and adam on clean labels, until decided
grid: {optimizer: [sgd, adam], seed: [0, 1, 2], dataset: [cifar10], noise: [{name: none}], epochs: 3}
"""
NOISY_STUDY = """id: noisy_study
title: noisy
statement: sgd and adam at 40 % symmetric noise, for HY only
hypotheses: [HY]
grid: {optimizer: [sgd, adam], seed: [0, 1, 2], dataset: [cifar10], noise: [{name: symmetric, rate: 0.4}], epochs: 3}
"""
HX = (
    "id: HX\ntitle: sgd first\nstatement: sgd beats adam\n"
    "test: {kind: metric_comparison, subject: sgd, versus: [adam]}\n"
)
HY = (
    "id: HY\ntitle: adam under noise\nstatement: adam beats sgd under noise\n"
    "test: {kind: metric_comparison, subject: adam, versus: [sgd], where: {noise: symmetric}}\n"
)
HZ = "id: HZ\ntitle: muon\nstatement: muon beats lion\ntest: {kind: metric_comparison, subject: muon, versus: [lion]}\n"


def experiments(root):
    if (root / "studies").is_dir():
        return root
    (root / "studies").mkdir(parents=True)
    (root / "hypotheses").mkdir()
    (root / "studies" / "clean_study.yaml").write_text(STUDY)
    (root / "studies" / "noisy_study.yaml").write_text(NOISY_STUDY)
    for name, text in (("hx", HX), ("hy", HY), ("hz", HZ)):
        (root / "hypotheses" / f"{name}.yaml").write_text(text)
    return root


def folder(root):
    """Clean runs on seeds 0-5 (the sequential study's two looks), sgd ahead; noisy runs on seeds 0-2, sgd behind
    on seeds 0 and 1 and far ahead on seed 2; a decision record: HX supported at the second look (6 seeds)."""
    for seed in range(6):
        write_run(root, ramp_records(0.95 + 0.001 * seed), optimizer="sgd", seed=seed)
        write_run(root, ramp_records(0.90 + 0.002 * (seed % 3)), optimizer="adam", seed=seed)
    for seed, (sgd, adam) in enumerate(((0.60, 0.61), (0.62, 0.63), (0.70, 0.50))):
        write_run(root, ramp_records(sgd), optimizer="sgd", seed=seed, noise="symmetric", rate=0.4)
        write_run(root, ramp_records(adam), optimizer="adam", seed=seed, noise="symmetric", rate=0.4)
    design = HypothesisDesign(1, (3.0, 2.1), (3.0, 2.1))
    record = decision_record.new_record("clean_study", (3, 6), 0.05, "rule", {"HX": design})
    comparison = "cifar10, clean: sgd vs adam"
    record = decision_record.add_look(
        record, {"HX": HypothesisDecision("continue", "cp 60 %", 3, 0.6, {comparison: 3.0}, {comparison: 3})}
    )
    record = decision_record.add_look(
        record,
        {"HX": HypothesisDecision("supported", "every comparison crossed z >= 2.10", 6, None, {comparison: 4.0}, None)},
    )
    decision_record.write(decision_record.record_path(root, "clean_study"), record)
    return root


def rows(path):
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def aggregated(tmp_path, **options):
    from optbench.analysis import aggregate

    outcome = aggregate(
        folder(tmp_path / "runs"),
        tmp_path / "out",
        experiments_dir=experiments(tmp_path / "exp"),
        draw_figures=False,
        **options,
    )
    return outcome, {row["hypothesis"]: row for row in rows(tmp_path / "out" / "tables" / "verdicts.csv")}


def test_a_hypothesis_a_sequential_study_decided_is_judged_on_its_plan_and_its_decision_is_the_verdict(tmp_path):
    """HX's study ran on clean labels until decided; the folder also holds noisy runs of the same optimizers. HX
    was judged on both settings (the noisy one inconclusive on 3 seeds) while the decision supported it: now its
    one verdict is the decision, on the clean setting, and the noisy runs stay in their own setting's tables."""
    outcome, verdicts = aggregated(tmp_path)
    hx = verdicts["HX"]
    assert (hx["verdict"], hx["rule"], hx["settings"], hx["seeds"]) == (
        "supported",
        "sequential rule, look 2 of 2",
        "cifar10, clean",
        "6",
    )
    assert "every comparison crossed z >= 2.10 at look 2 of 2 (6 seeds)" in hx["why"]
    checks = [row for row in rows(tmp_path / "out" / "tables" / "hypotheses.csv") if row["hypothesis"] == "HX"]
    assert [row["setting"] for row in checks] == ["cifar10, clean"]
    assert outcome.verdicts["HX"] == "supported"
    report = outcome.report.read_text()
    section = report[report.index("### HX") : report.index("### HY")]
    assert "Fixed-design evaluation of the same runs (the 6 seeds of that look)" in section
    assert "Seeds needed" not in section  # decided: no planner advice
    table = report[report.index("| hypothesis | judged on") : report.index("### HX")]
    assert table.count("| HX ") == 1 and "**SUPPORTED**" in table
    assert "symmetric 40%" in report[report.index("## Results by setting") :]


def test_without_a_study_every_hypothesis_is_judged_on_the_settings_here_and_one_without_runs_is_not_tested(tmp_path):
    _, verdicts = aggregated(tmp_path)
    assert verdicts["HY"]["rule"] == "fixed design" and verdicts["HY"]["settings"] == "cifar10, symmetric 40%"
    assert verdicts["HZ"]["verdict"] == "not tested" and "no setting has runs of muon, lion" in verdicts["HZ"]["why"]


def test_with_the_study_named_only_its_hypotheses_are_judged_and_the_others_are_listed_in_one_line(tmp_path):
    """The human-noise report judged H1, H2 and H3, which its study never ran: rows of "missing" around the one
    verdict it was made for."""
    from optbench.specs.study_spec import find_study

    outcome, verdicts = aggregated(tmp_path, study=find_study("noisy_study", experiments(tmp_path / "exp")))
    assert list(outcome.verdicts) == ["HY"]
    assert verdicts["HX"]["verdict"] == verdicts["HZ"]["verdict"] == "not tested"
    assert verdicts["HX"]["why"] == "not tested by study noisy_study"
    report = outcome.report.read_text()
    assert "Not judged here: HX, HZ (not tested by study noisy_study)." in report
    assert "### HX" not in report and "### HZ" not in report


def test_a_study_naming_a_hypothesis_no_file_defines_is_refused(tmp_path):
    from optbench.errors import ConfigError
    from optbench.specs.study_spec import find_study

    experiments(tmp_path / "exp")
    (tmp_path / "exp" / "studies" / "noisy_study.yaml").write_text(NOISY_STUDY.replace("[HY]", "[H9]"))
    from optbench.analysis import aggregate

    with pytest.raises(ConfigError, match="hypotheses names H9, which no hypothesis file defines"):
        aggregate(
            folder(tmp_path / "runs"),
            tmp_path / "out",
            experiments_dir=tmp_path / "exp",
            draw_figures=False,
            study=find_study("noisy_study", tmp_path / "exp"),
        )


def test_a_sequential_study_is_judged_at_its_own_budget_not_at_a_ladder_s_other_rungs(tmp_path):
    """A fidelity ladder beside the study: the same optimizers and seeds on clean labels at 6 epochs, adam ahead
    there. The study ran at 3 epochs, so HX's family is the 3-epoch setting alone; the 6-epoch runs stay in their
    own setting's tables (and the fidelity section)."""
    for seed in range(3):
        for optimizer, accuracy in (("sgd", 0.90), ("adam", 0.97)):
            write_run(
                tmp_path / "runs", ramp_records(accuracy, epochs=6), optimizer=optimizer, seed=seed, variant="epochs=6"
            )
    outcome, verdicts = aggregated(tmp_path)
    assert (verdicts["HX"]["verdict"], verdicts["HX"]["settings"]) == ("supported", "cifar10, clean, epochs=3")
    checks = [row for row in rows(tmp_path / "out" / "tables" / "hypotheses.csv") if row["hypothesis"] == "HX"]
    assert [row["setting"] for row in checks] == ["cifar10, clean, epochs=3"]
    assert "cifar10, clean, epochs=6" in outcome.report.read_text()


def test_a_study_listing_no_hypotheses_judges_none(tmp_path):
    """`hypotheses: []`: no verdict, every hypothesis listed as not tested by the study, in one line; the clean
    study's decision record (HX) is no verdict here either, as for any hypothesis the named study does not test."""
    from optbench.specs.study_spec import find_study

    exp = experiments(tmp_path / "exp")
    (exp / "studies" / "noisy_study.yaml").write_text(NOISY_STUDY.replace("[HY]", "[]"))
    outcome, verdicts = aggregated(tmp_path, study=find_study("noisy_study", exp))
    assert outcome.verdicts == {}
    assert {name: row["verdict"] for name, row in verdicts.items()} == dict.fromkeys(("HX", "HY", "HZ"), "not tested")
    assert "Not judged here: HX, HY, HZ (not tested by study noisy_study)." in outcome.report.read_text()


def test_only_study_reports_the_named_studys_runs_and_leaves_the_others_out(tmp_path):
    """`--only-study` (aggregate(..., only_study=True)): the folder holds the clean study's runs and decision record
    beside the noisy study's runs. Named with --study, the noisy study's report showed the clean runs' tables and
    the clean study's sequential decisions; with --only-study it shows its own 6 runs and says 12 are left out, and
    its verdict is the one it had (HY on its planned setting). Without the flag nothing changes."""
    from optbench.specs.study_spec import find_study

    exp = experiments(tmp_path / "exp")
    study = find_study("noisy_study", exp)
    everything, verdicts = aggregated(tmp_path / "all", study=study)
    shown = rows(tmp_path / "all" / "out" / "summary.csv")
    assert len(shown) == 18 and "## Sequential decisions" in everything.report.read_text()
    only, only_verdicts = aggregated(tmp_path / "only", study=study, only_study=True)
    shown = rows(tmp_path / "only" / "out" / "summary.csv")
    assert len(shown) == only.runs == 6 and {row["noise"] for row in shown} == {"symmetric"}
    assert only_verdicts["HY"] == verdicts["HY"] and only.verdicts == everything.verdicts == {"HY": "inconclusive"}
    report = only.report.read_text()
    assert "## Sequential decisions" not in report and "clean_study" not in report
    assert "12 more run directories here are other studies' (settings noisy_study does not plan" in report
    assert "cifar10, clean" not in report


def test_only_study_needs_the_study_named(tmp_path):
    from optbench.analysis import aggregate
    from optbench.errors import ConfigError

    with pytest.raises(ConfigError, match="--only-study reports the runs of the study named with --study"):
        aggregate(folder(tmp_path / "runs"), tmp_path / "out", draw_figures=False, only_study=True)
    assert not (tmp_path / "out").exists()
