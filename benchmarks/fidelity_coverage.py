"""Size, coverage and power of the fidelity rule's two answers, by simulation (docs/fidelity.md, issue 54).

    python benchmarks/fidelity_coverage.py           # rewrite the block between the markers in docs/fidelity.md
    python benchmarks/fidelity_coverage.py --check   # exit 1 when docs/fidelity.md's block differs

The published situation, read from docs/fidelity-study/tables/results.csv (so it follows a republication): 5
optimizers, the published 2- and 16-epoch means, the seed sd pooled over those ten cells, of which half the variance
is a seed effect shared by every optimizer of the seed (initialisation, data order); at 3, 6, 10 and 16 seeds shared
by both rungs, with every optimizer's noise alike and with Muon's three times the others' (the same average spread),
normal and with t(3) seed effects and noise. Per design, LADDERS simulated ladders judged at once
(statistics/fidelity_power.rule_answers) with a fixed generator:
- size: pure noise (five equal optimizers at both rungs) named faithful; the middle four reversed at the cheap rung
  said to keep the top's orders; a real 2-point reversal (one pair 1 point apart at the top, reversed at the rung)
  certified within 2 points;
- coverage: the certified resolution covers the largest true change, with the published changes as the truth (where
  several pairs change almost as much, so above 95 %), and where one change stands alone (the least favourable case,
  eight standard errors of the pair: 95 %);
- power, for an unchanged rung (the top's ranking and gaps): order kept yes, certified within 2 points, and the
  resolution these seeds certify with 80 % power;
then the planner's seeds for each answer at the published spread, with the power simulated at that number.
"""

import argparse
import math
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "scripts"))  # readme_blocks

import readme_blocks  # noqa: E402

from optbench.analysis.statistics import fidelity_power, fidelity_stats  # noqa: E402
from optbench.analysis.writing.tables import to_markdown  # noqa: E402
from optbench.formats import aggregate_tables  # noqa: E402

DOC = REPO / "docs" / "fidelity.md"
STUDY_DOCS = REPO / "docs" / "fidelity-study"
SETTING = "imagefolder, clean"  # the published ladder's setting; its rungs' settings end in ", epochs=N"
ARMS = ("sgd", "adam", "adamw", "lion", "muon")
BEGIN = "<!-- fidelity coverage: written by `python benchmarks/fidelity_coverage.py`; do not edit -->"
END = "<!-- end of fidelity coverage -->"
LADDERS = 4000  # per figure: two binomial standard errors are 0.7 points at 5 %, 1.3 at 80 %
RESOLUTION = fidelity_stats.DEFAULT_RESOLUTION_POINTS


def published_situation(study_docs: Path = STUDY_DOCS) -> tuple[np.ndarray, np.ndarray, float, str]:
    """The published 2- and 16-epoch means per optimizer (ARMS order) and their pooled seed sd, in points, and the
    seeds they rest on (a phrase for the docs)."""
    # by optimizer: an arm's label names its lr and weight decay where two tunings ran at one budget
    results = aggregate_tables.read(study_docs, aggregate_tables.RESULTS).set_index(["setting", "optimizer"])
    cells = results.loc[[(f"{SETTING}, epochs={epochs}", arm) for epochs in (2, 16) for arm in ARMS]]
    means = cells["test_acc_at_best_val_mean"].to_numpy() * 100
    seed_sd = math.sqrt(float((cells["test_acc_at_best_val_std"] ** 2).mean())) * 100
    seeds = sorted({int(n) for n in cells["seeds"]})
    return means[: len(ARMS)], means[len(ARMS) :], seed_sd, " to ".join(str(n) for n in seeds) + " seeds"


PUBLISHED_2, PUBLISHED_16, SEED_SD, PUBLISHED_SEEDS = published_situation()


SEEDS = (3, 6, 10, 16)
ARMS_SPREADS = {"equal": np.ones(5), "Muon 3x": np.array([1.0, 1.0, 1.0, 1.0, 3.0])}
TAILS = {"normal": math.inf, "t(3)": 3.0}


