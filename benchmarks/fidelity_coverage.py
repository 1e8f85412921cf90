"""Coverage of the fidelity report's intervals, and how often its rule names a faithful rung, by simulation.

    python benchmarks/fidelity_coverage.py           # rewrite the block between the markers in docs/fidelity.md
    python benchmarks/fidelity_coverage.py --check   # exit 1 when docs/fidelity.md's block differs

The published situation, read from docs/fidelity-study/tables/results.csv (so it follows a republication): 5
optimizers, the published 2- and 16-epoch means as the truth, the seed sd pooled over those ten cells, of which half
the variance is a seed effect shared by every optimizer of the seed (initialisation, data order), at 3, 6 and 10
seeds shared by both rungs; and the same with one optimizer's own
noise three times the others' (unequal spreads: the Tukey intervals assume equal ones). Per design, LADDERS
simulated ladders with a fixed generator: the share whose 95 % simultaneous change intervals cover every true
change, whose tau-b interval covers the true tau-b, and (pure noise: five equal optimizers at both rungs; the
middle four reversed at the cheap rung) the share in which the rule names the cheap rung faithful.
Then, at 3 and 6 seeds, the change intervals' coverage against the true ratio of one optimizer's own noise to the
others' (the same average spread), and how often the report's flag fires (fidelity_stats.spread_ratio estimated
at or above fidelity_stats.UNEQUAL_SPREAD_RATIO): the smallest ratio whose coverage falls below 90 % at either n
is the flag's threshold, and the script fails while UNEQUAL_SPREAD_RATIO says otherwise.
"""

import argparse
import math
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from optbench.analysis.statistics import fidelity_stats  # noqa: E402
from optbench.analysis.writing.tables import to_markdown  # noqa: E402
from optbench.formats import aggregate_tables  # noqa: E402

DOC = REPO / "docs" / "fidelity.md"
STUDY_DOCS = REPO / "docs" / "fidelity-study"
SETTING = "imagefolder, clean"  # the published ladder's setting; its rungs' settings end in ", epochs=N"
ARMS = ("sgd", "adam", "adamw", "lion", "muon")
BEGIN = "<!-- fidelity coverage: written by `python benchmarks/fidelity_coverage.py`; do not edit -->"
END = "<!-- end of fidelity coverage -->"
LADDERS = 1000
RESOLUTION = fidelity_stats.DEFAULT_RESOLUTION_POINTS
SPREAD_RATIOS = (1.0, 1.5, 2.0, 2.5, 3.0, 4.0)  # one optimizer's own noise over the others'


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


def draw(rng, means, seeds: int, own_scale: np.ndarray) -> np.ndarray:
    part = SEED_SD / math.sqrt(2)
    return (
        means[:, None] + rng.normal(0, part, (1, seeds)) + rng.normal(0, part, (len(means), seeds)) * own_scale[:, None]
    )


def design_row(seeds: int, unequal: bool, rng) -> dict:
    own = np.array([1.0, 1.0, 1.0, 1.0, 3.0]) if unequal else np.ones(5)
    own = own / math.sqrt((own**2).mean())  # the same average spread
    truth_tau = fidelity_stats.tau_b(PUBLISHED_2, PUBLISHED_16)
    true_change = {
        (a, b): (PUBLISHED_2[a] - PUBLISHED_2[b]) - (PUBLISHED_16[a] - PUBLISHED_16[b])
        for a, b in fidelity_stats.pairs_of(5)
    }
    reversed_middle = np.array([PUBLISHED_16[i] for i in (3, 2, 1, 0, 4)]) - 25
    counts = dict.fromkeys(("changes", "tau", "noise", "reversed"), 0)
    resolutions = []
    for _ in range(LADDERS):
        low, top = draw(rng, PUBLISHED_2, seeds, own), draw(rng, PUBLISHED_16, seeds, own)
        changes = fidelity_stats.change_intervals(low, top)
        counts["changes"] += all(row.low <= true_change[(row.a, row.b)] <= row.high for row in changes)
        resolutions.append(fidelity_stats.resolution(changes))
        tau_low, tau_high = fidelity_stats.tau_b_interval(low, top)
        counts["tau"] += tau_low <= truth_tau <= tau_high
        flat = [draw(rng, np.full(5, level), seeds, own) for level in (50.0, 70.0)]
        counts["noise"] += fidelity_stats.rung_is_faithful(*flat, 0.05, RESOLUTION)
        swapped = draw(rng, reversed_middle, seeds, own), draw(rng, PUBLISHED_16, seeds, own)
        counts["reversed"] += fidelity_stats.rung_is_faithful(*swapped, 0.05, RESOLUTION)
    share = {key: f"{100 * value / LADDERS:.1f} %" for key, value in counts.items()}
    return {
        "seeds": seeds,
        "spreads": "one optimizer 3x" if unequal else "equal",
        "change intervals cover all 10": share["changes"],
        "median resolution (points)": f"{np.median(resolutions):.1f}",
        "tau-b interval covers": share["tau"],
        "pure noise named faithful": share["noise"],
        "middle reversed named faithful": share["reversed"],
    }


