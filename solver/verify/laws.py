"""The verifier's own reading of MODEL.md §2 and §8: occupancy, exceedance, drops, update laws, start-up,
and :func:`run_at`, every quantity of a plan's (L, K, m) from them.

Used by :mod:`solver.verify.plan` only, and written apart from the model's calculus on purpose
(STYLE.md: a checker must not share the code it checks). The lognormal is fitted from
MODEL §2's formulas, its exceedance is a numerical integral of the survival function
(:func:`integral`, adaptive Gauss-Legendre), the empirical law integrates its step functions
piece by piece, and the start-up fill of §8 is a root (Newton's method) of an integrated CDF.
Nothing here imports from solver/ but the verifier's own reading of §13 (:mod:`solver.verify.goodput`),
nor scipy: importing scipy beside pyomo makes pyomo's deferred-import hook load scipy.stats too, over a
second of CPU at the start of every command.
"""

from __future__ import annotations

import bisect
import dataclasses
import heapq
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from statistics import NormalDist

import numpy as np

from trainground.models.instance import AmdahlLaw, Empirical, Instance, InverseLaw, Lognormal, TableLaw
from trainground.solver.verify.goodput import trainer_at

Z99 = NormalDist().inv_cdf(0.99)  # standard normal quantile at 0.99 (MODEL §2's z_0.99)
QUAD_REL = 1e-13  # relative accuracy asked of every numerical integral
QUAD_PANELS = 400  # at most this many panels per integral (the integrands here need a handful)
QUAD_ULPS = 50  # rounding floor of a panel's error, in ulps of its magnitude
ROOT_XTOL = 1e-9  # s: the fill's Newton iteration stops once a step is this short (plus a few ulps of the root)
ROOT_STEPS = 100  # at most this many Newton steps (quadratic convergence needs a handful), then bisection
TABLE_TOL = 1e-9  # a table law's measured range, widened by this relative margin at both ends
_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(12)


def integral(f: Callable[[float], float], a: float, b: float) -> float:
    """∫_a^b f(x) dx for a smooth f on [a, b], to QUAD_REL of its value.

    Globally adaptive 12-point Gauss-Legendre: a panel's error is bounded by how far its rule lies from the
    sum of the rule on its two halves (which is the value kept), and the panel with the largest error is
    halved until the errors add up to QUAD_REL of the integral, or to rounding (a few ulps of each panel's
    magnitude), or QUAD_PANELS panels are in use, whose estimate is then the best one at hand.
    """
    if not b > a:
        return 0.0

    def rule(lo: float, hi: float) -> float:
        half = (hi - lo) / 2
        return half * math.fsum(w * f(lo + half * (1.0 + x)) for x, w in zip(_GL_NODES, _GL_WEIGHTS))

    def panel(lo: float, hi: float, coarse: float) -> tuple[float, float, float, float, float, float]:
        """(-error, lo, hi, value, left half's rule, right half's rule): a heap entry, largest error first."""
        mid = (lo + hi) / 2
        left, right = rule(lo, mid), rule(mid, hi)
        return -abs(left + right - coarse), lo, hi, left + right, left, right

    panels = [panel(a, b, rule(a, b))]
    while len(panels) < QUAD_PANELS:
        error = -math.fsum(p[0] for p in panels)
        total = math.fsum(p[3] for p in panels)
        rounding = QUAD_ULPS * np.finfo(float).eps * math.fsum(abs(p[3]) for p in panels)
        if error <= max(QUAD_REL * abs(total), rounding):
            break
        _, lo, hi, _, left, right = heapq.heappop(panels)
        mid = (lo + hi) / 2
        heapq.heappush(panels, panel(lo, mid, left))
        heapq.heappush(panels, panel(mid, hi, right))
    return math.fsum(p[3] for p in panels)


@dataclass(frozen=True)
class Law:
    """Occupancy W (MODEL §2): a lognormal (mu, sigma) or the empirical law of sorted samples."""

    mean: float
    median: float
    p99: float
    mu: float | None = None
    sigma: float | None = None
    samples: np.ndarray | None = None  # sorted
    memo: Memo | None = field(default=None, compare=False, repr=False)  # where its integrals are remembered

    def cdf(self, t: float) -> float:
        """P(W <= t)."""
        if self.samples is None:
            if t <= 0:
                return 0.0
            return 0.5 * math.erfc(-(math.log(t) - self.mu) / (self.sigma * math.sqrt(2.0)))
        return int(np.searchsorted(self.samples, t, side="right")) / self.samples.size

    def survival(self, t: float) -> float:
        """P(W > t), computed directly (not 1 - cdf) so far tails keep their digits."""
        if self.samples is None:
            if t <= 0:
                return 1.0
            return 0.5 * math.erfc((math.log(t) - self.mu) / (self.sigma * math.sqrt(2.0)))
        return 1.0 - self.cdf(t)