def stack(rng, means, seeds: int, own: np.ndarray, tails: float) -> np.ndarray:
    """LADDERS rungs (ladders x optimizers x seeds), points: half the seed variance shared by a seed's runs."""
    part = SEED_SD / math.sqrt(2)
    return fidelity_power.draw_runs(rng, means, part * own, seeds, LADDERS, part, tails)


def size_columns(rng, seeds: int, own: np.ndarray, tails: float) -> dict:
    """How often the rule says yes where the truth says no: named faithful, or order kept said yes while an order
    the top established is not the rung's (fidelity_power.false_keeps), or a 2-point change certified within 2."""
    columns = {}
    for name, rung_means, top_means in (
        ("pure noise", np.full(5, 50.0), np.full(5, 70.0)),
        ("reversed middle", PUBLISHED_16[[3, 2, 1, 0, 4]] - 25, PUBLISHED_16),
    ):
        rung, top = stack(rng, rung_means, seeds, own, tails), stack(rng, top_means, seeds, own, tails)
        order_yes, certified = fidelity_power.rule_answers(rung, top, 0.05, RESOLUTION)
        wrong = fidelity_power.false_keeps(order_yes, fidelity_power.established_signs(top, 0.05), rung_means)
        columns[f"{name}: faithful / order wrongly kept"] = f"{share(order_yes & certified)} / {share(wrong)}"
    top_means = PUBLISHED_16.copy()
    top_means[0] = top_means[1] + 1.0  # SGD 1 point above Adam at the top, 1 below at the rung: a 2-point change
    rung_means = top_means - 25
    rung_means[0], rung_means[1] = rung_means[0] - 1.0, rung_means[1] + 1.0
    rung, top = stack(rng, rung_means, seeds, own, tails), stack(rng, top_means, seeds, own, tails)
    order_yes, certified = fidelity_power.rule_answers(rung, top, 0.05, RESOLUTION)
    wrong = fidelity_power.false_keeps(order_yes, fidelity_power.established_signs(top, 0.05), rung_means)
    columns["2-point reversal: certified within 2 / order wrongly kept"] = f"{share(certified)} / {share(wrong)}"
    return columns


def coverage_columns(rng, seeds: int, own: np.ndarray, tails: float) -> dict:
    """How often the certified resolution covers the largest true change."""
    true_changes = fidelity_stats.pair_differences((PUBLISHED_2 - PUBLISHED_16)[:, None])[:, 0]
    published = fidelity_stats.certified_resolutions(
        stack(rng, PUBLISHED_2, seeds, own, tails), stack(rng, PUBLISHED_16, seeds, own, tails)
    )
    lone = 8 * SEED_SD * math.sqrt(2 / seeds)  # Adam up and AdamW down by half of it: their pair changes alone
    rung = PUBLISHED_16 - 25
    rung[1], rung[2] = rung[1] + lone / 2, rung[2] - lone / 2
    alone = fidelity_stats.certified_resolutions(
        stack(rng, rung, seeds, own, tails), stack(rng, PUBLISHED_16, seeds, own, tails)
    )
    return {
        "covers the largest change: published": share(published >= np.abs(true_changes).max()),
        "covers a lone change": share(alone >= lone),
    }


def power_columns(rng, seeds: int, own: np.ndarray, tails: float) -> dict:
    """How often an unchanged rung gets each answer, and the resolution it is certified at with 80 % power."""
    rung, top = stack(rng, PUBLISHED_16 - 25, seeds, own, tails), stack(rng, PUBLISHED_16, seeds, own, tails)
    order_yes, certified = fidelity_power.rule_answers(rung, top, 0.05, RESOLUTION)
    resolutions = fidelity_stats.certified_resolutions(rung, top)
    return {
        "unchanged: order kept yes": share(order_yes),
        f"unchanged: certified within {RESOLUTION:g}": share(certified),
        "resolution certified with 80 % power (points)": f"{np.quantile(resolutions, 0.8):.1f}",
    }


