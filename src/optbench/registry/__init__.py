"""The registries: every name a config may choose, and what the harness must know about each (standard library only).

choices.py     the names a config may choose from (datasets, optimizers, schedules, noise kinds, launchers)
datasets.py    one descriptor per dataset: classes, image size, splits, normalisation, noise mappings
optimizers.py  one entry per conf/optimizer/*.yaml: library, parameter groups, schedules, search ranges
workloads.py   one entry per conf/workload/*.yaml: dataset, model, metrics and their direction, budget, target
"""
