"""Replay a recorded run (`python src/replay.py RUN_DIR`): train it again from its record into a scratch folder
and say, epoch by epoch, whether the numbers are the recorded ones.

`read_recorded(path)` reads the run through its format modules (a folder that is not a run, a damaged record, a run
with no finished epoch: ConfigError, one line). `replay_config(recorded, ...)` is its record.json config with the
device policy it trained under pinned (device kind, precision, memory format, compile, cuDNN/TF32 settings and
the intra-op thread count: a run replayed under another launcher's thread count is another computation), its
trackers, mirror and TensorBoard off (a replay logs nowhere but its scratch folder), and checkpoints only where the
replay stops. `check_replayable` refuses, before any byte is written, what cannot replay (an unavailable device,
a data root that is not there or holds other data, a scratch folder that is not empty or lies in a run).
`replay(...)` trains from scratch (the run's checkpoint, if any, is never read: a replay re-computes the epochs)
into the scratch folder, never the original, stopping after `epochs`; optbench.reproducibility compares the
epochs and the environments, and `report_lines` words the verdict.
"""

import contextlib
import logging
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from optbench import reproducibility, rundir
from optbench.config.plain import plain_dict
from optbench.data.fingerprint import config_data_fingerprint
from optbench.errors import ConfigError, DamagedRunFile
from optbench.formats import metrics_log, run_files, run_record, run_summary

# The device policy settings that change the numbers, pinned to the recorded ones (device/policy.py DevicePolicy)
PINNED_POLICY = ("amp", "channels_last", "compile", "cudnn_benchmark", "tf32", "threads")


@dataclass(frozen=True)
class Recorded:
    path: Path
    record: run_record.RunRecord
    summary: run_summary.Summary
    records: list[dict]  # metrics.jsonl, one per finished epoch that is readable
    unreadable_lines: tuple[int, ...] = ()  # metrics.jsonl's lines (from 1) that are not JSON objects (torn)

    @property
    def last_epoch(self) -> int:
        """The last epoch the record holds: a replay trains up to it (a torn line before it is one epoch less to
        compare, not one epoch less to train)."""
        return max(record["epoch"] for record in self.records)

    def unreadable_text(self) -> str:
        """`.../metrics.jsonl line 1 is not readable` ("" when every line is)."""
        lines = self.unreadable_lines
        if not lines:
            return ""
        numbers = ", ".join(map(str, lines))
        return f"{metrics_log.path_in(self.path)} line{'s' if len(lines) > 1 else ''} {numbers} " + (
            "are not readable" if len(lines) > 1 else "is not readable"
        )


def read_recorded(path: Path) -> Recorded:
    """The run in `path`, read through its format modules; ConfigError (one line naming the fix) when it is not
    a run, is damaged, or has no finished epoch to compare with."""
    try:
        run = run_files.read(path)
    except DamagedRunFile as error:
        raise ConfigError(f"{damage(error)}: a damaged run cannot be replayed; restore it from a copy") from None
    records = [record for record in run.epochs if isinstance(record.get("epoch"), int)]
    if not records:
        raise ConfigError(f"{run.path}: the run has no finished epoch to compare with: replay it once it has one")
    return Recorded(run.path, run.record, run.summary, records, run.unreadable_lines)


def damage(error: DamagedRunFile) -> str:
    """What is wrong with the file, without the way out its reader names for training (move away, rerun)."""
    message = str(error)
    for way_out in (run_record.WAY_OUT, run_summary.WAY_OUT, metrics_log.WAY_OUT):
        message = message.removesuffix(f": {way_out}")
    return message


def recorded_policy(summary: run_summary.Summary) -> dict:
    """The number-changing policy settings the run recorded; threads from its environment where the policy
    has none (older summaries record neither: the rules of this machine decide)."""
    policy = {key: summary.device_policy[key] for key in PINNED_POLICY if summary.device_policy.get(key) is not None}
    if not policy.get("threads") and summary.environment.threads:
        policy["threads"] = summary.environment.threads
    return policy


def replay_config(recorded: Recorded, data_root: Path | None = None, data_dir: Path | None = None) -> DictConfig:
    """The record's config, pinned to the recorded device policy, logging nowhere but the scratch folder."""
    cfg = OmegaConf.create(recorded.record.config)
    if recorded.summary.device:
        cfg.device = recorded.summary.device.split(":")[0]  # the kind: cuda:1 replays on this machine's first GPU
    for key, value in recorded_policy(recorded.summary).items():
        OmegaConf.update(cfg, f"device_policy.{key}", value, force_add=True)
    OmegaConf.update(cfg, "logger", None, force_add=True)  # the replay goes into no tracker
    OmegaConf.update(cfg, "train.tensorboard", False, force_add=True)
    OmegaConf.update(cfg, "train.checkpoint_every", 0, force_add=True)  # the last replayed epoch's only
    OmegaConf.update(cfg, "train.rerun", False, force_add=True)
    OmegaConf.update(cfg, "paths.mirror_dir", None, force_add=True)
    if data_root is not None:
        OmegaConf.update(cfg, "dataset.root", str(data_root), force_add=True)
    if data_dir is not None:
        OmegaConf.update(cfg, "paths.data_dir", str(data_dir), force_add=True)
    return cfg


