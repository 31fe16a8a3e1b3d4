"""The sandbox occupancy W of MODEL §2 in every scenario of §9, vectorised over scenarios.

A lognormal occupancy is refitted per scenario from its two scaled parameters (``mu``, ``sigma``
arrays); an empirical one keeps its samples' shape and is scaled as a whole (a factor must reach
every sample or none, which the loader checks), so scenario s's W is ``scale[s]`` times the
nominal law's. Every method takes ``t`` of shape (S,) (or broadcasting against it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from trainground.models.instance import Empirical, Lognormal
from trainground.solver.laws import calculus as calc
from trainground.solver.laws import holding, startup
from trainground.solver.laws.calculus import ndtr
from trainground.solver.tolerances import NEWTON_STEP_TOL, SLOPE_FLOOR

SIGMA_FLOOR = 1e-9
"""A lognormal whose scaled p99 falls to its median (sigma 0) keeps this sigma: a near-point mass."""


@dataclass(frozen=True)
class Lifetimes:
    mean: np.ndarray
    median: np.ndarray
    p99: np.ndarray
    mu: np.ndarray | None = None  # lognormal
    sigma: np.ndarray | None = None
    base: calc.Occupancy | None = None  # empirical: the nominal law, scaled by ``scale``
    scale: np.ndarray | None = None
    # The fill's panel sums per scenario (:func:`_panel_sums`), by group members (1 or g): they depend on sigma
    # alone, so every fill of these laws (a deadline pace's fixed point, a plan in every scenario) reads them
    # once. Filled on first use; :meth:`take` passes on the rows it keeps.
    _panels: dict[int, np.ndarray] = field(default_factory=dict, repr=False, compare=False)

    def take(self, rows: np.ndarray) -> Lifetimes:
        """The laws of the scenarios ``rows`` alone."""
        pick = lambda a: None if a is None else a[rows]  # noqa: E731
        return Lifetimes(
            mean=self.mean[rows],
            median=self.median[rows],
            p99=self.p99[rows],
            mu=pick(self.mu),
            sigma=pick(self.sigma),
            base=self.base,
            scale=pick(self.scale),
            _panels={members: table[rows] for members, table in self._panels.items()},
        )

    def limited_mean(self, t) -> np.ndarray:
        """E[min(W, t)] per scenario."""
        t = np.asarray(t, dtype=float)
        if self.base is not None:
            return self.scale * self.base.limited_mean(t / self.scale)
        return calc.lognormal_limited_mean(self.mean, self.mu, self.sigma, t)

    def pair_min_mean(self) -> np.ndarray:
        """E[min(W, W')] per scenario, W and W' independent (MODEL §11 item 2): 2·mean·Φ(-sigma/√2) for a
        lognormal, the nominal law's figure times the scale for an empirical one."""
        if self.base is not None:
            return self.scale * holding.pair_min_mean(self.base)
        return 2.0 * self.mean * ndtr(-self.sigma / np.sqrt(2.0))

    def survival(self, t) -> np.ndarray:
        """P(W > t) per scenario."""
        t = np.asarray(t, dtype=float)
        if self.base is not None:
            return self.base.survival(t / self.scale)
        with np.errstate(divide="ignore"):
            return ndtr(-(np.log(t) - self.mu) / self.sigma)

    def completed_group_time(self, t, group_size: int, correlation: str) -> np.ndarray:
        """∫_0^t F_grp(s) ds per scenario (MODEL §8's group-completion law; t > 0 of shape (S,)): t - E[min(W, t)]
        with one independent member, else the nominal law's figure scaled (empirical) or the median-1
        lognormal's panel sums of :meth:`fill`."""
        t = np.asarray(t, dtype=float)
        members = 1 if correlation == "comonotone" else group_size
        if members == 1:
            return t - self.limited_mean(t)
        if self.base is not None:
            return self.scale * startup.completed_group_time(self.base, t / self.scale, group_size, correlation)
        c = np.exp(self.mu)
        if members not in self._panels:
            self._panels[members] = _panel_sums(self.sigma, members)
        return c * _unit_completed(self.sigma, t / c, members, self._panels[members], np.exp(self.sigma * _Z_TOP))

    def far(self) -> np.ndarray:
        """Per scenario a time past which F(t) is 1 to double precision (a group's members have all ended): the
        largest sample of an empirical law, e^(mu + sigma·_Z_TOP) for a lognormal."""
        if self.base is not None:
            return self.scale * self.base.draws()[-1]
        return np.exp(self.mu + self.sigma * _Z_TOP)

    def exceedance(self, cadence, kept: int) -> np.ndarray:
        """q(L, K) = (E[min(W,(K+1)L)] - E[min(W,KL)]) / L per scenario (MODEL §2)."""
        L = np.asarray(cadence, dtype=float)
        ends = np.broadcast_arrays(kept * L, (kept + 1) * L, self.mean)[:2]  # both in one limited_mean
        at_k, at_next = self.limited_mean(np.stack(ends))
        return calc.exceedance_of_means(at_k, at_next, L)

    def fill(self, attempts, batch: int, group_size: int, intake, correlation: str) -> np.ndarray:
        """MODEL §8's pipeline fill per scenario at attempt rates ``attempts`` and intake ``intake``: the
        smallest t with p·R·∫_0^t F_grp(s) ds >= B.

        W scaled by c fills in c·fill_1(R·c) (substitute s = c·u in the integral): an empirical law
        is its nominal law scaled; a lognormal is e^mu times the median-1 lognormal of its sigma."""
        R = np.asarray(attempts, dtype=float)
        intake = np.broadcast_to(np.asarray(intake, dtype=float), R.shape)
        if self.base is not None:
            return self.scale * startup.fill(self.base, R * self.scale, batch, group_size, intake, correlation)
        c = np.exp(self.mu)
        members = 1 if correlation == "comonotone" else group_size
        if members not in self._panels:
            self._panels[members] = _panel_sums(self.sigma, members)
        return c * _unit_fill(self.sigma, batch / (intake * R * c), members, self._panels[members])


# ∫_0^t F(s)^g ds of the median-1 lognormal of each scenario's sigma, over z = ln(s)/sigma: 16-point
# Gauss-Legendre panels of width _PANEL from _Z_FLOOR (below it the integrand is 0 to double precision)
# to _Z_TOP (above it Φ(z)^g is 1, so the integral grows like s itself); MODEL §8's fill is its root.
_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(16)
_PANEL, _Z_FLOOR, _Z_TOP = 0.25, -12.0, 12.0
_EDGES = _Z_FLOOR + _PANEL * np.arange(round((_Z_TOP - _Z_FLOOR) / _PANEL) + 1)


def _mass(sigma: np.ndarray, members: int, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """∫_lo^hi sigma·e^(sigma·z)·Φ(z)^g dz per scenario (each hi - lo <= _PANEL)."""
    half = (hi - lo) / 2
    z = (lo + half)[:, None] + half[:, None] * _NODES[None, :]
    f = sigma[:, None] * np.exp(sigma[:, None] * z) * ndtr(z) ** members
    return (f * _WEIGHTS).sum(axis=1) * half


def _panel_sums(sigma: np.ndarray, members: int) -> np.ndarray:
    """(S, edges) ∫ from _Z_FLOOR to each panel edge of the integrand of :func:`_mass`, per scenario."""
    distinct, which = np.unique(sigma, return_inverse=True)  # the panel sums depend on sigma alone
    lo = np.repeat(_EDGES[None, :-1], distinct.size, axis=0).ravel()
    hi = np.repeat(_EDGES[None, 1:], distinct.size, axis=0).ravel()
    mass = _mass(np.repeat(distinct, _EDGES.size - 1), members, lo, hi)
    cum = np.zeros((distinct.size, _EDGES.size))
    cum[:, 1:] = np.cumsum(mass.reshape(distinct.size, -1), axis=1)
    return cum[which.reshape(-1)]


def _unit_completed(sigma: np.ndarray, t: np.ndarray, members: int, cum: np.ndarray, top: np.ndarray) -> np.ndarray:
    """∫_0^t F(s)^g ds per scenario, F the median-1 lognormal of ``sigma`` (``cum``: its :func:`_panel_sums`,
    ``top``: e^(sigma·_Z_TOP), where Φ(z)^g has reached 1)."""
    z = np.log(t) / sigma
    zc = np.clip(z, _Z_FLOOR, _Z_TOP)
    i = np.minimum(((zc - _Z_FLOOR) / _PANEL).astype(int), _EDGES.size - 2)
    inside = cum[np.arange(sigma.size), i] + _mass(sigma, members, _EDGES[i], zc)
    return np.where(z <= _Z_FLOOR, 0.0, np.where(z >= _Z_TOP, cum[:, -1] + t - top, inside))


def _unit_fill(sigma: np.ndarray, target: np.ndarray, members: int, cum: np.ndarray) -> np.ndarray:
    """Per scenario the smallest t >= 0 with ∫_0^t F(s)^g ds >= target, F the median-1 lognormal of
    ``sigma`` (``cum``: its :func:`_panel_sums`): Newton from t0 = target + E[group completion], monotone onto
    the root of this convex increasing function (as :func:`solver.laws.startup.fill`, vectorised over sigma)."""
    top = np.exp(sigma * _Z_TOP)

    def completed(t: np.ndarray, at: np.ndarray) -> np.ndarray:
        return _unit_completed(sigma[at], t, members, cum[at], top[at])

    t = target + (top - cum[:, -1])
    at = np.arange(sigma.size)  # the scenarios whose Newton steps have not settled
    for _ in range(100):
        here = t[at]
        slope = ndtr(np.log(here) / sigma[at]) ** members
        step = (completed(here, at) - target[at]) / np.maximum(slope, SLOPE_FLOOR)
        t[at] = np.maximum(here - np.maximum(step, 0.0), target[at])
        at = at[step > NEWTON_STEP_TOL * here]
        if at.size == 0:
            break
    return t


def lifetimes_of(spec: Lognormal | Empirical, scen) -> Lifetimes:
    """The occupancy of every scenario of ``scen`` (a :class:`solver.uncertainty.scenarios.Scenarios`)."""
    where = "environment.occupancy"
    if isinstance(spec, Empirical):
        base = calc.empirical(spec.samples)
        scale = scen.value(f"{where}.samples[0]", 1.0) if scen.scales(f"{where}.samples") else np.ones(scen.size)
        return Lifetimes(
            mean=base.mean * scale, median=base.median * scale, p99=base.p99 * scale, base=base, scale=scale
        )
    given = {
        k: scen.value(f"{where}.{k}", getattr(spec, k))
        for k in ("median", "p99", "mean", "sigma")
        if getattr(spec, k) is not None
    }
    mu, sigma = calc.lognormal_params(**given)
    sigma = np.maximum(sigma, SIGMA_FLOOR)
    mean, median, p99 = calc.lognormal_figures(mu, sigma)
    return Lifetimes(mean=mean, median=median, p99=p99, mu=mu, sigma=sigma)
