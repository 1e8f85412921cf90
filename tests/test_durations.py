"""Durations for people: the unit switches, and hours are written as hours and minutes, never 1.25e+03 h."""

import math

from optbench.durations import format_duration


def test_durations_read_as_seconds_minutes_or_hours_and_minutes():
    assert format_duration(42) == "42 s"
    assert format_duration(450) == "7.5 min"
    assert format_duration(5 * 3600 + 12 * 60) == "5 h 12 min"
    assert format_duration(1250 * 3600 + 5 * 60) == "1,250 h 05 min"
    assert format_duration(math.nan) == "n/a" and format_duration(None) == "n/a"
