"""The seed planner (optbench.analysis.judging.seed_planner, `study.py --plan-seeds`): seed counts against the paired
t-test's sample sizes, the sd's upper bound by hand, a plan from pilot runs with known numbers, and the CLI."""

import math
import subprocess
import sys

import pytest
from conftest import REPO
from fixtures.aggregate.fake_runs import ramp_records, write_run

from optbench.analysis.judging.seed_planner import exact_floor, seeds_for_power
from optbench.analysis.statistics.fidelity_stats import sd_upper_bound

SQRT2 = math.sqrt(2)


def test_one_comparison_needs_65_18_7_4_seeds_for_d_half_1_2_4():
    """Paired t, 80 % power, alpha 0.05, d in seed-sd of one arm (d_z = d / sqrt 2)."""
    assert [seeds_for_power(d / SQRT2, 0.05, 0.8) for d in (0.5, 1, 2, 4)] == [65, 18, 7, 4]


def test_h2s_eight_comparisons_need_10_and_5_seeds_for_d_2_and_4():
    """Each of 8 comparisons at power 0.8^(1/8) so that all 8 together reach 0.8 (intersection-union)."""
    assert [seeds_for_power(d / SQRT2, 0.05, 0.8 ** (1 / 8)) for d in (2, 4)] == [10, 5]
    assert seeds_for_power(0.0, 0.05, 0.8) is None and seeds_for_power(0.01, 0.05, 0.8) is None  # > 200


def test_the_exact_tests_floor_is_6_8_9_seeds_for_1_4_8_comparisons():
    assert [exact_floor(0.05, m) for m in (1, 4, 8)] == [6, 8, 9]


def test_the_sd_upper_bound_is_the_chi_square_one():
    """80 % one-sided bound from 3 values (2 df): chi2.ppf(0.2, 2) = -2 ln 0.8 in closed form."""
    assert sd_upper_bound(1.0, 2) == pytest.approx(math.sqrt(2 / (-2 * math.log(0.8))), rel=1e-9)


def pilot(root, gap: float = 0.01):
    """sgd ahead of adam by `gap` on average, per-seed differences gap + (-0.002, 0, +0.002); 100 s per run."""
    for seed, wobble in enumerate((-0.002, 0.0, 0.002)):
        write_run(root, ramp_records(0.90 + gap + wobble), optimizer="sgd", seed=seed, wall_time_s=100.0)
        write_run(root, ramp_records(0.90), optimizer="adam", seed=seed, wall_time_s=100.0)


def write_hypothesis(experiments, versus="adam"):
    folder = experiments / "hypotheses"
    folder.mkdir(parents=True)
    (folder / "hx.yaml").write_text(
        f"id: HX\nstatement: sgd beats {versus}\ntest: {{kind: metric_comparison, subject: sgd, versus: [{versus}]}}\n"
    )


def test_a_plan_from_pilot_runs_with_known_numbers(tmp_path):
    from optbench.specs.study_spec import find_study
    from optbench.studies.pilot import plans_from_pilot

    pilot(tmp_path / "pilot")
    write_hypothesis(tmp_path / "experiments")
    (plan,) = plans_from_pilot(find_study("full"), tmp_path / "pilot", tmp_path / "experiments", None)
    (row,) = plan.comparisons
    assert row.n_pilot == 3 and row.difference == pytest.approx(0.01)
    assert row.spread == pytest.approx(0.002) and row.spread_upper == pytest.approx(sd_upper_bound(0.002, 2))
    assert row.seeds_alone == seeds_for_power(0.01 / row.spread_upper, 0.05, 0.8)
    assert plan.seeds_needed == row.seeds_in_hypothesis == row.seeds_alone  # one comparison
    assert plan.simulated_power >= 0.75  # the simulation agrees with the noncentral t (4,000 draws)
    assert plan.hours_per_seed == pytest.approx(200 / 3600)  # one run of sgd and one of adam per seed
    assert f"run {plan.seeds_needed} seeds" in plan.advice() and "device-hours" in plan.advice()


