"""The confidence solve's corners and hull rows (solver/confidence/cuts.py, solver/confidence/pair.py) against a
brute force: every level vector a plan on time in enough scenarios can have needs at least a cell of the class
grid; with the training groups fixed, the corners are exactly the least such vectors and their rows bound any
positive cost of the levels by the corners' least."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from trainground.solver.confidence import cuts as cuts
from trainground.solver.confidence.pair import corners as pair_corners


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
def test_every_feasible_level_vector_needs_at_least_a_cell_of_the_grid(seed, n, grid, monkeypatch):
    """A plan with groups level m and peak level p, on time in a set of enough weight, lies in the grid's row of
    the least groups threshold at or above m: some cell of that row at or below p needs no more supply than the
    plan has (what the screen's bound reads)."""
    monkeypatch.setattr(cuts, "GRID", grid)  # small grids thin the thresholds: still valid, only looser
    req, weight, needed = random_case(seed, n)
    levels = feasible_levels(req, weight, needed)
    floors = levels.min(axis=0)  # every plan's levels are at least these (the solver's η)
    g_up, _, p_low, q = cuts.frontier_grid(req[:, 0], req[:, 1], req[:, 2], weight, needed, floors)
    for supply, groups, peak in levels:
        i = min(int(np.searchsorted(g_up, groups, side="left")), g_up.size - 1)
        reachable = (p_low <= peak * (1 + 1e-12)) & (q[i] <= supply * (1 + 1e-12))
        assert reachable.any(), (supply, groups, peak)


def least_levels_2d(req: np.ndarray, weight: np.ndarray, needed: float) -> np.ndarray:
    """The least (supply, peak) level vectors of plans on time in groups of weight >= needed, by enumeration."""
    levels = np.unique(
        feasible_levels(np.column_stack([req[:, 0], np.zeros(req.shape[0]), req[:, 1]]), weight, needed)[:, [0, 2]],
        axis=0,
    )
    below = np.all(levels[:, None, :] <= levels[None, :, :], axis=2) & ~np.eye(levels.shape[0], dtype=bool)
    return levels[~below.any(axis=0)]  # those no other vector is at or below


@pytest.mark.parametrize("seed,n", [(0, 9), (1, 11), (5, 12), (6, 13)])
def test_with_the_groups_fixed_the_corners_are_the_least_level_vectors(seed, n):
    req, weight, needed = random_case(seed, n)
    found = pair_corners(req[:, 0], req[:, 2], weight, needed)
    expected = least_levels_2d(req[:, [0, 2]], weight, needed)
    assert sorted(map(tuple, found.tolist())) == sorted(map(tuple, expected.tolist()))


@pytest.mark.parametrize("seed", [2, 3, 8])
def test_the_rows_of_fixed_groups_bound_a_positive_cost_by_the_corners_least(seed):
    """In two levels the rows are the whole hull of the corners plus the orthant: the least of a positive
    linear cost over the rows is at a vertex, a corner; so the rows lose nothing of the corners' bound."""
    from scipy.optimize import linprog

    req, weight, needed = random_case(seed, 12)
    corners = pair_corners(req[:, 0], req[:, 2], weight, needed)
    rows = cuts.hull_2d(corners)
    assert len(rows) >= 2 and corners.shape[0] >= 2
    for cost in (np.array([1.0, 1.0]) / corners.max(axis=0), np.array([3.0, 0.2]) / corners.max(axis=0)):
        out = linprog(cost, A_ub=-np.array([[a, b] for a, b, _ in rows]), b_ub=-np.array([beta for *_, beta in rows]))
        assert out.status == 0
        best = float((corners @ cost).min())
        assert best * (1 - 1e-6) <= out.fun <= best * (1 + 1e-9)
