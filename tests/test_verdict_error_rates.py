"""The verdict rule's error rates, simulated through the real `hypothesis_verdict`: under the null "supported" and
"rejected" each stay at or below alpha (normal, heavy-tailed and unequal seed noise), and at the user's
design (3 seeds) a large effect is found more often than not. Bounded to a few seconds.

Each simulated study has a shared per-seed draw (initialisation, data order: what pairing removes) plus
run noise; "d" is in units of one arm's run-noise sd, as in experiments/README.md's table of what n can show.
"""

import numpy as np
import pandas as pd
import pytest

from optbench.analysis.judging.hypotheses import Context, hypothesis_verdict, parse_hypothesis

ALPHA = 0.05
OPTIMIZERS = ("sgd", "adam", "adamw", "lion", "muon")


def hypothesis(tmp_path, versus: list[str]):
    path = tmp_path / "h.yaml"
    path.write_text(
        f"id: HX\nstatement: sgd is best\ntest: {{kind: metric_comparison, subject: sgd, "
        f"versus: [{', '.join(versus)}], alpha: {ALPHA}}}\n"
    )
    return parse_hypothesis(path)


def study(rng, optimizers, seeds: int, noise, shift: float = 0.0, subject_scale: float = 1.0) -> pd.DataFrame:
    """One setting; sgd's runs are `shift` run-noise sds ahead and `subject_scale` times as noisy."""
    shared = rng.normal(0.0, 0.004, seeds)
    rows = []
    for name in optimizers:
        scale = subject_scale if name == "sgd" else 1.0
        for seed in range(seeds):
            value = 0.90 + shared[seed] + 0.003 * (scale * noise(rng) + (shift if name == "sgd" else 0.0))
            rows.append(
                {
                    "run_id": f"{name}/{seed}",
                    "setting": "cifar10, clean",
                    "dataset": "cifar10",
                    "noise": "none",
                    "noise_rate": 0.0,
                    "optimizer": name,
                    "arm": name,
                    "seed": seed,
                    "status": "completed",
                    "val_acc_best": 0.9,
                    "test_acc_at_best_val": value,
                }
            )
    return pd.DataFrame(rows)


def rates(tested, make_runs, repetitions: int, rng) -> dict:
    verdicts = [
        hypothesis_verdict(tested, Context(make_runs(rng), pd.DataFrame(), [])).verdict for _ in range(repetitions)
    ]
    return {name: verdicts.count(name) / repetitions for name in ("supported", "rejected")}


NOISES = {
    "normal": lambda rng: rng.normal(),
    "heavy-tailed (t, 3 df)": lambda rng: rng.standard_t(3) / np.sqrt(3.0),
    "normal, subject twice as noisy": "unequal",
}


@pytest.mark.parametrize("noise_name", list(NOISES))
def test_a_single_comparison_errs_at_most_alpha_in_each_direction_under_the_null(tmp_path, noise_name):
    tested = hypothesis(tmp_path, ["adam"])
    noise, scale = (NOISES["normal"], 2.0) if NOISES[noise_name] == "unequal" else (NOISES[noise_name], 1.0)
    found = rates(
        tested, lambda rng: study(rng, ("sgd", "adam"), 5, noise, subject_scale=scale), 400, np.random.default_rng(25)
    )
    assert found["supported"] <= ALPHA and found["rejected"] <= ALPHA, found


def test_h2s_four_comparisons_err_at_most_alpha_in_each_direction_under_the_null(tmp_path):
    tested = hypothesis(tmp_path, ["adam", "adamw", "lion", "muon"])
    found = rates(tested, lambda rng: study(rng, OPTIMIZERS, 5, NOISES["normal"]), 150, np.random.default_rng(3))
    assert found["supported"] <= ALPHA and found["rejected"] <= ALPHA, found


def test_at_three_seeds_a_large_effect_is_supported_more_often_than_not(tmp_path):
    """d = 4 run-noise sds at n = 3: the paired t finds it about 70 % of the time (the exact sign-flip test,
    stuck at p >= 0.25, never would)."""
    tested = hypothesis(tmp_path, ["adam"])
    found = rates(
        tested, lambda rng: study(rng, ("sgd", "adam"), 3, NOISES["normal"], shift=4.0), 200, np.random.default_rng(7)
    )
    assert found["supported"] > 0.5 and found["rejected"] == 0.0, found
