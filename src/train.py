"""Train one run (or a sweep with -m) from the Hydra configs in conf/.

    python src/train.py optimizer=lion
    python src/train.py -m optimizer=sgd,adam,adamw,lion,muon seed=0,1,2
    python src/train.py --cfg job optimizer=muon          # print the composed config

Every run lands in its deterministic directory under results/ (see conf/config.yaml);
`hydra.run.dir=DIR` puts it in DIR instead.
"""

import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from optbench.cli import preflight, run_job
from optbench.config import register_resolvers

CONF_DIR = Path(__file__).resolve().parent.parent / "conf"
register_resolvers()


@hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="config")
def main(cfg: DictConfig) -> None:
    run_job(cfg, Path(HydraConfig.get().runtime.output_dir))


if __name__ == "__main__":
    preflight(sys.argv[1:], CONF_DIR)
    main()
