"""What the sequential rule costs: its error under the null and its power at a real effect, simulated.

    python scripts/sequential_price.py         # the figures experiments/README.md and docs/results.md quote

Each simulated study is one comparison's per-seed differences (normal, sd 1, mean d_z), tested at each look by
the paired t-test the aggregator uses, its two-sided p turned into a signed z (sequential_rule.signed_z) and
decided by sequential_rule.decide, exactly as `study.py --until-decided` does. Printed, for looks 3, 6, 10, 16
and for looks 3, 6, 10 (at most 10 seeds):
- under the null (d_z = 0): how often a boundary is crossed (supported or rejected), with the futility stop as
  shipped and without it (futility read as "continue"): the boundaries are solved for normal z scores, and a
  t-test's p turned into a z at 3 or 6 seeds is not one, so the crossing rate is not exactly alpha;
- at d_z = 1: the sequential rule's power (supported), its mean seeds, the share stopped for futility at the
  first look (a real effect dropped after 3 seeds), beside the fixed design's power at the same largest n.
Seeded, so the figures repeat; STUDIES studies per figure (about a minute on 2 cores).
"""

import math
import sys
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from optbench.analysis.statistics.sequential_rule import (
    CONTINUE,
    FUTILITY,
    REJECTED,
    SUPPORTED,
    Design,
    decide,
    signed_z,
)

ALPHA = 0.05
LOOK_SETS = ((3, 6, 10, 16), (3, 6, 10))
STUDIES = 20_000
SEED = 0


def paired_t_p(differences: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean, two-sided p) of the paired t-test of each study's per-seed differences (rows)."""
    result = stats.ttest_1samp(differences, 0.0, axis=-1)
    return differences.mean(axis=-1), result.pvalue


def simulate(effect: float, looks: tuple[int, ...], futility: bool, studies: int = STUDIES, seed: int = SEED) -> dict:
    """Shares of each decision, the mean seeds spent, and the share stopped for futility at the first look;
    without `futility` a futility stop before the last look continues."""
    design = Design(looks, ALPHA, 1)
    draws = np.random.default_rng(seed).normal(effect, 1.0, size=(studies, looks[-1]))
    tests = [paired_t_p(draws[:, :n]) for n in looks]  # every study's test at every look, at once
    ended = []
    for study in range(studies):
        for look in range(len(looks)):
            mean, p = tests[look][0][study], tests[look][1][study]
            decision = decide([signed_z(p, mean, "higher")], look, design).decision
            if decision == FUTILITY and not futility and look < len(looks) - 1:
                decision = CONTINUE
            if decision != CONTINUE:
                break
        ended.append((decision, looks[look]))
    share = {name: sum(decision == name for decision, _ in ended) / studies for name in (SUPPORTED, REJECTED)}
    return {
        "crossed": share[SUPPORTED] + share[REJECTED],
        "supported": share[SUPPORTED],
        "mean_seeds": float(np.mean([n for _, n in ended])),
        "dropped_at_first_look": sum(decision == FUTILITY and n == looks[0] for decision, n in ended) / studies,
    }


def fixed_power(effect: float, n: int) -> float:
    """The fixed design's power: the two-sided paired t-test at alpha, significant in the stated direction."""
    t_crit = stats.t.isf(ALPHA / 2, n - 1)
    return float(stats.nct.sf(t_crit, n - 1, effect * math.sqrt(n)))


def figures(studies: int = STUDIES, seed: int = SEED) -> dict:
    found = {}
    for looks in LOOK_SETS:
        null_shipped = simulate(0.0, looks, True, studies, seed)
        null_plain = simulate(0.0, looks, False, studies, seed)
        effect = simulate(1.0, looks, True, studies, seed + 1)
        found[looks] = {
            "null crossing, with futility (as shipped)": null_shipped["crossed"],
            "null crossing, without futility": null_plain["crossed"],
            "power at d_z = 1": effect["supported"],
            f"fixed design's power at {looks[-1]} seeds": fixed_power(1.0, looks[-1]),
            "mean seeds at d_z = 1": effect["mean_seeds"],
            "real effects dropped after the first look": effect["dropped_at_first_look"],
        }
    return found


def price_text(found: dict) -> str:
    """The sentences experiments/README.md and docs/results.md quote (tests/test_sequential.py checks them)."""
    full, ten = found[LOOK_SETS[0]], found[LOOK_SETS[1]]
    fixed = [value for name, value in full.items() if name.startswith("fixed")][0]
    fixed_ten = [value for name, value in ten.items() if name.startswith("fixed")][0]
    return (
        f"at a true d_z = 1 its power is {full['power at d_z = 1']:.2f} against {fixed:.2f} for the fixed 16 "
        f"seeds (mean {full['mean seeds at d_z = 1']:.1f} seeds), and {ten['power at d_z = 1']:.2f} against "
        f"{fixed_ten:.2f} with at most 10 seeds (mean {ten['mean seeds at d_z = 1']:.1f}); the futility stop drops "
        f"{100 * full['real effects dropped after the first look']:.1f} % of those real effects after the first "
        f"3 seeds ({100 * ten['real effects dropped after the first look']:.1f} % with at most 10). Under the null "
        f"a boundary is crossed {100 * full['null crossing, without futility']:.1f} % of the time without the "
        f"futility stop ({100 * ten['null crossing, without futility']:.1f} % with at most 10 seeds) and "
        f"{100 * full['null crossing, with futility (as shipped)']:.1f} % with it, as shipped "
        f"({100 * ten['null crossing, with futility (as shipped)']:.1f} %)"
    )


def main() -> int:
    print(f"{STUDIES} simulated studies per figure, seed {SEED}, alpha {ALPHA}")
    found = figures()
    for looks, values in found.items():
        print(f"looks {', '.join(map(str, looks))}:")
        for name, value in values.items():
            print(f"  {name}: {value:.2f}" if "mean seeds" in name else f"  {name}: {value:.4f}")
    print(f"\nAs the docs quote it: {price_text(found)}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
