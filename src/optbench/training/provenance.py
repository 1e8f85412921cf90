"""What produced a result: library versions, the git state of the harness code, and the environment.

Recorded in every summary.json so a number can always be traced to the code that made it, and so a
reviewer can tell why a replay differs: besides the seed, the config and the code, the processor (its
kind and the instruction set torch dispatches to), the intra-op thread count, the library versions and
the GPU change a run's numbers (docs/runs.md, "Reproducibility": about half a point after two epochs
between 1 and 2 threads on the same CPU).
"""

import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import torch

from optbench.registry import optimizers

# torch and the optimizers' libraries (the registry's), whose versions can change a run's numbers
LIBRARIES = tuple(dict.fromkeys(("torch", "torchvision", *optimizers.libraries(), "hydra-core", "numpy")))

# CPU features torch.cpu.get_capabilities() names whose presence changes which kernels run (bf16 and AMX
# paths in oneDNN): recorded where present, since two processors of one dispatch level can differ in them.
NUMBER_CHANGING_CPU_FEATURES = ("avx512_bf16", "avx512_fp16", "amx_bf16", "amx_fp16", "amx_int8", "amx_tile")


def library_versions(run_library: str | None = None) -> dict[str, str | None]:
    """Python's and each library's version (None: not installed); `run_library` is the run's optimizer's (its
    `registry.library`), recorded too when it is none of the package's: an optimizer from a config folder of one's
    own."""
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in dict.fromkeys((*LIBRARIES, *([run_library] if run_library else []))):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def git_state() -> dict[str, str | bool | None]:
    """Commit of the checkout this package runs from, and whether it has uncommitted changes."""
    source_dir = Path(__file__).resolve().parent

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(source_dir), *args], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": bool(status) if status is not None else None}


def environment(device: torch.device) -> dict:
    """Everything besides config, seed and code that changes this process's numbers, measured now (after
    the device policy set the thread count): formats/run_summary.py's `Environment`."""
    return {
        "processor": processor_name(),
        "machine": platform.machine(),
        "os": f"{platform.system()} {platform.release()}",
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),  # the kernels torch dispatches to: AVX512, ...
        "cpu_features": cpu_features(),
        "threads": torch.get_num_threads(),  # intra-op threads actually in use
        "interop_threads": torch.get_num_interop_threads(),
        "torch": str(torch.__version__),  # a plain str: TorchVersion in a checkpoint is refused by weights_only loading
        "cuda": torch.version.cuda,  # the CUDA torch was built with (None: a CPU or MPS build)
        "cudnn": torch.backends.cudnn.version() if device.type == "cuda" else None,
        "gpu": gpu_facts(device),
        "mps_chip": processor_name() if device.type == "mps" else None,  # Apple silicon: the SoC is the GPU
        "deterministic": {
            "algorithms": torch.are_deterministic_algorithms_enabled(),
            "cudnn_deterministic": bool(torch.backends.cudnn.deterministic),
            "cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
        },
    }


def processor_name() -> str | None:
    """The CPU's model name: /proc/cpuinfo on Linux, sysctl on macOS ("Apple M2"), platform.processor() else."""
    if sys.platform.startswith("linux"):
        try:
            for line in Path("/proc/cpuinfo").read_text().splitlines():
                if line.startswith("model name") and ":" in line:
                    return line.split(":", 1)[1].strip()
        except OSError:
            pass
    if sys.platform == "darwin":
        try:
            done = subprocess.run(
                ["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True, text=True, timeout=5
            )
            if done.returncode == 0 and done.stdout.strip():
                return done.stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            pass
    return platform.processor() or None


def processor_and_cores() -> str:
    """The CPU's model name (processor_name) and the cores this process may use ("AMD EPYC 7B13, 2 cores"), as
    the benchmarks record the machine they measured on."""
    return f"{processor_name() or platform.machine()}, {len(os.sched_getaffinity(0))} cores"


def cpu_features() -> list[str]:
    """The number-changing CPU features (NUMBER_CHANGING_CPU_FEATURES) this processor has, as torch sees them."""
    get_capabilities = getattr(torch.cpu, "get_capabilities", None)  # torch >= 2.8
    if get_capabilities is None:
        return []
    capabilities = get_capabilities()
    return [name for name in NUMBER_CHANGING_CPU_FEATURES if capabilities.get(name) is True]


def gpu_facts(device: torch.device) -> dict | None:
    """A CUDA run's GPU: its name and compute capability; None elsewhere."""
    if device.type != "cuda":
        return None
    index = device.index if device.index is not None else torch.cuda.current_device()
    major, minor = torch.cuda.get_device_capability(index)
    return {"name": torch.cuda.get_device_name(index), "compute_capability": f"{major}.{minor}"}