def test_a_damaged_decision_record_in_the_pilot_is_one_warning_line_and_the_plan_goes_on(tmp_path, capsys):
    from optbench.specs.study_spec import find_study
    from optbench.studies.pilot import plans_from_pilot

    pilot(tmp_path / "pilot")
    write_hypothesis(tmp_path / "experiments")
    (tmp_path / "pilot" / "sequential-s.json").write_text('{"format": 1, "study": "s", "alpha": "0.05"}')
    (plan,) = plans_from_pilot(find_study("full"), tmp_path / "pilot", tmp_path / "experiments", None)
    assert plan.comparisons[0].n_pilot == 3
    warnings = capsys.readouterr().err.strip().splitlines()
    assert len(warnings) == 1 and warnings[0].startswith(f"warning: {tmp_path / 'pilot' / 'sequential-s.json'}: ")
    assert "field alpha is '0.05'" in warnings[0] and "ignored here" in warnings[0]


@pytest.mark.parametrize("damage", ["truncated", "headline lost"])
def test_a_damaged_pilot_summary_names_the_run_in_one_warning_line_and_the_plan_goes_on(tmp_path, capsys, damage):
    """The plan was made on 3 paired seeds instead of 4 without a word; the aggregator names the run 'unreadable'."""
    import json

    from optbench.specs.study_spec import find_study
    from optbench.studies.pilot import plans_from_pilot

    pilot(tmp_path / "pilot")
    write_run(tmp_path / "pilot", ramp_records(0.911), optimizer="sgd", seed=3, wall_time_s=100.0)  # a 4th pair
    write_run(tmp_path / "pilot", ramp_records(0.90), optimizer="adam", seed=3, wall_time_s=100.0)
    write_hypothesis(tmp_path / "experiments")
    summary = tmp_path / "pilot" / "cifar10" / "none-0.0" / "adam" / "seed1" / "summary.json"
    content = json.loads(summary.read_text())
    content["best"].pop("test/acc")
    summary.write_text(summary.read_text()[:40] if damage == "truncated" else json.dumps(content))
    (plan,) = plans_from_pilot(find_study("full"), tmp_path / "pilot", tmp_path / "experiments", None)
    assert plan.comparisons[0].n_pilot == 3
    (warning,) = capsys.readouterr().err.strip().splitlines()
    assert warning.startswith("warning: pilot run cifar10/none-0.0/adam/seed1: ") and str(summary) in warning
    assert warning.endswith("left out of the plan")


def test_a_pilot_pointing_against_the_claim_says_so(tmp_path):
    from optbench.specs.study_spec import find_study
    from optbench.studies.pilot import plans_from_pilot

    pilot(tmp_path / "pilot", gap=-0.01)
    write_hypothesis(tmp_path / "experiments")
    (plan,) = plans_from_pilot(find_study("full"), tmp_path / "pilot", tmp_path / "experiments", None)
    assert plan.comparisons[0].against_claim and "points against it" in plan.advice()
    (planned,) = plans_from_pilot(find_study("full"), tmp_path / "pilot", tmp_path / "experiments", 1.0)
    assert not planned.comparisons[0].against_claim and planned.comparisons[0].effect == pytest.approx(0.01)