def check_replayable(recorded: Recorded, cfg: DictConfig, epochs: int, out: Path | None) -> None:
    """Everything that can be refused before a byte is written: epochs, scratch folder, device, data."""
    done = recorded.last_epoch
    if not 1 <= epochs <= done:
        raise ConfigError(f"--epochs {epochs}: the run recorded {done} epoch(s): give 1 to {done}")
    first = min(record["epoch"] for record in recorded.records)
    if epochs < first:  # only unreadable lines up to the cut: nothing to compare
        unreadable = recorded.unreadable_text().removeprefix(f"{recorded.path}/")
        raise ConfigError(
            f"--epochs {epochs}: the record holds no readable epoch up to {epochs} ({unreadable}): "
            f"give {first} to {done}"
        )
    if out is not None:
        check_scratch(out, recorded.path)
    from optbench.device.policy import resolve_device

    resolve_device(cfg.device)  # a GPU run on a machine without one: one line, nothing written
    root = OmegaConf.select(cfg, "dataset.root")
    if root and not Path(str(root)).expanduser().is_dir():
        raise ConfigError(
            f"dataset.root {root} is not a folder from here ({Path.cwd()}): relative paths in the record are "
            "resolved from the working directory, as train.py does: run from the folder the run was trained "
            "from, or give --data-root DIR"
        )
    check_same_data(recorded, cfg)


def check_scratch(out: Path, run_path: Path) -> None:
    resolved = out.resolve()
    if resolved == run_path.resolve() or run_path.resolve() in resolved.parents:
        raise ConfigError(f"--out {out}: inside the run being replayed: a replay never writes there; name another")
    for folder in (resolved, *resolved.parents):
        if rundir.RunDir(folder).holds_results():
            raise ConfigError(f"--out {out}: {folder} is a run directory: name a folder outside any run")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError(f"--out {out}: not an empty folder: name a new or empty one")


def check_same_data(recorded: Recorded, cfg: DictConfig) -> None:
    """The data here must be the data the run trained on (its fingerprint in record.json)."""
    here = config_data_fingerprint(plain_dict(cfg, resolve=True))
    if recorded.record.data_fingerprint is not None and here != recorded.record.data_fingerprint:
        raise ConfigError(
            f"the data here ({OmegaConf.select(cfg, 'dataset.root') or cfg.paths.data_dir}) are not the data the run "
            "trained on (their fingerprints differ): give --data-root (or --data-dir) for the run's data"
        )


