"""Durations: numbers are seconds; strings carry a unit (``600s``, ``10m``, ``168h``, ``7d``, ``2w``). Spaces
around the unit are read as none: ``7 d`` is seven days (a planner writing a deadline as the outputs print
it means that), while a unit word (``7 days``) or two units (``1h 30m``) are refused with the rule (a unit word with the
letter it means: did you mean ``7d``?)."""

from __future__ import annotations

import math
import re

SECONDS_PER_UNIT = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}

_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([smhdw]?)\s*$")
_NEGATIVE = re.compile(r"^\s*-\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([smhdw]?)\s*$")


def parse_duration(value: object) -> object:
    """Return seconds for a number or a unit string; leave anything else to the type check.

    Raises ValueError with the rule for a string that is not a duration.
    """
    if isinstance(value, bool):
        raise ValueError(f"must be a duration (seconds or a string like '600s', '10m', '7d'), got {value!r}")
    if isinstance(value, (int, float)):
        if value < 0:
            raise ValueError(f"a duration cannot be negative, got {value:g}")
        return float(value)
    if isinstance(value, str):
        match = _DURATION.match(value)
        if not match and _NEGATIVE.match(value):
            raise ValueError(f"a duration cannot be negative, got {value!r}")
        if not match:
            hint = _spelled_out(value)
            raise ValueError(
                f"cannot read duration {value!r}: "
                + (f"did you mean {hint!r}? " if hint else "")
                + "use seconds or a number with one of the units s, m, h, d, w (e.g. '600s', '10m', '168h', '7d', '2w')"
            )
        seconds = float(match.group(1)) * SECONDS_PER_UNIT[match.group(2) or "s"]
        if not math.isfinite(seconds):
            raise ValueError(f"duration {value!r} is not finite")
        return seconds
    return value


# A unit written as a word (or a common abbreviation of one), by the one letter a duration takes for it.
_UNIT_WORDS = {
    "s": ("sec", "secs", "second", "seconds"),
    "m": ("min", "mins", "minute", "minutes"),
    "h": ("hr", "hrs", "hour", "hours"),
    "d": ("day", "days"),
    "w": ("wk", "wks", "week", "weeks"),
}
_WORDED = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]+)\.?\s*$")


def _spelled_out(value: str) -> str | None:
    """The duration ``value`` means when it spells its unit out (``5days`` -> ``5d``), else None."""
    match = _WORDED.match(value)
    if not match:
        return None
    word = match.group(2).lower()
    unit = next((u for u, words in _UNIT_WORDS.items() if word in words), None)
    return f"{match.group(1)}{unit}" if unit else None


def format_duration(seconds: float) -> str:
    """Human form of a duration: '604800 s (7.00 d)'."""
    if seconds >= 86400:
        return f"{seconds:,.0f} s ({seconds / 86400:.2f} d)"
    if seconds >= 3600:
        return f"{seconds:,.0f} s ({seconds / 3600:.2f} h)"
    return f"{seconds:,.2f} s"
