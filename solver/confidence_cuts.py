"""Valid inequalities on a K class's levels in a confidence solve (MODEL.md §9, docs/confidence.md). No pyomo.

The levels ``L = (supply, groups, peak)`` of a plan on time in at least ``ceil(α·S)`` scenarios (by
weight) lie in ``F``, the union over those scenario sets of the orthants above their requirements.
The scenario rows say so one scenario at a time through the binaries ``w``, whose relaxation lets
a fractional ``w`` buy every level at a fraction of its price: at α = 0.5 on the bundled instances
the root bound sits 6 % under the optimum. The rows here are facets ``a·L >= β`` (``a >= 0``) of the
convex hull of a set ``C`` of points whose orthants cover ``F``, so every plan meets them:

- a grid over the groups and peak needs (``GRID`` thresholds each, the distinct requirements above
  η thinned evenly, the largest kept); for a cell with upper thresholds ``(g_i, p_j)`` and lower
  ones ``(g_(i-1), p_(j-1))`` (``g_(-1)``, ``p_(-1)``: the floors η), the supply ``q_ij`` a plan
  needs when only the scenarios with groups ``<= g_i`` and peak ``<= p_j`` can be on time (the
  weighted ``ceil(α·S)``-th smallest supply among them; none: the cell holds no plan);
- a plan with levels ``L`` lies in the cell whose upper thresholds are the least at or above its
  groups and peak levels, and meets ``L >= (g_(i-1), p_(j-1), q_ij)``: the point of ``C``.

The hull is qhull's (scipy.spatial, imported by a confidence solve only), on coordinates scaled to [0, 1]; facets whose outer normal
has a positive part are not of the upper set's boundary and are dropped.
"""

from __future__ import annotations

import numpy as np

GRID = 40  # thresholds per gridded need
CUT_FAMILIES = ("supply", "groups", "peak")
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


def corner_points(
    supply: np.ndarray, groups: np.ndarray, peak: np.ndarray, weight: np.ndarray, needed: float, floors
) -> np.ndarray:
    """(points, 3) the set C over the scenario groups given (those a plan of the class can meet):
    per grid cell (lower groups, lower peak, the supply the cell needs); cells holding no plan left out."""
    g_up, p_up = thresholds(groups, floors[1]), thresholds(peak, floors[2])
    g_low = np.concatenate([[floors[1]], g_up[:-1]])
    p_low = np.concatenate([[floors[2]], p_up[:-1]])
    order = np.argsort(supply, kind="stable")
    s, g, p, w = supply[order], groups[order], peak[order], weight[order]
    by_groups = g[None, :] <= g_up[:, None]  # (grid, n)
    by_peak = p[None, :] <= p_up[:, None]
    inside = by_groups[:, None, :] & by_peak[None, :, :]  # (grid g, grid p, n)
    reached = np.cumsum(np.where(inside, w, 0.0), axis=2) >= needed - 1e-9
    ok = reached[:, :, -1] if s.size else np.zeros(inside.shape[:2], bool)
    first = np.argmax(reached, axis=2)
    q = np.where(ok, s[np.minimum(first, max(s.size - 1, 0))] if s.size else 0.0, np.nan)
    q = np.maximum(q, floors[0])
    gi, pj = np.nonzero(ok)
    return np.column_stack([q[gi, pj], g_low[gi], p_low[pj]])


def minimal(points: np.ndarray) -> np.ndarray:
    """The points no other point is at or below in every coordinate (of equal points, the first)."""
    if points.shape[0] < 2:
        return points
    leq = np.all(points[:, None, :] <= points[None, :, :], axis=2)  # leq[i, k]: i at or below k
    equal = leq & leq.T
    index = np.arange(points.shape[0])
    below = leq & (~equal | (index[:, None] < index[None, :]))
    np.fill_diagonal(below, False)
    return points[~below.any(axis=0)]


def hull_cuts(points: np.ndarray) -> list[tuple[np.ndarray, float]]:
    """Facets ``a·L >= β`` (``a >= 0``, largest component 1) of conv(points) + the positive orthant
    that qhull finds as facets of conv(points); the coordinates that do not vary are left out of it."""
    if points.shape[0] < 2:
        return []
    low, high = points.min(axis=0), points.max(axis=0)
    span = high - low
    live = np.flatnonzero(span > 1e-12 * np.maximum(1.0, np.abs(high)))
    if live.size < 2 or points.shape[0] <= live.size:
        return []
    from scipy.spatial import ConvexHull, QhullError  # here: scipy stays off the plain solve path (docs/performance.md)

    scaled = (points[:, live] - low[live]) / span[live]
    try:
        hull = ConvexHull(scaled)
    except QhullError:
        return []
    cuts = []
    for *normal, offset in np.unique(np.round(hull.equations, 12), axis=0):
        inward = -np.asarray(normal)
        if np.any(inward < -1e-9) or not np.any(inward > 1e-9):
            continue
        raw = inward / span[live]  # back to the levels' own units: raw·L >= offset + raw·low
        beta = float(offset + raw @ low[live])
        a = np.zeros(points.shape[1])
        a[live] = np.clip(raw, 0.0, None)  # a >= raw and L >= 0: a·L >= raw·L >= β
        top = float(a.max())
        cuts.append((a / top, beta / top - SAFETY * max(1.0, abs(beta / top))))
    return cuts
