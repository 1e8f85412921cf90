"""The aggregator honours each workload's metric direction (registry/workloads.py): a language model's headline is
its best validation loss, lower is better, so the lowest loss ranks 1, "p vs best" is against it, a hypothesis
`better: lower` on it is judged and `better: higher` refused, and time-to-target crosses downward, in steps.

Real runs of mnist1d and char_lm are trained at a tiny budget (test_workloads.py's configs); the synthetic runs
are copies of a real char_lm run with hand-chosen losses, so every expected number is computed by hand here.
"""

import json
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO, compose_config
from test_workloads import CORPUS, TINY_RUNS

from optbench.analysis import aggregate
from optbench.analysis.load import epochs_to_reach
from optbench.analysis.statistics.exact_tests import holm
from optbench.analysis.statistics.two_arms import two_arm_test
from optbench.errors import ConfigError
from optbench.specs.hypothesis_spec import parse_hypothesis
from optbench.training.run import train

sys.path.insert(0, str(REPO / "src"))
import aggregate as aggregate_command

pytestmark = pytest.mark.usefixtures("one_thread")
STEPS_PER_EPOCH = 5  # TINY_RUNS["char_lm"]: dataset.steps_per_epoch=5
# Per optimizer, its best validation loss on seeds 0-4; adamw's is lowest, and its next-character test accuracy
# is the LOWEST of the three, so a ranking that assumed "higher is better" on accuracy would put it last.
LOSSES = {
    "sgd": [2.60, 2.62, 2.58, 2.65, 2.61],
    "adamw": [2.10, 2.15, 2.12, 2.08, 2.11],
    "lion": [2.40, 2.38, 2.45, 2.41, 2.43],
}
TEST_ACC = {"sgd": 0.50, "adamw": 0.30, "lion": 0.40}


def tiny_run(root: Path, workload: str, optimizer: str, seed: int) -> Path:
    if workload == "char_lm" and not CORPUS.is_file():
        pytest.skip(f"the Tiny Shakespeare copy is not at {CORPUS}")
    run_dir = root / f"{workload}-{optimizer}-{seed}"
    overrides = [f"paths.data_dir={root.parent / 'data'}", f"optimizer={optimizer}", f"seed={seed}", "epochs=3"]
    train(compose_config([*TINY_RUNS[workload], *overrides]), run_dir)
    return run_dir


@pytest.fixture(scope="module")
def real_runs(tmp_path_factory):
    """Two optimizers x two seeds of char_lm and of mnist1d, trained for 3 evaluations each."""
    root = tmp_path_factory.mktemp("direction") / "runs"
    for workload in ("char_lm", "mnist1d"):
        for optimizer in ("sgd", "adamw"):
            for seed in (0, 1):
                tiny_run(root, workload, optimizer, seed)
    return root


def loss_curve(best: float) -> list[float]:
    """Three evaluations falling to `best`: 4.0, then 3.0, then best."""
    return [4.0, 3.0, best]


def synthetic_run(template: Path, root: Path, optimizer: str, seed: int, best_loss: float, test_acc: float) -> None:
    """A copy of a real char_lm run whose optimizer, seed, validation losses and test accuracy are set by hand."""
    run_dir = root / f"{optimizer}-{seed}"
    run_dir.mkdir(parents=True)
    record = json.loads((template / "record.json").read_text())
    record["config"]["optimizer"]["name"], record["config"]["seed"] = optimizer, seed
    (run_dir / "record.json").write_text(json.dumps(record))
    epochs = [json.loads(line) for line in (template / "metrics.jsonl").read_text().splitlines()]
    for epoch, loss in zip(epochs, loss_curve(best_loss)):
        epoch.update({"val/loss": loss, "test/acc": test_acc})
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps(epoch) + "\n" for epoch in epochs))
    summary = json.loads((template / "summary.json").read_text())
    summary.update(seed=seed, optimizer=optimizer, best=dict(epochs[-1], selected_by="val/loss"), final=epochs[-1])
    (run_dir / "summary.json").write_text(json.dumps(summary))


@pytest.fixture(scope="module")
def loss_study(real_runs, tmp_path_factory):
    """Three optimizers x five seeds of char_lm with the losses of LOSSES."""
    root = tmp_path_factory.mktemp("loss_study") / "runs"
    for optimizer, losses in LOSSES.items():
        for seed, loss in enumerate(losses):
            synthetic_run(real_runs / "char_lm-sgd-0", root, optimizer, seed, loss, TEST_ACC[optimizer])
    return root


def results_of(out: Path) -> pd.DataFrame:
    return pd.read_csv(out / "tables" / "results.csv").set_index("arm")


def test_the_lowest_loss_ranks_first_and_p_vs_best_is_against_it(loss_study, tmp_path):
    aggregate(loss_study, tmp_path / "out", draw_figures=False)
    results = results_of(tmp_path / "out")
    assert results["rank"].to_dict() == {"sgd": 3.0, "adamw": 1.0, "lion": 2.0}
    assert results.loc["adamw", "val_loss_best_mean"] == pytest.approx(sum(LOSSES["adamw"]) / 5)
    # p vs best: the Holm-adjusted p of each arm against adamw, over the setting's three pairs
    seeds = pd.RangeIndex(5)
    pairs = [("sgd", "adamw"), ("sgd", "lion"), ("adamw", "lion")]
    raw = [two_arm_test(pd.Series(LOSSES[a], seeds), pd.Series(LOSSES[b], seeds)).p_value for a, b in pairs]
    adjusted = dict(zip(pairs, holm(raw)))
    assert results.loc["sgd", "p_vs_best"] == pytest.approx(adjusted[("sgd", "adamw")])
    assert results.loc["lion", "p_vs_best"] == pytest.approx(adjusted[("adamw", "lion")])
    shown = (tmp_path / "out" / "tables" / "results.md").read_text()
    assert "val loss @ best val (nats/char)" in shown and "test acc @ best val (%)" not in shown


