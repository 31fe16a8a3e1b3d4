"""Sandbox lifetimes from a log with running attempts: the lognormal by maximum likelihood with right-
censoring, the Kaplan–Meier estimate, a goodness-of-fit check between them, and bootstrap intervals.

An attempt that ended gives its lifetime ``end - start``; one still running when the log ends tells
only that its lifetime exceeds ``log_end - start`` (right-censored). Dropping the running attempts
keeps the short ones of the last hours and loses the long ones: the tail comes out too light.

The maximum likelihood is found on the log-lifetimes by Newton steps (EM steps, in which a censored
value is replaced by its conditional moments under the current fit, start it and catch a step that
would not raise the likelihood), for all bootstrap replicates at once. Replicates
resample the attempts (whole launch groups when the log has groups); above ``EXACT_ROWS`` attempts
they resample ``BINS`` bins of the log-lifetime per kind (ended / running) instead, each bin at its
members' mean (ignoring groups: the intervals of such logs are narrow either way).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from trainground.calibrate.figures import resample

Z_99 = float(special.ndtri(0.99))
EXACT_ROWS = 20_000  # at most this many attempts: bootstrap replicates resample the attempts themselves
BINS = 2048  # above it, per kind: log-lifetime bins whose counts the replicates resample
EM_TOLERANCE = 1e-8  # stop when no replicate's mu or sigma moves by more than this (log seconds)
EM_ITERATIONS = 200
EM_WARMUP = 5  # EM steps before Newton when there is no starting point
REJECT_FLOOR = 0.02  # the lognormal is rejected only if it misses Kaplan–Meier by more than this anywhere
LILLIEFORS_5 = 0.886  # 5 % critical value of the KS distance with estimated normal parameters, times sqrt(n)
MIN_LIFETIME_S = 1e-6  # a zero lifetime (start = end) is read as this, so that its logarithm exists


@dataclass(frozen=True)
class Lifetimes:
    """Observed log-lifetimes ``x`` (ended) and censoring log-times ``c`` (running)."""

    x: np.ndarray
    c: np.ndarray
    units: np.ndarray | None = None  # per value of x then c: the launch group, the unit a replicate resamples

    @property
    def rows(self) -> int:
        return self.x.size + self.c.size


def lifetimes_of(
    start: np.ndarray,
    end: np.ndarray,
    log_end: float,
    keep: np.ndarray | None = None,
    group: np.ndarray | None = None,
    cut: np.ndarray | None = None,
) -> Lifetimes:
    """Log-lifetimes of the attempts that started (optionally only where ``keep``); running ones censored at
    the log's end, and ones a timeout cut (``cut``, the lifetime at the cut; NaN: not cut) at the cut."""
    started = ~np.isnan(start) if keep is None else keep & ~np.isnan(start)
    was_cut = np.zeros(start.size, bool) if cut is None else started & ~np.isnan(cut)
    ended = started & ~np.isnan(end) & ~was_cut
    running = started & np.isnan(end) & ~was_cut
    x = np.log(np.maximum(end[ended] - start[ended], MIN_LIFETIME_S))
    censored = np.concatenate([log_end - start[running], cut[was_cut] if cut is not None else []])
    c = np.log(np.maximum(censored, MIN_LIFETIME_S))
    units = None
    if group is not None and x.size + c.size <= EXACT_ROWS:  # larger logs resample bins, not groups
        members = np.concatenate([group[ended], group[running], group[was_cut]])
        units = np.unique(members, return_inverse=True)[1]
    return Lifetimes(x, c, units)


