"""`train(cfg, run_dir)`: one complete run, from a composed config to a finished run directory.

The only function the entry points call (src/train.py, run_single_experiment.py, tests, the notebook);
it returns the summary dict. First the run's identity (config less the settings that do not change the
numbers, plus the data's fingerprint) is compared with the directory's record.json, before anything is
written: a directory holding another experiment is refused (ConfigError naming the differing keys),
with no byte of it changed. Then:
- a completed or diverged run is skipped (train.rerun=true starts it over);
- an unfinished one resumes from its checkpoint (model, optimizer, scheduler, scaler, RNG states, even
  half an epoch), so its numbers equal an uninterrupted run's bit for bit on the CPU;
- a new one writes its record (and `hydra_files` into .hydra/) once the data and model are ready.
Each epoch appends to metrics.jsonl and rewrites summary.json, so a crash leaves a readable record.
With paths.mirror_dir, a local directory behind its mirror is first restored from it (training/mirror.py).
"""

import datetime
import logging
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from optbench import identity, rundir
from optbench.config.plain import plain_dict
from optbench.config.validation import validate
from optbench.data.fingerprint import config_data_fingerprint
from optbench.data.human_labels import transition_matrix
from optbench.device.awake import kept_awake
from optbench.device.policy import release_device_memory
from optbench.errors import ConfigError
from optbench.formats import metrics_log, run_record, run_summary
from optbench.rundir import RunDir
from optbench.training import checkpoint, console, mirror, provenance, trackers
from optbench.training.assemble import Run, prepare
from optbench.training.loop import LoopState, StartUp, fit
from optbench.training.progress import initial_summary

log = logging.getLogger(__name__)


def resolved_config_and_identity(cfg: DictConfig) -> tuple[dict, dict]:
    """(the resolved config less its hydra node, the run identity it has with its data's fingerprint)."""
    resolved = plain_dict(cfg, resolve=True)
    resolved.pop("hydra", None)
    return resolved, identity.run_identity(resolved, config_data_fingerprint(resolved))


def check_identity(run_dir: RunDir, wanted: dict) -> run_record.RunRecord | None:
    """The directory's record when it matches `wanted`; None when it holds no run; else a ConfigError."""
    record = run_record.read(run_dir.path)
    if record is None:
        if run_dir.holds_results():
            raise ConfigError(
                f"{run_dir.path} holds results without a record.json (made by an older optbench, "
                "or damaged): move it away, or train.rerun=true to start this run over"
            )
        return None
    changed = identity.identity_differences(record.identity, wanted)
    if changed:
        shown = "; ".join(changed[:4]) + (f"; and {len(changed) - 4} more" if len(changed) > 4 else "")
        raise ConfigError(
            f"{run_dir.path} holds another experiment ({shown}): give this run another directory "
            "(drop hydra.run.dir, or choose a new one), or train.rerun=true to replace it"
        )
    return record


def train(
    cfg: DictConfig, run_dir: str | Path, hydra_files: dict[str, str] | None = None, last_epoch: int | None = None
) -> dict:
    """`hydra_files`: file name -> text written into .hydra/ when the run starts (the invocation's Hydra files);
    `last_epoch`: stop after this epoch, left interrupted (training/replay.py replays a run's first epochs)."""
    validate(cfg)
    directory = RunDir(run_dir)
    resolved, wanted = resolved_config_and_identity(cfg)
    run_mirror = _open_mirror(cfg, directory, wanted)
    record = None if cfg.train.rerun else check_identity(directory, wanted)
    if record is not None:
        previous = run_summary.read(directory.path)
        if previous and previous.finished:
            log.info(console.final_line(previous.content, directory.path, skipped=True))
            _log_to_trackers(cfg, directory, identity.run_id(wanted), previous.content)
            return previous.content
    with directory.lock():
        run = _prepare(cfg, directory, record, resolved, wanted, hydra_files)
        try:
            saved = _checked_checkpoint(run, directory) if record is not None else None  # refused before any byte
            with console.log_to_file(directory.path):
                console.log_policy_details(run.policy)
                console.log_optimizer_defaults(cfg.optimizer.name, OmegaConf.select(cfg, "optimizer_defaults") or {})
                if record is None:
                    _start(directory, resolved, wanted, hydra_files)
                state = (_resume_state(run, directory, saved) if record is not None else None) or LoopState(
                    _first_summary(run)
                )
                with kept_awake(run.policy.keep_awake):  # macOS: caffeinate -i for as long as it trains
                    return _fit_and_mirror(run, directory, state, run_mirror, last_epoch)
        finally:
            release_device_memory(run.device)
            StartUp.run_ended()  # the multirun's next run counts its start-up from here


