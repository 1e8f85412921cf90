"""Aggregate a folder of runs into tables, figures, statistics and hypothesis verdicts.

    python src/aggregate.py results/                       # writes results/aggregate/report.md and the rest
    python src/aggregate.py results/ --out paper/ --target-acc 0.93 --experiments experiments/
    python src/aggregate.py results/ --target-loss 2.0          # char_lm: steps to validation loss <= 2.0
    python src/aggregate.py results/ --study full          # the study's hypotheses, on the settings it planned
    python src/aggregate.py docs/cross-workload-study/runs --study fidelity_mnist1d --only-study   # its runs alone
    python src/aggregate.py results/ --to-tracker mlflow   # every run directory into MLflow instead (no report)

Reads run directories (summary.json, metrics.jsonl, .hydra/config.yaml) and never changes them; writes
only into --out (with --to-tracker: only into the tracker's store, <RESULTS_DIR>/mlflow.db unless
--tracking-uri). Bad input gives one line `error: ...` naming the fix and exit status 2.
"""

import argparse
import shlex
import sys
from pathlib import Path

from optbench.analysis.inputs import check_inputs, check_only_study
from optbench.command_line import OneLineParser
from optbench.errors import ConfigError
from optbench.specs.study_spec import find_study

REPO = Path(__file__).resolve().parent.parent
DEFAULT_EXPERIMENTS = REPO / "experiments"
EXIT_BAD_INPUT = 2


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = OneLineParser(prog="python src/aggregate.py", description=__doc__.splitlines()[0])
    parser.add_argument("results_dir", type=Path, help="folder holding the run directories, e.g. results/")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: RESULTS_DIR/aggregate)")
    parser.add_argument(
        "--target-acc",
        type=float,
        default=None,
        help="validation accuracy (fraction) an accuracy workload's runs must rise to, for the epochs-to-target "
        "column (default 0.9)",
    )
    parser.add_argument(
        "--target-loss",
        type=float,
        default=None,
        help="validation loss a loss workload's runs (char_lm) must fall to, for the steps-to-target column "
        "(default: the workload's target in the registry, char_lm 2.2 nats/char)",
    )
    parser.add_argument(
        "--experiments",
        type=Path,
        default=None,
        help=f"folder with hypotheses/*.yaml (default: {DEFAULT_EXPERIMENTS} when present)",
    )
    parser.add_argument(
        "--alpha",
        type=float,
        default=0.05,
        help="significance level of the pairwise tests (default 0.05); each hypothesis file sets its own",
    )
    parser.add_argument("--no-figures", action="store_true", help="tables, statistics and verdicts only (faster)")
    parser.add_argument(
        "--study",
        default=None,
        help="the study that made these runs (a name under "
        "experiments/studies/ or a hypothesis id): only the hypotheses it tests are judged, on the "
        "settings it planned, and a planned setting with no runs is named as missing",
    )
    parser.add_argument(
        "--only-study",
        action="store_true",
        help="with --study: report that study's runs alone (the settings it plans, its tuning studies' records), "
        "leaving out the other studies' runs and tuning records in the folder; the report counts them",
    )
    parser.add_argument(
        "--to-tracker",
        default=None,
        metavar="mlflow",
        help="log every run directory under "
        "RESULTS_DIR into this tracker (one tracker run per run id; a second call adds nothing) "
        "instead of writing a report",
    )
    parser.add_argument(
        "--tracking-uri",
        default=None,
        help="with --to-tracker: the MLflow store (default "
        "sqlite:///RESULTS_DIR/mlflow.db, where logger=mlflow puts runs trained there)",
    )
    return parser.parse_args(argv)


def shown(path: Path) -> Path:
    """Relative to the working directory when below it: the report names files the same on every machine."""
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path


def to_tracker(args: argparse.Namespace) -> int:
    """--to-tracker: the run directories into the tracker, one line of counts and how to open it."""
    from optbench.training.tracker_export import log_folder  # mlflow loads only here

    counts = log_folder(args.results_dir, args.to_tracker, args.tracking_uri)
    uri = args.tracking_uri or f"sqlite:///{args.results_dir.resolve() / 'mlflow.db'}"
    shown_counts = ", ".join(
        f"{counts[key]} {key}"
        for key in ("logged", "already there", "being trained", "unreadable", "failed")
        if counts[key]
    )
    print(
        f"{args.to_tracker}: {shown_counts or 'no run directories found'} in {uri}; see them with: "
        f"pip install mlflow && mlflow ui --backend-store-uri {shlex.quote(uri)}"
    )
    return 1 if counts["failed"] else 0


def main(argv: list[str]) -> int:
    try:
        args = parse_args(argv)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.to_tracker:
        try:
            return to_tracker(args)
        except ConfigError as error:
            print(f"error: {error}", file=sys.stderr)
            return EXIT_BAD_INPUT
    experiments = args.experiments
    if experiments is None and DEFAULT_EXPERIMENTS.is_dir():
        experiments = shown(DEFAULT_EXPERIMENTS)
    try:
        # a typo fails before the slow imports
        check_inputs(args.results_dir, args.out, args.target_acc, args.alpha, args.target_loss)
        check_only_study(args.only_study, args.study is not None)
        study = find_study(args.study, experiments or DEFAULT_EXPERIMENTS) if args.study else None
        rung_keys = sorted(
            {override.split("=", 1)[0] for rung in (study.rungs if study else ()) for override in rung.overrides}
        )  # budget keys beyond the known ones
        from optbench.analysis import aggregate  # pandas, scipy, matplotlib: a few seconds

        outcome = aggregate(
            args.results_dir,
            args.out,
            args.target_acc,
            experiments,
            args.alpha,
            command=shlex.join(["python", "src/aggregate.py", *argv]),
            draw_figures=not args.no_figures,
            study=study,
            fidelity_extra=rung_keys,
            target_loss=args.target_loss,
            only_study=args.only_study,
        )
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    for warning in outcome.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    verdicts = ", ".join(f"{name} {verdict}" for name, verdict in outcome.verdicts.items())
    print(
        f"{outcome.runs} runs -> {outcome.report}"
        + (f" ({verdicts})" if verdicts else "")
        + not_finished(outcome.unfinished)
    )
    return 0


def not_finished(runs: list[tuple[str, str]], shown_at_most: int = 3) -> str:
    """`; 2 did not finish: <run> (failed), <run> (running)` for the (run id, status) of the runs that did not
    finish (the aggregator's Outcome.unfinished), or ''."""
    unfinished = [f"{run_id} ({status})" for run_id, status in runs]
    if not unfinished:
        return ""
    more = f", and {len(unfinished) - shown_at_most} more (summary.csv)" if len(unfinished) > shown_at_most else ""
    return f"; {len(unfinished)} did not finish: " + ", ".join(unfinished[:shown_at_most]) + more


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
