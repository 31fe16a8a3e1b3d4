"""Checks the risk tests share: a scenario instance builder's edits, and each scenario's realised cadence read against
the rows it must meet (MODEL §9: the smallest L' >= L at which they hold)."""

from __future__ import annotations

from collections.abc import Callable

from trainground.solver.uncertainty import scenarios as sc


def edit_sections(doc: dict, changes: dict) -> dict:
    """``doc`` with ``changes`` set: each key ``section__name`` sets ``name`` of ``section`` (a list's item at index
    ``name``)."""
    for path, value in changes.items():
        section, name = path.split("__")
        if isinstance(doc[section], list):
            doc[section][int(name)] = value
        else:
            doc[section] = dict(doc[section], **{name: value})
    return doc


def smallest_cadences(inst, scen, cadences, planned: float, holds: Callable[[object, float], bool]) -> int:
    """Asserts that each scenario's realised cadence meets its rows (``holds(scenario instance, cadence)``) and that,
    where it is above the plan's cadence ``planned``, one 1e-5 shorter does not; returns how many were above."""
    raised = 0
    for s in range(scen.size):
        here = sc.instance_of(inst, scen, s)
        L = float(cadences[s])
        assert holds(here, L), s
        if L > planned * (1 + 1e-6):
            raised += 1
            assert not holds(here, L * (1 - 1e-5)), s
    return raised
