"""The device layer: device choice, every per-device policy rule (CUDA, MPS and both kinds of CPU described,
not needed), device=fastest and its cache, device_policy.mode=measured, keeping a Mac awake, gradient
accumulation, AMP on CPU, and out-of-memory reporting."""

import json
import os
import subprocess
import sys

import pytest
import torch
from conftest import REPO
from torch import nn

from optbench.device import fastest, measured, sharing
from optbench.device.awake import keep_awake_command, kept_awake
from optbench.device.policy import (
    DeviceFacts,
    apply_policy,
    cpu_bf16_instructions,
    decide_policy,
    facts_of,
    out_of_memory_as_error,
    resolve_device,
)
from optbench.device.sharing import joblib_jobs
from optbench.errors import ConfigError, OutOfMemory
from optbench.training.run import train
from optbench.training.steps import train_step
from optbench.training.timing import timed_model
from optbench.training.train_command import run_job

pytestmark = pytest.mark.usefixtures("one_thread")

AMPERE = DeviceFacts("cuda:0", bf16_supported=True, cpu_count=16)
TURING = DeviceFacts("cuda:0", bf16_supported=False, cpu_count=4)  # e.g. Colab's T4
APPLE = DeviceFacts("mps", bf16_supported=True, cpu_count=10, host_os="darwin")
LAPTOP_CPU = DeviceFacts("cpu", bf16_supported=True, cpu_count=2)  # no native bf16 (e.g. AVX2 only)
BF16_CPU = DeviceFacts(
    "cpu", bf16_supported=True, cpu_count=2, cpu_bf16_instructions=("avx512_bf16", "amx_bf16")
)  # Sapphire Rapids
AVX512_BF16_CPU = DeviceFacts(
    "cpu", bf16_supported=True, cpu_count=2, cpu_bf16_instructions=("avx512_bf16",)
)  # Cooper Lake, Zen 4


def test_cuda_with_bf16_gets_bf16_channels_last_pinned_memory_and_workers():
    policy = decide_policy(AMPERE)
    assert (policy.amp, policy.grad_scaler, policy.channels_last) == ("bf16", False, True)
    assert (policy.pin_memory, policy.num_workers, policy.persistent_workers) == (True, 8, True)
    assert (policy.cudnn_benchmark, policy.tf32, policy.compile) == (True, True, False)
    assert policy.amp_dtype == torch.bfloat16 and policy.memory_format == torch.channels_last


def test_cuda_without_bf16_gets_fp16_with_a_grad_scaler():
    policy = decide_policy(TURING)
    assert (policy.amp, policy.grad_scaler) == ("fp16", True)
    assert policy.num_workers == 4  # min(8, CPUs)


def test_mps_defaults_avoid_what_is_slow_or_unsupported_there():
    policy = decide_policy(APPLE)
    assert (policy.pin_memory, policy.num_workers, policy.persistent_workers) == (False, 0, False)
    assert (policy.amp, policy.grad_scaler, policy.channels_last) == ("off", False, False)
    assert (policy.cudnn_benchmark, policy.tf32) == (False, False)
    assert "pinned memory" in policy.reasons["pin_memory"] and "spawn" in policy.reasons["num_workers"]


def test_cpu_defaults_fp32_channels_last_and_half_the_cores_as_workers():
    policy = decide_policy(LAPTOP_CPU)
    assert (policy.amp, policy.amp_dtype, policy.channels_last, policy.pin_memory) == ("off", None, True, False)
    assert policy.num_workers == 1


