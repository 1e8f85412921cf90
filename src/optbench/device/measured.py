"""`device_policy.mode=measured`: time the policy choices that are uncertain on this device, keep the fastest.

The rules (policy.py) fix what holds on every machine of a kind. A few choices depend on the
particular processor and the model's shape instead: bf16 autocast on a CPU with native bf16 can lose
to fp32 on a narrow model, channels_last helps some convolutions and not others, AMP may not pay on
a small GPU model. `uncertain_settings` (pure, so every device kind is tested by describing it) names
those settings and the values worth timing; the user's own `device_policy.*` settings are never timed.
Each candidate trains the run's model (a fastest.TimedModel from the caller: name, width, classes,
batch size, input shape) for a few steps on random data, and the fastest wins. torch.compile, where it
is a candidate (CUDA), is timed last on the eager winner and kept only when its compile time is paid
back within the run's training images.
Figures are cached per host, torch version, device, model shape and fixed settings in
`$OPTBENCH_CACHE_DIR/measured-policy.json` (fastest.py's cache; delete the file to measure again). A
resumed run reuses the figures it started with (from its summary), so it never changes precision half-way.
"""

import itertools
import logging
from dataclasses import replace

import torch

from optbench.device import fastest
from optbench.device.policy import CPU_CHANNELS_LAST_MIN_WIDTH, DeviceFacts, DevicePolicy, apply_policy, decide_policy

log = logging.getLogger(__name__)
CACHE_FILE = "measured-policy.json"
# The settings that change training speed; the ones the user fixed name the cache entry.
SPEED_SETTINGS = ("amp", "channels_last", "compile", "cudnn_benchmark", "tf32")
# Compile is timed only on CUDA. Elsewhere the rules decide it (the CPU compiles from width 64, where
# benchmarks/compile_cpu.py measured it paying back) and the reason says why it was not timed.
COMPILE_NOT_TIMED = {
    "cpu": "not timed on the CPU: each compiled candidate costs ~30 s (Inductor builds C++ kernels), so timing "
    "them would add about a minute to the run's start",
    "mps": "not timed on MPS: torch.compile's MPS backend is experimental",
}


def uncertain_settings(facts: DeviceFacts, overrides: dict | None, model_width: int) -> dict[str, tuple]:
    """setting -> the values worth timing on this device (first: the rules' choice), less what the user set."""
    kind = facts.device.split(":")[0]
    if kind == "cuda":
        options = {
            "amp": ("bf16" if facts.bf16_supported else "fp16", "off"),
            "channels_last": (True, False),
            "compile": (False, True),
        }
    elif kind == "mps":
        options = {"amp": ("off", "fp16"), "channels_last": (False, True)}
    else:  # emulated bf16 is known to be slower, and narrow NHWC crashes (policy.py): neither is timed
        options = {"amp": ("bf16", "off")} if facts.cpu_native_bf16 else {}
        if model_width >= CPU_CHANNELS_LAST_MIN_WIDTH:
            options["channels_last"] = (True, False)
    return {key: values for key, values in options.items() if (overrides or {}).get(key) is None}


def eager_candidates(uncertain: dict[str, tuple]) -> list[dict]:
    """Every combination of the uncertain values except compile, which is tried on the eager winner only."""
    eager = {key: values for key, values in uncertain.items() if key != "compile"}
    fixed = {"compile": False} if "compile" in uncertain else {}
    return [{**dict(zip(eager, values)), **fixed} for values in itertools.product(*eager.values())]


def label(settings: dict) -> str:
    return " ".join(f"{key}={str(value).lower()}" for key, value in settings.items()) or "as configured"


def compile_pays_back(eager: dict, compiled: dict, run_images: int) -> bool:
    """True when the seconds compiling costs (its longer first steps) are earned back over `run_images`."""
    extra_seconds = compiled["first_steps_s"] - eager["first_steps_s"]
    saved_seconds = run_images / eager["images_per_s"] - run_images / compiled["images_per_s"]
    return saved_seconds > extra_seconds


