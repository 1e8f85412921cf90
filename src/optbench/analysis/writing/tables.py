"""Result tables: one row per setting x optimizer arm, as numbers (CSV) and as text (Markdown, LaTeX).

`results_table(runs, ...)` counts runs by status and summarises completed runs only: test accuracy
at the best-validation epoch (mean, sd, 95 % CI; under label noise the validation labels are the
protocol's, noisy by default: the headline), test accuracy at the best clean-validation epoch (the
oracle, summary.json `best_clean_val`, present only under noise), final test accuracy, best test accuracy over epochs
(optimistic: chosen by looking at the test set), final train loss, epochs to a target validation
accuracy, wall time, throughput, and a rank within the setting with the Holm-adjusted p-value against
the top arm. The rank counts diverged and failed runs at their recorded score (or chance): an optimizer
that diverged on two of three seeds does not rank by its one survivor.
`display_table` turns that into the columns a paper shows (accuracies in %); `to_markdown` and
`to_latex` render it. Diverged, failed, interrupted, running and unfinished runs are counted in their
own columns and never enter a mean. `pairwise_display` and `variance_display` are the text views of the
pairwise and variance tables (optbench.analysis.judging).
"""

import math

import numpy as np
import pandas as pd

from optbench.analysis.groups import Grouping, short_key
from optbench.analysis.headline import DEFAULT, Headline, headline_groups, headline_of, workload_of_setting
from optbench.analysis.judging.robust_tables import scored_runs
from optbench.analysis.load import STATUSES, UNREADABLE
from optbench.analysis.statistics.summaries import describe
from optbench.durations import format_duration
from optbench.formats.run_summary import COMPLETED

PRIMARY_METRIC = "test_acc_at_best_val"
# Metrics summarised as mean, sd (and for the primary one a 95 % CI) over completed runs.
SUMMARISED = [
    "test_acc_at_best_val",
    "test_acc_at_best_clean_val",
    "final_test_acc",
    "best_test_acc",
    "final_train_loss",
    "epochs_to_target",
    "wall_time_s",
    "train_images_per_s",
]
# A non-default workload's rows add these (a table of CIFAR runs keeps its columns): its headline (a language
# model's best validation loss) with its interval, bits per character and test loss beside, steps to target.
WORKLOAD_SUMMARISED = ["val_loss_best", "val_bpc_best", "test_loss_at_best_val", "steps_to_target"]
NOT_COMPLETED = [status for status in STATUSES if status != COMPLETED]


def completed(runs: pd.DataFrame) -> pd.DataFrame:
    return runs[runs["status"] == COMPLETED]


def status_counts(group: pd.DataFrame) -> dict:
    counts = {status: int((group["status"] == status).sum()) for status in STATUSES}
    counts["other"] = int((~group["status"].isin(STATUSES)).sum())  # unreadable summary, unknown status
    return counts


def results_table(
    runs: pd.DataFrame,
    grouping: Grouping,
    settings: list[str],
    arms: list[str],
    pairwise: pd.DataFrame,
    targets: dict | None = None,
) -> pd.DataFrame:
    """`targets`: workload name -> its time-to-target (targets.Target), shown in a non-default workload's rows."""
    rows = []
    for setting in settings:
        in_setting = runs[runs["setting"] == setting]
        headline = headline_of(workload_of_setting(runs, setting))
        for arm in arms:
            group = in_setting[in_setting["arm"] == arm]
            if len(group):
                rows.append(summarise_group(group, grouping, headline, (targets or {}).get(headline.workload)))
    table = pd.DataFrame(rows)
    return add_ranking(table, runs, pairwise, settings)


def summarise_group(group: pd.DataFrame, grouping: Grouping, headline: Headline = DEFAULT, target=None) -> dict:
    first = group.iloc[0]
    row = {
        "setting": first["setting"],
        "arm": first["arm"],
        **{short_key(key): first[key] for key in grouping.group_keys},
        "runs": len(group),
        **status_counts(group),
    }
    done = completed(group)
    row["seeds"] = len(done)
    for metric in SUMMARISED:
        summary = describe(done[metric])
        row[f"{metric}_mean"], row[f"{metric}_std"] = summary.mean, summary.std
        if metric == PRIMARY_METRIC:
            row[f"{metric}_ci_low"], row[f"{metric}_ci_high"] = summary.ci_low, summary.ci_high
    row["reached_target"] = int(done["epochs_to_target"].notna().sum())
    if headline.workload != DEFAULT.workload:
        row.update(workload_summary(done, headline, target))
    return row