def test_every_cpu_trains_in_fp32_by_default_so_seeds_share_a_precision_across_machines():
    policy = decide_policy(BF16_CPU)  # AMX: bf16 would pay, yet null must mean the same precision everywhere
    assert (policy.amp, policy.amp_dtype, policy.grad_scaler) == ("off", None, False)
    assert "amx_bf16" in policy.reasons["amp"] and "device_policy.amp=bf16" in policy.reasons["amp"]
    assert decide_policy(BF16_CPU, {"amp": "bf16"}).amp_dtype == torch.bfloat16  # one override away
    assert "without native bf16" in decide_policy(LAPTOP_CPU).reasons["amp"]
    assert decide_policy(LAPTOP_CPU, model_width=64).compile and not decide_policy(LAPTOP_CPU, model_width=32).compile
    assert "paid back" in decide_policy(LAPTOP_CPU, model_width=64).reasons["compile"]
    slower = decide_policy(AVX512_BF16_CPU)  # measured slower in bf16 without AMX: fp32, and says so
    assert slower.amp == "off" and "no AMX" in slower.reasons["amp"] and "mode=measured" in slower.reasons["amp"]
    assert decide_policy(BF16_CPU, {"amp": "off"}).amp == "off"  # fp32 stays one override away


def test_runs_side_by_side_share_the_cores_and_one_run_keeps_torchs_count():
    alone = decide_policy(DeviceFacts("cpu", True, cpu_count=8, threads_now=6))
    assert alone.threads == 6 and "one run at a time" in alone.reasons["threads"]
    shared = decide_policy(DeviceFacts("cpu", True, cpu_count=8, concurrent_runs=3, threads_now=1))
    assert shared.threads == 2 and "8 cores / 3 runs at once" in shared.reasons["threads"]
    assert decide_policy(DeviceFacts("cpu", True, cpu_count=2, concurrent_runs=4)).threads == 1
    assert decide_policy(DeviceFacts("cpu", True, cpu_count=8, concurrent_runs=2), {"threads": 3}).threads == 3


