"""A config node as a plain dict, checked.

`OmegaConf.to_container` is typed to return any container (a dict, a list, a string, None), while every node
the harness converts (a run's config, a group of it, a YAML file of options) is a mapping: `plain_dict` says
so once, and fails loudly on anything else instead of handing a list on as a dict.
"""

from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf


def plain_dict(node: DictConfig | ListConfig, resolve: bool = False) -> dict[Any, Any]:
    """`node` as nested plain dicts and lists (`resolve`: interpolations replaced by their values)."""
    plain = OmegaConf.to_container(node, resolve=resolve)
    if not isinstance(plain, dict):
        raise TypeError(f"expected a mapping, got {type(plain).__name__}")
    return plain
