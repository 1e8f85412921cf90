"""Measure how often each interval of Kendall's tau between two workloads' rankings holds the true tau, by simulation.

    python scripts/tau_coverage.py --out docs/cross-workload-study [--simulations 2000]

The hard case of the cross-workload study: five optimizers, six seeds per workload, seed noise of one point (sd),
and true means as close as CIFAR's (Adam, AdamW and SGD within a point at 16 epochs) or closer. For each scenario
both intervals (analysis/statistics/rank_agreement.py: the projection interval the report prints, and the
percentile bootstrap over seeds) are computed on every simulated pair of workloads, and the share that holds tau
between the true means is written with its Monte Carlo interval (exact binomial, resampling.monte_carlo_rate) to
OUT/tables/tau_coverage.csv (its columns in formats/aggregate_tables.py) and .md; report.md quotes it. A fixed
generator seed: the same command writes the same table.
"""

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from optbench.analysis.statistics.rank_agreement import (  # noqa: E402
    bootstrap_interval,
    interval_coverage,
    projection_interval,
)
from optbench.analysis.statistics.resampling import monte_carlo_rate  # noqa: E402
from optbench.analysis.writing.output import OutputDir  # noqa: E402
from optbench.analysis.writing.tables import to_markdown  # noqa: E402
from optbench.formats import aggregate_tables  # noqa: E402

SIMULATIONS = 2000  # per scenario and interval: a coverage near 95 % to within about 1 point (95 % Monte Carlo)
SEED = 0
SEEDS = 6  # per optimizer and workload: the study's seeds 0-5
SD = 1.0  # points of seed noise: CIFAR's 16-epoch spread (0.2 to 1.2 points per optimizer, docs/fidelity-study)
# True means in points, optimizers in the order sgd, adam, adamw, lion, muon: design inputs of the hard case.
CIFAR_LIKE = (71.8, 71.1, 70.8, 68.2, 77.3)  # a clear best and worst, three within a point (CIFAR at 16 epochs)
REVERSED_TIES = (70.8, 71.1, 71.8, 68.2, 77.3)  # the same with the three close ones in the opposite order
WITHIN_A_POINT = (0.0, 0.3, 0.6, 0.9, 1.2)  # all five within 1.2 points: every pair near-tied
SCENARIOS = {
    "CIFAR-like means on both workloads": (CIFAR_LIKE, CIFAR_LIKE),
    "CIFAR-like, the three close ones reversed on the second": (CIFAR_LIKE, REVERSED_TIES),
    "all five within 1.2 points on both": (WITHIN_A_POINT, WITHIN_A_POINT),
}
INTERVALS = {
    "projection interval (the report's)": projection_interval,
    # its resampling generator fixed (rng=None), as a report's would be; the simulated data differ every time
    "percentile bootstrap over seeds": lambda a, b: bootstrap_interval(a, b, resamples=1000, rng=None),
}


def coverage_table(simulations: int, seed: int) -> pd.DataFrame:
    """One row per scenario and interval: the simulated coverage with its Monte Carlo interval and mean width."""
    rows = []
    for interval_index, (interval_name, interval) in enumerate(INTERVALS.items()):
        for scenario_index, (scenario, (true_a, true_b)) in enumerate(SCENARIOS.items()):
            rng = np.random.default_rng([seed, interval_index, scenario_index])
            measured = interval_coverage(true_a, true_b, SEEDS, SD, interval, simulations, rng)
            rate = monte_carlo_rate(measured.covered, measured.simulations)
            rows.append(
                {
                    "scenario": scenario,
                    "true_tau": measured.truth,
                    "optimizers": len(true_a),
                    "seeds": SEEDS,
                    "sd": SD,
                    "interval": interval_name,
                    "covered": measured.covered,
                    "simulations": measured.simulations,
                    "coverage": rate.value,
                    "mc_low": rate.low,
                    "mc_high": rate.high,
                    "mean_width": measured.mean_width,
                }
            )
    return pd.DataFrame(rows, columns=list(aggregate_tables.COLUMNS[aggregate_tables.TAU_COVERAGE]))


def coverage_display(table: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "interval": table["interval"],
            "scenario": table["scenario"],
            "true tau": [f"{value:.2f}" for value in table["true_tau"]],
            "coverage [Monte Carlo 95 %]": [
                f"{100 * value:.1f} % [{100 * low:.1f}, {100 * high:.1f}]"
                for value, low, high in zip(table["coverage"], table["mc_low"], table["mc_high"])
            ],
            "simulations": table["simulations"],
            "mean width": [f"{value:.2f}" for value in table["mean_width"]],
        }
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "cross-workload-study")
    parser.add_argument("--simulations", type=int, default=SIMULATIONS, help=f"per row (default {SIMULATIONS})")
    parser.add_argument("--seed", type=int, default=SEED, help="of the simulation's generator")
    args = parser.parse_args(argv)
    if args.simulations < 1:
        print(f"error: --simulations {args.simulations}: give at least 1, e.g. --simulations 2000", file=sys.stderr)
        return 2
    if args.out.exists() and not args.out.is_dir():
        print(f"error: --out {args.out} is a file: give a folder", file=sys.stderr)
        return 2
    table = coverage_table(args.simulations, args.seed)
    out = OutputDir(args.out)
    out.write_text(aggregate_tables.TAU_COVERAGE, aggregate_tables.csv_text(aggregate_tables.TAU_COVERAGE, table))
    out.write_text(aggregate_tables.TAU_COVERAGE.removesuffix(".csv") + ".md", to_markdown(coverage_display(table)))
    print(to_markdown(coverage_display(table)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
