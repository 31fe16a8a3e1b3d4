"""The non-dominated plans of a walk and the corners of their frontier (MODEL.md §4's two criteria at once)."""

from __future__ import annotations

import numpy as np

from trainground.models.result import Result
from trainground.solver.tolerances import TIE_TOL


def cost_of(result: Result, criterion: str) -> float:
    return result.plan.total_cost if criterion == "total_cost" else result.plan.hourly_cost


def nondominated(results: list[Result], criterion: str) -> list[Result]:
    """Plans no other plan beats on both makespan and cost (ties within TIE_TOL), fastest first."""
    ordered = sorted(results, key=lambda r: (r.plan.makespan_s, cost_of(r, criterion)))
    kept: list[Result] = []
    best = float("inf")
    for r in ordered:
        cost = cost_of(r, criterion)
        if not kept or cost < best - TIE_TOL * max(1.0, abs(best)):
            kept.append(r)
            best = cost
    return kept


def hull_corners(makespans: list[float], costs: list[float]) -> list[int]:
    """Indices of the vertices of the lower convex hull of (makespan, cost), points sorted by makespan.

    These are the frontier's corners: the points where its slope changes (a point on the
    chord between its neighbours on the hull is not one), both ends always included.
    """
    n = len(makespans)
    if n <= 2:
        return list(range(n))
    xs, ys = np.asarray(makespans, dtype=float), np.asarray(costs, dtype=float)
    # Scale both axes to [0, 1] so the collinearity tolerance means the same on every instance.
    xs = (xs - xs.min()) / max(xs.max() - xs.min(), 1e-300)
    ys = (ys - ys.min()) / max(ys.max() - ys.min(), 1e-300)
    hull: list[int] = []
    for i in range(n):
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            cross = (xs[b] - xs[a]) * (ys[i] - ys[a]) - (ys[b] - ys[a]) * (xs[i] - xs[a])
            if cross <= 1e-12:  # b lies on or above the chord a–i: the slope does not change at b
                hull.pop()
            else:
                break
        hull.append(i)
    return hull
