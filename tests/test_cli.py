"""The command line as users type it: config composition, sweeps, and bad input.

Bad input must give exactly one line on stderr naming the fix, exit status 2, and leave no run
directory that looks complete. Subprocesses run the real entry points on tiny synthetic runs.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import CONF_DIR, REPO, TINY, compose_config
from omegaconf import OmegaConf

from optbench.config.validation import validate
from optbench.errors import ConfigError
from optbench.registry import workloads
from optbench.registry.choices import OPTIMIZERS
from optbench.registry.optimizers import REGISTRY
from optbench.training.train_command import preflight

GROUP_OPTIONS = [
    (group.name, option.stem)
    for group in sorted(CONF_DIR.iterdir())
    if group.is_dir()
    for option in sorted(group.glob("*.yaml"))
]


def run_cli(args: list[str], tmp_path: Path, script: str = "src/train.py", env_extra: dict | None = None):
    env = {**os.environ, "OPTBENCH_DATA_DIR": str(tmp_path / "data"), **(env_extra or {})}
    return subprocess.run(
        [sys.executable, script, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )


def tiny_args(tmp_path: Path) -> list[str]:
    return [*TINY, f"paths.results_dir={tmp_path / 'results'}"]


@pytest.mark.parametrize(("group", "option"), GROUP_OPTIONS)
def test_every_config_option_composes_and_validates(group, option):
    extra = ["dataset.root=/some/folder"] if option == "imagefolder" else []
    owner = {"dataset": workloads.of_dataset, "model": workloads.of_model}.get(group)
    if owner is not None and owner(option).name != workloads.DEFAULT:  # another workload's data or model
        extra.append(f"workload={owner(option).name}")
    if group == "optimizer":  # under the schedule it accepts (Schedule-Free: constant)
        extra.append(f"scheduler={REGISTRY[option].default_schedule}")
    cfg = compose_config([f"{group}={option}", *extra])
    validate(cfg)
    resolved = OmegaConf.to_container(cfg, resolve=True)  # every interpolation resolves
    if group == "logger":  # keyed by tracker name, so several compose at once (logger=[mlflow,csv])
        assert set(resolved["logger"]) == {option} - {"none"}
    elif group == "workload":  # a package of other groups' choices; the default adds no key
        assert resolved.get("workload", workloads.DEFAULT) == option
    elif group != "experiment":
        assert resolved[group]["name"] == option


def test_every_default_has_a_comment():
    """Every default value in conf/ carries a comment with its unit or reason (hydra settings aside)."""
    exempt_keys = {"name", "_target_", "_partial_", "param_groups", "decay_norms_and_biases"}
    bare = []
    for path in sorted(CONF_DIR.rglob("*.yaml")):
        for number, line in enumerate(path.read_text().split("\nhydra:")[0].splitlines(), 1):
            key, colon, value = line.strip().partition(":")
            if (
                colon
                and value.strip()
                and not key.startswith(("#", "-"))
                and key not in exempt_keys
                and "#" not in value
                and path.parent.name != "experiment"
            ):
                bare.append(f"{path.relative_to(CONF_DIR)}:{number}: {line.strip()}")
    assert not bare, bare


def test_cfg_job_prints_the_composed_config(tmp_path):
    done = run_cli(["--cfg", "job", "optimizer=lion"], tmp_path)
    assert done.returncode == 0, done.stderr
    cfg = OmegaConf.create(done.stdout)
    assert cfg.optimizer.name == "lion" and cfg.optimizer._target_ == "lion_pytorch.Lion"
    assert not (tmp_path / "results").exists()


@pytest.mark.slow
def test_multirun_puts_each_run_in_its_deterministic_directory(tmp_path):
    done = run_cli(["-m", "optimizer=sgd,lion", "seed=0,1", *tiny_args(tmp_path)], tmp_path)
    assert done.returncode == 0, done.stderr
    summaries = sorted((tmp_path / "results").rglob("summary.json"))
    relative = sorted(str(path.parent.relative_to(tmp_path / "results")) for path in summaries)
    variant = "batch_size=50,dataset.test_size=200,dataset.train_size=600,dataset.val_size=100,epochs=1,model.width=8"
    assert relative == [f"synthetic/none-0.0/{opt}/{variant}/seed{seed}" for opt in ("lion", "sgd") for seed in (0, 1)]
    for path in summaries:
        assert json.loads(path.read_text())["status"] == "completed"
        assert (path.parent / ".hydra" / "config.yaml").exists()
    assert done.stdout.splitlines()[-1] == (
        "sweep: 4 completed, 0 diverged, 0 failed, 0 skipped; aggregate with: "
        f"python src/aggregate.py {tmp_path / 'results'}"
    )


@pytest.mark.slow
def test_hydra_run_dir_puts_everything_there(tmp_path):
    run_dir = tmp_path / "my-run"
    done = run_cli([*tiny_args(tmp_path), f"hydra.run.dir={run_dir}"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert {"summary.json", "metrics.jsonl", "checkpoint.pt", ".hydra"} <= {p.name for p in run_dir.iterdir()}


@pytest.mark.slow
def test_run_single_experiment_maps_flags_to_the_same_run(tmp_path):
    done = run_cli(
        [
            "--optimizer",
            "adamw",
            "--dataset",
            "synthetic",
            "--seed",
            "3",
            "--epochs",
            "1",
            "--label-noise",
            "0.2",
            "--device",
            "cpu",
            *tiny_args(tmp_path)[1:],
        ],
        tmp_path,
        script="run_single_experiment.py",
    )
    assert done.returncode == 0, done.stderr
    [summary_path] = (tmp_path / "results" / "synthetic" / "symmetric-0.2" / "adamw").rglob("summary.json")
    summary = json.loads(summary_path.read_text())
    assert summary["seed"] == 3 and summary["status"] == "completed"
    assert summary["noise"]["realised_rate"] == pytest.approx(0.2, abs=0.002)


@pytest.mark.slow
@pytest.mark.extended
def test_an_optimizer_with_its_own_schedule_runs_plainly_from_every_entry_point(tmp_path):
    """`optimizer=schedulefree_adamw` alone was refused (scheduler=cosine); now it takes its registry default,
    says so in train.log and record.json, and keeps the plain run directory, in a sweep and through the flags."""
    swept = run_cli(["-m", "optimizer=sgd,schedulefree_adamw", *tiny_args(tmp_path)], tmp_path)
    assert swept.returncode == 0, swept.stderr
    flags = run_cli(
        ["--optimizer", "schedulefree_adamw", "--seed", "1", *tiny_args(tmp_path)],
        tmp_path,
        script="run_single_experiment.py",
    )
    assert flags.returncode == 0, flags.stderr
    variant = "batch_size=50,dataset.test_size=200,dataset.train_size=600,dataset.val_size=100,epochs=1,model.width=8"
    for optimizer, seed, schedule, defaults in (
        ("sgd", 0, "cosine", {}),
        ("schedulefree_adamw", 0, "constant", {"scheduler": "constant"}),
        ("schedulefree_adamw", 1, "constant", {"scheduler": "constant"}),
    ):
        run_dir = tmp_path / "results" / "synthetic" / "none-0.0" / optimizer / variant / f"seed{seed}"
        config = json.loads((run_dir / "record.json").read_text())["config"]
        assert (config["scheduler"]["name"], config["optimizer_defaults"]) == (schedule, defaults)
        said = "scheduler=constant: optimizer=schedulefree_adamw's own default" in (run_dir / "train.log").read_text()
        assert said == bool(defaults)
        assert json.loads((run_dir / "summary.json").read_text())["status"] == "completed"


BAD_INPUTS = [
    (["optimizer=adamx"], "optimizer=" + ", ".join(sorted(OPTIMIZERS))),
    (["-m", "optimizer=sgd,adamx"], "unknown optimizer 'adamx'"),
    (["-m", "seed=0,1", "noise=symmetric", "noise.rate=0.2,1.2"], "noise.rate=1.2"),
    (["dataset=cifar1000"], "dataset=cifar10, cifar100, imagefolder, mnist1d, synthetic, tinyshakespeare"),
    (["noise=gaussian"], "noise=asymmetric, human, none, symmetric"),
    (["noise=symmetric", "noise.rate=1.0"], "noise.rate=1.0"),
    (["noise=symmetric", "noise.rate=-0.1"], "noise.rate=-0.1"),
    (["noise=none", "noise.rate=0.3"], "noise=symmetric"),
    (["dataset=synthetic", "noise=asymmetric"], "use noise=symmetric"),
    (["batch_size=0"], "batch_size=0"),
    (["epochs=0"], "epochs=0"),
    (["epochs=ten"], "epochs=ten"),
    (["epochz=3"], "epochz=3: epochz is not a setting optbench reads (did you mean epochs=3?"),
    (["dataset=imagefolder"], "dataset.root"),
    (["optimizer.lr=-1"], "optimizer.lr=-1"),
    (["device=tpu"], "choose auto, fastest, cpu, cuda, cuda:N or mps"),
    (["device_policy.amp=fp8"], "choose bf16, fp16, off"),
    (["device_policy.channels_last=maybe"], "use true, false, or null"),
    (["device_policy.mode=fastest"], "device_policy.mode=fastest: choose rules"),
    (["device_policy.keep_awake=sometimes"], "device_policy.keep_awake=sometimes: use true, false, or null"),
    (["device_policy.num_workers=-1"], "device_policy.num_workers=-1"),
    (["+device_policy.pinned=true"], "not a policy setting"),
    (["data.pipeline=fast"], "data.pipeline=device"),
    (["train.grad_accum=0"], "train.grad_accum=0"),
    (["batch_size=100", "train.grad_accum=3"], "must divide batch_size=100"),
    (["optimizer=adam", "optimizer.betas=[0.9,1.5]"], "optimizer.betas=[0.9, 1.5]"),
    (["optimizer.momentum=1.2"], "optimizer.momentum=1.2"),
    (["scheduler=step", "scheduler.milestones=[50,75]"], "fractions of all iterations"),
    (["scheduler.min_lr_ratio=2"], "scheduler.min_lr_ratio=2"),
    (["train.rerun=maybe"], "train.rerun=maybe"),
    (["model.name=resnet50"], "choose resnet18"),
    (["dataset=synthetic", "dataset.num_classes=1"], "dataset.num_classes=1"),
    (["train.divergence_factor=0.5"], "train.divergence_factor=0.5"),
    (["optimizer.param_groups=layerwise"], "choose standard or muon"),
    (
        ["optimizer=schedulefree_adamw", "scheduler=cosine"],
        "scheduler=cosine: optimizer=schedulefree_adamw accepts scheduler=constant",
    ),
    (
        ["optimizer=schedulefree_adamw", "scheduler.warmup_fraction=0.1"],  # its own default schedule, then the warmup
        "use scheduler.warmup_fraction=0 and optimizer.warmup_fraction=0.1",
    ),
    (
        ["optimizer=schedulefree_adamw", "scheduler=constant", "scheduler.warmup_fraction=0.1"],
        "use scheduler.warmup_fraction=0 and optimizer.warmup_fraction=0.1",
    ),
    (
        ["optimizer=schedulefree_adamw", "scheduler=constant", "optimizer.warmup_fraction=2"],
        "optimizer.warmup_fraction=2",
    ),
    (["optimizer=ademamix", "optimizer.betas=[0.9,0.999,1.5]"], "optimizer.betas=[0.9, 0.999, 1.5]"),
    (["noise=symmetric", "noise.validation=maybe"], "choose noisy"),
    (["--optimizer", "adam", "--epochs", "10"], "python src/train.py optimizer=adam epochs=10"),
    (["+epoch=1"], "+epoch=1: epoch is not a setting optbench reads (did you mean epochs=1?"),  # Hydra's advice
    # typos answered at the first try (Hydra's own answer was to add a +, and only that second try got a hint)
    (["optimzer=lion"], "optimzer=lion: optimzer is not a setting optbench reads (did you mean optimizer=lion?"),
    (["+optimzer=lion"], "+optimzer=lion: optimzer is not a setting optbench reads (did you mean optimizer=lion?"),
    (["optimizer=adamw", "optimizer.weight_decy=0.1"], "did you mean optimizer.weight_decay=0.1?"),
    (
        ["-m", "seed=0,1", "model.widht=8"],
        "model.widht=8: model.widht is not a setting optbench reads (did you mean model.width=8?",
    ),
    (
        ["dataset=imagefolder", "dataset.root=/nowhere/cifar10-jpeg"],
        "dataset.root=/nowhere/cifar10-jpeg does not exist: ",
    ),
    (["dataset=imagefolder", "dataset.root=nowhere"], "dataset.root=nowhere does not exist (relative to "),
    (["logger=mlfow"], "unknown logger 'mlfow': did you mean logger=mlflow? choose logger="),
    (["optimizer=lino"], "unknown optimizer 'lino': did you mean optimizer=lion? choose optimizer="),
    (["-m", "seed=0,1", "++optimizer.lrr=0.1"], "did you mean optimizer.lr=0.1?"),
    (  # a bare value, not a list: each of its letters was taken for a trial
        ["-m", "seed=0,1", "hydra/sweeper=optbench_trials", "hydra.sweeper.trials=abc"],
        "hydra.sweeper.trials=abc: give a list of trials, each a space-separated override list",
    ),
]


@pytest.mark.parametrize(("argv", "expected"), BAD_INPUTS, ids=[" ".join(argv) for argv, _ in BAD_INPUTS])
def test_bad_input_is_refused_before_any_work(argv, expected):
    with pytest.raises(ConfigError) as refused:
        preflight(argv, CONF_DIR)
    message = str(refused.value)
    assert "\n" not in message and expected in message, message


@pytest.mark.parametrize("typo", ["+epoch=1", "optimzer=lion"])
def test_a_misspelt_key_is_refused_by_the_command_line_with_nothing_made(tmp_path, typo):
    done = run_cli([typo, *tiny_args(tmp_path)], tmp_path)
    assert done.returncode == 2 and done.stderr.startswith(f"error: {typo}") and done.stderr.count("\n") == 1
    assert "did you mean" in done.stderr
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("case", ["results_dir is a file", "not UTF-8", "name too long", "sweep into a file"])
def test_unusable_paths_and_text_are_one_line_and_leave_nothing(tmp_path, case):
    """Each was a Hydra traceback and exit 1; the over-long name also left empty directories behind."""
    (tmp_path / "afile").write_text("keep me")
    extra = {
        "results_dir is a file": [f"paths.results_dir={tmp_path / 'afile'}"],
        "not UTF-8": ["paths.mirror_dir='mirror\udcff'"],
        "name too long": ["optimizer.lr=0." + "1" * 300],
        "sweep into a file": ["seed=0,1", f"paths.results_dir={tmp_path / 'afile' / 'below'}"],
    }[case]
    expected = {
        "results_dir is a file": "is a file, not a folder",
        "not UTF-8": "mirror\\xff': holds a byte that is not UTF-8",
        "name too long": "longer than a file name may be",
        "sweep into a file": "is a file, not a folder",
    }[case]
    flags = ["-m"] if case.startswith("sweep") else []
    done = subprocess.run(
        [sys.executable, "src/train.py", *flags, *tiny_args(tmp_path), *extra],
        cwd=REPO,
        capture_output=True,
        env={**os.environ, "OPTBENCH_DATA_DIR": str(tmp_path / "data")},
        timeout=300,
        errors="surrogateescape",
    )
    assert done.returncode == 2 and done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, done.stderr
    assert expected in done.stderr
    assert (
        sorted(path.name for path in tmp_path.iterdir()) == ["afile"] and (tmp_path / "afile").read_text() == "keep me"
    )


@pytest.mark.slow
def test_good_sweep_passes_preflight_with_every_run_checked():
    under_cosine = [name for name in OPTIMIZERS if REGISTRY[name].accepts("cosine")]  # the default schedule
    checked = preflight(
        ["-m", "optimizer=" + ",".join(under_cosine), "seed=0,1,2", "noise=symmetric", "noise.rate=0.2,0.4"], CONF_DIR
    )
    assert checked == len(under_cosine) * 3 * 2


@pytest.mark.parametrize("overrides", [["optimizer=adamx"], ["device=cuda"] if not torch.cuda.is_available() else []])
@pytest.mark.slow
def test_bad_input_from_the_shell_exits_2_with_one_line(tmp_path, overrides):
    if not overrides:
        pytest.skip("CUDA is available here")
    done = run_cli([*tiny_args(tmp_path), *overrides], tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert_no_run_left(tmp_path / "results")


def assert_no_run_left(results_dir: Path) -> None:
    assert not results_dir.exists() or not [path for path in results_dir.rglob("*") if path.is_file()]


def test_imagefolder_root_without_train_folder_leaves_no_run_directory(tmp_path):
    (tmp_path / "images" / "test" / "cat").mkdir(parents=True)
    done = run_cli(
        [
            "dataset=imagefolder",
            f"dataset.root={tmp_path / 'images'}",
            "device=cpu",
            f"paths.results_dir={tmp_path / 'results'}",
        ],
        tmp_path,
    )
    assert done.returncode == 2
    assert "has no train/ folder" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert_no_run_left(tmp_path / "results")  # Hydra's .hydra/ and log went with the empty run directory


@pytest.mark.slow
def test_missing_cifar_without_network_is_one_line(tmp_path):
    # A proxy on a closed local port makes any download fail at once, whatever network this machine has.
    closed = {
        "http_proxy": "http://127.0.0.1:9",
        "https_proxy": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9",
        "HTTPS_PROXY": "http://127.0.0.1:9",
    }
    done = run_cli(
        ["dataset=cifar10", "model.width=8", "epochs=1", "device=cpu", f"paths.results_dir={tmp_path / 'results'}"],
        tmp_path,
        env_extra=closed,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "OPTBENCH_DATA_DIR" in lines[0], done.stderr
    assert not list((tmp_path / "results").rglob("summary.json"))


def test_run_single_experiment_rejects_bad_noise_rate(tmp_path):
    done = run_cli(["--optimizer", "sgd", "--label-noise", "1.5"], tmp_path, script="run_single_experiment.py")
    assert done.returncode == 2 and "noise.rate=1.5" in done.stderr


@pytest.mark.parametrize(
    ("flags", "nearest"),
    [(["--optimzer", "adam"], "--optimizer"), (["--lable-noise=0.2"], "--label-noise"), (["--seeds", "1"], "--seed")],
)
def test_run_single_experiment_names_the_flag_a_misspelt_one_was_meant_to_be(tmp_path, flags, nearest):
    """A flag neither the command's nor Hydra's went on to Hydra, which took it for an override and suggested
    `--optimzer adam` back. (Hydra's own flags still pass: test_documented_commands.py runs it with --cfg job.)"""
    done = run_cli([*flags, f"paths.results_dir={tmp_path / 'results'}"], tmp_path, script="run_single_experiment.py")
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"error: unrecognized arguments: {flags[0]} (did you mean {nearest}?)"), line
    assert "(python run_single_experiment.py --help)" in line
    assert not (tmp_path / "results").exists()