class Memo:
    """The verifier's lognormal integrals, remembered for a caller that verifies many plans of one instance (a
    Planner over a frontier's solves, many of one (L, K)): one dict keyed by (quantity, mu, sigma, its
    arguments). A lognormal law is a function of (mu, sigma), so a key names one value whichever law asks;
    an empirical law's integrals are exact sums and are not kept. A law carries the memo it reads."""

    def __init__(self) -> None:
        self.values: dict[tuple, float] = {}


def remembered(law: Law, quantity: str, args: tuple, compute: Callable[[], float]) -> float:
    """``compute()``, or its value for (quantity, law, args) from the law's memo, kept there on first use."""
    if law.memo is None or law.samples is not None:
        return compute()
    key = (quantity, law.mu, law.sigma, *args)
    if key not in law.memo.values:
        law.memo.values[key] = compute()
    return law.memo.values[key]


def lognormal_law(mu: float, sigma: float) -> Law:
    return Law(
        mean=math.exp(mu + sigma * sigma / 2), median=math.exp(mu), p99=math.exp(mu + Z99 * sigma), mu=mu, sigma=sigma
    )


def fit_lognormal(spec: Lognormal) -> Law:
    """MODEL §2: sigma = ln(p99/median)/z_0.99, mean = median·exp(sigma²/2), from whichever two are given."""
    med, p99, mean, sigma = spec.median, spec.p99, spec.mean, spec.sigma
    if med is not None:
        if p99 is not None:
            sigma = math.log(p99 / med) / Z99
        elif mean is not None:
            sigma = math.sqrt(2.0 * math.log(mean / med))
        return lognormal_law(math.log(med), sigma)
    if sigma is not None:
        mu = math.log(p99) - Z99 * sigma if p99 is not None else math.log(mean) - sigma * sigma / 2
        return lognormal_law(mu, sigma)
    # p99 and mean: ln(p99/mean) = z·s - s²/2, whose smaller root keeps the median below p99.
    s = Z99 - math.sqrt(Z99 * Z99 - 2.0 * math.log(p99 / mean))
    return lognormal_law(math.log(mean) - s * s / 2, s)


def empirical_law(samples) -> Law:
    ordered = np.sort(np.asarray(samples, dtype=float))
    return Law(
        mean=math.fsum(ordered) / ordered.size,
        median=float(np.median(ordered)),
        p99=float(np.quantile(ordered, 0.99)),
        samples=ordered,
    )


def law_of(spec: Lognormal | Empirical, memo: Memo | None = None) -> Law:
    """The occupancy law of ``spec``, remembering its integrals in ``memo`` when given."""
    law = fit_lognormal(spec) if isinstance(spec, Lognormal) else empirical_law(spec.samples)
    return dataclasses.replace(law, memo=memo) if memo is not None else law


def exceedance(law: Law, cadence: float, kept: int) -> float:
    """MODEL §2: q(L, K) = ∫_K^{K+1} S(vL) dv, S the survival function of W.

    Lognormal: adaptive quadrature. Empirical: S is a step function, so the integral is exact
    per sample: each sample w contributes clip(w/L - K, 0, 1).
    """
    if law.samples is None:
        return remembered(
            law,
            "exceedance",
            (cadence, kept),
            lambda: _clamp(integral(lambda v: law.survival(v * cadence), kept, kept + 1)),
        )
    return _clamp(math.fsum(np.clip(law.samples / cadence - kept, 0.0, 1.0)) / law.samples.size)


def _clamp(share: float) -> float:
    return min(max(share, 0.0), 1.0)


def group_drop(q: float, group_size: int, policy: str, correlation: str) -> float:
    """MODEL §2: independent 1-(1-q)^g, comonotone q; 0 under downweight."""
    if policy == "downweight":
        return 0.0
    if correlation == "comonotone":
        return q
    return -math.expm1(group_size * math.log1p(-q)) if q < 1.0 else 1.0