def hypothesis_folder(root: Path, better: str) -> Path:
    folder = root / "experiments" / "hypotheses"
    folder.mkdir(parents=True)
    (folder / "h_lm.yaml").write_text(
        "id: HLM\nstatement: AdamW reaches a lower validation loss than SGD and Lion.\n"
        "test: {kind: metric_comparison, subject: adamw, versus: [sgd, lion], metric: val_loss_best, "
        f"better: {better}}}\n"
    )
    return root / "experiments"


def test_a_hypothesis_better_lower_on_a_loss_is_supported(loss_study, tmp_path):
    experiments = hypothesis_folder(tmp_path, "lower")
    outcome = aggregate(loss_study, tmp_path / "out", experiments_dir=experiments, draw_figures=False)
    assert outcome.verdicts == {"HLM": "supported"}


def test_a_hypothesis_whose_better_contradicts_the_metric_is_refused_in_one_line(tmp_path):
    experiments = hypothesis_folder(tmp_path, "higher")
    with pytest.raises(ConfigError, match="better: higher contradicts val_loss_best") as refused:
        parse_hypothesis(experiments / "hypotheses" / "h_lm.yaml")
    assert "\n" not in str(refused.value)


def test_time_to_target_crosses_downward_in_steps(loss_study, tmp_path):
    # every curve is 4.0, 3.0, then its best; 2.5 lies halfway between 3.0 (evaluation 2) and adamw's ~2.1
    curve = pd.DataFrame({"epoch": [1, 2, 3], "val/loss": loss_curve(2.0)})
    assert epochs_to_reach(curve, "val/loss", 2.5, higher_is_better=False) == pytest.approx(2.5)
    aggregate(loss_study, tmp_path / "out", draw_figures=False, target_loss=2.5)
    runs = pd.read_csv(tmp_path / "out" / "summary.csv").set_index(["optimizer", "seed"])
    best = LOSSES["adamw"][0]
    assert runs.loc[("adamw", 0), "epochs_to_target"] == pytest.approx(2 + (3.0 - 2.5) / (3.0 - best))
    assert runs.loc[("adamw", 0), "steps_to_target"] == pytest.approx(STEPS_PER_EPOCH * (2 + 0.5 / (3.0 - best)))
    assert runs.loc[("sgd", 0), "epochs_to_target"] != runs.loc[("sgd", 0), "epochs_to_target"]  # never: NaN
    shown = (tmp_path / "out" / "tables" / "results.md").read_text()
    assert "steps to val loss ≤ 2.5" in shown


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (["--target-loss", "5"], "--target-loss 5 is on the wrong side for char_lm's val/loss (lower is better)"),
        (["--target-acc", "0.5"], "--target-acc 0.5: no accuracy workload here"),
    ],
)
def test_a_target_on_the_wrong_side_is_one_error_line_and_writes_nothing(loss_study, tmp_path, capsys, flags, words):
    out = tmp_path / "out"
    assert aggregate_command.main([str(loss_study), "--out", str(out), "--no-figures", *flags]) == 2
    error = capsys.readouterr().err
    assert error.startswith("error: ") and words in error and error.count("\n") == 1
    assert not out.exists()


def test_real_runs_of_two_workloads_aggregate_each_on_its_headline(real_runs, tmp_path):
    """A folder mixing mnist1d and char_lm: each setting belongs to one workload and shows its own headline."""
    aggregate(real_runs, tmp_path / "out", draw_figures=True)
    results = pd.read_csv(tmp_path / "out" / "tables" / "results.csv")
    lm = results[results["workload"] == "char_lm"]
    assert lm.loc[lm["rank"] == 1, "val_loss_best_mean"].item() == lm["val_loss_best_mean"].min()
    digits = results[results["workload"] == "mnist1d"]
    assert digits.loc[digits["rank"] == 1, "score_mean"].item() == digits["score_mean"].max()
    runs = pd.read_csv(tmp_path / "out" / "summary.csv")
    assert set(runs["workload"]) == {"char_lm", "mnist1d"}
    assert runs.loc[runs["workload"] == "char_lm", "val_bpc_best"].notna().all()
    shown = (tmp_path / "out" / "tables" / "results.md").read_text()
    assert "val loss @ best val (nats/char)" in shown and "test acc @ best val (%)" in shown
    pairwise = pd.read_csv(tmp_path / "out" / "tables" / "pairwise.csv")
    assert set(pairwise["metric"]) == {"val_loss_best", "test_acc_at_best_val"}
    assert any(path.name.startswith("learning_curves_tinyshakespeare") for path in (tmp_path / "out").rglob("*.png"))
    assert "no validation split" not in (tmp_path / "out" / "report.md").read_text()  # val/loss is its selection
