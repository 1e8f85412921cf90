"""Hydra search-path plugin: the config folders of OPTBENCH_CONFIG_PATH join every composition (config_path.py)."""
