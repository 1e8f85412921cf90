"""The tuning-budget tables as text, and the page docs/cross-workload-study/tuning-budget.md that
scripts/tuning_budget.py writes around them: the method, the estimator and why not Dodge et al.'s, the interval and
its measured coverage, the curves, the rankings per budget and the pairs whose order swaps. Every number comes from
the tables passed in (analysis/judging/tuning_budget.py, analysis/statistics/expected_max_coverage.py); nothing
here computes one."""

import math

import pandas as pd

from optbench.analysis.groups import optimizer_rank
from optbench.analysis.statistics.expected_max import BOOTSTRAP_RESAMPLES
from optbench.analysis.writing.tables import to_markdown

NAMES = {"sgd": "SGD", "adam": "Adam", "adamw": "AdamW", "lion": "Lion", "muon": "Muon"}


def shown_name(optimizer: str) -> str:
    return NAMES.get(optimizer, optimizer)


def score(value: float, higher_is_better: bool) -> str:
    """An accuracy in % with one decimal; a loss in nats with three."""
    if not math.isfinite(value):
        return "n/a"
    return f"{100 * value:.1f}" if higher_is_better else f"{value:.3f}"


def scored_interval(value: float, low: float, high: float, higher_is_better: bool) -> str:
    interval = f" [{score(low, higher_is_better)}, {score(high, higher_is_better)}]" if math.isfinite(low) else ""
    return score(value, higher_is_better) + interval


def unit(higher_is_better: bool) -> str:
    return "% validation accuracy" if higher_is_better else "nats of validation loss, lower is better"


def curve_display(rows: pd.DataFrame) -> pd.DataFrame:
    """One study's curves: a row per k, a column per optimizer, 'E_k [low, high]'."""
    higher = bool(rows["higher_is_better"].iloc[0])
    names = sorted(rows["optimizer"].unique(), key=optimizer_rank)
    shown = {"k": sorted(rows["k"].unique())}
    for name in names:
        curve = rows[rows["optimizer"] == name].set_index("k")
        shown[shown_name(name)] = [
            scored_interval(curve.loc[k, "expected_best"], curve.loc[k, "ci_low"], curve.loc[k, "ci_high"], higher)
            if k in curve.index
            else ""
            for k in shown["k"]
        ]
    return pd.DataFrame(shown)


def rank_display(ranks: pd.DataFrame, curves: pd.DataFrame) -> pd.DataFrame:
    """A row per (workload, budget): the ranking with each optimizer's E_k, and whether it is the smallest budget's."""
    higher_of = curves.groupby("study")["higher_is_better"].first().to_dict()
    rows = []
    for (workload, study, k), at_k in ranks.groupby(["workload", "study", "k"], sort=False):
        higher = bool(higher_of.get(study, True))
        ordered = at_k.sort_values("rank")
        rows.append(
            {
                "workload": workload,
                "k": k,
                "ranking (E_k)": " > ".join(
                    f"{shown_name(row.optimizer)} {score(row.expected_best, higher)}" for row in ordered.itertuples()
                ),
                "same order as k = 1": "yes" if bool(ordered["same_as_first"].iloc[0]) else "no",
            }
        )
    return pd.DataFrame(rows)


def pair_display(pairs: pd.DataFrame, curves: pd.DataFrame) -> pd.DataFrame:
    """The pairs whose order swaps between the smallest and the largest budget, with both ends' differences."""
    higher_of = curves.groupby("study")["higher_is_better"].first().to_dict()
    swapped = pairs[pairs["reversal"].fillna("") != ""]
    rows = []
    for row in swapped.itertuples():
        higher = bool(higher_of.get(row.study, True))
        points = "points" if higher else "nats"
        rows.append(
            {
                "workload": row.workload,
                "pair": f"{shown_name(row.first)} - {shown_name(row.second)}",
                f"at k = small ({points})": f"k={row.k_small}: "
                + difference(row.difference_small, row.ci_low_small, row.ci_high_small, higher),
                f"at k = large ({points})": f"k={row.k_large}: "
                + difference(row.difference_large, row.ci_low_large, row.ci_high_large, higher),
                "reversal": row.reversal,
            }
        )
    return pd.DataFrame(rows)


def difference(value: float, low: float, high: float, higher_is_better: bool) -> str:
    scale, digits = (100.0, 1) if higher_is_better else (1.0, 3)
    if not math.isfinite(low):
        return f"{scale * value:+.{digits}f}"
    return f"{scale * value:+.{digits}f} [{scale * low:+.{digits}f}, {scale * high:+.{digits}f}]"