def workload_summary(done: pd.DataFrame, headline: Headline, target) -> dict:
    """A non-default workload's own columns: its name, headline and direction, its headline's mean, sd and interval
    (a language model's: best validation loss), its other metrics and its time-to-target threshold."""
    row: dict = {
        "workload": headline.workload,
        "headline": headline.column,
        "higher_is_better": headline.higher_is_better,
    }
    for metric in WORKLOAD_SUMMARISED:
        if metric not in done:
            continue
        summary = describe(done[metric])
        row[f"{metric}_mean"], row[f"{metric}_std"] = summary.mean, summary.std
        if metric == headline.column:
            row[f"{metric}_ci_low"], row[f"{metric}_ci_high"] = summary.ci_low, summary.ci_high
    if target is not None:
        row["target_metric"], row["target"] = target.metric, target.value
    return row


def add_ranking(
    table: pd.DataFrame, runs: pd.DataFrame, pairwise: pd.DataFrame, settings: list[str] | None = None
) -> pd.DataFrame:
    """Rank arms within each setting by the mean of its workload's headline in the headline's direction (test
    accuracy at best validation: highest first; a language model's validation loss: lowest first) with diverged
    and failed runs scored (1 = best), and give each arm's p-value against the top arm, Holm-adjusted over every
    pair of the setting (the top arm is chosen after looking, so the raw p would overstate): a rank is only
    meaningful when that p is small."""
    if not len(table):
        return table
    table = table.copy()
    table["score_mean"] = math.nan
    table["rank"] = math.nan
    table["p_vs_best"] = math.nan
    for headline, members in headline_groups(runs, settings or list(dict.fromkeys(table["setting"]))):
        rows = table["setting"].isin(members)
        score = scored_runs(runs[runs["setting"].isin(members)], headline.column, headline).groupby(["setting", "arm"])
        means = score[headline.column].mean()
        table.loc[rows, "score_mean"] = [
            means.get((setting, arm), math.nan)
            for setting, arm in zip(table.loc[rows, "setting"], table.loc[rows, "arm"])
        ]
        ranks = table[rows].groupby("setting")["score_mean"].rank(ascending=not headline.higher_is_better, method="min")
        table.loc[rows, "rank"] = ranks
        for setting, group in table[rows].groupby("setting", sort=False):
            if group["score_mean"].notna().sum() < 2:
                continue
            best = group["score_mean"].idxmax() if headline.higher_is_better else group["score_mean"].idxmin()
            for index, arm in group["arm"].items():
                if arm != group.loc[best, "arm"]:
                    table.loc[index, "p_vs_best"] = pair_p_value(
                        pairwise, setting, arm, group.loc[best, "arm"], headline.column
                    )
    return table


def pair_p_value(pairwise: pd.DataFrame, setting: str, arm_a: str, arm_b: str, metric: str = PRIMARY_METRIC) -> float:
    if not len(pairwise):
        return math.nan
    match = pairwise[
        (pairwise["setting"] == setting)
        & (pairwise["metric"] == metric)
        & (
            ((pairwise["arm_a"] == arm_a) & (pairwise["arm_b"] == arm_b))
            | ((pairwise["arm_a"] == arm_b) & (pairwise["arm_b"] == arm_a))
        )
    ]
    return float(match["p_holm"].iloc[0]) if len(match) else math.nan


# ---- text rendering -------------------------------------------------------------------------------


def percent(value: float, digits: int = 2) -> str:
    return "n/a" if value is None or not np.isfinite(value) else f"{100 * value:.{digits}f}"


def mean_sd(mean: float, sd: float, scale: float = 100.0, digits: int = 2, pm: str = "±") -> str:
    """'91.23 ± 0.41'; one run gives '91.23 (n=1)'; nothing gives 'n/a'."""
    if not np.isfinite(mean):
        return "n/a"
    text = f"{scale * mean:.{digits}f}"
    return f"{text} {pm} {scale * sd:.{digits}f}" if np.isfinite(sd) else f"{text} (n=1)"


def interval(low: float, high: float, scale: float = 100.0, digits: int = 2, bounds=(0.0, 1.0)) -> str:
    """'[90.12, 93.40]'; clipped to `bounds` (an accuracy's t interval can reach below 0 % at small n)."""
    if not (np.isfinite(low) and np.isfinite(high)):
        return "n/a"
    low, high = np.clip([low, high], *bounds)
    return f"[{scale * low:.{digits}f}, {scale * high:.{digits}f}]"


