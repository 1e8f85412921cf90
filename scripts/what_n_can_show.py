"""What a comparison of n paired seeds can show, from the aggregator's own power functions.

    python scripts/what_n_can_show.py          # the Markdown table in experiments/README.md, "What n can show"

Per n: the smallest p of the exact sign-flip test (it cannot reach alpha = 0.05 below 6 seeds), the
smallest effect the paired t-test finds 80 % of the time (d_z: mean difference over the sd of the per-seed
differences), and the paired t's power at d = 1, 2 and 4 seed-sd of one arm (d_z = d / sqrt(2) when the
two arms' run noise is independent and equal).
"""

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from optbench.analysis.statistics.exact_tests import min_attainable_p
from optbench.analysis.statistics.power import ALPHA, min_detectable_d, t_power

SEEDS = (3, 4, 5, 6, 8, 10, 16)
EFFECTS = (1.0, 2.0, 4.0)  # in seed-sd of one arm


def row(n: int) -> str:
    floor = min_attainable_p(n, n, paired=True)
    powers = " | ".join(f"{t_power(d / math.sqrt(2), n - 1, math.sqrt(n), ALPHA):.2f}" for d in EFFECTS)
    return f"| {n} | {floor:.3g}{'' if floor < ALPHA else ' (never < 0.05)'} | {min_detectable_d(n):.2f} | {powers} |"


def main() -> int:
    print(
        "| paired seeds n | exact test's smallest p | paired t detects d_z at 80 % | "
        + " | ".join(f"paired t power at d = {d:g}" for d in EFFECTS)
        + " |"
    )
    print("|---|---|---|" + "---|" * len(EFFECTS))
    for n in SEEDS:
        print(row(n))
    return 0


if __name__ == "__main__":
    sys.exit(main())
