"""Appends the folders of OPTBENCH_CONFIG_PATH to Hydra's config search path, after the package's conf/.

Hydra builds its search path for every composition (`@hydra.main`, `initialize_config_dir`, each job a launcher
starts) and asks every SearchPathPlugin it finds in the `hydra_plugins` package to add to it, so an optimizer in
`my_conf/optimizer/radam.yaml` is `optimizer=radam` to train.py, the study planner and the tests alike once
`OPTBENCH_CONFIG_PATH=my_conf` is set. Which folders, and the one-line refusal of a missing one, are
optbench/config/config_path.py's; this file only hands them to Hydra (docs/your-own-optimizer.md).
"""

from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin

from optbench.config.config_path import search_path_entries


class OptbenchConfigPath(SearchPathPlugin):
    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        for entry in search_path_entries():
            search_path.append(provider="optbench-config-path", path=entry)
