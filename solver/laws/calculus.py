"""The seed article's arithmetic as pure functions (MODEL.md §2), vectorised over the cadence grid.

No pyomo here: these closed forms feed `explain`, the MIP's coefficients and the
plan verifier alike. Times are seconds, rates per second.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from trainground.models.instance import Z_99, AmdahlLaw, Empirical, Instance, InverseLaw, Lognormal, TableLaw
from trainground.solver.laws.normal import ndtr
from trainground.solver.tolerances import GRID_TOP_TOL, INTEGER_TOL, REL_TOL

_STANDARD_NORMAL = NormalDist()


def ndtri(p: float) -> float:
    """Standard normal quantile."""
    return _STANDARD_NORMAL.inv_cdf(p)


def ceil_tol(x, rel: float = REL_TOL):
    """Ceiling that does not round 13.000000000001 up to 14 (floating noise from products of inputs):
    values within ``rel`` (relative, at least absolute) above an integer round down to it; inf stays."""
    x = np.asarray(x, dtype=float)
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(x), np.ceil(x - rel * np.maximum(1.0, np.abs(x))), x)


@dataclass(frozen=True)
class Occupancy:
    """Sandbox occupancy W: lognormal (mu, sigma) or the empirical law of sorted samples."""

    mean: float
    median: float
    p99: float
    mu: float | None = None
    sigma: float | None = None
    samples: np.ndarray | None = None
    _prefix: np.ndarray | None = None

    def limited_mean(self, t):
        """E[min(W, t)] for t >= 0 (vectorised): the integral of the survival function from 0 to t."""
        t = np.asarray(t, dtype=float)
        if self.samples is None:
            return lognormal_limited_mean(self.mean, self.mu, self.sigma, t)
        n = self.samples.size
        below = np.searchsorted(self.samples, t, side="right")
        return (self._prefix[below] + t * (n - below)) / n

    def survival(self, t):
        t = np.asarray(t, dtype=float)
        if self.samples is None:
            with np.errstate(divide="ignore"):
                return 1.0 - ndtr((np.log(t) - self.mu) / self.sigma)
        return 1.0 - np.searchsorted(self.samples, t, side="right") / self.samples.size

    def log_params(self) -> tuple[float, float]:
        """(mu, sigma) of a lognormal law; an empirical law has none."""
        if self.mu is None or self.sigma is None:
            raise ValueError("an empirical occupancy has no lognormal parameters")
        return self.mu, self.sigma

    def draws(self) -> np.ndarray:
        """The sorted samples of an empirical law; a lognormal law has none."""
        if self.samples is None:
            raise ValueError("a lognormal occupancy has no samples")
        return self.samples

    def quantile(self, p: float) -> float:
        if self.samples is None:
            return float(math.exp(self.mu + self.sigma * ndtri(p)))
        return float(np.quantile(self.samples, p))


def lognormal(mu: float, sigma: float) -> Occupancy:
    mean, median, p99 = lognormal_figures(mu, sigma)
    return Occupancy(mean=float(mean), median=float(median), p99=float(p99), mu=mu, sigma=sigma)


def fit_lognormal(median=None, p99=None, mean=None, sigma=None) -> Occupancy:
    """The lognormal fixed by any two of median, p99, mean, sigma (MODEL.md §2)."""
    mu, s = lognormal_params(median, p99, mean, sigma)
    return lognormal(float(mu), float(s))


# ---------------------------------------------------------------- the lognormal's formulas, over arrays that broadcast
# (numbers for the instance's law, one value per scenario for MODEL §9's: solver.uncertainty.lifetimes)


def lognormal_params(median=None, p99=None, mean=None, sigma=None) -> tuple[np.ndarray, np.ndarray]:
    """(mu, sigma) of the lognormal fixed by any two of median, p99, mean, sigma (MODEL.md §2). The square roots
    are taken of at least 0: a law the loader accepts never reaches that floor; a scenario's scaled figures can."""
    if median is not None and p99 is not None:
        return np.log(median), np.log(p99 / median) / Z_99
    if median is not None and mean is not None:
        return np.log(median), np.sqrt(np.maximum(2 * np.log(mean / median), 0.0))
    if median is not None and sigma is not None:
        return np.log(median), np.asarray(sigma)
    if p99 is not None and sigma is not None:
        return np.log(p99) - Z_99 * sigma, np.asarray(sigma)
    if mean is not None and sigma is not None:
        return np.log(mean) - sigma * sigma / 2, np.asarray(sigma)
    if p99 is not None and mean is not None:
        # ln p99 - ln mean = z s - s^2/2: the smaller root keeps p99 above the median.
        gap = np.log(p99 / mean)
        s = Z_99 - np.sqrt(np.maximum(Z_99 * Z_99 - 2 * gap, 0.0))
        return np.log(mean) - s * s / 2, s
    raise ValueError("a lognormal needs two of median, p99, mean, sigma")