@pytest.mark.parametrize(
    "gpus, cores, memory_gib, jobs", [(0, 2, 24, 2), (0, 16, 8, 4), (0, 1, 24, 1), (1, 16, 64, 2), (4, 16, 64, 4)]
)
def test_the_parallel_launcher_runs_one_job_per_core_or_gpu_as_memory_allows(
    monkeypatch, gpus, cores, memory_gib, jobs
):
    monkeypatch.setattr(sharing, "usable_cores", lambda: cores)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: gpus)
    pages = {"SC_PAGE_SIZE": 4096, "SC_PHYS_PAGES": memory_gib * 1024**3 // 4096}
    monkeypatch.setattr(sharing.os, "sysconf", lambda name: pages[name])
    assert sharing.parallel_jobs() == jobs


@pytest.mark.parametrize("n_jobs, cores, runs", [(2, 8, 2), (-1, 8, 8), (-2, 8, 7), (None, 8, 1), (-9, 8, 1)])
def test_joblib_n_jobs_as_a_count_of_runs(n_jobs, cores, runs):
    assert joblib_jobs(n_jobs, cores) == runs


@pytest.mark.parametrize(
    "capabilities, expected",
    [
        ({"architecture": "x86_64", "avx512_f": True, "avx512_bf16": True, "amx_bf16": False}, ("avx512_bf16",)),
        ({"architecture": "x86_64", "avx512_bf16": True, "amx_bf16": True}, ("avx512_bf16", "amx_bf16")),
        ({"architecture": "x86_64", "avx512_f": True, "avx2": True}, ()),  # Skylake: AVX-512 but bf16 emulated
        ({"architecture": "arm64", "neon": True, "bf16": True, "sve_max_length": 0}, ("bf16",)),
    ],
)
def test_native_bf16_is_read_from_torchs_cpu_capabilities(monkeypatch, capabilities, expected):
    monkeypatch.setattr(torch.cpu, "get_capabilities", lambda: capabilities)
    monkeypatch.setattr(torch.backends.mkldnn, "is_available", lambda: True)
    assert cpu_bf16_instructions() == expected
    assert facts_of(torch.device("cpu")).cpu_native_bf16 == bool(expected)
    monkeypatch.setattr(torch.backends.mkldnn, "is_available", lambda: False)  # no oneDNN: no fast bf16 convolutions
    assert cpu_bf16_instructions() == ()


def test_a_cpu_model_narrower_than_8_channels_stays_nchw_where_onednn_nhwc_crashes():
    policy = decide_policy(LAPTOP_CPU, model_width=4)
    assert policy.channels_last is False and "crashes" in policy.reasons["channels_last"]
    assert decide_policy(AMPERE, model_width=4).channels_last is True  # a CPU-only rule
    with pytest.raises(ConfigError, match="device_policy.channels_last=false"):
        decide_policy(LAPTOP_CPU, {"channels_last": True}, model_width=4)


def test_a_mac_is_kept_awake_by_default_and_nothing_else_is():
    assert decide_policy(APPLE).keep_awake is True and "caffeinate" in decide_policy(APPLE).reasons["keep_awake"]
    assert decide_policy(DeviceFacts("cpu", True, 8, host_os="darwin")).keep_awake is True  # a Mac training on its CPU
    assert decide_policy(APPLE, {"keep_awake": False}).keep_awake is False
    assert decide_policy(AMPERE).keep_awake is False
    asked = decide_policy(LAPTOP_CPU, {"keep_awake": True})
    assert asked.keep_awake is False and "macOS only" in asked.reasons["keep_awake"]


def test_caffeinate_is_held_on_macos_for_this_process_and_released_when_the_run_ends():
    assert keep_awake_command(4321, "darwin") == ["caffeinate", "-i", "-w", "4321"]
    assert keep_awake_command(4321, "linux") is None and keep_awake_command(4321, "win32") is None
    started = []

    class FakeCaffeinate:
        def __init__(self, command, **streams):
            started.append(command)
            self.terminated = False

        def terminate(self):
            self.terminated = True

        def wait(self, timeout):
            return 0

    with kept_awake(True, "darwin", start=FakeCaffeinate) as process:
        assert started == [["caffeinate", "-i", "-w", str(os.getpid())]] and not process.terminated
    assert process.terminated
    for platform, enabled in (("linux", True), ("darwin", False)):
        with kept_awake(enabled, platform, start=FakeCaffeinate) as nothing:
            assert nothing is None
    assert len(started) == 1  # nothing started on Linux, nor when turned off


def test_a_missing_caffeinate_only_warns(caplog):
    def not_found(command, **streams):
        raise FileNotFoundError("caffeinate")

    with kept_awake(True, "darwin", start=not_found) as process:
        assert process is None
    assert "may sleep" in caplog.text


def test_mps_fp16_is_optional_and_brings_a_grad_scaler():
    policy = decide_policy(APPLE, {"amp": "fp16"})
    assert (policy.amp, policy.grad_scaler) == ("fp16", True)
    assert policy.reasons["amp"] == "set in config (device_policy)"


def test_every_setting_can_be_overridden_and_none_means_the_default():
    overrides = {
        "pin_memory": False,
        "num_workers": 3,
        "persistent_workers": False,
        "amp": "off",
        "channels_last": False,
        "cudnn_benchmark": False,
        "tf32": False,
        "compile": True,
        "keep_awake": False,
    }
    policy = decide_policy(AMPERE, overrides)
    assert {key: getattr(policy, key) for key in overrides} == overrides
    assert decide_policy(AMPERE, {key: None for key in overrides}) == decide_policy(AMPERE)


def test_zero_workers_are_never_persistent():
    assert decide_policy(AMPERE, {"num_workers": 0}).persistent_workers is False


def test_every_choice_has_a_reason_and_the_summary_form_is_plain_data():
    policy = decide_policy(AMPERE)
    settings = set(policy.as_dict()) - {"device", "reasons", "mode", "measured"}
    assert set(policy.reasons) == settings
    assert json.loads(json.dumps(policy.as_dict()))["amp"] == "bf16"
    assert len(policy.log_lines()) == len(settings)


def test_bf16_on_a_gpu_without_it_names_fp16_as_the_fix():
    with pytest.raises(ConfigError, match="device_policy.amp=fp16"):
        decide_policy(TURING, {"amp": "bf16"})


def test_the_policy_is_frozen():
    with pytest.raises(AttributeError):
        decide_policy(LAPTOP_CPU).amp = "bf16"


def test_apply_policy_leaves_cuda_flags_alone_for_a_cpu_run():
    before = torch.backends.cudnn.benchmark
    apply_policy(decide_policy(LAPTOP_CPU, {"cudnn_benchmark": not before}))
    assert torch.backends.cudnn.benchmark == before


def fake_devices(monkeypatch, cuda_count: int, mps: bool):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda_count > 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: cuda_count)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: mps)