def study_cli(*args, cwd=REPO):
    return subprocess.run(
        [sys.executable, str(REPO / "src" / "study.py"), *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow
def test_plan_seeds_from_the_command_line(tmp_path):
    pilot(tmp_path / "pilot")
    write_hypothesis(tmp_path / "experiments")
    study = REPO / "experiments" / "studies" / "full.yaml"  # a study that is not a hypothesis: plans every one
    done = study_cli(study, "--plan-seeds", "--pilot", tmp_path / "pilot", "--experiments", tmp_path / "experiments")
    assert done.returncode == 0, done.stderr
    assert "## HX: seeds needed" in done.stdout and "| sgd vs adam |" in done.stdout.replace("  ", " ")
    assert "HX: run " in done.stdout
    refused = study_cli("full", "--plan-seeds")
    assert refused.returncode == 2 and refused.stderr.startswith("error: ") and "--pilot" in refused.stderr
    assert refused.stderr.count("\n") == 1


# ---- a difference of drops (H3) from pilot runs ----------------------------------------------------------------

LION_CLEAN, LION_40 = [0.93, 0.94, 0.935], [0.86, 0.875, 0.865]
ADAMW_CLEAN, ADAMW_40 = [0.94, 0.945, 0.94], [0.80, 0.815, 0.79]


def sample_sd(values) -> float:
    centre = sum(values) / len(values)
    return math.sqrt(sum((value - centre) ** 2 for value in values) / (len(values) - 1))


def h3_pilot(root, noisy_seeds):
    """Lion and AdamW clean on seeds 0-2 and at 40 % symmetric noise on `noisy_seeds` (no 20 % runs)."""
    for optimizer, clean, noisy in (("lion", LION_CLEAN, LION_40), ("adamw", ADAMW_CLEAN, ADAMW_40)):
        for seed, accuracy in enumerate(clean):
            write_run(root, ramp_records(accuracy), optimizer=optimizer, seed=seed, wall_time_s=100.0)
        for seed, accuracy in zip(noisy_seeds, noisy):
            write_run(
                root,
                ramp_records(accuracy),
                optimizer=optimizer,
                seed=seed,
                noise="symmetric",
                rate=0.4,
                wall_time_s=100.0,
            )


def h3_plan(root, delta):
    from optbench.analysis.judging.hypotheses import Context, hypothesis_verdict, parse_hypothesis
    from optbench.analysis.judging.seed_planner import plan_seeds
    from optbench.analysis.pipeline import analyse

    analysis = analyse(root)
    verdict = hypothesis_verdict(
        parse_hypothesis(REPO / "experiments" / "hypotheses" / "h3_noise_robustness.yaml"),
        Context(analysis.runs, analysis.curves, analysis.grouping.setting_keys),
    )
    return plan_seeds(verdict, analysis.runs, delta)


def test_a_difference_of_drops_from_an_unpaired_pilot_is_four_independent_runs_per_seed(tmp_path):
    """Clean seeds 0-2, noisy seeds 3-5: nothing pairs, and one seed's difference of drops in the planned study
    holds four independent runs: its sd is 2 x the cells' rms sd, not sqrt(2) x (which asked for about half
    the seeds needed)."""
    h3_pilot(tmp_path, noisy_seeds=(3, 4, 5))
    plan = h3_plan(tmp_path, delta=0.02)
    (row,) = [row for row in plan.comparisons if row.n_pilot]
    rms = math.sqrt(sum(sample_sd(cell) ** 2 for cell in (LION_CLEAN, LION_40, ADAMW_CLEAN, ADAMW_40)) / 4)
    assert row.spread == pytest.approx(2 * rms, rel=1e-9)
    assert row.seeds_alone == seeds_for_power(0.02 / sd_upper_bound(2 * rms, 2), 0.05, 0.8)
    assert "4 independent runs" in row.note


def test_a_required_comparison_the_pilot_cannot_size_still_counts(tmp_path):
    """H3 asks for 20 % and 40 %; the pilot ran 40 % only. The 20 % comparison was left out of the count, so the
    plan was for one comparison at 80 % power. Both count: with --delta the 20 % one borrows the 40 % one's sd
    and each gets power sqrt(0.8); without it, the plan says it cannot size the 20 % comparison."""
    h3_pilot(tmp_path, noisy_seeds=(0, 1, 2))
    plan = h3_plan(tmp_path, delta=0.02)
    sized, borrowed = plan.comparisons
    assert plan.required == 2 and borrowed.n_pilot == 0 and "symmetric 20%" in borrowed.comparison
    assert borrowed.spread_upper == sized.spread_upper
    effect_over_sd = 0.02 / sized.spread_upper
    assert (
        plan.seeds_needed
        == seeds_for_power(effect_over_sd, 0.05, 0.8**0.5)
        > seeds_for_power(effect_over_sd, 0.05, 0.8)
    )
    assert plan.simulated_power >= 0.78 and "all 2 required comparisons" in plan.advice()
    unplanned = h3_plan(tmp_path, delta=None)
    assert unplanned.seeds_needed is None and "cannot size imagefolder" not in unplanned.advice()
    assert "cannot size cifar10: lion vs adamw, clean -> symmetric 20%" in unplanned.advice()


def test_a_plan_pointing_against_the_claim_still_names_the_comparison_it_could_not_size():
    """Two reasons for no seed count: the advice gives the direction first and names the unsized comparison too."""
    from optbench.analysis.judging.seed_planner import ComparisonPlan, SeedPlan

    against = ComparisonPlan(
        setting="cifar10, clean",
        comparison="sgd vs adam",
        n_pilot=3,
        difference=-0.01,
        spread=0.002,
        spread_upper=0.004,
        effect=0.01,
        seeds_alone=None,
        seeds_in_hypothesis=None,
        power_at_pilot=0.1,
        against_claim=True,
    )
    plan = SeedPlan(
        hypothesis="HX",
        alpha=0.05,
        comparisons=[against],
        seeds_needed=None,
        simulated_power=0.0,
        exact_floor=6,
        hours_per_seed=0.1,
        n_pilot=3,
        unsized=("sgd vs muon (cifar10, 40 % noise)",),
        required=2,
    )
    advice = plan.advice()
    assert "points against it (sgd vs adam)" in advice
    assert "cannot size sgd vs muon (cifar10, 40 % noise)" in advice


# ---- README's planner block (scripts/readme_planner.py) ----------------------------------------------------------


def readme_planner_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("readme_planner", REPO / "scripts" / "readme_planner.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def readme_planner():
    """The script, its block computed once (the planner on the published runs, four plans: a few seconds)."""
    module = readme_planner_module()
    module.computed = module.planner_block()
    return module


def test_readmes_planner_block_is_what_the_planner_gives_on_the_published_runs(readme_planner):
    text = readme_planner.README.read_text()
    assert readme_planner.with_block(text, readme_planner.computed) == text
    block = text[text.index(readme_planner.BEGIN) : text.index(readme_planner.END)]
    assert "- `H2 --delta 1`: run " in block and "- `H3 --delta 2`: run " in block


@pytest.mark.parametrize(
    "hypothesis, delta", [("H2", "1"), ("H3", "2"), ("H2", None), ("H3", None)], ids=["H2-1", "H3-2", "H2", "H3"]
)
def test_each_advice_in_the_block_is_what_the_documented_command_prints(readme_planner, capsys, hypothesis, delta):
    """`python src/study.py H2 --plan-seeds --pilot docs/cpu-study/runs --delta 1` prints the block's advice for H2
    (and without --delta, the advice the bullet's last sentence gives)."""
    from optbench.studies import study_command

    pilot, experiments = str(readme_planner.PILOT), str(REPO / "experiments")
    argv = [hypothesis, "--plan-seeds", "--pilot", pilot, "--experiments", experiments]
    assert study_command.main(argv + (["--delta", delta] if delta else [])) == 0
    lines = capsys.readouterr().out.splitlines()
    (printed,) = [line.removeprefix(f"{hypothesis}: ") for line in lines if line.startswith(f"{hypothesis}: ")]
    (bullet,) = [line for line in readme_planner.computed.splitlines() if line.startswith(f"- `{hypothesis} --delta ")]
    if delta:
        assert bullet.startswith(f"- `{hypothesis} --delta {delta}`: {printed}. ")
    else:
        assert bullet.endswith(f" {readme_planner.WITHOUT_DELTA} {printed}.")


def test_a_figure_edited_by_hand_is_caught_and_the_script_writes_it_back(readme_planner, tmp_path, monkeypatch):
    readme = tmp_path / "README.md"
    text = readme_planner.README.read_text()
    edited = text.replace("- `H2 --delta 1`: run ", "- `H2 --delta 1`: run 1", 1)
    assert edited != text
    readme.write_text(edited)
    monkeypatch.setattr(readme_planner, "README", readme)
    monkeypatch.setattr(readme_planner, "planner_block", lambda: readme_planner.computed)  # computed once above
    assert readme_planner.main(["--check"]) == 1 and readme.read_text() == edited  # --check rewrites nothing
    assert readme_planner.main([]) == 0 and readme.read_text() == text


def test_the_planner_block_without_its_markers_is_an_error_line_exit_2(readme_planner, tmp_path, monkeypatch, capsys):
    readme = tmp_path / "README.md"
    readme.write_text("no markers here\n")
    monkeypatch.setattr(readme_planner, "README", readme)
    monkeypatch.setattr(readme_planner, "planner_block", lambda: readme_planner.computed)
    assert readme_planner.main(["--check"]) == 2
    assert capsys.readouterr().err.startswith("error: README.md lacks the markers") and readme.read_text() == (
        "no markers here\n"
    )
