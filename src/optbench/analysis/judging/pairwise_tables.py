"""The pairwise tests of a study: every pair of arms within each setting, Holm-adjusted per setting.

`pairwise_table(runs, metric, settings, arms)` takes the loaded run table (completed runs), hands each pair's
per-seed values to the statistics room's `two_arm_test` (so the same pair gets the same test here and in a
verdict), and returns one row per pair: tables/pairwise.{csv,md,tex}. `headline_pairwise` tests each setting on
its workload's headline (analysis/headline.py): test accuracy at best validation, a language model's validation loss.
"""

import pandas as pd

from optbench.analysis.headline import headline_groups
from optbench.analysis.statistics.exact_tests import holm
from optbench.analysis.statistics.power import ALPHA
from optbench.analysis.statistics.two_arms import two_arm_test


def pairwise_table(
    runs: pd.DataFrame, metric: str, settings: list[str], arms: list[str], alpha: float = ALPHA
) -> pd.DataFrame:
    """Every pair of arms within each setting, on completed runs' `metric` (paired as `two_arm_test` pairs, so the
    same pair gets the same test here and in a verdict); Holm-adjusted per setting."""
    rows = []
    for setting in settings:
        here = runs[runs["setting"] == setting]
        present = [arm for arm in arms if arm in set(here["arm"])]
        family = []
        for i, arm_a in enumerate(present):
            for arm_b in present[i + 1 :]:
                a = here[here["arm"] == arm_a].set_index("seed")[metric]
                b = here[here["arm"] == arm_b].set_index("seed")[metric]
                family.append(
                    {
                        "setting": setting,
                        "metric": metric,
                        "arm_a": arm_a,
                        "arm_b": arm_b,
                        **two_arm_test(a, b, alpha).as_dict(),
                    }
                )
        for row, adjusted in zip(family, holm([row["p_value"] for row in family])):
            row["p_holm"] = adjusted
            row["significant"] = bool(row["p_holm"] < alpha)  # the family: every pair in this setting
        rows.extend(family)
    return pd.DataFrame(rows)


def headline_pairwise(runs: pd.DataFrame, settings: list[str], arms: list[str], alpha: float = ALPHA) -> pd.DataFrame:
    """`pairwise_table` of each setting on its workload's headline column, in `settings` order."""
    frames = [
        pairwise_table(runs, headline.column, members, arms, alpha)
        for headline, members in headline_groups(runs, settings)
    ]
    frames = [frame for frame in frames if len(frame)]
    if len(frames) <= 1:
        return frames[0] if frames else pd.DataFrame()
    order = {setting: index for index, setting in enumerate(settings)}
    table = pd.concat(frames, ignore_index=True)
    return table.sort_values("setting", key=lambda column: column.map(order), kind="stable", ignore_index=True)