@pytest.mark.parametrize("cuda_count, mps, expected", [(2, True, "cuda"), (0, True, "mps"), (0, False, "cpu")])
def test_auto_prefers_cuda_then_mps_then_cpu(monkeypatch, cuda_count, mps, expected):
    fake_devices(monkeypatch, cuda_count, mps)
    assert resolve_device("auto") == torch.device(expected)


@pytest.mark.parametrize(
    "requested, words",
    [
        ("cuda", "CUDA is not available"),
        ("cuda:1", "CUDA is not available"),
        ("mps", "MPS is not available"),
        ("tpu", "choose auto, fastest"),
    ],
)
def test_an_unavailable_device_is_an_error_not_a_fallback(monkeypatch, requested, words):
    fake_devices(monkeypatch, 0, False)
    with pytest.raises(ConfigError, match=words):
        resolve_device(requested)


def test_a_cuda_index_beyond_the_gpus_present_is_an_error(monkeypatch):
    fake_devices(monkeypatch, 2, False)
    assert resolve_device("cuda:1") == torch.device("cuda:1")
    with pytest.raises(ConfigError, match="only 2 CUDA"):
        resolve_device("cuda:2")


def test_fastest_picks_the_highest_throughput_and_caches_it_per_machine(monkeypatch, tmp_path):
    monkeypatch.setenv("OPTBENCH_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(fastest, "available_devices", lambda: [torch.device("cpu"), torch.device("mps")])
    speeds = {"cpu": 300.0, "mps": 120.0}  # small models: MPS can lose to the CPU
    timed = []

    def fake_speed(device, *shape):
        timed.append(str(device))
        return speeds[str(device)]

    monkeypatch.setattr(fastest, "images_per_second", fake_speed)
    device, measured = fastest.fastest_device(timed_model("resnet18", 16, 10, 128))
    assert device == torch.device("cpu") and measured == speeds
    assert fastest.fastest_device(timed_model("resnet18", 16, 10, 128))[0] == torch.device("cpu")
    assert timed == ["cpu", "mps"]  # the second call read the cache
    fastest.fastest_device(timed_model("resnet18", 64, 10, 128))
    assert len(timed) == 4  # another model shape is measured anew
    cache = json.loads((tmp_path / fastest.CACHE_FILE).read_text())
    assert len(cache) == 2
    speeds["mps"] = 900.0
    assert fastest.fastest_device(timed_model("resnet18", 16, 10, 128), refresh=True)[0] == torch.device("mps")


def test_fastest_with_only_a_cpu_needs_no_measurement(monkeypatch):
    monkeypatch.setattr(fastest, "available_devices", lambda: [torch.device("cpu")])
    assert fastest.fastest_device(timed_model("resnet18", 8, 10, 32)) == (torch.device("cpu"), {})


def test_images_per_second_really_trains_on_the_cpu():
    assert fastest.images_per_second(torch.device("cpu"), timed_model("resnet18", 4, 10, 8), steps=1) > 0


def test_device_timing_trains_the_model_step_and_input_shape_its_caller_hands_it():
    batches = []

    def counting_step(model, images, labels, optimizer, policy, scaler):
        batches.append((tuple(images.shape), int(labels.max())))
        return train_step(model, images, labels, optimizer, policy, scaler)

    grey = fastest.TimedModel(
        "grey",
        2,
        3,
        4,
        build=lambda: nn.Sequential(nn.Conv2d(1, 2, 3), nn.Flatten(), nn.Linear(2 * 14 * 14, 3)),
        train_step=counting_step,
        channels=1,
        image_size=16,
    )
    policy = decide_policy(facts_of(torch.device("cpu")), {"compile": False}, 2)
    assert fastest.time_training(torch.device("cpu"), policy, grey, steps=1)[1] > 0
    assert len(batches) == fastest.WARMUP_STEPS + 1
    assert all(shape == (4, 1, 16, 16) and top < 3 for shape, top in batches)
    # the input shape names the cache entry; the CIFAR models keep the keys they always had
    assert fastest.cache_key([torch.device("cpu")], grey).endswith("grey width 2 classes 3 batch 4 input 1x16x16")
    assert fastest.cache_key([torch.device("cpu")], timed_model("resnet18", 8, 10, 32)).endswith(
        "|cpu|resnet18 width 8 classes 10 batch 32"
    )


def mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 32), nn.ReLU(), nn.Linear(32, 10))