def update_time(law: InverseLaw | AmdahlLaw | TableLaw, gpus: float) -> float:
    """MODEL §2: U(G_t) in seconds; inf outside a table's measured range (no such plan)."""
    if isinstance(law, InverseLaw):
        return law.reference_time * law.reference_gpus / gpus
    if isinstance(law, AmdahlLaw):
        f = law.serial_fraction
        return law.reference_time * (f + (1.0 - f) * law.reference_gpus / gpus)
    xs = [p.gpus for p in law.points]
    ys = [p.seconds for p in law.points]
    if gpus < xs[0] * (1 - TABLE_TOL) or gpus > xs[-1] * (1 + TABLE_TOL):
        return math.inf
    i = min(max(bisect.bisect_right(xs, gpus) - 1, 0), len(xs) - 2)
    w = min(max((gpus - xs[i]) / (xs[i + 1] - xs[i]), 0.0), 1.0)
    return ys[i] + w * (ys[i + 1] - ys[i])


def group_cdf_integral(law: Law, t: float, members: int) -> float:
    """∫_0^t F(s)^members ds, F the occupancy CDF (members = 1 for one trajectory or comonotone groups)."""
    if t <= 0:
        return 0.0
    if law.samples is not None:
        # F is a step function: F = i/n between the i-th and (i+1)-th smallest samples (and 1 past
        # the largest), so the integral is a sum of rectangles, each cut at t.
        n = law.samples.size
        edges = np.concatenate(([0.0], np.minimum(law.samples, t), [t]))
        return float(np.sum(np.diff(edges) * (np.arange(n + 1) / n) ** members))
    # Split at the median and p99 so each bend of the integrand lies on a piece of its own.
    cuts = [0.0] + [c for c in (law.median, law.p99) if c < t] + [t]
    return math.fsum(integral(lambda s: law.cdf(s) ** members, a, b) for a, b in zip(cuts, cuts[1:]))


def fill_time(law: Law, need: float, members: int) -> float:
    """MODEL §8: the smallest t >= 0 with ∫_0^t F_grp(s) ds >= need, where need = B/(p·R_raw) (seconds).

    Empirical: the integral is piecewise linear in t, so its inverse is read off exactly. Lognormal:
    the integral grows with t (by at most 1 per second): the root is bracketed by doubling, then reached by
    Newton's method from above (bisection where Newton cannot step).
    """
    if need <= 0:
        return 0.0
    if law.samples is None:
        return remembered(law, "fill", (need, members), lambda: _lognormal_fill(law, need, members))
    n = law.samples.size
    levels = (np.arange(n) / n) ** members  # F_grp on [w_(i), w_(i+1)), w_(0) = 0
    reached = np.cumsum(np.diff(np.concatenate(([0.0], law.samples))) * levels)  # the integral at each w_(i+1)
    i = int(np.searchsorted(reached, need, side="left"))
    if i == n:
        return float(law.samples[-1] + (need - reached[-1]))
    before = reached[i - 1] if i else 0.0
    start = law.samples[i - 1] if i else 0.0
    return float(start + (need - before) / levels[i])


def _lognormal_fill(law: Law, need: float, members: int) -> float:
    """:func:`fill_time` of a lognormal law: bracketed by doubling, then Newton's method from above."""
    low, high = 0.0, max(need, law.median)
    excess = group_cdf_integral(law, high, members) - need
    while excess < 0:
        low, high = high, 2.0 * high
        excess = group_cdf_integral(law, high, members) - need
    # The integral is convex in t (its slope F_grp(t) grows), so Newton steps from a point at or above the
    # root stay at or above it and fall onto it. Where F_grp(t) underflows, a step lands below the root by
    # rounding, or the steps run out, the bracket [low, t] is bisected instead.
    t = high
    for _ in range(ROOT_STEPS):
        slope = law.cdf(t) ** members
        following = t - excess / slope if slope > 0 else low
        if not following > low:
            break
        if t - following <= ROOT_XTOL + 4 * np.finfo(float).eps * t:
            return following
        below = group_cdf_integral(law, following, members) - need
        if below < 0:
            low = following
            break
        t, excess = following, below
    return _bisect_fill(law, need, members, low, t)


def _bisect_fill(law: Law, need: float, members: int, low: float, high: float) -> float:
    """The fill's root by bisection between ``low`` (integral below ``need``) and ``high`` (at or above it)."""
    while high - low > ROOT_XTOL + 4 * np.finfo(float).eps * high:
        mid = (low + high) / 2
        if group_cdf_integral(law, mid, members) < need:
            low = mid
        else:
            high = mid
    return (low + high) / 2