def p_text(value: float) -> str:
    if not np.isfinite(value):
        return "n/a"
    return "< 0.001" if value < 0.001 else f"{value:.3f}"


def not_completed_text(row) -> str:
    parts = [f"{row[status]} {status}" for status in NOT_COMPLETED if row.get(status, 0)]
    if row.get("other", 0):
        parts.append(f"{row['other']} {UNREADABLE}/other")
    return ", ".join(parts) or "none"


def display_table(table: pd.DataFrame, target_acc: float, pm: str = "±") -> pd.DataFrame:
    """The paper-facing columns of `results_table`, as text (accuracies in %; a loss workload's rows in its own
    unit: `loss_display_table`)."""
    if is_loss_rows(table):
        return loss_display_table(table, pm)
    rows = []
    # Under label noise: the oracle (epoch chosen on clean validation labels) beside the headline.
    oracle = "test_acc_at_best_clean_val_mean" in table and bool(table["test_acc_at_best_clean_val_mean"].notna().any())
    for _, row in table.iterrows():
        rows.append(
            {
                "optimizer": row["arm"],
                "seeds": f"{row['seeds']}/{row['runs']}",
                "test acc @ best val (%)": mean_sd(
                    row["test_acc_at_best_val_mean"], row["test_acc_at_best_val_std"], pm=pm
                ),
                "95% CI (%)": interval(row["test_acc_at_best_val_ci_low"], row["test_acc_at_best_val_ci_high"]),
                **(
                    {
                        "test acc @ best clean val (%, oracle)": mean_sd(
                            row["test_acc_at_best_clean_val_mean"], row["test_acc_at_best_clean_val_std"], pm=pm
                        )
                    }
                    if oracle
                    else {}
                ),
                "final test acc (%)": mean_sd(row["final_test_acc_mean"], row["final_test_acc_std"], pm=pm),
                "best test acc (%, optimistic)": mean_sd(row["best_test_acc_mean"], row["best_test_acc_std"], pm=pm),
                "final train loss": mean_sd(row["final_train_loss_mean"], row["final_train_loss_std"], 1.0, 3, pm=pm),
                f"epochs to val acc ≥ {100 * target_acc:g}%": epochs_text(row),
                "wall time": format_duration(row["wall_time_s_mean"]),
                "throughput (img/s)": "n/a"
                if not np.isfinite(row["train_images_per_s_mean"])
                else f"{row['train_images_per_s_mean']:,.0f}",
                "not completed": not_completed_text(row),
                "rank": "n/a" if not np.isfinite(row["rank"]) else f"{int(row['rank'])}",
                "p vs best (Holm)": "—" if row["rank"] == 1 else p_text(row["p_vs_best"]),
            }
        )
    return pd.DataFrame(rows)


def is_loss_rows(table: pd.DataFrame) -> bool:
    """A setting's rows whose workload's headline is a loss (results_table's `higher_is_better` is False)."""
    return "higher_is_better" in table and bool((table["higher_is_better"] == False).any())  # noqa: E712  (NaN: CIFAR)


def loss_display_table(table: pd.DataFrame, pm: str = "±") -> pd.DataFrame:
    """A loss workload's rows as text: its headline (best validation loss, nats per character) with its interval,
    bits per character and test loss beside, ranked lowest first; time to target in its budget unit (steps)."""
    rows = []
    for _, row in table.iterrows():
        rows.append(
            {
                "optimizer": row["arm"],
                "seeds": f"{row['seeds']}/{row['runs']}",
                "val loss @ best val (nats/char)": mean_sd(
                    row["val_loss_best_mean"], row["val_loss_best_std"], 1.0, 3, pm=pm
                ),
                "95% CI (nats/char)": interval(
                    row["val_loss_best_ci_low"], row["val_loss_best_ci_high"], 1.0, 3, (0.0, math.inf)
                ),
                "val bpc": mean_sd(
                    row.get("val_bpc_best_mean", math.nan), row.get("val_bpc_best_std", math.nan), 1.0, 3, pm=pm
                ),
                "test loss (nats/char)": mean_sd(
                    row.get("test_loss_at_best_val_mean", math.nan),
                    row.get("test_loss_at_best_val_std", math.nan),
                    1.0,
                    3,
                    pm=pm,
                ),
                "final train loss": mean_sd(row["final_train_loss_mean"], row["final_train_loss_std"], 1.0, 3, pm=pm),
                f"steps to {target_text(row)}": steps_text(row),
                "wall time": format_duration(row["wall_time_s_mean"]),
                "not completed": not_completed_text(row),
                "rank": "n/a" if not np.isfinite(row["rank"]) else f"{int(row['rank'])}",
                "p vs best (Holm)": "—" if row["rank"] == 1 else p_text(row["p_vs_best"]),
            }
        )
    return pd.DataFrame(rows)