def em_fit(
    xw: np.ndarray, x: np.ndarray, cw: np.ndarray, c: np.ndarray, start: tuple[float, float] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Censored-normal MLE of (mu, sigma) for each row of weights: ``xw`` (R, len x) on observed values,
    ``cw`` (R, len c) on censoring points. From ``start`` (default: a few EM steps from the ended values'
    moments), Newton steps on the exact log-likelihood; a step that would not raise it falls back to EM."""
    stats = (xw.sum(axis=1), xw @ x, xw @ (x * x))
    m0 = np.maximum(stats[0], 1.0)
    mu = stats[1] / m0
    sigma = np.sqrt(np.maximum(stats[2] / m0 - mu * mu, 1e-12))
    if c.size == 0 or not cw.any():
        return mu, sigma
    if start is not None:
        mu, sigma = np.full(mu.shape, start[0]), np.full(mu.shape, start[1])
    else:
        for _ in range(EM_WARMUP):
            mu, sigma = _em_step(stats, cw, c, mu, sigma)
    current = _loglik(stats, cw, c, mu, sigma)
    for _ in range(EM_ITERATIONS):
        new_mu, new_sigma = _newton_step(stats, cw, c, mu, sigma)
        reached = _loglik(stats, cw, c, new_mu, new_sigma)
        worse = ~(reached >= current - 1e-12 * np.abs(current) - 1e-9)
        if worse.any():
            em_mu, em_sigma = _em_step(stats, cw, c, mu, sigma)
            new_mu, new_sigma = np.where(worse, em_mu, new_mu), np.where(worse, em_sigma, new_sigma)
            reached = _loglik(stats, cw, c, new_mu, new_sigma)
        moved = max(np.max(np.abs(new_mu - mu)), np.max(np.abs(new_sigma - sigma)))
        mu, sigma, current = new_mu, new_sigma, reached
        if moved < EM_TOLERANCE:
            break
    return mu, sigma


def _hazard(z: np.ndarray) -> np.ndarray:
    """phi(z) / (1 - Phi(z)), computed in logs so that it stays finite far in the tail."""
    return np.exp(-0.5 * z * z - 0.5 * math.log(2 * math.pi) - special.log_ndtr(-z))


def _loglik(stats, cw, c, mu, sigma) -> np.ndarray:
    n0, s1, s2 = stats
    observed = -n0 * np.log(sigma) - 0.5 * (s2 - 2 * mu * s1 + mu * mu * n0) / sigma**2
    z = (c[None, :] - mu[:, None]) / sigma[:, None]
    return observed + (cw * special.log_ndtr(-z)).sum(axis=1)


def _em_step(stats, cw, c, mu, sigma):
    n0, s1, s2 = stats
    n = n0 + cw.sum(axis=1)
    z = (c[None, :] - mu[:, None]) / sigma[:, None]
    h = _hazard(z)
    ex = mu[:, None] + sigma[:, None] * h
    ex2 = mu[:, None] ** 2 + sigma[:, None] ** 2 + sigma[:, None] * (c[None, :] + mu[:, None]) * h
    new_mu = (s1 + (cw * ex).sum(axis=1)) / n
    return new_mu, np.sqrt(np.maximum((s2 + (cw * ex2).sum(axis=1)) / n - new_mu**2, 1e-12))


def _newton_step(stats, cw, c, mu, sigma):
    """One Newton step in (mu, sigma): observed part from the sufficient statistics, censored part with the
    hazard h and h' = h (h - z)."""
    n0, s1, s2 = stats
    zs = (s1 - mu * n0) / sigma  # sum of z over ended
    zz = (s2 - 2 * mu * s1 + mu * mu * n0) / sigma**2  # sum of z^2 over ended
    z = (c[None, :] - mu[:, None]) / sigma[:, None]
    h = _hazard(z)
    dh = h * (h - z)
    sq = sigma**2
    g_mu = (zs + (cw * h).sum(axis=1)) / sigma
    g_sigma = (zz - n0 + (cw * h * z).sum(axis=1)) / sigma
    h_mumu = (-n0 - (cw * dh).sum(axis=1)) / sq
    h_musig = (-2 * zs - (cw * (dh * z + h)).sum(axis=1)) / sq
    h_sigsig = (n0 - 3 * zz - (cw * (dh * z * z + 2 * h * z)).sum(axis=1)) / sq
    det = h_mumu * h_sigsig - h_musig**2
    ok = (h_mumu < 0) & (det > 0)
    det = np.where(ok, det, 1.0)
    step_mu = np.where(ok, -(h_sigsig * g_mu - h_musig * g_sigma) / det, 0.0)
    step_sigma = np.where(ok, -(-h_musig * g_mu + h_mumu * g_sigma) / det, 0.0)
    step_sigma = np.clip(step_sigma, -0.5 * sigma, sigma)
    return mu + step_mu, sigma + step_sigma


def fit_lognormal(data: Lifetimes) -> tuple[float, float]:
    mu, sigma = em_fit(np.ones((1, data.x.size)), data.x, np.ones((1, data.c.size)), data.c)
    return float(mu[0]), float(sigma[0])


def _atoms(values: np.ndarray, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Values and counts to resample: the values themselves for a small log, else BINS bins at their means."""
    if rows <= EXACT_ROWS or values.size <= BINS:
        return values, np.ones(values.size)
    edges = np.linspace(values.min(), values.max(), BINS + 1)
    idx = np.clip(np.searchsorted(edges, values, side="right") - 1, 0, BINS - 1)
    counts = np.bincount(idx, minlength=BINS).astype(float)
    sums = np.bincount(idx, weights=values, minlength=BINS)
    full = counts > 0
    return sums[full] / counts[full], counts[full]


def _resampled(rng: np.random.Generator, counts: np.ndarray, data: Lifetimes, replicates: int) -> np.ndarray:
    """Bootstrap counts per atom. When the atoms are the rows: whole launch groups drawn when the log has
    them (members share their start, hence their censoring, and may share their lifetime), else rows;
    binned atoms (a large log): multinomial over the bins."""
    rows = data.rows
    if counts.size == rows and data.units is not None:
        return resample(rng, int(data.units.max()) + 1, replicates)[:, data.units]
    if counts.size == rows:
        return resample(rng, rows, replicates)
    return rng.multinomial(rows, counts / rows, size=replicates).astype(float)


def bootstrap_lognormal(
    data: Lifetimes, replicates: int, rng: np.random.Generator, start: tuple[float, float]
) -> tuple[np.ndarray, np.ndarray]:
    """(mu, sigma) of each bootstrap replicate (the attempts resampled with replacement), EM from ``start``."""
    x, xn = _atoms(data.x, data.rows)
    c, cn = _atoms(data.c, data.rows)
    counts = _resampled(rng, np.concatenate([xn, cn]), data, replicates)
    return em_fit(counts[:, : x.size], x, counts[:, x.size :], c, start)


def figures_of(mu: np.ndarray | float, sigma: np.ndarray | float) -> dict[str, np.ndarray | float]:
    """Median, p99, mean (seconds) and sigma of lognormal(s) with log-mean ``mu`` and log-sd ``sigma``."""
    return {
        "median": np.exp(mu),
        "p99": np.exp(mu + Z_99 * sigma),
        "mean": np.exp(mu + 0.5 * np.square(sigma)),
        "sigma": sigma,
    }


@dataclass(frozen=True)
class KaplanMeier:
    """Survival just after each distinct ended lifetime ``t`` (seconds)."""

    t: np.ndarray
    survival: np.ndarray
    events: int

    def quantile(self, p: float | np.ndarray) -> np.ndarray:
        """The smallest t with 1 - S(t) >= p; the largest ended lifetime where the log cannot say (tail
        censored)."""
        idx = np.searchsorted(-self.survival, -(1.0 - np.asarray(p, dtype=float)), side="left")
        return self.t[np.minimum(idx, self.t.size - 1)]

    @property
    def mean(self) -> float:
        """The area under S up to the last ended lifetime (a lower bound when the tail is censored)."""
        widths = np.diff(np.concatenate([[0.0], self.t]))
        before = np.concatenate([[1.0], self.survival[:-1]])
        return float(np.sum(widths * before))


def kaplan_meier(data: Lifetimes) -> KaplanMeier:
    times = np.concatenate([data.x, data.c])
    ended = np.concatenate([np.ones(data.x.size, bool), np.zeros(data.c.size, bool)])
    order = np.argsort(times, kind="stable")
    times, ended = times[order], ended[order]
    first = np.flatnonzero(np.concatenate([[True], times[1:] != times[:-1]]))
    uniq = times[first]
    deaths = np.add.reduceat(ended.astype(float), first)
    at_risk = times.size - first
    survival = np.cumprod(1.0 - deaths / at_risk)
    keep = deaths > 0
    return KaplanMeier(np.exp(uniq[keep]), survival[keep], int(deaths.sum()))


def ks_distance(km: KaplanMeier, mu: float, sigma: float) -> float:
    """Largest gap between Kaplan–Meier and the lognormal survival, at and just before each ended lifetime."""
    fitted = special.ndtr(-(np.log(km.t) - mu) / sigma)
    before = np.concatenate([[1.0], km.survival[:-1]])
    return float(max(np.max(np.abs(km.survival - fitted)), np.max(np.abs(before - fitted))))


def lognormal_rejected(distance: float, events: int) -> bool:
    """Rejected when the distance exceeds both the 5 % Lilliefors value for ``events`` and REJECT_FLOOR."""
    return distance > max(LILLIEFORS_5 / math.sqrt(max(events, 1)), REJECT_FLOOR)


def empirical_samples(km: KaplanMeier, count: int = 500) -> np.ndarray:
    """``count`` lifetimes at evenly spaced probabilities of the Kaplan–Meier law (its quantiles)."""
    return km.quantile((np.arange(count) + 0.5) / count)


def bootstrap_km(
    data: Lifetimes, replicates: int, rng: np.random.Generator, probabilities: tuple[float, ...]
) -> np.ndarray:
    """Kaplan–Meier quantiles of each replicate, shape (replicates, len(probabilities)), seconds."""
    x, xn = _atoms(data.x, data.rows)
    c, cn = _atoms(data.c, data.rows)
    atoms = np.concatenate([x, c])
    order = np.argsort(atoms, kind="stable")
    counts = _resampled(rng, np.concatenate([xn, cn]), data, replicates)[:, order]
    deaths = counts * np.concatenate([np.ones(x.size), np.zeros(c.size)])[order]
    at_risk = data.rows - np.cumsum(counts, axis=1) + counts
    survival = np.cumprod(1.0 - np.divide(deaths, at_risk, out=np.zeros_like(deaths), where=at_risk > 0), axis=1)
    t = np.exp(atoms[order])
    out = np.empty((replicates, len(probabilities)))
    for j, prob in enumerate(probabilities):
        hit = survival <= 1.0 - prob
        idx = np.where(hit.any(axis=1), np.argmax(hit, axis=1), t.size - 1)
        out[:, j] = t[idx]
    return out
