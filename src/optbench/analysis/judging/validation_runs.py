"""The real runs a validation study resamples, and each resample as the run table the harness's own rules read.

`finished_pool(runs, where)` picks the runs of one setting (a `where:` as a hypothesis spells it) that are results:
completed or diverged (run_summary.FINAL_STATUSES; a run still training, interrupted or unreadable is not a seed
yet), one per seed. `paired_pools(runs, where_a, where_b)` lines up two settings on the seeds both finished, as the
harness pairs arms. `resample_table(arms)` turns drawn runs into the table hypotheses.hypothesis_verdict and
pairwise_tables.pairwise_table take: each arm an "optimizer" of its own in one setting, the drawn runs' status and
scores kept (so a diverged run is left out of a test exactly as the verdicts leave it out), and its seeds relabelled
when asked: two A/A arms hold different runs, and the harness pairs arms by seed label.
"""

import numpy as np
import pandas as pd

from optbench.analysis.judging.hypotheses import apply_where
from optbench.formats.run_summary import FINAL_STATUSES
from optbench.specs.hypothesis_spec import DEFAULT_METRIC

METRIC = DEFAULT_METRIC  # test accuracy at the best-validation epoch: the headline every verdict tests
SETTING = "validation"  # the one setting every resample's arms share
KEPT = ("seed", "status", METRIC, "val_acc_best", "wall_time_s")  # what the rules read of a run


def finished_pool(runs: pd.DataFrame, where: dict) -> pd.DataFrame:
    """The results among the runs matching `where`, one per seed (a seed run twice keeps its first run, by
    run id, as the harness's seed bookkeeping counts a seed once), sorted by seed, indexed 0..len-1."""
    mine = apply_where(runs, where) if len(runs) else runs
    if not len(mine):
        return pd.DataFrame(columns=list(KEPT))
    done = mine[mine["status"].isin(FINAL_STATUSES) & mine["seed"].notna()]
    done = done.sort_values("run_id").drop_duplicates("seed").sort_values("seed")
    return done[list(KEPT)].astype({"seed": int}).reset_index(drop=True)


def paired_pools(runs: pd.DataFrame, where_a: dict, where_b: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The two settings' results on the seeds both have, row i of each the same seed."""
    a, b = finished_pool(runs, where_a), finished_pool(runs, where_b)
    shared = sorted(set(a["seed"]) & set(b["seed"]))
    return (
        a[a["seed"].isin(shared)].reset_index(drop=True),
        b[b["seed"].isin(shared)].reset_index(drop=True),
    )


def resample_table(arms: dict[str, pd.DataFrame], relabel: bool) -> pd.DataFrame:
    """One run table of the drawn runs of every arm (name -> its rows of a pool, in draw order); `relabel` numbers
    each arm's seeds 0, 1, ... in draw order, so arms of different runs pair position by position."""
    frames = []
    for name, drawn in arms.items():
        frame = drawn.reset_index(drop=True).copy()
        if relabel:
            frame["seed"] = np.arange(len(frame))
        frame["optimizer"] = frame["arm"] = name
        frame["run_id"] = [f"{name}/seed{seed}" for seed in frame["seed"]]
        frames.append(frame)
    table = pd.concat(frames, ignore_index=True)
    return table.assign(setting=SETTING, dataset=SETTING, noise="none", noise_rate=0.0)
