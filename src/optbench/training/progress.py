"""What summary.json says as the run goes, in the trainer's words: the first summary, divergence, the headline.

The summary's keys belong to its format (formats/run_summary.py builds and updates the content: `started`,
`after_epoch`, `mark`, `diverged`, `failed`); here are the trainer's decisions about it: the first summary
from the config and the provenance measured now, whether an epoch diverged, and the one line a run ends with.
"""

import math

from optbench.formats import metrics_log, run_summary
from optbench.registry import optimizers, workloads
from optbench.training import provenance


def initial_summary(
    cfg,
    run_identity_hash: str,
    dataset: run_summary.DatasetFacts,
    noise: run_summary.NoiseFacts,
    model: run_summary.ModelFacts,
    device: str,
    policy: dict,
    environment: dict,
    validation_labels: dict | None = None,
) -> dict:
    """The first summary of a new run, with the library versions and git state of this checkout."""
    return run_summary.started(
        run_id=run_identity_hash,
        epochs_planned=cfg.epochs,
        seed=cfg.seed,
        optimizer=cfg.optimizer.name,
        dataset=dataset,
        noise=noise,
        model=model,
        device=device,
        device_policy=policy,
        versions=provenance.library_versions(optimizer_library(cfg)),
        git=provenance.git_state(),
        environment=environment,
        validation_labels=validation_labels,
        workload=workload_summary(cfg),
    )


def optimizer_library(cfg) -> str | None:
    """The distribution the run's optimizer comes from (its registry entry, or its own config's `registry:`)."""
    spec = optimizers.spec_of_config(cfg.optimizer)
    return spec.library if spec is not None else None


def workload_summary(cfg) -> dict:
    """summary.json's workload: name, selection rule, headline metric, and the budget in the workload's unit."""
    workload = workloads.of_config(cfg)
    budget = {"unit": workload.budget_unit, "value": int(cfg.epochs), "epochs": int(cfg.epochs)}
    if workload.budget_unit == workloads.STEPS:
        budget["value"] = int(cfg.epochs) * int(cfg.dataset.steps_per_epoch)
    selection = workload.selection_metric
    return run_summary.workload_facts(
        workload.name, selection.key, selection.higher_is_better, workload.headline, budget
    )


def divergence(record: dict, first_nonfinite_batch: int, factor: float, num_classes: int) -> dict | None:
    """Where and why a run diverged (summary.json's diverged_at): a non-finite loss, or an epoch loss past
    `factor` x ln(classes) (the loss of a uniform guess); None when it did not."""
    loss, limit = record[metrics_log.TRAIN_LOSS], factor * math.log(num_classes)
    if math.isfinite(loss) and loss <= limit:
        return None
    reason = (
        "non-finite training loss"
        if not math.isfinite(loss)
        else f"training loss above {factor} x ln({num_classes}) = {limit:.3g}"
    )
    batch = first_nonfinite_batch if first_nonfinite_batch >= 0 else None
    return run_summary.diverged_at(record[metrics_log.EPOCH], loss, reason, batch)


def headline(summary: dict) -> str:
    """'test acc 0.6720 at the best-validation epoch 7 of 10' (or what there is to say); a workload with another
    headline names it: 'val loss 1.9012 at the best-validation epoch 8 of 8'."""
    best = summary.get("best") or {}
    key = (summary.get("workload") or {}).get("headline", metrics_log.TEST_ACC)
    words = key.replace("/", " ")
    if key not in best:
        return f"{summary.get('epochs_done', 0)} epoch(s) done, no {words} yet"
    selection, _ = run_summary.selection_rule(summary)
    chosen = (
        "best-validation epoch" if best.get(metrics_log.SELECTED_BY) == selection else run_summary.NO_VALIDATION_SPLIT
    )
    return f"{words} {best[key]:.4f} at the {chosen} {best[metrics_log.EPOCH]} of {summary.get('epochs_planned', '?')}"
