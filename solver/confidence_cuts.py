"""Valid inequalities on a plan's levels in a confidence solve (MODEL.md §9, docs/confidence.md). No pyomo.

The levels ``L`` of a plan (supply, training groups, peak environments) on time in at least ``ceil(α·S)``
scenarios (by weight) lie in ``F``, the union over those scenario sets of the orthants above their
requirements. The scenario rows say so one scenario at a time through the binaries ``w``, whose relaxation
lets a fractional ``w`` buy every level at a fraction of its price: at α = 0.5 on the bundled instances the
root bound sits 6 % under the optimum. The rows here are facets ``a·L >= β`` (``a >= 0``) of the convex hull of
a set ``C`` of points whose orthants cover ``F`` (its *corners*), so every plan meets them:

- where the training groups are a level (:func:`corner_points`): a grid over the groups and peak needs
  (``GRID`` thresholds each, the distinct requirements above η thinned evenly, the largest kept); for a cell
  with upper thresholds ``(g_i, p_j)`` and lower ones ``(g_(i-1), p_(j-1))`` (``g_(-1)``, ``p_(-1)``: the
  floors η), the supply ``q_ij`` a plan needs when only the scenarios with groups ``<= g_i`` and peak
  ``<= p_j`` can be on time (the weighted ``ceil(α·S)``-th smallest supply among them; none: the cell holds no
  plan); a plan with levels ``L`` lies in the cell whose upper thresholds are the least at or above its groups
  and peak levels, and meets ``L >= (g_(i-1), p_(j-1), q_ij)``, the point of ``C``. The rows are the facets of
  the hulls of the corners' projections on each two of the three levels (:func:`hull_2d`);
- where a pair's training groups are fixed, its corners on (supply, peak) are exact
  (:func:`solver.confidence_pair.corners`), and so are the rows of their hull.
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


def hull_2d(points: np.ndarray) -> list[tuple[float, float, float]]:
    """Facets ``a·x + b·y >= β`` (``a, b >= 0``, the larger 1) of conv(points) + the positive orthant, for
    points (C, 2) whose y falls as x grows (the corners of :func:`solver.confidence_pair.corners`): the two rays'
    ``x >= min x`` and ``y >= min y``, and each edge of the lower hull between them (Andrew's monotone chain),
    on coordinates scaled to [0, 1]."""
    if points.shape[0] == 0:
        return []
    low, high = points.min(axis=0), points.max(axis=0)
    span = np.where(high - low > 1e-12 * np.maximum(1.0, np.abs(high)), high - low, 1.0)
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
        if a > 1e-12 and b > 1e-12:
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
