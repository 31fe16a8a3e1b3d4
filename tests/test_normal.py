"""The model's normal CDF (solver/laws/normal.py) against math.erfc, value by value: both tails, the panel ends,
the infinities and NaN, and every shape."""

from __future__ import annotations

import math

import numpy as np
import pytest

from trainground.solver.laws import normal
from trainground.solver.laws.calculus import ndtr


def _erfc_cdf(x: np.ndarray) -> np.ndarray:
    return np.array([0.5 * math.erfc(-v / math.sqrt(2.0)) for v in x.ravel()]).reshape(x.shape)


def test_the_cdf_is_erfcs_to_a_few_ulps_across_both_tails():
    rng = np.random.default_rng(11)
    panel_ends = normal.LOWEST + normal.PANEL * np.arange(round(-normal.LOWEST / normal.PANEL) + 1)
    x = np.concatenate((np.linspace(-37.4, 9.0, 400_001), rng.normal(0.0, 4.0, 200_000), panel_ends, -panel_ends))
    got, want = ndtr(x), _erfc_cdf(x)
    assert np.max(np.abs(got - want)) <= 4e-15
    neg = x <= 0  # relative error: Φ's own conditioning there is about x² ulps
    rel = np.abs(got[neg] - want[neg]) / want[neg]
    assert np.max(rel / (1.0 + x[neg] ** 2)) <= 8e-15


def test_the_cdf_keeps_its_symmetry_and_its_ends():
    x = np.linspace(-8.0, 8.0, 10_001)
    assert np.max(np.abs(ndtr(x) + ndtr(-x) - 1.0)) <= 4e-15
    assert float(ndtr(0.0)) == 0.5
    with np.errstate(all="raise"):  # no overflow on the way to the far tails' 0 and 1
        assert ndtr(np.array([-np.inf, -1e300, -40.0, 40.0, 1e300, np.inf])).tolist() == [0, 0, 0, 1, 1, 1]
    assert np.isnan(ndtr(np.nan))
    assert np.all(np.diff(ndtr(np.linspace(-37.0, 8.0, 100_001))) >= 0)


@pytest.mark.parametrize("shape", [(), (3,), (2, 5), (4, 1, 3)])
def test_the_cdf_keeps_its_arguments_shape(shape):
    x = np.random.default_rng(3).normal(size=shape)
    got = ndtr(x)
    assert isinstance(got, np.ndarray) and got.shape == np.shape(x)
    assert got == pytest.approx(_erfc_cdf(np.asarray(x)), abs=4e-15)


@pytest.mark.parametrize("n", [0, 1, 6, 7, 20, 21])
def test_chunked_applies_a_function_of_several_arrays_piece_by_piece(n):
    a, b = np.arange(n, dtype=float), np.arange(n, dtype=float) ** 2
    seen: list[int] = []

    def fn(x, y):
        seen.append(x.size)
        return x * 10 + y

    assert np.array_equal(normal.chunked(fn, 7, a, b), a * 10 + b)
    assert all(size <= 7 for size in seen) and sum(seen) == n