def test_gradient_accumulation_gives_the_same_step_as_the_whole_batch():
    policy = decide_policy(LAPTOP_CPU, {"channels_last": False})
    images = torch.randn(24, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    labels = torch.arange(24) % 10
    results = []
    for grad_accum in (1, 4):
        model = mlp()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
        loss_sum, correct = train_step(
            model, images, labels, optimizer, policy, policy.grad_scaler_for_run(), grad_accum
        )
        results.append((loss_sum, correct, [parameter.detach() for parameter in model.parameters()]))
    (loss_whole, correct_whole, after_whole), (loss_accum, correct_accum, after_accum) = results
    assert loss_accum.item() == pytest.approx(loss_whole.item(), rel=1e-5) and correct_accum == correct_whole
    for whole, accumulated in zip(after_whole, after_accum):
        torch.testing.assert_close(accumulated, whole, rtol=1e-5, atol=1e-6)


def test_bf16_autocast_on_the_cpu_trains():
    policy = decide_policy(LAPTOP_CPU, {"amp": "bf16"})
    model = mlp()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    images, labels = torch.randn(16, 3, 32, 32), torch.arange(16) % 10
    losses = [
        train_step(model, images, labels, optimizer, policy, policy.grad_scaler_for_run())[0].item() for _ in range(5)
    ]
    assert losses[-1] < losses[0]


def test_out_of_memory_becomes_one_line_with_the_size_and_the_fix():
    with pytest.raises(OutOfMemory, match=r"out of memory on cuda:0 training batch_size=512: try train.grad_accum=2"):
        with out_of_memory_as_error(torch.device("cuda:0"), "training batch_size=512", "try train.grad_accum=2"):
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
    with pytest.raises(OutOfMemory):  # MPS says it with a plain RuntimeError
        with out_of_memory_as_error(torch.device("mps"), "x", "y"):
            raise RuntimeError("MPS backend out of memory (MPS allocated: 8 GB)")
    with pytest.raises(RuntimeError, match="shape mismatch"):  # other errors pass through untouched
        with out_of_memory_as_error(torch.device("mps"), "x", "y"):
            raise RuntimeError("shape mismatch")


def test_a_run_that_runs_out_of_memory_is_recorded_as_failed_with_the_advice(tiny_config, tmp_path, monkeypatch):
    def no_memory(self, images):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")

    monkeypatch.setattr("optbench.training.models.CifarResNet.forward", no_memory)
    with pytest.raises(OutOfMemory, match="batch_size=50 in micro-batches of 50: try train.grad_accum=2") as raised:
        train(tiny_config(), tmp_path / "run")
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["status"] == "failed" and str(raised.value) in summary["error"]


def test_the_command_line_exits_3_with_one_line_on_out_of_memory(tiny_config, tmp_path, monkeypatch, capsys):
    def no_memory(self, images):
        raise torch.OutOfMemoryError("CUDA out of memory")

    monkeypatch.setattr("optbench.training.models.CifarResNet.forward", no_memory)
    assert run_job(tiny_config("batch_size=60", "train.grad_accum=3"), tmp_path / "run") == 3
    assert capsys.readouterr().err.splitlines() == [
        "error: out of memory on cpu training batch_size=60 in micro-batches of 20: try train.grad_accum=4 "
        "(same effective batch of 60, smaller micro-batches), or a smaller batch_size or model.width"
    ]


def test_a_grad_accum_that_does_not_divide_the_batch_exits_2(tmp_path):
    command = [
        sys.executable,
        "src/train.py",
        "experiment=quick",
        "train.grad_accum=3",
        f"paths.results_dir={tmp_path}",
    ]
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: train.grad_accum=3: must divide batch_size=64 into equal micro-batches"
    ]
    assert not any(tmp_path.iterdir())


