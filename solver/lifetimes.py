"""The sandbox occupancy W of MODEL §2 in every scenario of §9, vectorised over scenarios.

A lognormal occupancy is refitted per scenario from its two scaled parameters (``mu``, ``sigma``
arrays); an empirical one keeps its samples' shape and is scaled as a whole (a factor must reach
every sample or none, which the loader checks), so scenario s's W is ``scale[s]`` times the
nominal law's. Every method takes ``t`` of shape (S,) (or broadcasting against it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr

from models.instance import Z_99, Empirical, Lognormal
from solver import calculus as calc

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

    def limited_mean(self, t) -> np.ndarray:
        """E[min(W, t)] per scenario."""
        t = np.asarray(t, dtype=float)
        if self.base is not None:
            return self.scale * self.base.limited_mean(t / self.scale)
        with np.errstate(divide="ignore"):
            log_t = np.log(t)
        head = self.mean * ndtr((log_t - self.mu - self.sigma**2) / self.sigma)
        return head + t * (1.0 - ndtr((log_t - self.mu) / self.sigma))

    def exceedance(self, cadence, kept: int) -> np.ndarray:
        """q(L, K) = (E[min(W,(K+1)L)] - E[min(W,KL)]) / L per scenario (MODEL §2)."""
        L = np.asarray(cadence, dtype=float)
        q = (self.limited_mean((kept + 1) * L) - self.limited_mean(kept * L)) / L
        return np.clip(q, 0.0, 1.0)

    def fill(self, attempts, batch: int, group_size: int, intake, correlation: str) -> np.ndarray:
        """MODEL §8's pipeline fill per scenario at attempt rates ``attempts`` and intake ``intake``.

        W scaled by c fills in c·fill_1(R·c) (substitute s = c·u in the integral), so scenarios that
        share a lognormal sigma (or an empirical shape) share one base law."""
        R = np.asarray(attempts, dtype=float)
        intake = np.broadcast_to(np.asarray(intake, dtype=float), R.shape)
        if self.base is not None:
            return self.scale * calc.fill(self.base, R * self.scale, batch, group_size, intake, correlation)
        out = np.empty(R.shape)
        for sigma in np.unique(self.sigma):
            at = self.sigma == sigma
            c = np.exp(self.mu[at])
            unit = calc.lognormal(0.0, float(sigma))
            out[at] = c * calc.fill(unit, R[at] * c, batch, group_size, intake[at], correlation)
        return out


def lifetimes_of(spec: Lognormal | Empirical, scen) -> Lifetimes:
    """The occupancy of every scenario of ``scen`` (a :class:`solver.scenarios.Scenarios`)."""
    where = "environment.occupancy"
    if isinstance(spec, Empirical):
        base = calc.empirical(spec.samples)
        scale = scen.value(f"{where}.samples[0]", 1.0) if scen.scales(f"{where}.samples") else np.ones(scen.size)
        return Lifetimes(mean=base.mean * scale, median=base.median * scale, p99=base.p99 * scale,
                         base=base, scale=scale)
    given = {k: scen.value(f"{where}.{k}", getattr(spec, k)) for k in ("median", "p99", "mean", "sigma")
             if getattr(spec, k) is not None}
    mu, sigma = _fit(given)
    sigma = np.maximum(sigma, SIGMA_FLOOR)
    return Lifetimes(mean=np.exp(mu + sigma**2 / 2), median=np.exp(mu), p99=np.exp(mu + Z_99 * sigma), mu=mu,
                     sigma=sigma)


def _fit(given: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(mu, sigma) arrays of the lognormal fixed by two of median, p99, mean, sigma (MODEL §2)."""
    m, p, mean, s = (given.get(k) for k in ("median", "p99", "mean", "sigma"))
    if m is not None and p is not None:
        return np.log(m), np.log(p / m) / Z_99
    if m is not None and mean is not None:
        return np.log(m), np.sqrt(np.maximum(2 * np.log(mean / m), 0.0))
    if m is not None and s is not None:
        return np.log(m), s
    if p is not None and s is not None:
        return np.log(p) - Z_99 * s, s
    if mean is not None and s is not None:
        return np.log(mean) - s * s / 2, s
    gap = np.log(p / mean)
    s = Z_99 - np.sqrt(np.maximum(Z_99 * Z_99 - 2 * gap, 0.0))
    return np.log(mean) - s * s / 2, s

