"""Checks of the aggregator's command-line input, cheap enough to run before pandas and matplotlib load.

`check_inputs(results_dir, out_dir, target_acc, alpha, target_loss)` raises ConfigError with one line naming the
fix (the CLI prints it and exits 2) and returns the results folder and the output folder to use;
`check_only_study(only_study, study_named)` refuses `--only-study` without the study it keeps.
"""

from pathlib import Path

from optbench.errors import ConfigError
from optbench.rundir import is_run_dir


def check_inputs(
    results_dir: Path, out_dir: Path | None, target_acc: float | None, alpha: float, target_loss: float | None = None
) -> tuple[Path, Path]:
    """`target_acc`, `target_loss`: None when not given (each workload's default, analysis/targets.py)."""
    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        raise ConfigError(
            f"results folder {results_dir} does not exist: give the folder runs were written to "
            f"(paths.results_dir, default results/)"
        )
    if target_acc is not None and not 0 < target_acc <= 1:
        raise ConfigError(f"--target-acc {target_acc}: give a validation accuracy as a fraction in (0, 1], e.g. 0.9")
    if target_loss is not None and not 0 < target_loss < float("inf"):
        raise ConfigError(f"--target-loss {target_loss}: give a validation loss above 0, e.g. 2.2 (nats per character)")
    if not 0 < alpha < 1:
        raise ConfigError(f"--alpha {alpha}: give a significance level in (0, 1), e.g. 0.05")
    default_out = out_dir is None
    out_dir = results_dir / "aggregate" if out_dir is None else Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigError(f"--out {out_dir} is a file: give a folder for the aggregator's output")
    inside = next((folder for folder in [out_dir.resolve(), *out_dir.resolve().parents] if is_run_dir(folder)), None)
    if inside is not None and default_out:
        raise ConfigError(
            f"{results_dir} is a run directory, and the default output folder would be inside it: "
            f"give the folder above it, or --out DIR outside any run"
        )
    if inside is not None:
        raise ConfigError(
            f"--out {out_dir} is a run directory or inside one ({inside}): give a separate folder, "
            f"e.g. {results_dir}/aggregate"
        )
    return results_dir, out_dir


def check_only_study(only_study: bool, study_named: bool) -> None:
    """`--only-study` keeps the runs of the study `--study` names: without one there is nothing to keep."""
    if only_study and not study_named:
        raise ConfigError(
            "--only-study reports the runs of the study named with --study: add --study NAME, or drop --only-study "
            "to report every run in the folder"
        )
