"""The training device and the one frozen policy that decides everything device-dependent.

- `resolve_device(requested)`: `auto` means CUDA, then Apple MPS, then CPU; `fastest` times a few
  training steps on each available device (optbench.device.fastest). An explicitly requested device that
  is not available is a ConfigError, never a silent fallback: a study meant for a GPU must not
  quietly take a week on the CPU.
- `decide_policy(facts, overrides)`: a pure function from what the device is (DeviceFacts) and the
  user's `device_policy.*` overrides (None = the device's default) to a frozen DevicePolicy, with a
  reason for every choice. Pure so every rule is tested on a CPU by describing a CUDA or MPS device.
- `cpu_bf16_instructions()` asks torch's cpuinfo which native bf16 instructions the processor has; the CPU
  rules pick fp32 on every processor (so a setting's seeds share one precision wherever they ran) and name
  the instructions in the reason, where `device_policy.amp=bf16` or `mode=measured` may be faster.
- `apply_policy(policy)` sets the process-wide backend flags (cudnn.benchmark, TF32) for a CUDA run;
  `release_device_memory(device)` empties the allocator cache between runs of one process.
- `out_of_memory_as_error(...)` turns a CUDA/MPS out-of-memory into one line saying what to try.
"""

import contextlib
import gc
import os
import sys
from dataclasses import asdict, dataclass, field

import torch

import optbench
from optbench.device.sharing import usable_cores
from optbench.errors import ConfigError, OutOfMemory
from optbench.registry.choices import DEVICE_CHOICES

AMP_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "off": None}


def mps_available() -> bool:
    return bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())


def mps_built() -> bool:
    return bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_built())


def resolve_device(requested: str, fastest=None) -> torch.device:
    """`fastest`: a callable returning the fastest device, called only for device=fastest."""
    if requested == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        return torch.device("mps" if mps_available() else "cpu")
    if requested == "fastest":
        if fastest is None:
            raise ConfigError(f"device=fastest is not supported here: choose {DEVICE_CHOICES}")
        return fastest()
    try:
        device = torch.device(requested)
    except RuntimeError as error:
        raise ConfigError(f"device={requested} is not a device name: choose {DEVICE_CHOICES}") from error
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(
            f"device={requested} was asked for but CUDA is not available here: use device=auto or device=cpu"
        )
    if device.type == "cuda" and device.index is not None and device.index >= torch.cuda.device_count():
        raise ConfigError(f"device={requested}: only {torch.cuda.device_count()} CUDA device(s) here; choose cuda:0..")
    if device.type == "mps" and not mps_available():
        raise ConfigError(
            f"device={requested} was asked for but MPS is not available here: use device=auto or device=cpu"
        )
    if device.type not in ("cpu", "cuda", "mps"):
        raise ConfigError(f"device={requested} is not supported: choose {DEVICE_CHOICES}")
    return device


@dataclass(frozen=True)
class DeviceFacts:
    """What the policy needs to know about a device; `facts_of(device)` measures it."""

    device: str  # e.g. "cuda:0", "mps", "cpu"
    bf16_supported: bool  # CUDA: compute capability >= 8.0 (Ampere); else what torch reports
    cpu_count: int
    cpu_bf16_instructions: tuple[str, ...] = ()  # CPU device: native bf16 instructions found (cpu_bf16_instructions())
    host_os: str = "linux"  # sys.platform of the machine: "darwin" is macOS, where caffeinate keeps it awake
    concurrent_runs: int = 1  # runs the launcher runs at once on this machine (device/sharing.py)
    threads_now: int = 0  # torch's intra-op thread count before the policy (OMP_NUM_THREADS, else the cores)

    @property
    def cpu_native_bf16(self) -> bool:
        return bool(self.cpu_bf16_instructions)


# Instructions that compute bf16 dot products in hardware, as torch.cpu.get_capabilities() names them:
# x86 AVX512-BF16 (Cooper Lake, Sapphire Rapids, AMD Zen 4) and AMX; ARM FEAT_BF16 and SVE's bf16.
# Without one of them oneDNN emulates bf16 with conversions, which is slower than fp32.
NATIVE_BF16_INSTRUCTIONS = ("avx512_bf16", "amx_bf16", "bf16", "sve_bf16")


