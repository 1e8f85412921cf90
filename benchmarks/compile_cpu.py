"""torch.compile on the CPU: compile time, steady-state images/s eager vs compiled, and when compiling pays back.

For each ResNet-18 width (default 16 and 64) and each of eager and compiled, a fresh Python process
trains on one random batch (batch 128) under the CPU's default device policy (channels_last, fp32 on
every processor), with the harness's own train step
(optbench.device.fastest.time_training). It reports the seconds of the first two steps (for the compiled
model these include compiling the forward and backward graphs) and the steady-state images/s of the
`--steps` steps after them. Inductor's on-disk cache goes to a fresh folder for every process, so the
compile time is a cold one, as a new machine or a cleared cache pays it (`--warm-cache` keeps torch's
default cache folder instead).

Payback: compile costs `compiled first steps - eager first steps` seconds and saves
`1/eager rate - 1/compiled rate` seconds per image, so it is earned back after
`cost / (saving x images per epoch)` epochs, given for 10,000 and 45,000 training images per epoch
(the README's CPU subset, and CIFAR's 50,000 less a 5,000 validation split). Never, when compiled is not faster.

The compile default stays off (device_policy.compile); these figures decide it later.

Real measurement (from the repository root, about 10 minutes on a quiet 2-core CPU):
    .venv/bin/python benchmarks/compile_cpu.py --json benchmarks/results/compile-cpu.json
Smoke check:
    .venv/bin/python benchmarks/compile_cpu.py --widths 8 --steps 2
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EPOCH_IMAGES = (10_000, 45_000)  # README's CPU subset; CIFAR's 50,000 less a 5,000 validation split
MODES = ("eager", "compiled")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--widths", default="16,64", help="comma-separated ResNet-18 base widths (default 16,64)")
    parser.add_argument("--batch-size", type=int, default=128, help="images per step (default 128)")
    parser.add_argument("--steps", type=int, default=20, help="timed steady-state steps after the two first steps")
    parser.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0 = torch's default)")
    parser.add_argument(
        "--warm-cache",
        action="store_true",
        help="use Inductor's default on-disk cache (a second compile) instead of a fresh one",
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--part", help=argparse.SUPPRESS)  # internal: "WIDTH,MODE" in a child process
    parser.add_argument("--part-out", type=Path, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def widths_of(text: str) -> list[int]:
    """'16,64' -> [16, 64]; [] when it names anything but whole numbers >= 8 (narrower NHWC crashes oneDNN)."""
    widths = [width.strip() for width in text.split(",") if width.strip()]
    if not widths or not all(width.isdigit() and int(width) >= 8 for width in widths):
        return []
    return [int(width) for width in widths]


def run_part(args) -> None:
    """Child process: time one width eager or compiled under the CPU default policy, write the figures."""
    import torch

    from optbench.device.fastest import time_training
    from optbench.device.policy import decide_policy, facts_of
    from optbench.training.timing import timed_model

    if args.threads:
        torch.set_num_threads(args.threads)
    width, mode = args.part.split(",")
    device = torch.device("cpu")
    policy = decide_policy(facts_of(device), {"compile": mode == "compiled"}, int(width))
    model = timed_model("resnet18", int(width), 10, args.batch_size)
    first_steps_s, images_per_s = time_training(device, policy, model, args.steps)
    args.part_out.write_text(
        json.dumps(
            {
                "first_steps_s": first_steps_s,
                "images_per_s": images_per_s,
                "amp": policy.amp,
                "channels_last": policy.channels_last,
                "threads": torch.get_num_threads(),
                "torch": torch.__version__,
            }
        )
    )


def spawn_part(argv: list[str], width: int, mode: str, warm_cache: bool) -> dict | None:
    """One width and mode in a fresh interpreter (nothing compiled before it); None when it fails."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "part.json"
        env = (
            dict(os.environ)
            if warm_cache
            else {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(Path(folder) / "inductor")}
        )
        command = [
            sys.executable,
            str(Path(__file__).resolve()),
            *argv,
            "--part",
            f"{width},{mode}",
            "--part-out",
            str(out),
        ]
        print(f"timing width {width} {mode} ...", file=sys.stderr, flush=True)
        if subprocess.run(command, env=env).returncode != 0:
            print(f"width {width} {mode} failed; the others go on", file=sys.stderr)
            return None
        return json.loads(out.read_text())


