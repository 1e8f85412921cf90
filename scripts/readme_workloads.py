"""Write README's workloads block from the registry and the measured benchmark results, so no figure is typed.

    python scripts/readme_workloads.py           # rewrite the block between the markers in README.md
    python scripts/readme_workloads.py --check   # exit 1 when README's block differs (tests run this)

One row per workload (optbench/registry/workloads.py): its data, model, headline metric and its direction, budget,
its published reference, and what this harness measured at the reference's configuration
(benchmarks/workload_references.py -> benchmarks/results/workload-references.json: mean over its seeds) and how
fast it trains (benchmarks/workload_speed.py -> workload-speed.json: the harness's step time over a plain PyTorch
loop's for the same model and batch, and a default run's wall time), each with the processor it ran on.
"""

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "scripts"))  # readme_blocks, also when a test loads this file by path

import readme_blocks  # noqa: E402

from optbench.registry import workloads  # noqa: E402

README = REPO / "README.md"
RESULTS = REPO / "benchmarks" / "results"
BEGIN = "<!-- workloads block: written by the readme_workloads script; no figure here is typed by hand -->"
END = "<!-- end of workloads block -->"


def shown(metric: str, value: float, digits: int = 3) -> str:
    """An accuracy in %, a loss in nats per character (`digits` significant digits; a reference keeps its own)."""
    return f"{100 * value:.{digits}g} %" if metric.endswith("/acc") else f"{value:.{digits}g}"


def budget(entry: workloads.Workload) -> str:
    return f"{entry.default_budget:,} {entry.budget_unit}"  # a step budget's periods: docs/workloads.md


def measured(name: str, references: dict) -> str:
    found = references.get("workloads", {}).get(name)
    if name == workloads.DEFAULT:
        return "the CPU studies below (width 16, 8-16 epochs)"
    if not found:
        return "not measured"
    seeds = len(found["runs"])
    plural = "s" * (seeds > 1)
    return f"{shown(found['metric'], found['mean'])} (mean of {seeds} seed{plural}: `{found['configuration']}`)"


def speed(name: str, speeds: dict) -> str:
    found = speeds.get("workloads", {}).get(name)
    if name == workloads.DEFAULT:
        return "docs/benchmarks.md"
    if not found:
        return "not measured"
    wall = f"; a default run {found['default_run_wall_s']:.0f} s" if "default_run_wall_s" in found else ""
    return f"{found['harness_time_over_plain']:.2f}x a plain loop's step{wall}"


def measurements(name: str) -> dict:
    """A benchmark's results file, or {} before it was run (the block then says "not measured")."""
    path = RESULTS / name
    return json.loads(path.read_text()) if path.is_file() else {}


def workloads_block() -> str:
    references, speeds = measurements("workload-references.json"), measurements("workload-speed.json")
    header = (
        "| workload | data, model | headline | budget | reference | measured here | speed |\n"
        "|:--|:--|:--|:--|:--|:--|:--|"
    )
    rows = []
    for entry in workloads.WORKLOADS.values():
        metric = entry.headline_metric
        reference = entry.reference
        rows.append(
            f"| `{entry.name}` | {entry.datasets[0]}, {entry.models[0]} | {metric.key} ({metric.direction}) | "
            f"{budget(entry)} | {shown(reference.metric, reference.value, 4)} ({reference.source}) | "
            f"{measured(entry.name, references)} | {speed(entry.name, speeds)} |"
        )
    machines = sorted({found["processor"] for found in (references, speeds) if "processor" in found})
    if not machines:
        return "\n".join([header, *rows])
    note = (
        f"Measured on {' and '.join(machines)}, {speeds.get('threads', 1)} thread per run "
        "(`python benchmarks/workload_references.py`, `python benchmarks/workload_speed.py`; "
        "load average {0:.1f} while timing)".format(speeds.get("load_before", float("nan")))
    )
    return "\n".join([header, *rows, "", note + "."])


def readme_with_block(text: str) -> str:
    return readme_blocks.with_block(text, workloads_block(), BEGIN, END)


def main(argv: list[str]) -> int:
    return readme_blocks.main_for(
        argv,
        "Write README's workloads block from the registry and benchmarks/results.",
        README,
        readme_with_block,
        "README's workloads block is stale: run python scripts/readme_workloads.py",
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