def target_text(row) -> str:
    """'val loss ≤ 2.2': the row's time-to-target threshold, crossed downward."""
    metric = str(row.get("target_metric", "val/loss")).replace("/", " ")
    return f"{metric} ≤ {row.get('target', math.nan):g}"


def steps_text(row) -> str:
    """Mean steps over the runs that reached the target, and how many did ('never' when none)."""
    return reached_text(row, "steps_to_target", ",.0f")


def epochs_text(row) -> str:
    """Mean epochs over the runs that reached the target, and how many did ('never' when none)."""
    return reached_text(row, "epochs_to_target", ".1f")


def reached_text(row, column: str, number_format: str) -> str:
    """'12.5 ± 1.0 (3/3 reached)' for the `column`'s mean and sd over the runs that reached the target."""
    reached, seeds = int(row["reached_target"]), int(row["seeds"])
    if seeds == 0:
        return "n/a"
    if reached == 0:
        return f"never (0/{seeds})"
    text = format(row[f"{column}_mean"], number_format)
    if np.isfinite(row[f"{column}_std"]):
        text += f" ± {format(row[f'{column}_std'], number_format)}"
    return f"{text} ({reached}/{seeds} reached)"


LOSS_COLUMNS = ("val_loss_best",)  # headline columns that are losses: shown in nats, not in %


def pairwise_display(pairwise: pd.DataFrame) -> pd.DataFrame:
    """The pairwise tests as text: accuracies in % and differences in points; a loss in its own unit."""
    rows = []
    for _, row in pairwise.iterrows():
        loss = row["metric"] in LOSS_COLUMNS
        scale, unit, digits = (1.0, "nats", 3) if loss else (100.0, "%", 2)
        rows.append(
            {
                "A": row["arm_a"],
                "B": row["arm_b"],
                "n (A, B)": n_text(row),
                f"mean A ({unit})": f"{scale * row['mean_a']:.{digits}f}" if loss else percent(row["mean_a"]),
                f"mean B ({unit})": f"{scale * row['mean_b']:.{digits}f}" if loss else percent(row["mean_b"]),
                f"A − B ({'nats' if loss else 'pp'}) [95% CI]": difference_interval(
                    row["difference"], row["ci_low"], row["ci_high"], scale
                ),
                "test": row["test"],
                "p": p_text(row["p_value"]),
                "p (Holm)": p_text(row["p_holm"]),
                "exact p (smallest possible)": exact_text(row["exact_p"], row["exact_min_p"]),
                "effect": effect_text(row["effect_size"], row["effect_kind"]),
                "power": power_text(row, scale, "nats" if loss else "pp"),
            }
        )
    return pd.DataFrame(rows)


def n_text(row) -> str:
    return f"{row['n_a']}, {row['n_b']}" + (f" ({row['n_pairs']} paired)" if row.get("n_pairs") else "")


def difference_interval(difference: float, low: float, high: float, scale: float = 100.0) -> str:
    """'+1.20 [-0.40, +2.80]' in points; a difference of exactly 0 is 'tied'."""
    if not np.isfinite(difference):
        return "n/a"
    if difference == 0:
        return "0.00 (tied)"
    text = f"{scale * difference:+.2f}"
    return text + (f" [{scale * low:+.2f}, {scale * high:+.2f}]" if np.isfinite(low) and np.isfinite(high) else "")


def exact_text(p: float, smallest: float) -> str:
    return "n/a" if not np.isfinite(p) else f"{p_text(p)} ({p_text(smallest)})"


def effect_text(size: float, kind: str) -> str:
    return "n/a" if not np.isfinite(size) else f"{kind} = {size:.2f}"


