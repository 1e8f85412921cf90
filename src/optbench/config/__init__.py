"""Composing and checking a run's config, without torch.

validation.py  validate(cfg): every check of user input and its one-line message
hydra_glue.py  resolvers, command lines, override lists, compose with one-line errors
plain.py       plain_dict(node): a config node as a plain dict, checked
config_path.py     the config folders beyond conf/ (OPTBENCH_CONFIG_PATH), where a group option's file lives
own_optimizers.py  optimizers in those folders: their configs and the registry facts they carry
"""
