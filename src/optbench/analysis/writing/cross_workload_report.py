"""The cross-workload report: its tables (CSV for code, Markdown for people), the profile figure and report.md.

`write_report(result, out_dir, command)` writes, from a judged study (analysis/judging/cross_workload.py), every
table through formats/aggregate_tables.py (its paths and the columns readers rely on), the performance profile
(analysis/writing/figures/cross_profile.py) and report.md, which quotes tables/tau_coverage.csv
(scripts/tau_coverage.py) where it is present, so every coverage it states was measured. Nothing is removed from
the folder: other scripts write beside it (its README, the coverage table, the published runs).
"""

import math
from pathlib import Path

import pandas as pd

from optbench.analysis.headline import headline_of
from optbench.analysis.judging.cross_claims import FAILS, HOLDS
from optbench.analysis.judging.cross_targets import target_text
from optbench.analysis.judging.cross_workload import CrossWorkloadResult
from optbench.analysis.writing.output import OutputDir
from optbench.analysis.writing.tables import to_markdown
from optbench.formats import aggregate_tables

FIGURE = "figures/time_to_target_profile"
CSV_TABLES = {  # table path -> the result's attribute
    aggregate_tables.CROSS_PARTS: "parts_table",
    aggregate_tables.CROSS_RANKING: "ranking",
    aggregate_tables.CROSS_PAIRWISE: "pairwise",
    aggregate_tables.CROSS_RANKS: "ranks",
    aggregate_tables.CROSS_TAU: "tau",
    aggregate_tables.CROSS_TARGETS: "targets",
    aggregate_tables.CROSS_PROFILE: "profile",
    aggregate_tables.CROSS_CLAIM_PARTS: "part_verdicts",
    aggregate_tables.CROSS_CLAIMS: "claims",
    aggregate_tables.CROSS_COST: "cost",
}


# ---- numbers as a reader sees them ----------------------------------------------------------------------


def value_text(value: float, workload: str) -> str:
    """A headline value in its workload's unit: 77.3 (%), 1.523 (nats/char)."""
    if not math.isfinite(value):
        return "—"
    headline = headline_of(workload)
    return f"{headline.scale * value:.1f}" if headline.higher_is_better else f"{value:.3f}"


def unit_of(workload: str) -> str:
    headline = headline_of(workload)
    return f"{headline.label}, {headline.unit}, {'higher' if headline.higher_is_better else 'lower'} is better"


def rank_text(rank: float) -> str:
    return "—" if not math.isfinite(rank) else f"{rank:g}"


def steps_text(steps: float) -> str:
    return "not reached" if steps == math.inf else "—" if not math.isfinite(steps) else f"{steps:,.0f}"


def ratio_text(ratio: float) -> str:
    return "∞" if ratio == math.inf else "—" if not math.isfinite(ratio) else f"{ratio:.2f}"


def p_text(p: float) -> str:
    return "—" if not math.isfinite(p) else f"{p:.2g}" if p >= 0.001 else "< 0.001"


def hours_text(hours: float) -> str:
    return "—" if not math.isfinite(hours) else f"{hours:.2f}"


# ---- the Markdown tables ----------------------------------------------------------------------------------


def parts_display(parts: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "workload": parts["workload"],
            "study": [
                f"{study}" + (f" at {rung}" if isinstance(rung, str) and rung else "")
                for study, rung in zip(parts["study"], parts["rung"])
            ],
            "tuned by": parts["tuned_by"],
            "runs (completed) / planned": [
                f"{runs} ({done}) / {planned}"
                for runs, done, planned in zip(parts["runs"], parts["completed"], parts["planned"])
            ],
            "status": parts["status"],
            "note": parts["note"].fillna(""),
        }
    )


def ranking_display(ranking: pd.DataFrame, workload: str) -> pd.DataFrame:
    mine = ranking[ranking["workload"] == workload].sort_values("rank", kind="stable")
    return pd.DataFrame(
        {
            "rank": [rank_text(rank) for rank in mine["rank"]],
            "optimizer": mine["optimizer"],
            "mean [95 % CI]": [
                f"{value_text(mean, workload)} [{value_text(low, workload)}, {value_text(high, workload)}]"
                for mean, low, high in zip(mine["mean"], mine["ci_low"], mine["ci_high"])
            ],
            "seeds (runs)": [f"{done} ({runs})" for done, runs in zip(mine["completed"], mine["runs"])],
        }
    )


def pairwise_display(pairwise: pd.DataFrame, workload: str) -> pd.DataFrame:
    if not len(pairwise):
        return pd.DataFrame()
    mine = pairwise[pairwise["workload"] == workload]
    scale = headline_of(workload).scale
    return pd.DataFrame(
        {
            "pair": [f"{a} vs {b}" for a, b in zip(mine["arm_a"], mine["arm_b"])],
            "difference [95 % CI]": [
                f"{scale * diff:+.2f} [{scale * low:+.2f}, {scale * high:+.2f}]" if math.isfinite(diff) else "—"
                for diff, low, high in zip(mine["difference"], mine["ci_low"], mine["ci_high"])
            ],
            "test": mine["test"],
            "p": [p_text(p) for p in mine["p_value"]],
            "p (Holm)": [p_text(p) for p in mine["p_holm"]],
            "significant": ["yes" if flag else "no" for flag in mine["significant"]],
        }
    )