@pytest.mark.slow
def test_setup_smoke_check_passes_on_this_machine(tmp_path):
    from PIL import Image

    for part in ("train", "test"):
        for name in ("cat", "dog"):
            (tmp_path / "images" / part / name).mkdir(parents=True)
            Image.new("RGB", (32, 32)).save(tmp_path / "images" / part / name / "0.png")
    done = run_cli(
        ["--device", "cpu", "--image-folder", str(tmp_path / "images"), "--image-folder", str(tmp_path / "nowhere")],
        tmp_path,
        script="test_setup.py",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    for name in OPTIMIZERS:
        assert f"✓ {name}: losses" in done.stdout
    checks = 1 + len(OPTIMIZERS) + len(workloads.NAMES) - 1  # imports, each optimizer, each workload but CIFAR
    assert f"{checks} passed, 0 failed" in done.stdout
    # Which datasets are ready: CIFAR is not in the empty data dir; the folder of images is.
    assert f"cifar10: not in {tmp_path / 'data' / 'cifar-10-batches-py'}: downloaded on first use" in done.stdout
    assert f"imagefolder {tmp_path / 'images'}: ready (2 classes, 2 training and 2 test images)" in done.stdout
    assert f"imagefolder {tmp_path / 'nowhere'}: not usable: " in done.stdout
