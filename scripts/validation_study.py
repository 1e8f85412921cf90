"""Check the harness's statistical rules on real training: resample the validation studies' runs, write the table.

    python scripts/validation_study.py /work/main/results/validation --out docs/validation-study [--resamples 2000]
        [--ladder /work/main/results/cross-workload --ladder-study fidelity_mnist1d]

Reads RESULTS_DIR with the aggregator's own loader (analysis/load.py), takes the A/A setting's finished runs
(experiments/studies/validation_aa.yaml: AdamW lr 0.01, weight decay 0.1, 60 epochs on mnist1d) and the known
effect's (validation_half_lr.yaml: the same at lr 0.005, paired by seed), resamples them B times with a fixed seed
(analysis/judging/validation_null.py, validation_effect.py) and writes OUT/tables/validation.csv (its columns in
formats/aggregate_tables.py), OUT/tables/validation.md, and the block of OUT/README.md between its markers. Runs
still training are left out, so the figures grow with the studies; run it again when they finish.
With `--ladder DIR --ladder-study STUDY` it also resamples the fidelity ladder STUDY planned among DIR's runs
(experiments/studies/fidelity_mnist1d.yaml: 30 seeds per optimizer and rung), rung by rung against its top
(analysis/judging/validation_fidelity.py), and adds its rows to the same table.
"""

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "scripts"))  # readme_blocks, also when a test loads this file by path

import pandas as pd  # noqa: E402
import readme_blocks  # noqa: E402

from optbench.analysis.judging import validation_fidelity  # noqa: E402
from optbench.analysis.judging.ladder_runs import fidelity_keys, find_ladders, planned_rungs  # noqa: E402
from optbench.analysis.judging.study_trials import study_runs_among_trials  # noqa: E402
from optbench.analysis.judging.tuning_report import read_tuning  # noqa: E402
from optbench.analysis.judging.validation_effect import Pairs, effect_figures  # noqa: E402
from optbench.analysis.judging.validation_fidelity import LadderPool, fidelity_figures  # noqa: E402
from optbench.analysis.judging.validation_null import null_figures  # noqa: E402
from optbench.analysis.judging.validation_runs import METRIC, finished_pool, paired_pools  # noqa: E402
from optbench.analysis.load import load_runs  # noqa: E402
from optbench.analysis.pipeline import analyse  # noqa: E402
from optbench.analysis.statistics import fidelity_stats  # noqa: E402
from optbench.analysis.writing.output import OutputDir  # noqa: E402
from optbench.analysis.writing.tables import to_markdown  # noqa: E402
from optbench.analysis.writing.validation_tables import figure_display, figure_table, validation_block  # noqa: E402
from optbench.errors import ConfigError  # noqa: E402
from optbench.formats import aggregate_tables  # noqa: E402
from optbench.specs.study_spec import find_study  # noqa: E402

SETTING = {"dataset": "mnist1d", "optimizer": "adamw", "epochs": 60, "optimizer.weight_decay": 0.1}
AA = {**SETTING, "optimizer.lr": 0.01}  # validation_aa: seeds 0-399, and the lr arm of the known effect (0-199)
HALF_LR = {**SETTING, "optimizer.lr": 0.005}  # validation_half_lr: seeds 0-199
NAMES = ("lr 0.01", "lr 0.005")
RESAMPLES = 2000
SEED = 0
BEGIN = "<!-- validation block: written by `python scripts/validation_study.py`; do not edit -->"
END = "<!-- end of validation block -->"


def facts(
    results_dir: Path, runs: pd.DataFrame, aa: pd.DataFrame, pairs: Pairs | None, ladder: list[LadderPool], args
) -> list[str]:
    """What the figures rest on: the runs read, the pools, the truths, the resampling."""
    statuses = (
        ", ".join(f"{count} {status}" for status, count in runs["status"].value_counts().items())
        if len(runs)
        else "none"
    )
    lines = [
        f"Runs read: {len(runs)} in `{results_dir}` ({statuses}); only finished runs (completed or diverged) are "
        f"resampled.",
        f"A/A pool (AdamW lr 0.01, weight decay 0.1, 60 epochs): {len(aa)} seeds"
        + (f", {int((aa['status'] != 'completed').sum())} of them not completed" if len(aa) else ""),
    ]
    if pairs is None:
        lines.append("Known effect (the same at lr 0.005, paired by seed): no seed has finished in both arms yet")
    else:
        lines.append(
            f"Known effect: {len(pairs)} seeds finished in both arms, {len(pairs.differences)} completed pairs; "
            f"all pairs show {pairs.names[0]} ahead of {pairs.names[1]} by {100 * pairs.truth:+.2f} points "
            f"(d_z {pairs.d_z:.2f})"
        )
    if args.ladder is not None:
        lines.append(ladder_fact(args, ladder))
    lines.append(f"Resamples: {args.resamples} per figure, generator seed {args.seed}, without replacement within each")
    return lines


