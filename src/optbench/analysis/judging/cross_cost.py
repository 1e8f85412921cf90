"""What a cross-workload study cost: per workload, the device-hours of its main runs and of its tuning, and the total.

Main runs: the wall time (summary.json wall_time_s, the loader's column) of every run of the part (cross_parts.py),
whatever its status: a failed run cost its hours too. Tuning: the wall time of every trial run its tuning study's
record lists (tuning_report.run_totals, summed from the record's runs as the aggregator's tuning table sums them),
and of any earlier search the parts file names (a search space revised spent its earlier trials too), each trial run
once: a range left as it was keeps its trials, so the same run directory in two records is one run. The
devices each ran on are listed beside: an hour of one CPU thread and an hour of a GPU are different hours, and the
table never adds them up unlabelled. A workload with no runs yet costs nothing here and says so.
"""

import pandas as pd

from optbench.analysis.judging.cross_parts import CrossRuns
from optbench.analysis.judging.tuning_report import read_tuning_file
from optbench.errors import DamagedRunFile
from optbench.formats.tuning_record import Run, TuningRecord

TOTAL = "total"  # the last row's workload


def trial_runs(records: list[TuningRecord]) -> dict[str, Run]:
    """run directory -> its run, over every trial the records list (a directory in two records counted once)."""
    return {run.run_dir: run for record in records for entry in record.optimizers.values() for run in entry.listed_runs}


def tuning_totals(records: list[TuningRecord]) -> tuple[int, float, set[str]]:
    """(trial runs, device-hours, devices) of every distinct trial run the records list."""
    runs = trial_runs(records).values()
    hours = sum(run.wall_time_s or 0.0 for run in runs) / 3600
    return len(runs), hours, {run.device for run in runs if run.device}


def cost_table(cross: CrossRuns) -> tuple[pd.DataFrame, list[str]]:
    """One row per workload and a total: main runs and their hours, tuning runs and their hours (earlier searches
    included), total hours and devices; with warnings for an earlier tuning record that cannot be read."""
    rows, warnings = [], []
    for part in cross.parts:
        records = [part.tuning.record] if part.tuning and part.tuning.record else []
        for path in part.part.earlier_tuning:
            try:
                records.append(read_tuning_file(path, str(path)).record)
            except (DamagedRunFile, FileNotFoundError) as error:
                warnings.append(f"{part.workload}: earlier tuning {path} not counted ({error})")
        runs, hours, devices = tuning_totals(records)
        main_hours = (
            float(pd.to_numeric(part.runs["wall_time_s"], errors="coerce").fillna(0).sum()) / 3600
            if len(part.runs)
            else 0.0
        )
        rows.append(
            {
                "workload": part.workload,
                "main_runs": len(part.runs),
                "main_hours": main_hours,
                "tuning_runs": runs,
                "tuning_hours": hours,
                "total_hours": main_hours + hours,
                "main_devices": ", ".join(sorted(main_devices(part.runs))),
                "tuning_devices": ", ".join(sorted(devices)),
            }
        )
    table = pd.DataFrame(rows, columns=COST_COLUMNS)
    total = {
        "workload": TOTAL,
        **{column: table[column].sum() for column in COST_COLUMNS[1:-2]},
        **{
            column: ", ".join(sorted({item for text in table[column] for item in text.split(", ") if item}))
            for column in COST_COLUMNS[-2:]
        },
    }
    return pd.concat([table, pd.DataFrame([total])], ignore_index=True), warnings


def main_devices(runs: pd.DataFrame) -> set[str]:
    """'cpu (1 thread)', 'cuda': each device the runs trained on, a CPU with the intra-op threads it recorded."""
    if not len(runs) or "device" not in runs:
        return set()
    threads = runs["threads"] if "threads" in runs else pd.Series([None] * len(runs), index=runs.index)
    return {device_text(str(device), count) for device, count in zip(runs["device"], threads) if pd.notna(device)}


def device_text(device: str, threads) -> str:
    if device != "cpu":
        return device
    if pd.isna(threads):
        return "cpu (threads not recorded)"
    return f"cpu ({int(threads)} thread{'s' if int(threads) != 1 else ''})"


COST_COLUMNS = [
    "workload",
    "main_runs",
    "main_hours",
    "tuning_runs",
    "tuning_hours",
    "total_hours",
    "main_devices",  # with a CPU's thread count, from the runs' summaries
    "tuning_devices",  # as the tuning records list them
]
