"""The verifier's check of a plan's reported metrics (MODEL.md §6) against its own reading of them.

:func:`solver.verify.plan.verify_plan` computes every metric from MODEL.md alone; a plan's reported metrics
(the model's, :mod:`solver.mip.metrics`) must equal those. Nothing here imports from solver/.
"""

from __future__ import annotations

import math

from trainground.models.result import Metrics

METRIC_TOL = 1e-6  # relative (absolute below 1): a reported metric against the verifier's (quadratures, fills)


def _close(a, b) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=METRIC_TOL, abs_tol=METRIC_TOL) or (math.isinf(a) and a == b)


def metric_differences(own: Metrics, reported: Metrics) -> list[str]:
    """One violation per metric whose reported value is not the verifier's (within METRIC_TOL); a
    per-shape metric differs when its keys or any entry differ."""
    out = []
    theirs = reported.model_dump()
    for name, value in own.model_dump().items():
        given = theirs[name]
        if isinstance(value, dict) or isinstance(given, dict):
            same = isinstance(value, dict) and isinstance(given, dict) and value.keys() == given.keys()
            same = same and all(_close(value[k], given[k]) for k in value)
        else:
            same = _close(value, given)
        if not same:
            out.append(f"metrics.{name}: the plan reports {given!r}, MODEL gives {value!r}")
    return out