def lognormal_figures(mu, sigma) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, median, p99) of the lognormal (mu, sigma): e^(mu + sigma²/2), e^mu, e^(mu + z_0.99·sigma)."""
    return np.exp(mu + sigma * sigma / 2), np.exp(mu), np.exp(mu + Z_99 * sigma)


def lognormal_limited_mean(mean, mu, sigma, t) -> np.ndarray:
    """E[min(W, t)] of the lognormal (mu, sigma) of mean ``mean``: the integral of its survival function from 0
    to t, mean·Φ((ln t - mu - sigma²)/sigma) + t·(1 - Φ((ln t - mu)/sigma))."""
    with np.errstate(divide="ignore"):
        log_t = np.log(t)
    # both Φ's in one call: on a few values, a call costs its count of numpy passes, not its length
    head, tail = ndtr(np.stack(np.broadcast_arrays((log_t - mu - sigma**2) / sigma, (log_t - mu) / sigma)))
    return mean * head + t * (1.0 - tail)


def empirical(samples) -> Occupancy:
    ordered = np.sort(np.asarray(samples, dtype=float))
    prefix = np.concatenate(([0.0], np.cumsum(ordered)))
    return Occupancy(
        mean=float(ordered.mean()),
        median=float(np.median(ordered)),
        p99=float(np.quantile(ordered, 0.99)),
        samples=ordered,
        _prefix=prefix,
    )


def occupancy_of(spec: Lognormal | Empirical) -> Occupancy:
    if isinstance(spec, Lognormal):
        return fit_lognormal(spec.median, spec.p99, spec.mean, spec.sigma)
    return empirical(spec.samples)


def occupancy_used(occ: Occupancy, uses: str) -> float:
    """W_use: the occupancy figure Little's law and the mean gap use (mean or median)."""
    return occ.mean if uses == "mean" else occ.median


def exceedance(occ: Occupancy, cadence, kept):
    """q(L, K) = P(gap > K) = ∫_K^{K+1} S(vL) dv = (E[min(W,(K+1)L)] - E[min(W,KL)]) / L."""
    L = np.asarray(cadence, dtype=float)
    K = np.asarray(kept, dtype=float)
    at_k, at_next = occ.limited_mean(np.stack(np.broadcast_arrays(K * L, (K + 1) * L)))  # both in one call
    return exceedance_of_means(at_k, at_next, L)


def exceedance_of_means(at_k, at_next, cadence):
    """q(L, K) from E[min(W, KL)] (``at_k``) and E[min(W, (K+1)L)] (``at_next``), clipped to [0, 1]."""
    return np.clip((at_next - at_k) / cadence, 0.0, 1.0)


def group_drop(q, group_size: int, policy: str, correlation: str):
    """Share of GRPO groups dropped: independent 1-(1-q)^g, comonotone q; 0 under downweight."""
    q = np.asarray(q, dtype=float)
    if policy == "downweight":
        return np.zeros_like(q)
    if correlation == "comonotone" or group_size == 1:
        return q
    with np.errstate(divide="ignore"):
        return -np.expm1(group_size * np.log1p(-np.minimum(q, 1.0)))


def group_drop_bounds(q, group_size: int):
    """(lower, upper) group drop: comonotone durations give q, independent ones 1-(1-q)^g."""
    return group_drop(q, group_size, "drop", "comonotone"), group_drop(q, group_size, "drop", "independent")


def mean_version_gap(w_use, cadence, convention: str):
    """W_use/L (+1 under post_publish), numbers or arrays that broadcast."""
    return w_use / np.asarray(cadence, dtype=float) + (1.0 if convention == "post_publish" else 0.0)


def p99_version_gap(occ: Occupancy, cadence, convention: str):
    return occ.p99 / np.asarray(cadence, dtype=float) + (1.0 if convention == "post_publish" else 0.0)


