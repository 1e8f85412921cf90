"""`hydra/sweeper=optbench_trials`: run a fixed list of trials, each a set of overrides, inside one multirun.

Hydra's basic sweeper runs the Cartesian product of the swept values; quasi-random tuning trials are
points, not a product (trial 3's lr goes with trial 3's weight decay only). This sweeper takes the
product of the command line's values as the basic sweeper does (seeds, say) and runs every trial with
each of those combinations:

    python src/train.py -m seed=0,1 hydra/sweeper=optbench_trials \
        hydra.sweeper.trials='["optimizer.lr=0.01 optimizer.weight_decay=0.001","optimizer.lr=0.1 optimizer.weight_decay=0.0003"]'

Each trial is a space-separated override list. A trial's overrides are ordinary job overrides, so they
name the run directory exactly as typing them would, and any launcher (joblib, submitit, SLURM) runs
the jobs. It lives in the `hydra_plugins` package because Hydra only instantiates plugins from there.
"""

from dataclasses import dataclass, field

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.config_store import ConfigStore
from hydra.core.override_parser.types import Override


@dataclass
class TrialsSweeperConf:
    _target_: str = "hydra_plugins.optbench_trials_sweeper.trials_sweeper.TrialsSweeper"
    max_batch_size: int | None = None
    trials: list[str] = field(default_factory=list)  # each: "key=value key=value"


ConfigStore.instance().store(group="hydra/sweeper", name="optbench_trials", node=TrialsSweeperConf, provider="optbench")


class TrialsSweeper(BasicSweeper):
    def __init__(self, max_batch_size: int | None, trials: list[str]) -> None:
        super().__init__(max_batch_size=max_batch_size)
        self.trials = [str(trial).split() for trial in trials]

    # BasicSweeper's is a staticmethod, but it calls self.split_arguments: this one needs self.trials
    def split_arguments(  # type: ignore[override]
        self, overrides: list[Override], max_batch_size: int | None
    ) -> list[list[list[str]]]:
        """The basic sweeper's product of the command line, times each trial (all of them when none is given)."""
        combinations = BasicSweeper.split_arguments(overrides, None)[0]
        jobs = [combination + trial for combination in combinations for trial in (self.trials or [[]])]
        size = max_batch_size if max_batch_size and max_batch_size > 0 else len(jobs)
        return [jobs[start : start + size] for start in range(0, len(jobs), size)] or [[]]