def coverage_display(coverage: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "trials n": coverage["trials"],
            "k": coverage["k"],
            "true E_k (%)": [f"{100 * value:.2f}" for value in coverage["truth"]],
            "coverage [Monte Carlo 95 % CI]": [
                f"{100 * row.coverage:.1f} % [{100 * row.mc_low:.1f}, {100 * row.mc_high:.1f}]"
                for row in coverage.itertuples()
            ],
            "bias ± se (points)": [f"{100 * row.bias:+.2f} ± {100 * row.bias_se:.2f}" for row in coverage.itertuples()],
            "Dodge et al.'s bias ± se (points)": [
                f"{100 * row.with_replacement_bias:+.2f} ± {100 * row.with_replacement_bias_se:.2f}"
                for row in coverage.itertuples()
            ],
        }
    )


def shown_budgets(coverage: pd.DataFrame) -> pd.DataFrame:
    """The rows at k = 1, 2, 4, 8, ... and k = n of each trial count."""
    powers = coverage["k"].isin([2**power for power in range(8)])
    return coverage[powers | (coverage["k"] == coverage["trials"])]


def coverage_summary(coverage: pd.DataFrame) -> str:
    """'At n = 8 the intervals held the truth 86.5-95.3 % of the time (lowest at k = 1), ...'."""
    parts = []
    for trials, rows in coverage.groupby("trials"):
        lowest = rows.loc[rows["coverage"].idxmin()]
        parts.append(
            f"at n = {trials} they held the true E_k in {100 * rows['coverage'].min():.1f}-"
            f"{100 * rows['coverage'].max():.1f} % of {int(rows['repetitions'].iloc[0])} simulated searches "
            f"(lowest at k = {int(lowest['k'])})"
        )
    return "; ".join(parts)


# ---- the page ------------------------------------------------------------------------------------------

METHOD = """\
## Method

Each optimizer's tuning study tried n hyperparameter points (Sobol trials). Had it tried only k of them, what would
the best validation score have been? Dodge et al. (2019, "Show your work") plot that expected best against k.
Their estimator draws the k trials from the n *with* replacement, so a trial can be counted twice, and the
estimate is biased low. At k = n it is below the best trial the search found. Tang et al. (2020, "Showing your
work doesn't always work") give the unbiased estimator, which this page uses. Sort the n scores ascending,
v(1) <= ... <= v(n). Then

    E_k = sum over i = k..n of v(i) C(i-1, k-1) / C(n, k),

which is the average, over all C(n, k) subsets of k trials, of the subset's best score. E_1 is the mean trial,
E_n the best trial, and E_k never falls as k grows. For a loss (the language model selects on validation loss,
lower wins) it is the expected *lowest* loss. Code: `src/optbench/analysis/statistics/expected_max.py`.
It is unbiased for independent random trials. Sobol points are spread more evenly than independent ones, so here
E_k reads as the average over this search's own points: what a search of k of them would have found.

**What counts as a trial.** Only each trial's score on the trial seed counts. The reruns of the top-k trials on
the confirm seed are left out, since only the winners got them and they would lift exactly the best trials. A
trial that diverged or failed is a result, not a gap. It counts with the score its run recorded, or chance
(1/K, ln K nats) when the run recorded none. The tuning record's own score for such a run is the protocol's
placeholder (0, or ln 65 nats), not what the run recorded, so the run's summary is read instead. A trial whose
run has not ended is left out and counted in the tables' `not_ended`.

**The interval.** Each E_k has a 95 % bootstrap interval over the trials ({resamples:,} resamples of the n trials
with replacement, `scipy.stats.bootstrap`). It is a bias-corrected normal interval, 2 E_k - mean(E_k*) ± z sd(E_k*),
with z taken at Hesterberg's expanded level for n (as in the robust tables). A plain percentile interval fails
as k nears n: no resample holds a trial better than the best one found, so the interval never reaches above the
sample's best, and in the hard case below it falls well short of 95 % at k = n (tests/test_tuning_budget.py
measures it). The intervals are clipped to the score's range.

**Is the ranking resolved?** For each pair of optimizers, the page takes the difference in E_k at the smallest
and the largest budget, each with the same kind of interval (the two optimizers' trials resampled
independently). A reversal is called *resolved* only when both ends' intervals exclude 0 on opposite sides, and
*unresolved* when only the point estimates swap. The intervals are per pair and are not adjusted for the ten
pairs.
"""