def measured_policy(
    device: torch.device,
    facts: DeviceFacts,
    overrides: dict | None,
    model: fastest.TimedModel,
    run_images: int,
    earlier: dict | None = None,
) -> DevicePolicy:
    """The rules' policy with its uncertain settings chosen by timing; `earlier`: the figures a resumed run
    started with (reused, never re-timed)."""
    uncertain = uncertain_settings(facts, overrides, model.width)
    figures = _Figures(device, facts, overrides, model, earlier)
    candidates = eager_candidates(uncertain) if uncertain else []
    for candidate in candidates:
        figures.time(candidate)
    best = max(candidates, key=figures.rate, default={})
    if "compile" in uncertain:
        compiled = {**best, "compile": True}
        figures.time(compiled)
        candidates.append(compiled)
        if compile_pays_back(figures.of(best), figures.of(compiled), run_images):
            best = compiled
    figures.save()
    chosen = {key: (value, _reason(key, best, figures, candidates, run_images)) for key, value in best.items()}
    kind = facts.device.split(":")[0]
    if kind in COMPILE_NOT_TIMED and (overrides or {}).get("compile") is None:
        rules = decide_policy(facts, overrides, model.width)
        chosen["compile"] = (rules.compile, f"{COMPILE_NOT_TIMED[kind]}; the rule: {rules.reasons['compile']}")
    policy = decide_policy(facts, overrides, model.width, measured=chosen)
    return replace(
        policy, mode="measured", measured={label(candidate): figures.of(candidate) for candidate in candidates}
    )


def _reason(key: str, best: dict, figures: "_Figures", candidates: list[dict], run_images: int) -> str:
    if key == "compile":
        eager, compiled = figures.of({**best, "compile": False}), figures.of({**best, "compile": True})
        return (
            f"measured: compiling cost {compiled['first_steps_s'] - eager['first_steps_s']:.0f} s more in the first "
            f"steps, {compiled['images_per_s']:,.0f} vs {eager['images_per_s']:,.0f} img/s eager over the run's "
            f"{run_images:,} training images ({figures.where})"
        )
    return f"measured: fastest of {len(candidates)} candidates on {figures.device} ({figures.where})"


class _Figures:
    """Timing figures per candidate label: reused from a resumed run or the cache, else measured now."""

    def __init__(
        self,
        device: torch.device,
        facts: DeviceFacts,
        overrides: dict | None,
        model: fastest.TimedModel,
        earlier: dict | None,
    ):
        self.device, self.facts, self.overrides, self.model = device, facts, overrides or {}, model
        fixed = label({key: self.overrides[key] for key in SPEED_SETTINGS if self.overrides.get(key) is not None})
        self.key = f"{fastest.cache_key([device], model)}|fixed: {fixed}"
        self.cache = fastest.read_cache(CACHE_FILE)
        self.known = dict(earlier) if earlier is not None else dict(self.cache.get(self.key, {}))
        self.where = (
            "as measured when this run started"
            if earlier is not None
            else f"cached in {fastest.cache_path(CACHE_FILE)}"
        )
        self.timed_now = False

    def time(self, candidate: dict) -> None:
        if label(candidate) in self.known:
            return
        policy = decide_policy(self.facts, {**self.overrides, **candidate}, self.model.width)
        apply_policy(policy)  # CUDA's cuDNN and TF32 flags as that policy would train
        first_steps_s, images_per_s = fastest.time_training(self.device, policy, self.model)
        self.known[label(candidate)] = {"images_per_s": images_per_s, "first_steps_s": first_steps_s}
        self.timed_now = True
        log.info("device_policy.mode=measured: %s %.0f img/s on %s", label(candidate), images_per_s, self.device)

    def of(self, candidate: dict) -> dict:
        return self.known[label(candidate)]

    def rate(self, candidate: dict) -> float:
        return self.of(candidate)["images_per_s"]

    def save(self) -> None:
        if self.timed_now:
            self.cache[self.key] = self.known
            fastest.write_cache(self.cache, CACHE_FILE)
