"""Corners and hull rows of a confidence solve's levels (MODEL.md §9, docs/confidence.md). No pyomo.

The levels ``L`` of a plan (supply, training groups, peak environments) on time in at least ``ceil(α·S)``
scenarios (by weight) lie in ``F``, the union over those scenario sets of the orthants above their
requirements. A set of points whose orthants cover ``F`` (*corners*) bounds any cost that grows with the
levels by its least value at a corner, and the facets ``a·L >= β`` (``a >= 0``) of their convex hull are rows
every plan meets. The scenario rows say the same one scenario at a time through the binaries ``w``, whose
relaxation lets a fractional ``w`` buy every level at a fraction of its price; the hull rows close most of
that gap.

- :func:`frontier_grid`: for a K class, a grid over the groups and peak needs (``GRID`` thresholds each, the
  distinct requirements above η thinned evenly, the largest kept); for a cell with upper thresholds
  ``(g_i, p_j)`` and lower ones ``(g_(i-1), p_(j-1))`` (``g_(-1)``, ``p_(-1)``: the floors η), the supply
  ``q_ij`` a plan needs when only the scenarios with groups ``<= g_i`` and peak ``<= p_j`` can be on time (the
  weighted ``ceil(α·S)``-th smallest supply among them; none: the cell holds no plan). A plan with ``m``
  training groups and peak level ``ℓ'`` lies in the row of the least threshold at or above ``m`` and the
  column of the least at or above ``ℓ'``, and needs at least that cell's supply.
- :func:`hull_2d`: the facets of the hull of corners on two levels (a pair's exact corners on supply and peak,
  :func:`solver.confidence.pair.corners`).
"""

from __future__ import annotations

import numpy as np

from trainground.solver.tolerances import HULL_TOL, WEIGHT_TOL

GRID = 40  # thresholds per gridded need
SAFETY = 1e-9  # relative: β lowered by this, so rounding in the hull never cuts off a plan


def thresholds(values: np.ndarray, eta: float) -> np.ndarray:
    """Up to GRID upper thresholds: the distinct requirements above η thinned evenly, the largest
    kept ([η] when none is above it)."""
    distinct = np.unique(values[values > eta])
    if distinct.size == 0:
        return np.array([eta])
    if distinct.size > GRID:
        distinct = distinct[np.unique(np.linspace(0, distinct.size - 1, GRID).round().astype(int))]
    return distinct


def frontier_grid(
    supply: np.ndarray, groups: np.ndarray, peak: np.ndarray, weight: np.ndarray, needed: float, floors
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The grid of the module's docstring: (upper groups thresholds (I,), lower groups thresholds (I,), lower
    peak thresholds (J,), (I, J) the supply each cell needs, nan where it holds no plan)."""
    g_up, p_up = thresholds(groups, floors[1]), thresholds(peak, floors[2])
    g_low = np.concatenate([[floors[1]], g_up[:-1]])
    p_low = np.concatenate([[floors[2]], p_up[:-1]])
    order = np.argsort(supply, kind="stable")
    s, g, p, w = supply[order], groups[order], peak[order], weight[order]
    by_groups = g[None, :] <= g_up[:, None]  # (grid, n)
    by_peak = p[None, :] <= p_up[:, None]
    inside = by_groups[:, None, :] & by_peak[None, :, :]  # (grid g, grid p, n)
    reached = np.cumsum(np.where(inside, w, 0.0), axis=2) >= needed - WEIGHT_TOL
    ok = reached[:, :, -1] if s.size else np.zeros(inside.shape[:2], bool)
    first = np.argmax(reached, axis=2)
    q = np.where(ok, s[np.minimum(first, max(s.size - 1, 0))] if s.size else 0.0, np.nan)
    return g_up, g_low, p_low, np.maximum(q, floors[0])


def hull_2d(points: np.ndarray) -> list[tuple[float, float, float]]:
    """Facets ``a·x + b·y >= β`` (``a, b >= 0``, the larger 1) of conv(points) + the positive orthant, for
    points (C, 2) whose y falls as x grows (the corners of :func:`solver.confidence.pair.corners`): the two rays'
    ``x >= min x`` and ``y >= min y``, and each edge of the lower hull between them (Andrew's monotone chain),
    on coordinates scaled to [0, 1]."""
    if points.shape[0] == 0:
        return []
    low, high = points.min(axis=0), points.max(axis=0)
    span = np.where(high - low > HULL_TOL * np.maximum(1.0, np.abs(high)), high - low, 1.0)
    scaled = (points - low) / span
    order = np.lexsort((scaled[:, 1], scaled[:, 0]))
    chain: list[np.ndarray] = []
    for p in scaled[order]:
        while len(chain) >= 2 and _cross(chain[-2], chain[-1], p) <= 0:
            chain.pop()
        chain.append(p)
    facets = [(1.0, 0.0, 0.0), (0.0, 1.0, 0.0)]  # the rays, scaled: x >= min x, y >= min y
    for p, q in zip(chain, chain[1:]):
        a, b = p[1] - q[1], q[0] - p[0]  # the normal (-dy, dx) points away from the origin
        if a > HULL_TOL and b > HULL_TOL:
            facets.append((a, b, a * p[0] + b * p[1]))
    cuts = []
    for a, b, beta in facets:
        raw = np.array([a, b]) / span
        value = beta + raw @ low
        top = float(raw.max())
        cuts.append((float(raw[0] / top), float(raw[1] / top), value / top - SAFETY * max(1.0, abs(value / top))))
    return cuts


def _cross(o: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    return float((a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]))
