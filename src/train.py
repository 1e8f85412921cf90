"""Train one run (or a sweep with -m) from the Hydra configs in conf/.

    python src/train.py optimizer=lion
    python src/train.py -m optimizer=sgd,adam,adamw,lion,muon seed=0,1,2
    python src/train.py --cfg job optimizer=muon          # print the composed config

Every run lands in its deterministic directory under results/ (see conf/config.yaml);
`hydra.run.dir=DIR` puts it in DIR instead. Exit statuses: optbench/training/train_command.py.
"""

import os
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

import optbench  # noqa: F401  (first: sets PYTORCH_ENABLE_MPS_FALLBACK before torch loads)
from optbench.config.hydra_glue import register_resolvers
from optbench.errors import EXIT_BAD_INPUT, ConfigError
from optbench.training.train_command import (
    deferred_exit_status,
    hydra_files,
    preflight,
    run_job,
    sweep_end_line,
    with_job_defaults,
)

CONF_DIR = Path(__file__).resolve().parent.parent / "conf"
register_resolvers()


@hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="config")
def main(cfg: DictConfig) -> None:
    hydra_config = HydraConfig.get()
    cfg = with_job_defaults(cfg, hydra_config.overrides.task, CONF_DIR)  # Schedule-Free: scheduler=constant
    status = run_job(
        cfg,
        Path(hydra_config.runtime.output_dir),
        multirun=hydra_config.mode == RunMode.MULTIRUN,
        files=hydra_files(cfg, hydra_config),
    )
    if status == EXIT_BAD_INPUT and os.environ.get("SUBMITIT_FOLDER"):
        # In a submitit job (local or SLURM) exiting leaves no result file, so the sweep waits for the job
        # for ever where sacct is off: the refusal is printed, the job ends normally, and the study runner
        # names the run (optbench/studies/outcome.py).
        return
    if status:
        sys.exit(status)


if __name__ == "__main__":
    try:
        preflight(sys.argv[1:], CONF_DIR)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)
    main()
    if sweep_end_line():
        print(sweep_end_line(), flush=True)
    sys.exit(deferred_exit_status())