@dataclass(frozen=True)
class Run:
    """The quantities of MODEL §2 (and §8) at the plan's cadence L, versions kept K and groups m."""

    law: Law
    w_use: float  # s, the occupancy Little's law uses
    exceedance: float
    drop: float
    intake: float  # p_eff
    attempts: float  # R_raw, 1/s (inf when p_eff = 0)
    update: float  # U(m), s
    startup: float | None  # fill(L, K), s, when computed
    makespan: float  # T, s


def cadence_top(inst: Instance) -> float:
    """MODEL §2: cadence.max, or by default the deadline pace (deadline - extra_time)/n."""
    s = inst.schedule
    return s.cadence.max if s.cadence.max is not None else (s.deadline - s.extra_time) / inst.workload.iterations


def startup_counted(inst: Instance) -> bool:
    """MODEL §8 applies when schedule.count_startup asks for it, and always under planning.basis hold (§11 item 1)."""
    return inst.schedule.count_startup or inst.planning.basis == "hold"


def run_at(inst: Instance, law: Law, cadence: float, kept: int, groups: int, startup: bool) -> Run:
    """MODEL §2 at (L, K, m); T by §8 when the instance counts the start-up (``startup`` also computes
    fill alone, for a plan that reports it), its trainer-paced part divided by §13's goodput γ (inf when
    γ <= 0)."""
    w, fr, sched = inst.workload, inst.freshness, inst.schedule
    q = exceedance(law, cadence, kept)
    drop = group_drop(q, w.group_size, fr.overrun_policy, fr.group_correlation)
    intake = w.intake_rate * (1.0 - drop)
    attempts = w.batch_trajectories / (cadence * intake) if intake > 0 else math.inf
    update = update_time(inst.training.update_time, groups * inst.training.gpus_per_group)
    fill = None
    counted = startup_counted(inst)
    if (startup or counted) and intake > 0:
        members = w.group_size if fr.group_correlation == "independent" else 1
        fill = fill_time(law, w.batch_trajectories / (w.intake_rate * attempts), members)
    gamma = trainer_at(inst, groups * inst.training.gpus_per_group).goodput  # MODEL §13 (1 without it)
    if counted:
        paced = (w.iterations - 1) * cadence + update
        paced = paced if inst.reliability is None else (paced / gamma if gamma > 0 else math.inf)
        span = (fill if fill is not None else math.inf) + paced + sched.extra_time
    elif inst.reliability is None:
        span = w.iterations * cadence + sched.extra_time
    else:
        span = (w.iterations * cadence / gamma if gamma > 0 else math.inf) + sched.extra_time
    w_use = law.mean if inst.environment.littles_law_uses == "mean" else law.median
    return Run(law, w_use, q, drop, intake, attempts, update, fill, span)


@dataclass(frozen=True)
class Row:
    """One resource row of a host type (MODEL §3.5): what one host gives under its cap (u for a node,
    1 for a VM), and what one environment of each backend the host runs takes of it."""

    capacity: float
    load: dict[str, float]


def resource_rows(inst: Instance) -> dict[tuple[str, str, str], Row]:
    """Rows by (kind 'node' | 'vm', host type, resource 'density' | 'cores' | 'memory').

    MODEL §3.5: every host type has a density row (1/density_b per environment, capacity 1); a
    type that states cores (memory_gb) has that row, to which a backend adds its cores (memory_gb),
    or 0 when it states none. A backend never removes a row.
    """
    env = inst.environment
    rows: dict[tuple[str, str, str], Row] = {}
    for kind, hosts, cap in (("node", env.node_types, env.utilisation_cap), ("vm", env.cloud.vm_types, 1.0)):
        for host in hosts:
            runs = [b for b in env.backends if b.name in host.density]
            rows[kind, host.name, "density"] = Row(cap, {b.name: 1.0 / host.density[b.name] for b in runs})
            if host.cores is not None:
                rows[kind, host.name, "cores"] = Row(cap * host.cores, {b.name: b.cores or 0.0 for b in runs})
            if host.memory_gb is not None:
                rows[kind, host.name, "memory"] = Row(cap * host.memory_gb, {b.name: b.memory_gb or 0.0 for b in runs})
    return rows