def test_a_cpu_run_records_its_policy_and_trains_channels_last(tiny_config, tmp_path):
    summary = train(tiny_config("device_policy.amp=bf16"), tmp_path / "run")
    policy = summary["device_policy"]
    assert (policy["device"], policy["amp"], policy["channels_last"]) == ("cpu", "bf16", True)
    assert policy["reasons"]["amp"] == "set in config (device_policy)"
    assert summary["status"] == "completed"


def test_importing_optbench_first_sets_the_mps_fallback_before_torch_loads():
    script = "import optbench, os, sys; print(os.environ['PYTORCH_ENABLE_MPS_FALLBACK'], 'torch' in sys.modules)"
    env = {key: value for key, value in os.environ.items() if key != "PYTORCH_ENABLE_MPS_FALLBACK"}
    output = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True).stdout
    assert output.split() == ["1", "False"]
    env["PYTORCH_ENABLE_MPS_FALLBACK"] = "0"  # a user's own choice is kept
    output = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True).stdout
    assert output.split() == ["0", "False"]


def test_device_fastest_runs_on_the_measured_winner(tiny_config, tmp_path, monkeypatch):
    monkeypatch.setattr("optbench.training.assemble.fastest_device", lambda model: (torch.device("cpu"), {"cpu": 1.0}))
    summary = train(tiny_config("device=fastest"), tmp_path / "run")
    assert summary["device"] == "cpu" and summary["status"] == "completed"


# --- device_policy.mode=measured ------------------------------------------------------------------


@pytest.mark.parametrize(
    "facts, width, expected",
    [
        (AMPERE, 64, {"amp": ("bf16", "off"), "channels_last": (True, False), "compile": (False, True)}),
        (TURING, 64, {"amp": ("fp16", "off"), "channels_last": (True, False), "compile": (False, True)}),
        (APPLE, 64, {"amp": ("off", "fp16"), "channels_last": (False, True)}),
        (BF16_CPU, 16, {"amp": ("bf16", "off"), "channels_last": (True, False)}),
        (LAPTOP_CPU, 16, {"channels_last": (True, False)}),  # emulated bf16 is known to be slower
        (LAPTOP_CPU, 4, {}),  # and narrow NHWC crashes oneDNN: nothing is uncertain
    ],
)
def test_measured_mode_times_only_what_is_uncertain_on_each_kind_of_device(facts, width, expected):
    assert measured.uncertain_settings(facts, {}, width) == expected


def test_measured_mode_never_times_what_the_user_set():
    assert measured.uncertain_settings(AMPERE, {"amp": "off", "compile": None}, 64) == {
        "channels_last": (True, False),
        "compile": (False, True),
    }


def test_eager_candidates_are_every_combination_and_compile_comes_later():
    candidates = measured.eager_candidates(measured.uncertain_settings(AMPERE, {}, 64))
    assert len(candidates) == 4 and all(candidate["compile"] is False for candidate in candidates)
    assert measured.label(candidates[0]) == "amp=bf16 channels_last=true compile=false"


def test_compile_is_kept_only_when_its_compile_time_is_paid_back_within_the_run():
    eager = {"images_per_s": 1000.0, "first_steps_s": 1.0}
    compiled = {"images_per_s": 1250.0, "first_steps_s": 61.0}  # 60 s more; saves 0.2 ms per image
    assert not measured.compile_pays_back(eager, compiled, run_images=200_000)  # saves 40 s
    assert measured.compile_pays_back(eager, compiled, run_images=400_000)  # saves 80 s


def fake_timing(monkeypatch, rates: dict[str, float], first_steps: dict[str, float] | None = None) -> list[str]:
    """Replace the timing with a table keyed by 'amp channels_last compile'; returns what was timed."""
    timed = []

    def time_training(device, policy, *shape):
        key = f"{policy.amp} {policy.channels_last} {policy.compile}"
        timed.append(key)
        return (first_steps or {}).get(key, 0.5), rates[key]

    monkeypatch.setattr(fastest, "time_training", time_training)
    monkeypatch.setattr(measured, "apply_policy", lambda policy: None)  # no CUDA flags to set here
    return timed