def _log_to_trackers(cfg: DictConfig, directory: RunDir, run_id: str, summary: dict) -> None:
    """A finished run asked for again with a tracker on (logger=mlflow) goes into the trackers that lack it."""
    if trackers.chosen_loggers(cfg):
        added = trackers.log_finished_run(cfg, directory, run_id, metrics_log.read(directory.path)[0], summary)
        if added:  # a failed tracker has said so itself
            log.info("logged the finished run into %s", ", ".join(added))


def _open_mirror(cfg: DictConfig, directory: RunDir, wanted: dict) -> mirror.Mirror | None:
    """The run's mirror (None without paths.mirror_dir), after restoring the local directory from it when
    the mirror is ahead (a new VM, another node); a mirror holding another experiment is refused."""
    run_mirror = mirror.from_config(cfg, directory)
    if run_mirror is not None:
        mirror.open_root(run_mirror)
        if not cfg.train.rerun:
            mirror.restore(run_mirror, wanted)
    return run_mirror


def _fit_and_mirror(
    run: Run, directory: RunDir, state: LoopState, run_mirror: mirror.Mirror | None, last_epoch: int | None = None
) -> dict:
    """fit(), then its last line in train.log; whatever the ending, the mirror gets everything last."""
    try:
        summary = fit(run, directory, state, run_mirror, last_epoch)
        log.info(console.final_line(summary, directory.path))
        return summary
    finally:
        if run_mirror is not None:
            run_mirror.finish(state.summary)


def _prepare(
    cfg: DictConfig,
    directory: RunDir,
    record: run_record.RunRecord | None,
    resolved: dict,
    wanted: dict,
    hydra_files: dict[str, str] | None,
) -> Run:
    """prepare(); bad input (ConfigError) leaves the directory as it was, a crash is recorded as failed."""
    previous = run_summary.read(directory.path) if record is not None else None
    started_policy = _started_policy(previous) if previous is not None else None
    try:
        return prepare(cfg, identity.run_id(wanted), started_policy)
    except ConfigError:
        raise
    except Exception as error:
        if record is None:
            _start(directory, resolved, wanted, hydra_files)
        previous = run_summary.read(directory.path)
        run_summary.write(directory.path, run_summary.failed(previous.content if previous else None, error))
        raise


def _started_policy(previous: run_summary.Summary) -> dict:
    """The device policy a resumed run started under, with its thread count from the environment where the
    policy did not record one."""
    policy = dict(previous.device_policy)
    if not policy.get("threads") and previous.environment.threads:
        policy["threads"] = previous.environment.threads
    return policy


def _start(directory: RunDir, resolved: dict, wanted: dict, hydra_files: dict[str, str] | None) -> None:
    """A new run (or train.rerun=true): drop an earlier attempt, write the record and .hydra/ once."""
    directory.clear_results()
    created = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    run_record.write(directory.path, run_record.new_record(resolved, wanted, created))
    directory.metrics_path.write_text("")
    if hydra_files:
        (directory.path / rundir.HYDRA_DIR).mkdir(exist_ok=True)
        for name, text in hydra_files.items():
            (directory.path / rundir.HYDRA_DIR / name).write_text(text)