def rank_matrix_display(ranks: pd.DataFrame) -> pd.DataFrame:
    shown = ranks.copy()
    for column in shown.columns[1:]:
        shown[column] = [rank_text(rank) for rank in shown[column]]
    return shown


def tau_display(tau: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "workloads": [f"{a} vs {b}" for a, b in zip(tau["workload_a"], tau["workload_b"])],
            "Kendall's tau-b": [f"{value:.2f}" for value in tau["tau"]],
            "95 % projection interval": [
                f"[{low:.2f}, {high:.2f}]" if math.isfinite(low) else "— (fewer than 2 shared seeds)"
                for low, high in zip(tau["low"], tau["high"])
            ],
            "seeds": [f"{a} / {b}" for a, b in zip(tau["seeds_a"], tau["seeds_b"])],
        }
    )


def targets_display(targets: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "workload": targets["workload"],
            "target": targets["target"],
            "optimizer": targets["optimizer"],
            "median steps": [steps_text(steps) for steps in targets["median_steps"]],
            "reached": [f"{reached}/{runs}" for reached, runs in zip(targets["reached"], targets["runs"])],
            "ratio to best": [ratio_text(ratio) for ratio in targets["ratio"]],
        }
    )


def profile_display(profile: pd.DataFrame) -> pd.DataFrame:
    shown = profile.copy()
    for column in shown.columns[2:]:
        shown[column] = [f"{value:.2f}" if math.isfinite(value) else "—" for value in shown[column]]
    return shown.rename(columns=lambda name: name.replace("rho_", "rho(") + ")" if name.startswith("rho_") else name)


def claims_display(claims: pd.DataFrame) -> pd.DataFrame:
    shown = claims.drop(columns=["why"]).rename(columns={"every_workload": "on every workload"})
    shown["on every workload"] = [
        f"**{verdict}**" if verdict in (HOLDS, FAILS) else verdict for verdict in shown["on every workload"]
    ]
    return shown.fillna("")


def cost_display(cost: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "workload": cost["workload"],
            "main runs": cost["main_runs"],
            "main device-hours": [hours_text(hours) for hours in cost["main_hours"]],
            "tuning runs": cost["tuning_runs"],
            "tuning device-hours": [hours_text(hours) for hours in cost["tuning_hours"]],
            "total device-hours": [hours_text(hours) for hours in cost["total_hours"]],
            "main runs' devices": cost["main_devices"],
            "tuning's devices": cost["tuning_devices"],
        }
    )


# ---- report.md --------------------------------------------------------------------------------------------


def coverage_lines(coverage: pd.DataFrame | None) -> list[str]:
    """The measured coverage of each tau interval, from tables/tau_coverage.csv; a line saying how to measure
    it when that table is not there."""
    if coverage is None:
        return ["Its coverage has not been measured for this folder: run `python scripts/tau_coverage.py --out DIR`."]
    lines = [
        "Measured coverage of the intervals of tau between the true means (`python scripts/tau_coverage.py`, "
        "tables/tau_coverage.csv; normal seed noise, Monte Carlo 95 % interval in brackets):",
        "",
    ]
    for row in coverage.itertuples():
        lines.append(
            f"- {row.interval}, {row.scenario} (true tau {row.true_tau:.2f}; {row.optimizers} optimizers, {row.seeds} "
            f"seeds, sd {row.sd:g}): {100 * row.coverage:.1f} % [{100 * row.mc_low:.1f}, {100 * row.mc_high:.1f}] of "
            f"{row.simulations}, mean width {row.mean_width:.2f}"
        )
    return lines


def ranking_section(result: CrossWorkloadResult) -> list[str]:
    lines = ["## Each workload's ranking", ""]
    for workload in dict.fromkeys(result.ranking["workload"]):
        lines += [
            f"### {workload} ({unit_of(workload)})",
            "",
            to_markdown(ranking_display(result.ranking, workload)),
            "Every pair, paired on shared seeds, Holm-adjusted within the workload (the aggregator's pairwise tests):",
            "",
            to_markdown(pairwise_display(result.pairwise, workload)),
        ]
    if not len(result.ranking):
        lines += ["No workload has runs here yet.", ""]
    return lines


def missing_lines(result: CrossWorkloadResult) -> list[str]:
    return [f"- **{part.workload}: missing** ({part.missing})" for part in result.missing]