def share(hits: np.ndarray) -> str:
    return percent(float(np.mean(hits)))


def percent(value: float) -> str:
    return f"{100 * value:.1f} %"


def design_row(seeds: int, spreads: str, tails: str, rng) -> dict:
    own = ARMS_SPREADS[spreads] / math.sqrt((ARMS_SPREADS[spreads] ** 2).mean())  # the same average spread
    tail = TAILS[tails]
    return {
        "seeds": seeds,
        "spreads": spreads,
        "noise": tails,
        **size_columns(rng, seeds, own, tail),
        **coverage_columns(rng, seeds, own, tail),
        **power_columns(rng, seeds, own, tail),
    }


def planner_rows() -> list[dict]:
    """The planner's seeds for each answer at the published spread (the truth, not a pilot's upper bound), and the
    power simulated at that number with an independent generator."""
    rows = []
    for spreads, scale in ARMS_SPREADS.items():
        own = scale / math.sqrt((scale**2).mean())
        change_spreads, rung_spreads = SEED_SD * own, SEED_SD / math.sqrt(2) * own
        certify = fidelity_power.seeds_to_certify(change_spreads, RESOLUTION)
        signs = np.sign(fidelity_stats.pair_differences(PUBLISHED_16[:, None])[:, 0]).astype(int)
        signs[np.abs(fidelity_stats.pair_differences(PUBLISHED_16[:, None])[:, 0]) < 2.0] = 0  # the clear orders
        keep = fidelity_power.seeds_to_keep(PUBLISHED_16, rung_spreads, signs)
        rows.append(
            {
                "spreads": spreads,
                f"seeds to certify an unchanged rung within {RESOLUTION:g} points": certify,
                "its simulated power": percent(fidelity_power.certify_power(change_spreads, certify, RESOLUTION))
                if certify
                else "-",
                f"seeds to keep the top's {int(np.count_nonzero(signs))} orders more than 2 points apart": keep,
                "its simulated power ": percent(fidelity_power.keep_power(PUBLISHED_16, rung_spreads, signs, keep))
                if keep
                else "-",
            }
        )
    return rows


def coverage_block() -> str:
    """The docs block."""
    import pandas as pd  # only for the tables

    rng = np.random.default_rng(0)
    rows = [design_row(seeds, spreads, tails, rng) for tails in TAILS for spreads in ARMS_SPREADS for seeds in SEEDS]
    return (
        to_markdown(pd.DataFrame(rows))
        + f"\n{LADDERS} simulated ladders per figure (`python benchmarks/fidelity_coverage.py`, generator seed 0); "
        f"resolution wanted: {RESOLUTION:g} points; alpha 0.05; the truth: the published 2- and 16-epoch means "
        f"({PUBLISHED_SEEDS} per mean), seed sd {SEED_SD:.2f} points (pooled over those ten means), half of its "
        "variance shared by a seed's runs; t(3): seed effects and runs' noise from Student's t with 3 degrees of "
        "freedom scaled to the same sd.\n\n"
        + to_markdown(pd.DataFrame(planner_rows()))
        + "\nThe planner's seeds at the published spread (given as the truth, not read from a pilot at its 80 % upper "
        f"bound), and the power simulated at that number ({fidelity_power.SIMULATIONS} ladders, an independent "
        "generator).\n"
    )


def with_block(text: str, block: str) -> str:
    """docs/fidelity.md with the text between its markers replaced by `block`."""
    return readme_blocks.with_block(text, block, BEGIN, END, "docs/fidelity.md")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 when docs/fidelity.md differs")
    args = parser.parse_args(argv)
    current = DOC.read_text()
    try:
        wanted = with_block(current, coverage_block())
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.check:
        if wanted != current:
            print(
                "docs/fidelity.md's coverage block differs: run python benchmarks/fidelity_coverage.py", file=sys.stderr
            )
            return 1
        return 0
    if wanted != current:
        DOC.write_text(wanted)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