SHAPE = timed_model("resnet18", 16, 10, 128)


def test_measured_mode_keeps_the_fastest_caches_it_and_lets_the_user_override(monkeypatch, tmp_path):
    monkeypatch.setenv("OPTBENCH_CACHE_DIR", str(tmp_path))
    timed = fake_timing(
        monkeypatch,
        {"bf16 True False": 300.0, "bf16 False False": 250.0, "off True False": 420.0, "off False False": 350.0},
    )
    policy = measured.measured_policy(torch.device("cpu"), BF16_CPU, {}, SHAPE, run_images=40_000)
    assert (policy.mode, policy.amp, policy.channels_last, policy.compile) == ("measured", "off", True, False)
    assert policy.reasons["amp"].startswith("measured: fastest of 4") and "about a minute" in policy.reasons["compile"]
    assert policy.measured_figures().startswith("amp=off channels_last=true 420 img/s, amp=off channels_last=false 350")
    assert len(timed) == 4
    again = measured.measured_policy(torch.device("cpu"), BF16_CPU, {}, SHAPE, run_images=40_000)
    assert again == policy and len(timed) == 4  # the cache answered
    assert "cached in" in again.reasons["amp"]
    user = measured.measured_policy(torch.device("cpu"), BF16_CPU, {"amp": "bf16"}, SHAPE, run_images=40_000)
    assert (user.amp, user.reasons["amp"]) == ("bf16", "set in config (device_policy)")
    assert user.channels_last is True and len(timed) == 6  # another fixed setting, another cache entry
    assert len(json.loads((tmp_path / measured.CACHE_FILE).read_text())) == 2


def test_measured_compile_on_cuda_is_timed_on_the_eager_winner_and_kept_when_it_pays(monkeypatch, tmp_path):
    monkeypatch.setenv("OPTBENCH_CACHE_DIR", str(tmp_path))
    rates = {
        "bf16 True False": 9000.0,
        "bf16 False False": 7000.0,
        "off True False": 5000.0,
        "off False False": 4000.0,
        "bf16 True True": 12000.0,
    }
    timed = fake_timing(monkeypatch, rates, first_steps={"bf16 True True": 60.0})
    long_run = measured.measured_policy(torch.device("cuda:0"), AMPERE, {}, SHAPE, run_images=200 * 45_000)
    assert (long_run.amp, long_run.channels_last, long_run.compile) == ("bf16", True, True)
    assert timed[-1] == "bf16 True True" and len(timed) == 5 and "compiling cost 60 s" in long_run.reasons["compile"]
    short_run = measured.measured_policy(torch.device("cuda:0"), AMPERE, {}, SHAPE, run_images=2 * 10_000)
    assert short_run.compile is False and len(timed) == 5


def test_a_resumed_measured_run_keeps_the_figures_it_started_with(monkeypatch, tmp_path):
    monkeypatch.setenv("OPTBENCH_CACHE_DIR", str(tmp_path))
    timed = fake_timing(monkeypatch, {})
    earlier = {
        "amp=bf16 channels_last=true": {"images_per_s": 500.0, "first_steps_s": 1.0},
        "amp=bf16 channels_last=false": {"images_per_s": 200.0, "first_steps_s": 1.0},
        "amp=off channels_last=true": {"images_per_s": 400.0, "first_steps_s": 1.0},
        "amp=off channels_last=false": {"images_per_s": 300.0, "first_steps_s": 1.0},
    }
    policy = measured.measured_policy(torch.device("cpu"), BF16_CPU, {}, SHAPE, 40_000, earlier=earlier)
    assert (policy.amp, policy.channels_last, timed) == ("bf16", True, [])
    assert "when this run started" in policy.reasons["amp"] and not (tmp_path / measured.CACHE_FILE).exists()