def update_time(law: InverseLaw | AmdahlLaw | TableLaw, gpus):
    """U(G_t) seconds per update on G_t training GPUs; NaN outside a table's measured range."""
    g = np.asarray(gpus, dtype=float)
    if isinstance(law, InverseLaw):
        return law.reference_time * law.reference_gpus / g
    if isinstance(law, AmdahlLaw):
        f = law.serial_fraction
        return law.reference_time * (f + (1 - f) * law.reference_gpus / g)
    xs = np.array([p.gpus for p in law.points])
    ys = np.array([p.seconds for p in law.points])
    inside = (g >= xs[0] * (1 - REL_TOL)) & (g <= xs[-1] * (1 + REL_TOL))
    return np.where(inside, np.interp(g, xs, ys), np.nan)


def cadence_grid(inst: Instance) -> np.ndarray:
    """The cadence grid of MODEL.md §2: min + j·step up to max (default the deadline pace)."""
    c = inst.schedule.cadence
    return c.min + c.step * np.arange(grid_points(inst))


def grid_points(inst: Instance) -> int:
    """The points of :func:`cadence_grid`, counted without building it."""
    c = inst.schedule.cadence
    top = cadence_top(inst)
    if top < c.min * (1 - REL_TOL):
        return 0
    return int(math.floor((top - c.min) / c.step * (1 + INTEGER_TOL) + GRID_TOP_TOL)) + 1


def cadence_top(inst: Instance) -> float:
    """The grid's largest cadence: cadence.max, or by default the deadline pace."""
    c = inst.schedule.cadence
    return c.max if c.max is not None else deadline_pace(inst)


def deadline_pace(inst: Instance) -> float:
    return (inst.schedule.deadline - inst.schedule.extra_time) / inst.workload.iterations


def makespan(inst: Instance, cadence):
    return inst.workload.iterations * np.asarray(cadence, dtype=float) + inst.schedule.extra_time


def time_margin(inst: Instance, cadence):
    return (inst.schedule.deadline - makespan(inst, cadence)) / inst.schedule.deadline


def group_range(inst: Instance) -> tuple[int, int]:
    """Admissible training groups min_groups..max_groups (default: as many as fit the pool)."""
    t = inst.training
    fit = inst.pool(t.pool).gpus // t.gpus_per_group
    top = fit if t.max_groups is None else min(t.max_groups, fit)
    return t.min_groups, top


def min_groups_for(inst: Instance, cadence) -> np.ndarray:
    """Smallest admissible m with U(m·gpus_per_group) <= L, per cadence; 0 where none exists.

    Fewer groups never hurt (they free pool GPUs and cost less), so the fewest that
    keep up is the only training choice worth making at a given cadence.
    """
    lo, hi = group_range(inst)
    L = np.atleast_1d(np.asarray(cadence, dtype=float))
    if hi < lo:
        return np.zeros(L.shape, dtype=int)
    groups = np.arange(lo, hi + 1)
    u = update_time(inst.training.update_time, groups * inst.training.gpus_per_group)
    best = np.minimum.accumulate(np.where(np.isnan(u), np.inf, u))
    first = np.searchsorted(-best, -L * (1 + REL_TOL), side="left")
    return np.where(first < groups.size, groups[np.minimum(first, groups.size - 1)], 0)


def free_gpus(inst: Instance, pool, groups):
    """GPUs of ``pool`` left for inference beside ``groups`` training groups (which use the training pool)."""
    groups = np.asarray(groups)
    train = groups * inst.training.gpus_per_group if pool.name == inst.training.pool else np.zeros_like(groups)
    return np.maximum(pool.gpus - train, 0)


def supply_multiplier(slowdown, kept):
    """Throughput kept with K resident versions: 1 - slowdown·(K-1), clipped at 0 (numbers or arrays that
    broadcast)."""
    return np.maximum(0.0, 1.0 - slowdown * (np.asarray(kept, dtype=float) - 1.0))


def host_footprint(host, backend) -> float:
    """Share of one node or VM that one environment of ``backend`` takes: its density slot, or its
    cores or memory where both host and backend give them, whichever is largest."""
    share = 1.0 / host.density[backend.name]
    if host.cores and backend.cores:
        share = max(share, backend.cores / host.cores)
    if host.memory_gb and backend.memory_gb:
        share = max(share, backend.memory_gb / host.memory_gb)
    return share


# ---------------------------------------------------------------- a share's interval (MODEL.md §9)


Z95 = 1.959963984540054  # standard normal quantile at 0.975: a two-sided 95 % interval


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a binomial share ``successes/n`` (the whole [0, 1] when n is 0)."""
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    denominator = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    lo = 0.0 if successes == 0 else max(0.0, centre - half)  # the bounds are 0 and 1 exactly at the ends
    hi = 1.0 if successes == n else min(1.0, centre + half)
    return lo, hi