def render(result: CrossWorkloadResult, command: str, coverage: pd.DataFrame | None) -> str:
    """report.md's text."""
    ranked = [str(column) for column in result.ranks.columns[1:]]
    lines = [
        "# Does the ranking carry across workloads?",
        "",
        f"The optimizers {', '.join(result.spec.optimizers)} on {', '.join(result.spec.workloads)}, each workload's "
        f"runs taken by the study that made them ({result.spec.source.name}). Written by `{command}`; every number "
        "below is recomputed from the runs by that command.",
        "",
        "## The parts",
        "",
        to_markdown(parts_display(result.parts_table)),
        *missing_lines(result),
        "",
        *ranking_section(result),
        "## The matrix of ranks",
        "",
        "1 = best on the workload's headline, in its direction; only workloads where every optimizer has a completed "
        f"run are ranked ({', '.join(ranked) or 'none yet'}).",
        "",
        to_markdown(rank_matrix_display(result.ranks)),
        "## Kendall's tau between workloads' rankings",
        "",
        "Tau-b between two workloads' mean headlines (each in its direction). The interval is for tau between the true "
        "means: the projection of Tukey's simultaneous intervals of each workload's pairwise differences (its "
        "optimizers x seeds on the seeds every optimizer completed, 97.5 % each so both hold together at 95 %); a pair "
        "both workloads order for certain counts, any other counts either way. It is wide where means are close.",
        "",
        to_markdown(tau_display(result.tau)) if len(result.tau) else "Fewer than two ranked workloads: no tau yet.\n",
        *coverage_lines(coverage),
        "",
        *targets_section(result),
        "## Which claims hold on every workload",
        "",
        "Each claim is one hypothesis per workload (experiments/cross-workload/hypotheses), judged on that workload's "
        "runs by the harness's verdict rule (experiments/README.md); across workloads a claim holds when every part is "
        "supported, fails when any is rejected, and is otherwise not decided.",
        "",
        to_markdown(claims_display(result.claims)),
        *[
            f"- {row.claim} on {row.workload} ({row.hypothesis}): {row.verdict}"
            + (f" on {row.seeds} seeds" if row.seeds not in ("", "—") else "")
            + f": {row.why}"
            for row in result.part_verdicts.itertuples()
        ],
        "",
        "## Device-hours",
        "",
        "Wall time of every main run of each part (any status) and of every tuning trial its tuning record lists "
        "(earlier search spaces included), from summary.json's wall_time_s.",
        "",
        to_markdown(cost_display(result.cost)),
    ]
    if result.warnings:
        lines += ["## Warnings", "", *[f"- {warning}" for warning in result.warnings], ""]
    return "\n".join(lines).rstrip() + "\n"


def targets_section(result: CrossWorkloadResult) -> list[str]:
    targets = [f"{workload} {target_text(workload)}" for workload in result.spec.workloads]
    lines = [
        "## Time to target in steps (AlgoPerf)",
        "",
        f"Targets, fixed before the main runs (registry/workloads.py): {'; '.join(targets)}. A run's time is the "
        "optimizer steps to its first evaluation at the target; per optimizer the median over seeds (a run that never "
        "reaches it, diverged or failed counts as infinity); ratio = that over the best optimizer's on the workload.",
        "",
        to_markdown(targets_display(result.targets)),
        "Performance profile over the workloads where every optimizer has finished runs "
        f"({', '.join(map(str, result.costs.index)) or 'none yet'}): rho(tau) = the share of them on which the "
        "optimizer is within tau of the best; score = its area over [1, 4] over 3 (1: best everywhere).",
        "",
        to_markdown(profile_display(result.profile)),
    ]
    if len(result.costs):
        lines += [f"![performance profile]({FIGURE}.png)", ""]
    return lines


# ---- the folder -------------------------------------------------------------------------------------------


def read_coverage(out_dir: Path) -> pd.DataFrame | None:
    path = Path(out_dir) / aggregate_tables.TAU_COVERAGE
    return aggregate_tables.read(out_dir, aggregate_tables.TAU_COVERAGE) if path.is_file() else None


def write_report(result: CrossWorkloadResult, out_dir: Path, command: str, draw_figures: bool = True) -> list[str]:
    """Every table, the figure and report.md into `out_dir`; returns the files written (relative paths)."""
    out = OutputDir(out_dir)
    for table, attribute in CSV_TABLES.items():
        frame = getattr(result, attribute)
        out.write_text(table, aggregate_tables.csv_text(table, frame))
    markdown = {
        aggregate_tables.CROSS_PARTS: parts_display(result.parts_table),
        aggregate_tables.CROSS_RANKS: rank_matrix_display(result.ranks),
        aggregate_tables.CROSS_TAU: tau_display(result.tau),
        aggregate_tables.CROSS_TARGETS: targets_display(result.targets),
        aggregate_tables.CROSS_PROFILE: profile_display(result.profile),
        aggregate_tables.CROSS_CLAIMS: claims_display(result.claims),
        aggregate_tables.CROSS_COST: cost_display(result.cost),
    }
    for table, frame in markdown.items():
        out.write_text(table.removesuffix(".csv") + ".md", to_markdown(frame))
    if draw_figures and len(result.costs):
        from optbench.analysis.writing.figures.cross_profile import cross_profile
        from optbench.analysis.writing.figures.style import close

        figure = cross_profile(result.costs)
        if figure is not None:
            out.write_figure(figure, FIGURE)
            close(figure)
    out.write_text("report.md", render(result, command, read_coverage(out_dir)))
    return list(out.written)