def ladder_fact(args, pools: list[LadderPool]) -> str:
    """The ladder's pools: each rung against the top, its optimizers and the seeds both share."""
    if not pools:
        return f"Fidelity ladder ({args.ladder_study} in `{args.ladder}`): no rung with results at two budgets yet"
    rungs = "; ".join(f"{pool.rung} vs {pool.top} on {len(pool.seeds)} shared seeds" for pool in pools)
    return (
        f"Fidelity ladder ({args.ladder_study} in `{args.ladder}`, {len(pools[0].arms)} optimizers): {rungs}; "
        f"{args.pools} simulated pools per model, each resampled as often"
    )


def read_ladder_pools(results_dir: Path, study) -> list[LadderPool]:
    """The pools of the ladder `study` planned among the runs in `results_dir`, found as the aggregator and the
    planner find it (its tuning trials set aside, its rungs told apart by their tuning's winners; studies/pilot.py)."""
    tuning = read_tuning(results_dir)
    own_runs = study_runs_among_trials(study, tuning.studies, results_dir, None)
    analysis = analyse(results_dir, set_aside=tuning.run_dirs - own_runs)
    keys = fidelity_keys([override.split("=", 1)[0] for rung in study.rungs for override in rung.overrides])
    resolution = (study.fidelity_resolution or fidelity_stats.DEFAULT_RESOLUTION_POINTS) / 100
    planned = {rung.label for rung in study.rungs}  # a budget the study does not plan (other runs here) is not its
    pools = []
    for ladder in find_ladders(analysis.runs, analysis.grouping, keys, planned_rungs(study, tuning.studies)):
        ladder.resolution = resolution
        pools += [
            pool
            for pool in validation_fidelity.ladder_pools(ladder, METRIC)
            if {pool.rung, pool.top} <= planned and len(pool.arms) >= 2 and pool.seeds
        ]
    return pools


def ladder_pools(args) -> list[LadderPool]:
    """The ladder's pools, or none without --ladder; ConfigError for a ladder asked for half or wrongly."""
    if (args.ladder is None) != (args.ladder_study is None):
        raise ConfigError(
            "--ladder DIR and --ladder-study STUDY go together, e.g. --ladder results/cross-workload "
            "--ladder-study fidelity_mnist1d"
        )
    if args.ladder is None:
        return []
    if not args.ladder.is_dir():
        raise ConfigError(f"--ladder {args.ladder} is not a folder of runs")
    study = find_study(args.ladder_study)
    if not study.rungs:
        raise ConfigError(f"--ladder-study {args.ladder_study} has no fidelity: rungs; give a ladder study")
    return read_ladder_pools(args.ladder, study)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results_dir", type=Path)
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "validation-study")
    parser.add_argument("--resamples", type=int, default=RESAMPLES, help=f"per figure (default {RESAMPLES})")
    parser.add_argument("--seed", type=int, default=SEED, help="of the resampling generator")
    parser.add_argument("--ladder", type=Path, metavar="DIR", help="results folder of a fidelity ladder's runs")
    parser.add_argument("--ladder-study", metavar="STUDY", help="the ladder study, e.g. fidelity_mnist1d")
    parser.add_argument(
        "--pools",
        type=int,
        default=validation_fidelity.POOLS,
        help=f"simulated pools per model and ladder figure (default {validation_fidelity.POOLS})",
    )
    args = parser.parse_args(argv)
    if not args.results_dir.is_dir():
        print(f"error: {args.results_dir} is not a folder of runs", file=sys.stderr)
        return 2
    try:
        ladder = ladder_pools(args)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    runs = load_runs(args.results_dir, target_acc=0.9).runs
    aa = finished_pool(runs, AA)
    lr, half = paired_pools(runs, AA, HALF_LR)
    pairs = Pairs(lr, half, NAMES) if len(lr) >= 2 else None
    figures = null_figures(aa, args.resamples, args.seed)
    figures += effect_figures(pairs, args.resamples, args.seed) if pairs is not None else []
    figures += fidelity_figures(ladder, args.resamples, args.seed, simulated_pools=args.pools)
    table = figure_table(figures)
    out = OutputDir(args.out)
    out.write_text(aggregate_tables.VALIDATION, aggregate_tables.csv_text(aggregate_tables.VALIDATION, table))
    out.write_text("tables/validation.md", to_markdown(figure_display(table)))
    block = validation_block(facts(args.results_dir, runs, aa, pairs, ladder, args), table)
    readme = args.out / "README.md"
    if readme.exists():
        readme.write_text(readme_blocks.with_block(readme.read_text(), block, BEGIN, END))
    print(block)
    return 0


if __name__ == "__main__":
    sys.exit(main())
