"""Bare numbers that are durations are seconds; warn where that reading is implausible for the field.

``deadline: 10`` is valid (ten seconds) but almost surely meant ``10d``: such a file then fails with an
infeasibility wall and no word about units. These checks read the document as written (before
validation turns every duration into seconds), so a value written with a unit is never questioned.
"""

from __future__ import annotations

from typing import Any

from models.units import SECONDS_PER_UNIT, format_duration, parse_duration

HOUR, MINUTE = 3600.0, 60.0

# field path -> (smallest plausible seconds, why, units to suggest in order: the first that makes it plausible)
RULES: dict[str, tuple[float, str, tuple[str, ...]]] = {
    "schedule.deadline": (HOUR, "under an hour", ("d", "h")),
    "schedule.extra_time": (MINUTE, "under a minute", ("h", "m")),
    "training.update_time.reference_time": (10.0, "under 10 s", ("m",)),
    "environment.occupancy.median": (10.0, "under 10 s", ("m",)),
    "environment.occupancy.mean": (10.0, "under 10 s", ("m",)),
    "environment.occupancy.p99": (10.0, "under 10 s", ("m",)),
}
LONGEST = {"schedule.deadline": 366 * 86400.0}  # a suggestion beyond this would be implausible too


def unit_warnings(document: dict[str, Any]) -> list[str]:
    """'path: 10 is read as 10 s (under an hour); did you mean 10d?' for each implausible bare number."""
    out = []
    for path, (least, why, units) in RULES.items():
        value = _at(document, path)
        if not _bare(value) or value <= 0 or value >= least:
            continue
        if path == "schedule.extra_time" and value == 0:
            continue
        out.append(f"{path}: {value:g} is read as {value:g} s ({why}); did you mean {_suggest(path, value, units)}?")
    deadline, cadence = _at(document, "schedule.deadline"), _at(document, "schedule.cadence.min")
    if _bare(deadline) and deadline >= HOUR and not isinstance(cadence, bool):
        try:
            shortest = parse_duration(cadence) if cadence is not None else 1.0
        except ValueError:
            shortest = None
        if isinstance(shortest, float) and deadline < shortest:
            out.append(
                f"schedule.deadline: {deadline:g} is read as {format_duration(deadline)}, under one cadence "
                f"(cadence.min {format_duration(shortest)}), so no plan can meet it; check its unit (h, d)"
            )
    return out


def _bare(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _suggest(path: str, value: float, units: tuple[str, ...]) -> str:
    for unit in units:
        if value * SECONDS_PER_UNIT[unit] <= LONGEST.get(path, float("inf")):
            return f"{value:g}{unit}"
    return f"{value:g}{units[-1]}"


def _at(document: Any, path: str) -> Any:
    node = document
    for key in path.split("."):
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node
