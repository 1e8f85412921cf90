"""Every workload in the registry (optbench/registry/workloads.py) builds, lowers its loss, resumes exactly mid-epoch,
replays bit-identical, keeps its identity, trains with every registered optimizer, and refuses bad input in one
line; the default (CIFAR ResNet-18) adds nothing to a run's config, so every CIFAR identity stays as it was.
Each workload runs at a tiny budget here (a few steps), on its real data: MNIST-1D from its generator, Tiny
Shakespeare from the shared copy."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, TINY, compose_config
from omegaconf import OmegaConf
from test_resume import comparable_summary, interrupt_after, read_metrics, without_timings

from optbench.config.validation import validate
from optbench.errors import ConfigError, RunInterrupted
from optbench.registry import choices, datasets, workloads
from optbench.registry.choices import OPTIMIZERS
from optbench.registry.optimizers import REGISTRY
from optbench.training.run import resolved_config_and_identity, train

sys.path.insert(0, str(REPO / "src"))
import replay as replay_command

pytestmark = pytest.mark.usefixtures("one_thread")
CORPUS = REPO.parent / "shared" / "data" / "tinyshakespeare" / "input.txt"
COMMON = ["device=cpu", "train.progress_bar=false"]
# Each workload at a few steps: 2 epochs of 5 steps (CIFAR: the synthetic set at width 8).
TINY_RUNS = {
    "cifar_resnet18": [*TINY],
    "mnist1d": ["workload=mnist1d", "dataset.train_subset=250", "batch_size=50", "epochs=2", *COMMON],
    "char_lm": [
        "workload=char_lm",
        f"dataset.path={CORPUS}",
        "dataset.steps_per_epoch=5",
        "dataset.eval_windows=8",
        "model.width=32",
        "model.layers=1",
        "model.heads=2",
        "batch_size=4",
        "epochs=2",
        *COMMON,
    ],
}


def tiny(tmp_path, workload: str, *extra: str):
    if workload == "char_lm" and not CORPUS.is_file():
        pytest.skip(f"the Tiny Shakespeare copy is not at {CORPUS}")
    return compose_config([*TINY_RUNS[workload], f"paths.data_dir={tmp_path / 'data'}", *extra])


def test_the_registry_names_known_choices_and_metrics_with_a_direction():
    for workload in workloads.WORKLOADS.values():
        assert set(workload.datasets) <= set(choices.DATASETS), workload.name
        assert set(workload.models) <= set(choices.ARCHITECTURES), workload.name
        keys = {metric.key for metric in workload.metrics}
        assert {workload.selection, workload.headline, workload.target.metric, workload.reference.metric} <= keys
        assert workload.budget_unit in (workloads.EPOCHS, workloads.STEPS)
        assert (REPO / "conf" / "workload" / f"{workload.name}.yaml").is_file()
        assert (REPO / "experiments" / "search_spaces" / f"{workload.search_space}.yaml").is_file()
    assert workloads.describe("char_lm").headline_metric.higher_is_better is False
    assert workloads.describe("mnist1d").headline_metric.higher_is_better is True


def test_the_default_workload_adds_nothing_to_a_cifar_config(tmp_path):
    plain = compose_config([*TINY, f"paths.data_dir={tmp_path}"])
    chosen = compose_config([*TINY, f"paths.data_dir={tmp_path}", "workload=cifar_resnet18"])
    assert OmegaConf.to_container(plain) == OmegaConf.to_container(chosen)
    assert "workload" not in plain
    assert resolved_config_and_identity(plain)[1] == resolved_config_and_identity(chosen)[1]


def test_an_unknown_workload_is_answered_with_the_closest_name():
    with pytest.raises(ConfigError, match="did you mean workload=char_lm"):
        workloads.describe("char_llm")


@pytest.mark.parametrize("workload", workloads.NAMES)
def test_each_workload_trains_lowers_its_loss_and_names_itself(tmp_path, workload):
    summary = train(tiny(tmp_path, workload, "epochs=3"), tmp_path / "run")
    records = read_metrics(tmp_path / "run")
    assert summary["status"] == "completed"
    assert records[-1]["train/loss"] < records[0]["train/loss"]
    entry = workloads.describe(workload)
    assert summary["workload"]["name"] == workload
    assert summary["workload"]["headline"] == entry.headline
    assert summary["best"]["selected_by"] == entry.selection
    chosen = min if not entry.selection_metric.higher_is_better else max
    assert summary["best"][entry.selection] == chosen(record[entry.selection] for record in records)


@pytest.mark.parametrize("workload", workloads.NAMES)
def test_each_workload_resumes_mid_epoch_to_the_same_numbers(tmp_path, monkeypatch, workload):
    reference = train(tiny(tmp_path, workload), tmp_path / "reference")
    with monkeypatch.context() as patch:
        interrupt_after(patch, 7)  # in the second epoch (evaluation period) of 5 steps
        with pytest.raises(RunInterrupted):
            train(tiny(tmp_path, workload), tmp_path / "run")
    resumed = train(tiny(tmp_path, workload), tmp_path / "run")
    assert without_timings(read_metrics(tmp_path / "run")) == without_timings(read_metrics(tmp_path / "reference"))
    assert comparable_summary(resumed) == comparable_summary(reference)


@pytest.mark.parametrize("workload", workloads.NAMES)
def test_each_workload_replays_bit_identical_and_keeps_its_identity(tmp_path, workload, capsys):
    train(tiny(tmp_path, workload), tmp_path / "run")
    record = json.loads((tmp_path / "run" / "record.json").read_text())
    assert record["identity"] == resolved_config_and_identity(tiny(tmp_path, workload))[1]
    status = replay_command.main([str(tmp_path / "run"), "--out", str(tmp_path / "replayed")])
    assert status == 0, capsys.readouterr().out
    with pytest.raises(ConfigError, match="seed"):  # the same directory under another seed: refused
        train(tiny(tmp_path, workload, "seed=1"), tmp_path / "run")


@pytest.mark.parametrize("optimizer", OPTIMIZERS)
@pytest.mark.parametrize("workload", ["mnist1d", "char_lm"])
def test_every_registered_optimizer_trains_on_each_new_workload(tmp_path, workload, optimizer):
    schedule = f"scheduler={REGISTRY[optimizer].default_schedule}"
    summary = train(tiny(tmp_path, workload, f"optimizer={optimizer}", schedule, "epochs=1"), tmp_path / "run")
    assert summary["status"] == "completed", summary.get("error")
    assert summary["final"]["train/loss"] == summary["final"]["train/loss"]  # finite, not NaN


def test_muon_trains_the_transformers_hidden_matrices_and_adamw_the_rest():
    from optbench.training.models import build_model
    from optbench.training.optim import build_param_groups

    model = build_model("gpt", 65, 32, layers=1, heads=2, context=16)
    groups = build_param_groups(model, "muon")
    names = {id(parameter): name for name, parameter in model.named_parameters()}
    muon = {names[id(parameter)] for group in groups if group["use_muon"] for parameter in group["params"]}
    rest = {names[id(parameter)] for group in groups if not group["use_muon"] for parameter in group["params"]}
    assert muon == {
        "blocks.0.attention.qkv.weight",
        "blocks.0.attention.proj.weight",
        "blocks.0.mlp.0.weight",
        "blocks.0.mlp.2.weight",
    }
    assert {"stem.token.weight", "stem.position.weight", "norm.weight"} <= rest  # the head is tied to stem.token


def test_mnist1d_label_noise_is_exact(tmp_path):
    """Asymmetric noise on MNIST-1D's digits (2->7, 3->8, 5<->6, 7->1): exactly round(rate x n) of each source."""
    from optbench.data.noise import asymmetric_mapping
    from optbench.data.splits import load_splits

    cfg = tiny(tmp_path, "mnist1d", "noise=asymmetric", "noise.rate=0.4", "epochs=1")
    validate(cfg)
    mapping = asymmetric_mapping(datasets.MNIST1D_CLASSES)
    assert mapping == {2: 7, 3: 8, 5: 6, 6: 5, 7: 1}
    labels = load_splits(data_dir=str(tmp_path), **OmegaConf.to_container(cfg.dataset)).train.labels
    expected = sum(round(0.4 * int((labels == source).sum())) for source in mapping)
    summary = train(cfg, tmp_path / "run")
    assert summary["noise"]["num_noisy"] == expected


