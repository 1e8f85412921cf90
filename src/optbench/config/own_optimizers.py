"""Optimizers of one's own: the configs in the folders of OPTBENCH_CONFIG_PATH, and the registry entries they carry.

An optimizer outside the package is one file, `<folder>/optimizer/<name>.yaml`: the config (how to build it) with
its registry facts under `registry:` (library, source, search ranges, capabilities; registry/optimizers.py
spec_from_facts). `own_specs()` reads them, so that everything which asks the registry by name (the study planner's
schedules, the search space's `defaults: registry`, the tests parametrised over every optimizer) also knows these:
`optimizer_names()` is the registry's names, then the own ones; `spec_for(name)` the entry of either. A file
without `registry:`, or with a name the package already uses, is one line naming the fix. Tuned configs written
into such a folder (`optimizer/tuned/...`) are options, not optimizers, and are not read here.
docs/your-own-optimizer.md.
"""

from pathlib import Path

from omegaconf import OmegaConf

from optbench.config.config_path import extra_config_dirs
from optbench.config.plain import plain_dict
from optbench.errors import ConfigError
from optbench.registry import optimizers


def own_optimizer_files() -> dict[str, Path]:
    """name -> its config file, over the folders of OPTBENCH_CONFIG_PATH (the first folder wins a name)."""
    files: dict[str, Path] = {}
    for folder in extra_config_dirs():
        for path in sorted((folder / "optimizer").glob("*.yaml")):
            files.setdefault(path.stem, path)
    return files


def own_specs() -> dict[str, optimizers.OptimizerSpec]:
    """name -> the registry entry its file's `registry:` block describes, checked."""
    return {name: _spec_of_file(name, path) for name, path in own_optimizer_files().items()}


def _spec_of_file(name: str, path: Path) -> optimizers.OptimizerSpec:
    if name in optimizers.REGISTRY:
        raise ConfigError(
            f"{path}: the package already has an optimizer named {name} (conf/optimizer/{name}.yaml): "
            "give yours another file name and `name:`"
        )
    try:
        node = plain_dict(OmegaConf.load(path))
    except Exception as error:  # YAML or OmegaConf's own errors: the first line names the place  # noqa: BLE001
        raise ConfigError(f"{path}: cannot be read ({str(error).strip().splitlines()[0]})") from None
    if node.get("name") != name:
        raise ConfigError(f"{path}: `name: {node.get('name')}` must be the file's name, {name}")
    if node.get(optimizers.REGISTRY_KEY) is None:
        raise ConfigError(
            f"{path}: an optimizer outside the package carries its registry facts under `{optimizers.REGISTRY_KEY}:` "
            "(library, source, search; docs/your-own-optimizer.md)"
        )
    return optimizers.spec_from_facts(name, node[optimizers.REGISTRY_KEY])


def optimizer_names() -> tuple[str, ...]:
    """Every optimizer a config may choose: the package's registry, then the own ones."""
    return (*optimizers.NAMES, *own_optimizer_files())


def spec_for(name: str) -> optimizers.OptimizerSpec | None:
    """The registry entry of an optimizer name, the package's or an own one's; None for a name neither knows."""
    return optimizers.spec_of(name) or own_specs().get(name)


def own_search_space() -> dict[str, dict]:
    """The own optimizers' default ranges, in the shape of registry/optimizers.py default_search_space()."""
    return {name: {key: dict(bounds) for key, bounds in spec.search.items()} for name, spec in own_specs().items()}