@contextlib.contextmanager
def scratch_folder(out: Path | None):
    """`out` (kept, unless the replay fails and the folder is its own), or a temporary folder removed afterwards."""
    if out is not None:
        made = not out.exists()
        out.mkdir(parents=True, exist_ok=True)
        try:
            yield out
        except BaseException:
            if made:
                shutil.rmtree(out, ignore_errors=True)
            raise
        return
    folder = Path(tempfile.mkdtemp(prefix="optbench-replay-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@dataclass(frozen=True)
class Replayed:
    summary: run_summary.Summary
    comparison: reproducibility.EpochComparison
    environment: list[tuple[str, str, str]]  # (what, recorded, replay) where they differ or one is unknown
    unread: str = ""  # the record's unreadable lines and the epochs they leave uncompared ("" when none)

    @property
    def identical(self) -> bool:
        """Every compared number equal, and at least one compared."""
        return self.comparison.identical and self.comparison.numbers > 0


def replay(recorded: Recorded, cfg: DictConfig, epochs: int, folder: Path) -> Replayed:
    """Train the first `epochs` epochs from scratch into `folder` and compare them with the record."""
    from optbench.training.run import train

    with cut_called_a_cut(folder / "run", epochs, int(cfg.epochs)):
        train(cfg, folder / "run", last_epoch=epochs)
    summary = run_summary.read(folder / "run")
    assert summary is not None  # train() wrote it
    records, _ = metrics_log.read(folder / "run")
    wanted = [record for record in recorded.records if record["epoch"] <= epochs]
    comparison = reproducibility.epoch_differences(wanted, records)
    environment = reproducibility.environment_rows(recorded.summary, summary)
    return Replayed(summary, comparison, environment, unread_note(recorded, epochs, comparison.epochs))


def unread_note(recorded: Recorded, epochs: int, compared: list[int]) -> str:
    """`.../metrics.jsonl line 1 is not readable: epoch 1 not compared` ("" when every line is readable)."""
    text = recorded.unreadable_text()
    uncompared = sorted(set(range(1, epochs + 1)) - set(compared))
    if not text or not uncompared:
        return text
    return f"{text}: epoch{'s' if len(uncompared) > 1 else ''} {', '.join(map(str, uncompared))} not compared"


class CutNamed(logging.Filter):
    """The trainer ends a run stopped at `last_epoch` as "interrupted" (resumable, as a stop signal leaves it); a
    replay stopped where --epochs asked is a cut, and its line says so. A real interrupt (fewer epochs written)
    keeps its word."""

    def __init__(self, run_dir: Path, epochs: int, planned: int):
        super().__init__()
        self.run_dir, self.epochs, self.planned = run_dir, epochs, planned

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        prefix = f"{run_summary.INTERRUPTED}: {self.run_dir}:"
        if message.startswith(prefix) and len(metrics_log.read(self.run_dir)[0]) == self.epochs:
            record.msg = f"cut after epoch {self.epochs} of {self.planned}, as --epochs {self.epochs} asked: " + (
                message.removeprefix(f"{run_summary.INTERRUPTED}: ")
            )
            record.args = ()
        return True


@contextlib.contextmanager
def cut_called_a_cut(run_dir: Path, epochs: int, planned: int):
    """While the replay trains: its last line calls an --epochs cut a cut (CutNamed)."""
    if epochs >= planned:
        yield
        return
    from optbench.training import run

    named = CutNamed(run_dir, epochs, planned)
    run.log.addFilter(named)
    try:
        yield
    finally:
        run.log.removeFilter(named)


def start_line(recorded: Recorded, cfg: DictConfig, epochs: int, folder: Path, kept: bool) -> str:
    summary = recorded.summary
    pinned = ", ".join(f"{key}={str(value).lower()}" for key, value in recorded_policy(summary).items())
    where = f"into {folder / 'run'}" if kept else "into a scratch folder removed afterwards"
    unpinned = "" if "threads" in recorded_policy(summary) else "; threads not recorded: this machine's rule"
    return (
        f"replaying {recorded.path} (run {summary.run_id or '?'}, {summary.optimizer}, seed {summary.seed}): "
        f"epochs 1-{epochs} of {summary.epochs_planned or '?'} from scratch {where}; device {cfg.device}, "
        f"{pinned or 'the policy not recorded: this machine rules'}{unpinned}"
    )


def report_lines(replayed: Replayed) -> list[str]:
    """The verdict: bit-identical or the largest difference per metric, then the environment differences."""
    from tabulate import tabulate

    comparison = replayed.comparison
    span = f"epochs {comparison.epochs[0]}-{comparison.epochs[-1]}" if comparison.epochs else "no epoch"
    lines = [
        f"compared, epoch by epoch: {', '.join(comparison.compared)}",
        f"not compared (wall-clock timings, not numbers a replay reproduces): {', '.join(comparison.left_out) or '-'}",
    ]
    if replayed.identical:
        lines.append(f"bit-identical: all {comparison.numbers} compared numbers of {span} equal the record's")
    elif not comparison.differences:  # an interrupted replay, or a record whose keys the replay lacks
        lines.append(f"nothing compared: the replay and the record share no number ({span} in common)")
    else:
        rows = [
            (item.metric, f"{item.largest:.6g}", item.at_epoch, item.first_epoch) for item in comparison.differences
        ]
        same = [key for key in comparison.compared if key not in {item.metric for item in comparison.differences}]
        lines.append(f"different: the largest |replay - record| per metric over {span}")
        lines.append(tabulate(rows, headers=["metric", "largest", "at epoch", "first differs at"], tablefmt="simple"))
        if same:
            lines.append(f"identical: {', '.join(same)}")
    lines += missing_lines(comparison)
    if replayed.unread:
        lines.append(replayed.unread)
    lines.append(environment_text(replayed.environment))
    return lines


def missing_lines(comparison: reproducibility.EpochComparison) -> list[str]:
    """The keys one side lacks, named (neither equal nor different: there is nothing to compare)."""
    lines = []
    if comparison.missing_from_first:
        lines.append(
            f"not in the record, so not compared: {', '.join(comparison.missing_from_first)} "
            "(written by a version before it was recorded)"
        )
    if comparison.missing_from_second:
        lines.append(
            f"not in the replay, so not compared: {', '.join(comparison.missing_from_second)} "
            "(this version no longer writes it)"
        )
    return lines


def environment_text(rows: list[tuple[str, str, str]]) -> str:
    from tabulate import tabulate

    if not rows:
        return "environment: the same processor kind, threads, device, precision, versions and code as recorded"
    table = tabulate(rows, headers=["environment", "recorded", "replay"], tablefmt="simple", disable_numparse=True)
    return "what differs from the run's environment (or was not recorded, 'unknown'):\n" + table