def cpu_bf16_instructions() -> tuple[str, ...]:
    """The native bf16 instructions of this CPU that oneDNN (which runs CPU convolutions) can use; () when none."""
    get_capabilities = getattr(torch.cpu, "get_capabilities", None)  # torch >= 2.8
    if get_capabilities is None or not torch.backends.mkldnn.is_available():
        return ()
    capabilities = get_capabilities()
    return tuple(name for name in NATIVE_BF16_INSTRUCTIONS if capabilities.get(name) is True)


def facts_of(device: torch.device, concurrent_runs: int = 1) -> DeviceFacts:
    instructions: tuple[str, ...] = ()
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        name = f"cuda:{index}"
        # Compute capability, not is_bf16_supported(): that also says yes where bf16 is only emulated (T4).
        bf16 = torch.cuda.get_device_capability(index)[0] >= 8
    else:
        name, bf16 = device.type, True
        if device.type == "cpu":
            instructions = cpu_bf16_instructions()
    return DeviceFacts(name, bf16, usable_cores(), instructions, sys.platform, concurrent_runs, torch.get_num_threads())


@dataclass(frozen=True)
class DevicePolicy:
    device: str
    pin_memory: bool  # page-locked host buffers for DataLoader batches
    num_workers: int  # DataLoader worker processes (data.pipeline=dataloader only)
    persistent_workers: bool  # keep workers alive between epochs
    amp: str  # bf16 | fp16 | off: autocast dtype for forward passes
    grad_scaler: bool  # loss scaling, needed with fp16 so small gradients do not underflow
    channels_last: bool  # NHWC memory format for model and batches
    cudnn_benchmark: bool  # let cuDNN time its convolution algorithms once per shape
    tf32: bool  # TensorFloat-32 for fp32 matmuls and convolutions on Ampere+
    compile: bool  # torch.compile the model
    keep_awake: bool  # macOS: hold `caffeinate -i` while training (device/awake.py)
    mps_fallback: bool  # PYTORCH_ENABLE_MPS_FALLBACK=1 took effect
    reasons: dict = field(default_factory=dict, compare=False)  # setting -> why it has its value
    threads: int = 0  # torch intra-op threads of this process (0: left as torch set them)
    mode: str = "rules"  # rules: the device's fixed defaults; measured: the uncertain ones timed (device/measured.py)
    measured: dict = field(default_factory=dict, compare=False)  # candidate label -> its figures (mode measured)

    @property
    def device_type(self) -> str:
        return torch.device(self.device).type

    @property
    def amp_dtype(self) -> torch.dtype | None:
        return AMP_DTYPES[self.amp]

    @property
    def memory_format(self) -> torch.memory_format:
        return torch.channels_last if self.channels_last else torch.contiguous_format

    def autocast(self):
        """Context for forward passes: autocast to the AMP dtype, or nothing under fp32."""
        if self.amp_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device_type, dtype=self.amp_dtype)

    def grad_scaler_for_run(self) -> torch.amp.GradScaler:
        """A GradScaler, enabled only under fp16 (a disabled one passes steps straight through)."""
        return torch.amp.GradScaler(self.device_type, enabled=self.grad_scaler)

    def as_dict(self) -> dict:
        return asdict(self)

    def log_lines(self) -> list[str]:
        return [f"{name}={getattr(self, name)}: {reason}" for name, reason in self.reasons.items()]

    def measured_figures(self) -> str:
        """The candidates timed under device_policy.mode=measured, fastest first ('' when none were)."""
        ranked = sorted(self.measured.items(), key=lambda item: -item[1]["images_per_s"])
        return ", ".join(f"{label} {figures['images_per_s']:,.0f} img/s" for label, figures in ranked)