def spread_row(seeds: int, ratio: float, rng) -> dict:
    """Coverage of the change intervals when one optimizer's own noise is `ratio` times the others'."""
    own = np.array([1.0, 1.0, 1.0, 1.0, ratio])
    own = own / math.sqrt((own**2).mean())  # the same average spread
    true_change = {
        (a, b): (PUBLISHED_2[a] - PUBLISHED_2[b]) - (PUBLISHED_16[a] - PUBLISHED_16[b])
        for a, b in fidelity_stats.pairs_of(5)
    }
    covered = flagged = 0
    for _ in range(LADDERS):
        low, top = draw(rng, PUBLISHED_2, seeds, own), draw(rng, PUBLISHED_16, seeds, own)
        changes = fidelity_stats.change_intervals(low, top)
        covered += all(row.low <= true_change[(row.a, row.b)] <= row.high for row in changes)
        flagged += fidelity_stats.spreads_unequal(fidelity_stats.spread_ratio(low - top)[0])
    return {
        "seeds": seeds,
        "one optimizer's spread / the others'": f"{ratio:g}",
        "change intervals cover all 10": f"{100 * covered / LADDERS:.1f} %",
        "flagged possibly under-covering": f"{100 * flagged / LADDERS:.1f} %",
        "covered": covered / LADDERS,
        "ratio": ratio,
    }


def measured_thresholds(rows: list[dict]) -> dict[int, float]:
    """Per number of seeds, the smallest spread ratio whose coverage falls below 90 % (inf: none measured)."""
    below: dict[int, list[float]] = {row["seeds"]: [math.inf] for row in rows}
    for row in rows:
        if row["covered"] < 0.9:
            below[row["seeds"]].append(row["ratio"])
    return {seeds: min(ratios) for seeds, ratios in below.items()}


def coverage_block() -> tuple[str, float]:
    """The docs block and the measured threshold of the unequal-spread flag."""
    rng = np.random.default_rng(0)
    rows = [design_row(seeds, unequal, rng) for unequal in (False, True) for seeds in (3, 6, 10)]
    spreads = [spread_row(seeds, ratio, rng) for seeds in (3, 6) for ratio in SPREAD_RATIOS]
    thresholds = measured_thresholds(spreads)
    threshold = min(thresholds.values())
    measured = ", ".join(f"{ratio:g} at {seeds} seeds" for seeds, ratio in thresholds.items())
    import pandas as pd  # only for the tables

    return (
        to_markdown(pd.DataFrame(rows))
        + f"\n{LADDERS} simulated ladders per row (`python benchmarks/fidelity_coverage.py`, generator seed 0); "
        f"resolution wanted: {RESOLUTION:g} points; the truth: the published 2- and 16-epoch means "
        f"({PUBLISHED_SEEDS} per mean), seed sd {SEED_SD:.2f} points (pooled over those ten means).\n\n"
        + to_markdown(pd.DataFrame(spreads).drop(columns=["covered", "ratio"]))
        + f"\nThe change intervals cover below 90 % from a spread ratio of {measured}: a rung whose estimated "
        f"ratio reaches {fidelity_stats.UNEQUAL_SPREAD_RATIO:g} is flagged; {LADDERS} ladders per row, the same "
        "generator.\n",
        threshold,
    )


def with_block(text: str, block: str) -> str:
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"docs/fidelity.md lacks the markers {BEGIN!r} ... {END!r}")
    return text[: start + len(BEGIN)] + "\n" + block.strip() + "\n" + text[end:]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 when docs/fidelity.md differs")
    args = parser.parse_args(argv)
    current = DOC.read_text()
    block, threshold = coverage_block()
    try:
        wanted = with_block(current, block)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if threshold != fidelity_stats.UNEQUAL_SPREAD_RATIO:
        print(
            f"error: the change intervals cover below 90 % from a spread ratio of {threshold:g}, but "
            f"fidelity_stats.UNEQUAL_SPREAD_RATIO is {fidelity_stats.UNEQUAL_SPREAD_RATIO:g}: set it to "
            f"{threshold:g} and run this again",
            file=sys.stderr,
        )
        return 1
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