def power_text(row, scale: float = 100.0, unit: str = "pp") -> str:
    """The primary test's power against the observed effect, and the smallest effect it detects 80 % of the
    time at this n and spread; or why there is no test."""
    if not np.isfinite(row["p_value"]):
        return row.get("note") or "no test"
    parts = []
    if np.isfinite(row["power"]):
        parts.append(f"{100 * row['power']:.0f}% at the observed effect")
    if np.isfinite(row["min_detectable_difference"]):
        parts.append(
            f"detects ≥ {scale * row['min_detectable_difference']:.2f} {unit} "
            f"({row['effect_kind']} ≥ {row['min_detectable_d']:.1f}) at 80%"
        )
    elif row["power"] == 0:
        parts.append("the test cannot reach alpha at this n")
    if row.get("note"):
        parts.append(row["note"])
    return "; ".join(parts)


def variance_display(table: pd.DataFrame) -> pd.DataFrame:
    """The Markdown view of the variance table (analysis/judging/variance_tables.py): points and percentages."""
    rows = []
    for row in table.itertuples():
        finite = pd.notna(row.difference)
        rows.append(
            {
                "setting": row.setting,
                "A": row.arm_a,
                "B": row.arm_b,
                "seeds": row.seeds,
                "images": row.images,
                "A − B (pp) [95% CI]": (
                    f"{100 * row.difference:+.2f} [{100 * row.ci_low:+.2f}, {100 * row.ci_high:+.2f}]"
                )
                if finite
                else "n/a",
                "sd (pp)": f"{100 * row.sd_bootstrap:.2f}" if finite else "n/a",
                "from seeds": share_text(row.share_seeds),
                "from test images": share_text(row.share_images),
                "note": row.note,
            }
        )
    return pd.DataFrame(rows)


def share_text(share: float) -> str:
    return f"{100 * share:.0f}%" if pd.notna(share) else "n/a"


def problem_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """Every run that is not a clean completed run, or whose files needed a warning."""
    flagged = runs[(runs["status"] != COMPLETED) | (runs["notes"].fillna("") != "")]
    columns = ["run_id", "setting", "arm", "seed", "status", "epochs_done", "epochs_planned", "error", "notes"]
    return flagged[columns].reset_index(drop=True)


def problem_display(problems: pd.DataFrame) -> pd.DataFrame:
    shown = problems.copy()
    shown["epochs"] = [
        f"{done}/{planned}"
        for done, planned in zip(shown["epochs_done"].map(integer_text), shown["epochs_planned"].map(integer_text))
    ]
    shown["detail"] = [join_text(error, notes) for error, notes in zip(shown["error"], shown["notes"])]
    shown["seed"] = shown["seed"].map(integer_text)
    return shown[["run_id", "setting", "arm", "seed", "status", "epochs", "detail"]]


def integer_text(value) -> str:
    try:
        return str(int(value))
    except (TypeError, ValueError):
        return "?"


def join_text(*parts) -> str:
    return "; ".join(str(part) for part in parts if isinstance(part, str) and part)


# ---- Markdown and LaTeX ----------------------------------------------------------------------------


def to_markdown(table: pd.DataFrame) -> str:
    if not len(table):
        return "_(none)_\n"
    escaped = table.map(lambda value: str(value).replace("|", "\\|"))
    return escaped.to_markdown(index=False, disable_numparse=True) + "\n"


LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "±": r"$\pm$",
    "≥": r"$\geq$",
    "−": r"$-$",
    "—": "---",
    "<": r"$<$",
    ">": r"$>$",
}


def latex_escape(text) -> str:
    return "".join(LATEX_SPECIAL.get(character, character) for character in str(text))


def to_latex(table: pd.DataFrame, caption: str, label: str) -> str:
    """A booktabs table scaled to the text width (needs \\usepackage{booktabs,graphicx}); every cell escaped."""
    header = " & ".join(latex_escape(column) for column in table.columns) + r" \\"
    body = [" & ".join(latex_escape(value) for value in row) + r" \\" for row in table.itertuples(index=False)]
    return "\n".join(
        [
            r"% needs \usepackage{booktabs,graphicx}",
            r"\begin{table}[ht]",
            r"\centering",
            rf"\caption{{{latex_escape(caption)}}}",
            rf"\label{{{label}}}",
            r"\resizebox{\linewidth}{!}{%",
            r"\begin{tabular}{" + "l" * len(table.columns) + "}",
            r"\toprule",
            header,
            r"\midrule",
            *body,
            r"\bottomrule",
            r"\end{tabular}}",
            r"\end{table}",
            "",
        ]
    )