def coverage_section(coverage: pd.DataFrame, population: str) -> list[str]:
    return [
        "## How often the intervals hold the truth (simulated, hard case)",
        "",
        f"The searches were simulated from a skewed score distribution with diverged trials: {population}. The true "
        "E_k is the integral of the quantile function against the density of the largest of k uniforms. "
        f"Measured: {coverage_summary(coverage)}. Where coverage is below 95 %, the bands are too narrow by that "
        "much. At k = 1 (the mean trial) a search of few trials often drew no diverged trial, and then its interval "
        "cannot know how many diverge. The bias columns are each estimator's mean error with its Monte Carlo "
        "standard error, over the same simulated searches: Tang et al.'s, used here, and Dodge et al.'s "
        "with-replacement one (tests/test_tuning_budget.py checks the first is unbiased and the second is not).",
        "",
        "Files: [`tables/tuning_budget_coverage.csv`](tables/tuning_budget_coverage.csv) (every k; shown here: the "
        "budgets the rankings use and k = n)",
        "",
        to_markdown(coverage_display(shown_budgets(coverage))),
    ]


def page(
    sources: list[str],
    missing: list[str],
    warnings: list[str],
    curves: pd.DataFrame,
    ranks: pd.DataFrame,
    pairs: pd.DataFrame,
    coverage: pd.DataFrame,
    population: str,
    command: str,
) -> str:
    lines = [
        "# Does the ranking depend on the tuning budget?",
        "",
        f"Written by `{command}`; do not edit (run it again).",
        "",
        "![Tuning-budget curves](figures/tuning_budget.png)",
        "",
        "Sources (tuning records; each optimizer's trials on the trial seed):",
        "",
        *[f"- {source}" for source in sources],
        "",
    ]
    if missing:
        lines += [f"**Missing:** no tuning record yet for {', '.join(missing)}.", ""]
    if warnings:
        lines += ["Warnings:", "", *[f"- {warning}" for warning in warnings], ""]
    lines += [METHOD.format(resamples=BOOTSTRAP_RESAMPLES), "## The ranking at each budget", ""]
    lines += [
        "The rank of each optimizer by its expected best after k trials, at k = 1, 4, 8, 16 and 32 (those each "
        "workload reached). 'no' means the order of the point estimates differs from k = 1's. Whether a swap is "
        "resolved is in the next table.",
        "",
        "Files: [`tables/tuning_budget_ranks.csv`](tables/tuning_budget_ranks.csv), "
        "[`tables/tuning_budget_ranks.md`](tables/tuning_budget_ranks.md)",
        "",
        to_markdown(rank_display(ranks, curves)),
        "## Pairs whose order swaps between the smallest and the largest budget",
        "",
        "Differences are first minus second, positive when the first is better: points of accuracy, or nats of loss "
        "with the sign flipped so that positive still means better. Each has its 95 % interval. "
        f"{reversal_sentence(pairs)}",
        "",
        "Files: [`tables/tuning_budget_pairs.csv`](tables/tuning_budget_pairs.csv)",
        "",
        to_markdown(pair_display(pairs, curves)),
    ]
    lines += coverage_section(coverage, population)
    lines += [
        "## The curves",
        "",
        "Files: [`tables/tuning_budget.csv`](tables/tuning_budget.csv), "
        "[`tables/tuning_budget.md`](tables/tuning_budget.md)",
        "",
    ]
    for (workload, study), rows in curves.groupby(["workload", "study"], sort=False):
        higher = bool(rows["higher_is_better"].iloc[0])
        lines += [f"### {workload} ({study})", "", f"E_k [95 % interval], {unit(higher)}.", ""]
        lines += [to_markdown(curve_display(rows))]
    return "\n".join(lines)


def reversal_sentence(pairs: pd.DataFrame) -> str:
    resolved = pairs[pairs["reversal"] == "resolved"]
    swapped = pairs[pairs["reversal"].fillna("") != ""]
    if not len(swapped):
        return "No pair's order swaps."
    if not len(resolved):
        return (
            f"{len(swapped)} pair(s) swap their point estimates, and none is a resolved reversal: at these trial "
            "counts, these data do not show the ranking changing with the budget."
        )
    named = ", ".join(
        f"{shown_name(row.first)}-{shown_name(row.second)} ({row.workload})" for row in resolved.itertuples()
    )
    return f"Resolved reversals: {named}; the other swaps are within the intervals."


def curves_markdown(curves: pd.DataFrame) -> str:
    """tables/tuning_budget.md: each study's curves, a row per k."""
    parts = []
    for (workload, study), rows in curves.groupby(["workload", "study"], sort=False):
        parts += [f"### {workload} ({study}): E_k [95 % interval], {unit(bool(rows['higher_is_better'].iloc[0]))}", ""]
        parts += [to_markdown(curve_display(rows))]
    return "\n".join(parts)