def _checked_checkpoint(run: Run, directory: RunDir) -> dict | None:
    """The directory's checkpoint, read and checked before train.log or any other file is touched: a
    damaged, pickled or foreign checkpoint is a ConfigError that changes no byte."""
    saved = checkpoint.load(directory.checkpoint_path, run.device)
    if saved is not None:
        checkpoint.check_resumable(saved, run.run_id, directory.checkpoint_path)
    return saved


def _resume_state(run: Run, directory: RunDir, saved: dict | None) -> LoopState | None:
    """The loop state of the checked checkpoint `saved`, with metrics.jsonl trimmed to it; None when there is none."""
    if saved is None:
        metrics_log.replace(directory.path, [])  # unfinished without a checkpoint: start over within the same record
        return None
    progress = checkpoint.restore(saved, run.model, run.optimizer, run.scheduler, run.scaler)
    metrics_log.replace(directory.path, saved["metrics"])
    batches_done = progress.batches_done if progress else 0
    log.info(
        "resuming %s after epoch %d%s",
        directory.path,
        saved["epochs_done"],
        f" and {batches_done} batches of the next" if batches_done else "",
    )
    state = LoopState.from_checkpoint(saved, progress)
    _note_changed_threads(state.summary, run.policy, saved["epochs_done"])
    return state


def _note_changed_threads(summary: dict, policy, epochs_done: int) -> None:
    """A resume under another thread count (only where the user set device_policy.threads: otherwise the
    started count is kept) is said in the summary's policy and in train.log: its numbers are no longer an
    uninterrupted run's."""
    recorded = summary.get("device_policy") or {}
    started = recorded.get("threads") or (summary.get("environment") or {}).get("threads")
    if not started or not policy.threads or policy.threads == started:
        return
    reason = (
        f"{policy.reasons.get('threads', 'set in config')}, on resuming after epoch {epochs_done}: "
        f"it started with {started}, so its numbers differ from an uninterrupted run's"
    )
    reasons = {**recorded.get("reasons", {}), "threads": reason}
    summary["device_policy"] = {**recorded, "threads": policy.threads, "reasons": reasons}
    log.warning("threads=%d: %s", policy.threads, reason)


def _first_summary(run: Run) -> dict:
    cfg, splits = run.cfg, run.splits
    dataset = run_summary.DatasetFacts(
        name=splits.name,
        num_classes=splits.num_classes,
        num_train=len(splits.train),
        num_val=len(splits.val),
        num_test=len(splits.test),
    )
    human = run.human  # real annotators' labels: which set, whose, and who was mistaken for whom
    noise = run_summary.NoiseFacts(
        kind=cfg.noise.name,
        rate=cfg.noise.rate,
        realised_rate=run.noisy.realised_rate,
        num_noisy=run.noisy.num_noisy,
        label_set=human.label_set if human else None,
        annotated_dataset=human.source if human else None,
        transition_matrix=transition_matrix(splits.train.labels, run.noisy.labels, splits.num_classes)
        if human
        else None,
    )
    validation_labels = None
    if run.noisy_val_labels is not None:
        wrong = int((run.noisy_val_labels != splits.val.labels).sum())
        validation_labels = run_summary.validation_labels_facts(wrong, len(splits.val))
    elif cfg.noise.name != "none":
        validation_labels = run_summary.validation_labels_facts()
    model = run_summary.ModelFacts(
        name=cfg.model.name,
        width=cfg.model.width,
        num_parameters=sum(parameter.numel() for parameter in run.model.parameters()),
    )
    environment = provenance.environment(run.device)  # after the policy set the threads
    policy = run.policy.as_dict()
    return initial_summary(
        cfg, run.run_id, dataset, noise, model, str(run.device), policy, environment, validation_labels
    )
