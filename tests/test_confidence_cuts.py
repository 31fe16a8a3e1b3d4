"""The confidence solve's corner points and hull rows (solver/confidence_cuts.py) against a brute force:
every level vector a plan on time in enough scenarios can have lies above a corner and meets every row."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from trainground.solver import confidence_cuts as cuts


def feasible_levels(req: np.ndarray, weight: np.ndarray, needed: float) -> np.ndarray:
    """(sets, 3) the least levels of every scenario set of weight >= needed: their requirements' maxima."""
    n = req.shape[0]
    masks = np.array(list(itertools.product((False, True), repeat=n)))
    masks = masks[(masks * weight).sum(axis=1) >= needed]
    return np.stack([np.where(masks, req[:, f], -np.inf).max(axis=1) for f in range(3)], axis=1)


def random_case(seed: int, n: int):
    rng = np.random.default_rng(seed)
    supply = rng.lognormal(3.0, 0.3, n)
    groups = rng.integers(10, 16, n).astype(float)  # few distinct values, as the fewest groups are
    peak = rng.lognormal(8.0, 0.2, n) * (1 + 0.3 * (supply > np.median(supply)))  # correlated with supply
    weight = rng.integers(1, 3, n).astype(float)
    needed = float(np.ceil(rng.uniform(0.4, 0.95) * weight.sum()))
    return np.column_stack([supply, groups, peak]), weight, needed


@pytest.mark.parametrize("seed,n,grid", [(0, 10, 40), (1, 12, 40), (2, 12, 4), (3, 13, 3), (4, 11, 40)])
def test_every_feasible_level_vector_is_above_a_corner_and_meets_every_row(seed, n, grid, monkeypatch):
    monkeypatch.setattr(cuts, "GRID", grid)  # small grids thin the thresholds: still valid, only looser
    req, weight, needed = random_case(seed, n)
    levels = feasible_levels(req, weight, needed)
    floors = levels.min(axis=0)  # every plan's levels are at least these (the solver's η)
    corners = cuts.minimal(cuts.corner_points(req[:, 0], req[:, 1], req[:, 2], weight, needed, floors))
    assert corners.shape[0] > 0
    tol = 1e-9 * np.abs(levels).max(axis=0)
    above = np.all(levels[:, None, :] >= corners[None, :, :] - tol, axis=2)
    assert above.any(axis=1).all()
    rows = cuts.hull_cuts(corners)
    for a, beta in rows:
        assert np.all(a >= 0) and a.max() == pytest.approx(1.0)
        assert np.all(levels @ a >= beta - 1e-9 * max(1.0, abs(beta)))


def test_the_rows_reach_the_least_level_sum_when_no_threshold_is_thinned():
    """With every requirement a threshold, a row along (1, 1, 1)-like directions is as tight as the corners:
    the least of a·L over the corners equals its least over the rows' polyhedron's vertices, the corners
    themselves; so the rows bound a positive linear cost within the corners' own minimum."""
    req, weight, needed = random_case(8, 12)  # eight corners, three facets with a >= 0
    levels = feasible_levels(req, weight, needed)
    corners = cuts.minimal(cuts.corner_points(req[:, 0], req[:, 1], req[:, 2], weight, needed, levels.min(axis=0)))
    rows = cuts.hull_cuts(corners)
    assert rows, "a corner set spread in three needs has facets"
    scale = 1.0 / levels.max(axis=0)
    cost = scale  # one unit of each need's range
    best_corner = float((corners @ cost).min())
    best_feasible = float((levels @ cost).min())
    assert best_corner <= best_feasible * (1 + 1e-12)
    # the rows alone: the least cost over {L >= floors, a·L >= β} is within the corners' least (an LP bound)
    from scipy.optimize import linprog

    out = linprog(
        cost,
        A_ub=-np.array([a for a, _ in rows]),
        b_ub=-np.array([b for _, b in rows]),
        bounds=[(lo, None) for lo in corners.min(axis=0)],
    )
    assert out.status == 0
    assert out.fun <= best_corner * (1 + 1e-9)
    assert out.fun >= best_corner * (1 - 1e-6)  # the cost's least over a polyhedron is at a vertex: a corner


def test_minimal_keeps_one_of_equal_points_and_drops_dominated_ones():
    points = np.array([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0], [2.0, 2.0, 3.0], [0.5, 5.0, 3.0], [1.0, 1.0, 4.0]])
    kept = cuts.minimal(points)
    assert kept.tolist() == [[1.0, 2.0, 3.0], [0.5, 5.0, 3.0], [1.0, 1.0, 4.0]]
