"""Durations for people: one rule for when seconds become minutes and minutes become hours.

`duration_unit(seconds)` -> ("s" | "min" | "h", seconds per unit): seconds below 2 minutes, minutes
below 3 hours, hours beyond; `format_duration(seconds)` writes a duration in that unit, seconds and
minutes with three significant figures, hours as hours and minutes ('42 s', '7.5 min', '5 h 12 min',
'1,250 h 05 min', never '1.25e+03 h'; 'n/a' when unknown). The study runner's estimates,
the aggregator's tables and its wall-time axes all use it, so a duration reads the same everywhere.
"""

import math

UNITS = (("s", 1.0, 120.0), ("min", 60.0, 3 * 3600.0), ("h", 3600.0, math.inf))  # (name, seconds each, below)


def duration_unit(seconds: float) -> tuple[str, float]:
    for name, seconds_per_unit, below in UNITS:
        if seconds < below:
            return name, seconds_per_unit
    return UNITS[-1][:2]


def format_duration(seconds: float | None) -> str:
    if seconds is None or not math.isfinite(seconds):
        return "n/a"
    name, seconds_per_unit = duration_unit(seconds)
    if name == "h":
        hours, minutes = divmod(round(seconds / 60), 60)
        return f"{hours:,} h {minutes:02d} min"
    return f"{seconds / seconds_per_unit:.3g} {name}"