def payback_epochs(eager: dict, compiled: dict, epoch_images: int) -> float | None:
    """Epochs of `epoch_images` until compiling's extra first-step seconds are earned back; None: never."""
    cost_s = compiled["first_steps_s"] - eager["first_steps_s"]
    saving_s_per_image = 1 / eager["images_per_s"] - 1 / compiled["images_per_s"]
    if saving_s_per_image <= 0:
        return None
    return max(cost_s, 0.0) / (saving_s_per_image * epoch_images)


def print_table(results: dict, args) -> None:
    some = next((part for parts in results.values() for part in parts.values() if part), {})
    print(
        f"\ncpu, ResNet-18, batch {args.batch_size}, {args.steps} timed steps after 2 first steps; "
        f"{os.cpu_count()} CPU core(s), {some.get('threads', '?')} torch thread(s); torch {some.get('torch', '?')}; "
        f"policy amp {some.get('amp', '?')}, {'channels_last' if some.get('channels_last') else 'NCHW'}; "
        f"{'warm' if args.warm_cache else 'cold'} Inductor cache"
    )
    header = (
        f"{'width':>6}{'eager first s':>15}{'eager img/s':>13}{'compiled first s':>18}{'compiled img/s':>16}"
        f"{'speed-up':>10}" + "".join(f"{f'payback @{images // 1000}k':>15}" for images in EPOCH_IMAGES)
    )
    print(header + "\n" + "-" * len(header))
    for width, parts in results.items():
        eager, compiled = parts.get("eager"), parts.get("compiled")
        if not (eager and compiled):
            print(f"{width:>6}  (a part failed: {', '.join(mode for mode in MODES if not parts.get(mode))})")
            continue
        paybacks = [payback_epochs(eager, compiled, images) for images in EPOCH_IMAGES]
        print(
            f"{width:>6}{eager['first_steps_s']:>15.1f}{eager['images_per_s']:>13,.0f}{compiled['first_steps_s']:>18.1f}"
            f"{compiled['images_per_s']:>16,.0f}{compiled['images_per_s'] / eager['images_per_s']:>9.2f}x"
            + "".join(f"{'never' if epochs is None else f'{epochs:.1f} epochs':>15}" for epochs in paybacks)
        )


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.part:
        run_part(args)
        return 0
    widths = widths_of(args.widths)
    if not widths or args.steps < 1 or args.batch_size < 1:
        print(
            f"error: --widths {args.widths} --steps {args.steps} --batch-size {args.batch_size}: widths are whole "
            "numbers >= 8 (e.g. --widths 16,64), steps and batch size at least 1",
            file=sys.stderr,
        )
        return 2
    results = {width: {mode: spawn_part(argv, width, mode, args.warm_cache) for mode in MODES} for width in widths}
    print_table(results, args)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        paybacks = {
            width: {images: payback_epochs(parts["eager"], parts["compiled"], images) for images in EPOCH_IMAGES}
            for width, parts in results.items()
            if parts["eager"] and parts["compiled"]
        }
        args.json.write_text(
            json.dumps(
                {
                    "args": {key: str(value) for key, value in vars(args).items()},
                    "machine": {"platform": platform.platform(), "cpu_count": os.cpu_count()},
                    "results": results,
                    "payback_epochs": paybacks,
                },
                indent=2,
            )
        )
    return 1 if any(not part for parts in results.values() for part in parts.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
