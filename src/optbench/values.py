"""Config values compared as values: `same_value(a, b)`, the one rule every reader that matches a run's setting
against a wanted one uses (a hypothesis's family, a study's budget, a ladder's rungs, a tuning's winners).

A value reaches a comparison spelled many ways: a run's config holds 0.001, a study override `optimizer.lr=1e-3`
is read by PyYAML (YAML 1.1: an exponent needs a dot) as the text '1e-3', a table cell as 1.0e-3. Numbers are
therefore compared as numbers (to a relative 1e-6: a value written to YAML and read back with fewer digits is
the same setting), whichever side is text; anything else (a dataset name, a label set, a switch) as text. A
switch (True/False) is not the number 1/0. Missing (None, NaN) equals nothing. Symmetric: same_value(a, b) ==
same_value(b, a). Standard library only.
"""

import math

RELATIVE_TOLERANCE = 1e-6  # tuned values are written with 3-6 significant digits; two settings differ far more


def as_number(value) -> float | None:
    """The value as a float when it is a number or text spelling one (not a switch, not missing); else None."""
    if value is None or is_switch(value):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


def same_value(a, b) -> bool:
    """Whether two config values are the same setting: numbers as numbers, everything else as text."""
    number_a, number_b = as_number(a), as_number(b)
    if number_a is not None and number_b is not None:
        return math.isclose(number_a, number_b, rel_tol=RELATIVE_TOLERANCE)
    if number_a is not None or number_b is not None or is_missing(a) or is_missing(b):
        return False  # a number against text, or anything against nothing
    return str(a).lower() == str(b).lower() if is_switch(a) or is_switch(b) else str(a) == str(b)


def is_switch(value) -> bool:
    """True/False, Python's or numpy's (a table column of switches holds numpy's)."""
    return isinstance(value, bool) or type(value).__name__ == "bool_"


def is_missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))