def test_a_measured_cpu_run_times_real_steps_and_says_so_everywhere(tiny_config, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("OPTBENCH_CACHE_DIR", str(tmp_path / "cache"))
    caplog.set_level("INFO")
    summary = train(tiny_config("device_policy.mode=measured"), tmp_path / "run")
    policy = summary["device_policy"]
    assert summary["status"] == "completed" and policy["mode"] == "measured"
    assert policy["measured"] and all(figures["images_per_s"] > 0 for figures in policy["measured"].values())
    assert policy["reasons"]["channels_last"].startswith("measured: fastest of")
    [line] = [record.getMessage() for record in caplog.records if record.getMessage().startswith("device cpu")]
    assert "; measured: " in line and " img/s" in line
    log = (tmp_path / "run" / "train.log").read_text()
    assert "policy measured (img/s per candidate): " in log and "policy channels_last=" in log


def test_the_policy_line_says_when_a_mac_is_kept_awake(caplog):
    from optbench.training.console import log_policy

    caplog.set_level("INFO")
    log_policy("mps", "auto", decide_policy(APPLE))
    log_policy("cpu", "cpu", decide_policy(LAPTOP_CPU))
    mac, linux = [record.getMessage() for record in caplog.records]
    assert "; caffeinate -i held" in mac and "caffeinate" not in linux


def test_a_resumed_measured_run_times_nothing_and_keeps_its_choices(tiny_config, tmp_path, monkeypatch):
    monkeypatch.setenv("OPTBENCH_CACHE_DIR", str(tmp_path / "cache"))
    first = train(tiny_config("device_policy.mode=measured"), tmp_path / "run")
    summary_path = tmp_path / "run" / "summary.json"
    summary_path.write_text(json.dumps({**first, "status": "interrupted"}))  # as if stopped before the end
    (tmp_path / "cache" / measured.CACHE_FILE).unlink()  # and the cache was lost

    def no_timing(*args):
        raise AssertionError("a resumed run must not time again")

    monkeypatch.setattr(fastest, "time_training", no_timing)
    resumed = train(tiny_config("device_policy.mode=measured"), tmp_path / "run")
    kept = {key: first["device_policy"][key] for key in ("amp", "channels_last", "measured")}
    assert resumed["status"] == "completed" and {key: resumed["device_policy"][key] for key in kept} == kept
    log = (tmp_path / "run" / "train.log").read_text()  # the resumed session's policy lines
    assert "policy channels_last=" in log and "(as measured when this run started)" in log


def test_a_resumed_run_keeps_the_precision_it_started_with():
    from optbench.training.assemble import keep_started_precision

    now = decide_policy(LAPTOP_CPU, model_width=16)  # the rules say fp32 here
    kept = keep_started_precision(now, LAPTOP_CPU, {}, 16, {"device": "cpu", "amp": "bf16"})
    assert (now.amp, kept.amp) == ("off", "bf16") and "kept from the run's start" in kept.reasons["amp"]
    assert keep_started_precision(now, LAPTOP_CPU, {"amp": "off"}, 16, {"device": "cpu", "amp": "bf16"}).amp == "off"
    assert keep_started_precision(now, LAPTOP_CPU, {}, 16, {"device": "cuda:0", "amp": "bf16"}).amp == "off"
    assert keep_started_precision(now, LAPTOP_CPU, {}, 16, None) is now


def test_a_resumed_run_keeps_the_thread_count_it_started_with_unless_the_user_sets_one():
    from dataclasses import replace

    from optbench.training.assemble import keep_started_threads

    alone = replace(LAPTOP_CPU, threads_now=2)  # a run alone on 2 cores: torch's own count
    now = decide_policy(alone, model_width=16)
    kept = keep_started_threads(now, {}, {"device": "cpu", "threads": 1})
    assert (now.threads, kept.threads) == (2, 1) and "kept from the run's start" in kept.reasons["threads"]
    assert keep_started_threads(now, {"threads": 2}, {"device": "cpu", "threads": 1}) is now
    assert keep_started_threads(now, {}, {"device": "cuda:0", "threads": 1}) is now
    assert keep_started_threads(now, {}, {"device": "cpu"}) is now and keep_started_threads(now, {}, None) is now