# oneDNN's channels_last 1x1 stride-2 convolution backward corrupts memory (segfaults, double frees)
# with fewer than 8 input channels on the CPU (torch 2.15); the ResNet's narrowest one has `width` inputs.
CPU_CHANNELS_LAST_MIN_WIDTH = 8
# torch.compile on the CPU (benchmarks/compile_cpu.py, 2-core Xeon, torch 2.15): width 16 compiled runs 0.93x
# eager, so it never pays; width 64 runs 1.11x after ~31 s of compiling, paid back within 2 epochs of 10,000 images.
CPU_COMPILE_MIN_WIDTH = 64


# Evaluation batch per device under train.eval_batch_size=auto. CPU: smaller batches stay in cache (with
# BatchNorm folded, evaluation went from 2.1x to 7.1x the training rate at width 16: benchmarks/study_time.py,
# docs/benchmarks.md); CUDA and MPS: large batches fill the device, and no gradients are kept.
EVAL_BATCH_SIZES = {"cpu": 256, "cuda": 1024, "mps": 512}


def synchronise(device: torch.device) -> None:
    """Wait for the device's queued work: CUDA and MPS run asynchronously, so a clock read without this
    times the launching of kernels, not their running."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def eval_batch_size(configured, device_type: str) -> int:
    """train.eval_batch_size as a number: the configured one, or the device's under `auto`."""
    return EVAL_BATCH_SIZES.get(device_type, 256) if configured == "auto" else int(configured)


def decide_policy(
    facts: DeviceFacts,
    overrides: dict | None = None,
    model_width: int = 64,
    measured: dict | None = None,
    workload_rules: dict | None = None,
) -> DevicePolicy:
    """The device's defaults, then the workload's own rules (`workload_rules`: setting -> (value, reason); a
    model of sequences has no NHWC layout), then what a measurement chose (`measured`, from
    device_policy.mode=measured), then each non-None override from `device_policy.*` on top."""
    overrides = {key: value for key, value in (overrides or {}).items() if value is not None}
    kind = facts.device.split(":")[0]
    chosen = {**_DEFAULTS[kind](facts), "keep_awake": _keep_awake_default(facts), "threads": _threads_default(facts)}
    if kind == "cpu" and model_width >= CPU_COMPILE_MIN_WIDTH:
        chosen["compile"] = (
            True,
            f"CPU with model.width >= {CPU_COMPILE_MIN_WIDTH}: torch.compile measured 1.11x "
            "faster at width 64 after ~30 s of compiling, paid back within 2 epochs of 10,000 images "
            "(docs/benchmarks.md)",
        )
    narrow_on_cpu = kind == "cpu" and model_width < CPU_CHANNELS_LAST_MIN_WIDTH
    if narrow_on_cpu:
        chosen["channels_last"] = (
            False,
            f"CPU with model.width < {CPU_CHANNELS_LAST_MIN_WIDTH}: oneDNN's NHWC "
            "1x1 stride-2 convolution crashes with so few channels",
        )
    chosen.update(workload_rules or {})
    chosen.update(measured or {})
    for key, value in overrides.items():
        chosen[key] = (value, "set in config (device_policy)")
    if narrow_on_cpu and chosen["channels_last"][0]:
        raise ConfigError(
            f"device_policy.channels_last=true crashes the CPU with model.width={model_width} "
            f"(< {CPU_CHANNELS_LAST_MIN_WIDTH}): use model.width>={CPU_CHANNELS_LAST_MIN_WIDTH} "
            "or device_policy.channels_last=false"
        )
    _check_amp(kind, facts, chosen["amp"][0])
    _settle_dependent_choices(chosen, facts)
    return DevicePolicy(
        device=facts.device,
        reasons={key: reason for key, (_, reason) in chosen.items()},
        **{key: value for key, (value, _) in chosen.items()},
    )


def _settle_dependent_choices(chosen: dict, facts: DeviceFacts) -> None:
    """The settings that follow from others (or from the machine), whatever set those."""
    if chosen["num_workers"][0] == 0 and chosen["persistent_workers"][0]:
        chosen["persistent_workers"] = (False, "no workers to keep")
    amp = chosen["amp"][0]
    chosen["grad_scaler"] = (
        amp == "fp16",
        "fp16 needs loss scaling against gradient underflow"
        if amp == "fp16"
        else "not needed: bf16 has fp32's exponent range"
        if amp == "bf16"
        else "fp32: not needed",
    )
    if chosen["keep_awake"][0] and facts.host_os != "darwin":
        chosen["keep_awake"] = (False, f"asked for, but caffeinate is macOS only: nothing to hold on {facts.host_os}")
    chosen["mps_fallback"] = _mps_fallback()