def test_the_text_splits_are_nanogpts_and_fixed():
    if not CORPUS.is_file():
        pytest.skip(f"the Tiny Shakespeare copy is not at {CORPUS}")
    from optbench.data.text import load_text_splits

    splits = load_text_splits("tinyshakespeare", "unused", context=64, path=str(CORPUS))
    assert len(splits.classes) == 65
    train_characters = len(splits.train) + 1
    assert train_characters == int(1_115_394 * 0.9)  # nanoGPT's first 90 %
    assert splits.val.images.shape[1] == 64 and (splits.val.labels[:, :-1] == splits.val.images[:, 1:]).all()
    again = load_text_splits("tinyshakespeare", "unused", context=64, path=str(CORPUS))
    assert (again.val.images == splits.val.images).all() and (again.test.labels == splits.test.labels).all()


def run_command(*arguments, cwd: Path):
    return subprocess.run(
        [sys.executable, str(REPO / "src" / "train.py"), *arguments],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


@pytest.mark.parametrize(
    "arguments, words",
    [
        (["workload=char_llm"], "did you mean workload=char_lm"),
        (["workload=char_lm", "dataset=cifar10"], "workload=char_lm takes dataset=tinyshakespeare"),
        (["workload=char_lm", "noise=symmetric", "noise.rate=0.2"], "label noise applies to classification"),
        (["workload=mnist1d", "noise=human", "noise.label_set=aggre"], "human label sets are CIFAR's"),
        (["workload=mnist1d", "data.pipeline=dataloader"], "the DataLoader pipeline reads images"),
    ],
)
def test_bad_workload_input_is_one_line_exit_2_and_writes_nothing(tmp_path, arguments, words):
    result = run_command(*arguments, f"paths.results_dir={tmp_path / 'results'}", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    lines = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and words in lines[0], lines
    assert not (tmp_path / "results").exists()


def test_an_altered_corpus_is_refused_in_one_line(tmp_path):
    if not CORPUS.is_file():
        pytest.skip(f"the Tiny Shakespeare copy is not at {CORPUS}")
    truncated = tmp_path / "input.txt"
    truncated.write_bytes(CORPUS.read_bytes()[:-100])
    result = run_command(
        *TINY_RUNS["char_lm"], f"dataset.path={truncated}", f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path
    )
    assert result.returncode == 2, result.stderr
    lines = [line for line in (result.stdout + result.stderr).splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "truncated or altered" in lines[0], result.stderr
    assert not (tmp_path / "run" / "checkpoint.pt").exists()


def test_a_missing_corpus_without_network_names_the_fix(tmp_path, monkeypatch):
    from optbench.data import text

    def offline(url, target):
        raise OSError("no network")

    monkeypatch.setattr(text.urllib.request, "urlretrieve", offline)
    with pytest.raises(ConfigError, match="downloading it from https://raw.githubusercontent.com/karpathy/char-rnn"):
        text.read_corpus(tmp_path, "tinyshakespeare")
    assert not any(tmp_path.rglob("*.part"))


def test_readmes_workloads_block_is_the_scripts_output():
    """README's workloads table is written by scripts/readme_workloads.py from the registry and the benchmark
    results; a hand edit, or a changed registry or result not written back, shows here."""
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "readme_workloads.py"), "--check"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
