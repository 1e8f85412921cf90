"""`flatten(tree)`: a nested config dict as one level of dotted keys, for comparing and grouping runs.

{'a': {'b': 1}, 'c': [1, 2]} -> {'a.b': 1, 'c': '[1, 2]'}. Lists become JSON text so values stay
hashable (the aggregator groups on them) and compare by content (a resume compares them). Plain
standard library: the aggregator imports it without torch, the training code without pandas.
"""

import json


def flatten(tree: dict, prefix: str = "") -> dict:
    flat = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten(value, f"{name}."))
        elif isinstance(value, (list, tuple)):
            flat[name] = json.dumps(value)
        else:
            flat[name] = value
    return flat