def _threads_default(facts: DeviceFacts) -> tuple[int, str]:
    if facts.concurrent_runs > 1:
        threads = max(1, facts.cpu_count // facts.concurrent_runs)
        return threads, f"{facts.cpu_count} cores / {facts.concurrent_runs} runs at once = {threads} each"
    return facts.threads_now, "one run at a time: torch's own count (OMP_NUM_THREADS, else the cores)"


def _keep_awake_default(facts: DeviceFacts) -> tuple[bool, str]:
    if facts.host_os == "darwin":
        return (
            True,
            "macOS: caffeinate -i keeps the Mac from sleeping while it trains (device_policy.keep_awake=false to let it)",  # noqa: E501
        )
    return False, f"caffeinate is macOS only ({facts.host_os})"


def _cuda_defaults(facts: DeviceFacts) -> dict:
    workers = min(8, facts.cpu_count)
    return {
        "pin_memory": (True, "CUDA: page-locked buffers make host-to-GPU copies asynchronous"),
        "num_workers": (workers, f"CUDA: min(8, {facts.cpu_count} CPUs) to keep the GPU fed"),
        "persistent_workers": (True, "worker start-up is paid once per run, not per epoch"),
        "amp": ("bf16", "CUDA with bf16 support (Ampere or newer): bf16 autocast, no loss scaling")
        if facts.bf16_supported
        else ("fp16", "CUDA without bf16 support (pre-Ampere): fp16 autocast with a grad scaler"),
        "channels_last": (True, "CUDA: NHWC convolutions use tensor cores"),
        "cudnn_benchmark": (True, "fixed 32x32 shapes: timing cuDNN's algorithms once pays off (not bit-reproducible)"),
        "tf32": (True, "CUDA: TensorFloat-32 for the fp32 parts on Ampere and newer"),
        "compile": (False, "opt-in (device_policy.compile=true): compiling takes a minute per run"),
    }


def _mps_defaults(facts: DeviceFacts) -> dict:
    return {
        "pin_memory": (False, "MPS does not support pinned memory"),
        "num_workers": (0, "macOS starts DataLoader workers by spawning, which is slow"),
        "persistent_workers": (False, "no workers"),
        "amp": ("off", "MPS: fp32 by default (fp16 optional via device_policy.amp=fp16)"),
        "channels_last": (False, "MPS: convolution backward is slow in channels_last"),
        "cudnn_benchmark": (False, "cuDNN is CUDA only"),
        "tf32": (False, "TF32 is CUDA only"),
        "compile": (False, "opt-in (device_policy.compile=true)"),
    }


def _cpu_defaults(facts: DeviceFacts) -> dict:
    workers = max(1, facts.cpu_count // 2)
    return {
        "pin_memory": (False, "CPU: no host-to-device copy"),
        "num_workers": (workers, f"CPU: half of {facts.cpu_count} cores, the rest compute"),
        "persistent_workers": (True, "worker start-up is paid once per run, not per epoch"),
        "amp": _cpu_amp(facts),
        "channels_last": (True, "CPU: oneDNN convolutions run faster in NHWC"),
        "cudnn_benchmark": (False, "cuDNN is CUDA only"),
        "tf32": (False, "TF32 is CUDA only"),
        # from CPU_COMPILE_MIN_WIDTH on, decide_policy turns it on
        "compile": (
            False,
            f"CPU below model.width={CPU_COMPILE_MIN_WIDTH}: torch.compile measured 0.93x eager at "
            "width 16, so it never pays back (docs/benchmarks.md)",
        ),
    }


# The CPU trains in fp32 unless told otherwise, on every processor. `amp: null` is what the config (and so
# a run's identity) holds, and a default that followed the processor's instructions (bf16 with AMX, fp32
# without) gave seeds of one setting different precisions when a study moved between machines: the
# same identity, different numbers. bf16 is one override away (`device_policy.amp=bf16`, then part of the
# identity) or timed by `device_policy.mode=measured`. On CPUs with avx512_bf16 and no AMX it is also
# slower at CIFAR widths (docs/benchmarks.md: 633 against 811 img/s at width 16).
BF16_PAYS_WITH = ("amx_bf16", "bf16", "sve_bf16")


def _cpu_amp(facts: DeviceFacts) -> tuple[str, str]:
    paying = [name for name in facts.cpu_bf16_instructions if name in BF16_PAYS_WITH]
    if paying:
        return "off", (
            f"CPU: fp32 on every processor, so a setting's seeds share one precision wherever they ran; "
            f"this one has {', '.join(paying)}: device_policy.amp=bf16 (or mode=measured) may be faster"
        )
    if facts.cpu_native_bf16:
        return "off", (
            f"CPU with {', '.join(facts.cpu_bf16_instructions)} but no AMX: fp32, bf16 autocast measured "
            "slower on such a CPU (docs/benchmarks.md); device_policy.mode=measured times both here"
        )
    return "off", (
        "CPU without native bf16 (none of avx512_bf16, amx_bf16, ARM bf16 with oneDNN): fp32, "
        "emulated bf16 autocast is slower"
    )


_DEFAULTS = {"cuda": _cuda_defaults, "mps": _mps_defaults, "cpu": _cpu_defaults}


def _check_amp(kind: str, facts: DeviceFacts, amp: str) -> None:
    if amp == "bf16" and kind == "cuda" and not facts.bf16_supported:
        raise ConfigError("device_policy.amp=bf16: this GPU has no bf16 support; use device_policy.amp=fp16")


def _mps_fallback() -> tuple[bool, str]:
    value = os.environ.get(optbench.MPS_FALLBACK_VARIABLE) == "1"
    if optbench.TORCH_LOADED_BEFORE_OPTBENCH:
        return value, "torch was imported before optbench, so the variable may have come too late"
    if value:
        return True, "PYTORCH_ENABLE_MPS_FALLBACK=1 before torch loaded: MPS-missing operators run on the CPU"
    return False, "PYTORCH_ENABLE_MPS_FALLBACK set to something else than 1 by the user"


def apply_policy(policy: DevicePolicy) -> None:
    """Set the process-wide thread count, and the flags of a CUDA run (they mean nothing on MPS or CPU)."""
    if policy.threads and policy.threads != torch.get_num_threads():
        torch.set_num_threads(policy.threads)
    if policy.device_type != "cuda":
        return
    torch.backends.cudnn.benchmark = policy.cudnn_benchmark
    precision = "tf32" if policy.tf32 else "ieee"
    torch.backends.cuda.matmul.fp32_precision = precision
    # torch.backends.cudnn's module wrapper has `conv` (the fp32_precision API); its stubs do not
    torch.backends.cudnn.conv.fp32_precision = precision  # type: ignore[attr-defined]


def release_device_memory(device: torch.device) -> None:
    """Give cached allocator blocks back between runs of one process (multirun), so the next run starts clean.
    The CPU's allocator caches none, so there is nothing to give back there; the full collection that frees the
    tensors first walks every object of the process (about 0.25 s once torch and Hydra are loaded), per run."""
    if device.type not in ("cuda", "mps"):
        return
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
    elif device.type == "mps":
        torch.mps.empty_cache()


def is_out_of_memory(error: BaseException) -> bool:
    # MPS raises a plain RuntimeError ("MPS backend out of memory").
    return isinstance(error, torch.OutOfMemoryError) or (
        isinstance(error, RuntimeError) and "out of memory" in str(error)
    )


@contextlib.contextmanager
def out_of_memory_as_error(device: torch.device, what: str, fix: str):
    """Turn an out-of-memory inside the block into OutOfMemory: one line with the failing size and a fix."""
    try:
        yield
    except (torch.OutOfMemoryError, RuntimeError) as error:
        if not is_out_of_memory(error):
            raise
        raise OutOfMemory(f"out of memory on {device} {what}: {fix}") from error
