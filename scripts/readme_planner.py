"""Write README's seed-planner block from the published CPU-study runs with the real planner, so no figure is typed.

    python scripts/readme_planner.py           # rewrite the block between the markers in README.md
    python scripts/readme_planner.py --check   # exit 1 when README's block differs from the planner's (tests run this)

The block is what `python src/study.py H2 --plan-seeds --pilot docs/cpu-study/runs --delta 1` and `... H3 ... --delta 2`
print, taken from the same planner (optbench/studies/pilot.py plans_from_pilot, which judges the pilot as the
aggregator does and hands each hypothesis to analysis/judging/seed_planner.py): per hypothesis its advice line, the
comparison that sets the seeds with the spread of its per-seed differences, then what it says without --delta
(the pilot's own effects). The pilot is docs/cpu-study/runs, the published runs of the CPU study.
"""

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "scripts"))  # readme_blocks, also when a test loads this file by path

import readme_blocks  # noqa: E402

from optbench.analysis.judging.seed_planner import SeedPlan, comparison_units  # noqa: E402
from optbench.analysis.statistics.fidelity_stats import SD_CONFIDENCE  # noqa: E402
from optbench.specs.hypothesis_spec import HypothesisTest  # noqa: E402
from optbench.specs.study_spec import find_study  # noqa: E402
from optbench.studies.pilot import hypotheses_of, plans_from_pilot  # noqa: E402

README = REPO / "README.md"
PILOT = REPO / "docs" / "cpu-study" / "runs"
EXPERIMENTS = REPO / "experiments"
DELTAS = {"H2": 1.0, "H3": 2.0}  # the effect each hypothesis is planned for (--delta, points of accuracy)
BEGIN = "<!-- planner block: written by `python scripts/readme_planner.py` from docs/cpu-study/runs; do not edit -->"
END = "<!-- end of planner block -->"
WITHOUT_DELTA = "Without `--delta` (the pilot's own effects):"
UNITS = {"pp": "points"}  # the planner's table says pp; the README says points


def plan_of(hypothesis: str, delta: float | None, pilot: Path) -> tuple[SeedPlan, HypothesisTest]:
    """The planner's plan for one hypothesis study (`H2`), as `study.py H2 --plan-seeds --pilot PILOT [--delta]`."""
    study = find_study(hypothesis, EXPERIMENTS)
    (plan,) = plans_from_pilot(study, pilot, EXPERIMENTS, delta)
    (tested,) = hypotheses_of(study, EXPERIMENTS)
    return plan, tested.test


def setter(plan: SeedPlan, test: HypothesisTest) -> str:
    """The comparison whose seeds set the hypothesis's, with its pilot spread; '' when none could be sized."""
    sized = [row for row in plan.comparisons if row.n_pilot and row.seeds_in_hypothesis is not None]
    if plan.seeds_needed is None or not sized:
        return ""
    row = max(sized, key=lambda row: row.seeds_in_hypothesis or 0)
    scale, unit = comparison_units(test)
    return (
        f" {row.comparison} ({row.setting}) sets it: the sd of its per-seed differences over the pilot's "
        f"{row.n_pilot} seeds is {scale * row.spread:.2f} {UNITS.get(unit, unit)}, {scale * row.spread_upper:.2f} "
        f"at its {100 * SD_CONFIDENCE:.0f} % upper bound, the value planned with."
    )


def planner_block(pilot: Path = PILOT) -> str:
    """One bullet per hypothesis: the plan for its effect (--delta), then what the planner says without it."""
    lines = []
    for hypothesis, delta in DELTAS.items():
        plan, test = plan_of(hypothesis, delta, pilot)
        observed, _ = plan_of(hypothesis, None, pilot)
        planned = f"- `{hypothesis} --delta {delta:g}`: {advice(plan)}.{setter(plan, test)}"
        lines.append(f"{planned} {WITHOUT_DELTA} {advice(observed)}.")
    return "\n".join(lines) + "\n"


def advice(plan: SeedPlan) -> str:
    """The planner's advice line as `study.py --plan-seeds` prints it, less the `H2: ` the bullet already says."""
    return plan.advice().removeprefix(f"{plan.hypothesis}: ")


def with_block(readme_text: str, block: str) -> str:
    """README's text with this script's block replaced by `block`."""
    return readme_blocks.with_block(readme_text, block, BEGIN, END)


def main(argv: list[str]) -> int:
    return readme_blocks.main_for(
        argv,
        __doc__.splitlines()[0],
        README,
        lambda current: with_block(current, planner_block()),
        "README's planner block differs from what the planner gives on docs/cpu-study/runs: "
        "run python scripts/readme_planner.py",
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
