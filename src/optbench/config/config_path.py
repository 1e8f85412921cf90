"""The config folders beyond the package's conf/: `OPTBENCH_CONFIG_PATH`, and where a group option's file lives.

A folder of one's own, laid out like conf/ (`my_conf/optimizer/radam.yaml`), joins every composition when its path
is in the environment variable OPTBENCH_CONFIG_PATH (several separated by `:`, as PYTHONPATH): Hydra finds its
options through the search-path plugin src/hydra_plugins/optbench_config_path/, which calls `search_path_entries`,
and the harness's own checks list a group's options and find an option's file here (`config_dirs`,
`group_options`, `option_file`), as `tuned_config_path` finds a tuned config. conf/ comes first, so a folder of
one's own adds options and never replaces the package's. The variable reaches the runs a study launches (they
inherit the environment), so `python src/train.py`, `src/study.py` and their launchers see the same options. A
folder that does not exist is one line naming the variable. Standard library only (Hydra calls it while it builds
its search path). docs/your-own-optimizer.md.
"""

import os
from pathlib import Path

from optbench.errors import ConfigError

CONFIG_PATH_VARIABLE = "OPTBENCH_CONFIG_PATH"


def extra_config_dirs() -> list[Path]:
    """The folders OPTBENCH_CONFIG_PATH names, absolute, in order; each must be a folder."""
    listed = [part for part in os.environ.get(CONFIG_PATH_VARIABLE, "").split(os.pathsep) if part.strip()]
    folders = [Path(part).expanduser().resolve() for part in listed]
    missing = [folder for folder in folders if not folder.is_dir()]
    if missing:
        raise ConfigError(
            f"{CONFIG_PATH_VARIABLE} names {missing[0]}, which is not a folder: give config folders laid out like "
            "conf/ (my_conf/optimizer/NAME.yaml), separated by ':'"
        )
    return folders


def search_path_entries() -> list[str]:
    """The `file://` entries Hydra appends to its config search path (after the primary conf/)."""
    return [f"file://{folder}" for folder in extra_config_dirs()]


def config_dirs(conf_dir: Path) -> list[Path]:
    """conf/ first, then the folders of OPTBENCH_CONFIG_PATH: where a group option may live."""
    return [Path(conf_dir), *(folder for folder in extra_config_dirs() if folder != Path(conf_dir).resolve())]


def option_file(conf_dir: Path, group: str, option: str) -> Path | None:
    """The file of `group=option` (`optimizer`, `tuned/cpu_demo/radam`) in the first folder that has it, or None."""
    for folder in config_dirs(conf_dir):
        path = folder / group / f"{option}.yaml"
        if path.is_file():
            return path
    return None


def group_options(conf_dir: Path, group: str) -> list[str]:
    """Every option of a group over all config folders (nested ones as `tuned/cpu_demo/adamw`), sorted."""
    options = {
        path.relative_to(folder / group).with_suffix("").as_posix()
        for folder in config_dirs(conf_dir)
        if (folder / group).is_dir()
        for path in (folder / group).rglob("*.yaml")
    }
    return sorted(options)


def tuned_config_path(conf_dir: Path, output: str, optimizer: str) -> Path:
    """The one place a tuned config lives: `<folder>/optimizer/<output>/<optimizer>.yaml` (`output` is a tuning
    study's `tune.output`, e.g. tuned/cpu_demo), in the config folder that holds the optimizer's own config: conf/
    for the package's optimizers, the folder of OPTBENCH_CONFIG_PATH for one's own, so a newcomer's tuned values
    land beside it and never in the tracked conf/. Hydra composes it as `optimizer=<output>/<optimizer>`."""
    own = option_file(conf_dir, "optimizer", optimizer)
    folder = own.parent.parent if own is not None else Path(conf_dir)
    return folder / "optimizer" / output / f"{optimizer}.yaml"


def is_own(path: Path, conf_dir: Path) -> bool:
    """Whether a config file lies in a folder of one's own rather than the package's conf/."""
    return not Path(path).resolve().is_relative_to(Path(conf_dir).resolve())
