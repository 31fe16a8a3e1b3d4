"""The verifier's own reading of MODEL.md §11 (plans that hold): the sandbox loads E^hold_b and the version
gap of what batches consume, from the plan's (L, K) and the instance alone.

Written apart from the model's :mod:`solver.laws.holding` on purpose (STYLE.md: a checker must not share the
reading it checks): E[min(W, W')] is a numerical integral of the squared survival function (or the pair
sum of an empirical law), β the root of the Halfin–Whitt equation by bisection on the wait share itself,
and the consumed gap's law is summed term by term from ∫_k^{k+1} S_M(vL) dv, each a quadrature of the
group completion time's survival function. Only :mod:`solver.verify.laws` is imported.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

from trainground.models.instance import Instance
from trainground.solver.verify import laws as laws

_NORMAL = NormalDist()
P99_TOL = 1e-12  # relative: a consumed gap's CDF this close below 0.99 reaches its p99 (rounding in the sums)


def min_of_two_mean(law: laws.Law) -> float:
    """E[min(W, W')] for independent W, W' of the occupancy law."""
    if law.samples is not None:
        # E[min] = (1/n²) Σ_i Σ_j min(w_i, w_j): the i-th smallest (1-based) is the smaller one of 2(n - i) + 1
        # ordered pairs.
        n = law.samples.size
        weights = 2.0 * (n - np.arange(1, n + 1)) + 1.0
        return float(math.fsum(law.samples * weights) / (n * n))
    return laws.remembered(law, "min_of_two_mean", (), lambda: _lognormal_min_of_two_mean(law))


def _lognormal_min_of_two_mean(law: laws.Law) -> float:
    """:func:`min_of_two_mean` of a lognormal law."""

    # Over z = (ln t - mu)/sigma: ∫ S(t)² dt = ∫ sigma·e^(mu + sigma·z)·Φ(-z)² dz, cut where the pieces bend.
    def integrand(z: float) -> float:
        tail = 0.5 * math.erfc(z / math.sqrt(2.0))
        return law.sigma * math.exp(law.mu + law.sigma * z) * tail * tail

    cuts = [-40.0, -8.0, -2.0, 0.0, 2.0, 8.0, 40.0]
    head = math.exp(law.mu + law.sigma * cuts[0])  # ∫ over t below e^(mu - 40·sigma), where S(t) = 1
    return math.fsum([head, *(laws.integral(integrand, a, b) for a, b in zip(cuts, cuts[1:]))])


def wait_share(beta: float) -> float:
    """Halfin–Whitt's probability of waiting at safety factor β: 1/(1 + β·Φ(β)/φ(β))."""
    return 1.0 / (1.0 + beta * _NORMAL.cdf(beta) / _NORMAL.pdf(beta))


def safety_factor(target: float) -> float:
    """β with wait_share(β) = target (wait_share falls from 1 at β = 0): bisection on [0, 40]."""
    lo, hi = 0.0, 40.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if wait_share(mid) > target:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def hold_loads(inst: Instance, law: laws.Law, attempts: float) -> dict[str, float]:
    """MODEL §11 item 2: E^hold_b = R_raw·s_b·mean(W) + β·sqrt(V_b), per backend."""
    return sized_loads(inst, attempts, law.mean, min_of_two_mean(law))[1]


def cut_min_of_two_mean(law: laws.Law, tau: float | None) -> float:
    """E[min(W_τ, W'_τ)] = ∫_0^τ S(t)² dt for lifetimes cut at the rollout timeout τ (MODEL §14); without one,
    :func:`min_of_two_mean`."""
    if tau is None:
        return min_of_two_mean(law)
    cuts = [0.0] + [c for c in (law.median, law.p99) if c < tau] + [tau]
    return math.fsum(laws.integral(lambda t: law.survival(t) ** 2, x, y) for x, y in zip(cuts, cuts[1:]))


def sized_loads(inst: Instance, attempts: float, mean: float, pair: float) -> tuple[dict[str, float], dict[str, float]]:
    """MODEL §11 item 2 per backend, from a lifetime's mean and E[min(W, W')] (``pair``): (R_raw·s_b·mean,
    E^hold_b = that + β·sqrt(V_b)), V_b by the group correlation."""
    beta = safety_factor(inst.planning.sandbox_wait)
    g = inst.workload.group_size
    loads, sized = {}, {}
    for b in inst.environment.backends:
        s = b.share
        if inst.freshness.group_correlation == "comonotone":
            variance = attempts * s * (1 - s) * mean + g * attempts * s * s * (mean - pair)
        else:
            variance = attempts * s * (mean - s * pair)
        loads[b.name] = attempts * s * mean
        sized[b.name] = loads[b.name] + beta * math.sqrt(max(variance, 0.0))
    return loads, sized


def _completion_survival(law: laws.Law, t: float, members: int) -> float:
    """P(M > t), M the largest of ``members`` lifetimes (one for comonotone groups)."""
    if members == 1:
        return law.survival(t)
    return -math.expm1(members * math.log1p(-law.survival(t))) if law.survival(t) < 1.0 else 1.0


def _gap_tail(law: laws.Law, cadence: float, k: int, members: int) -> float:
    """P(G > k) = ∫_k^{k+1} S_M(vL) dv."""
    if law.samples is not None:
        # S_M is a step function with steps at the samples: integrate it exactly between them.
        lo, hi = k * cadence, (k + 1) * cadence
        knots = [lo] + [w for w in law.samples[(law.samples > lo) & (law.samples < hi)].tolist()] + [hi]
        mass = math.fsum(_completion_survival(law, a, members) * (b - a) for a, b in zip(knots, knots[1:]))
        return min(max(mass / cadence, 0.0), 1.0)

    def tail() -> float:
        value = laws.integral(lambda v: _completion_survival(law, v * cadence, members), k, k + 1)
        return min(max(value, 0.0), 1.0)

    return laws.remembered(law, "gap_tail", (cadence, k, members), tail)


def consumed_gaps(inst: Instance, law: laws.Law, cadence: float, kept: int) -> tuple[float, float]:
    """MODEL §11 item 3: (mean, p99) of the consumed gap G = floor(u + M/L): given G <= K under drop, of G
    under downweight; +1 each under post_publish."""
    fr = inst.freshness
    members = inst.workload.group_size if fr.group_correlation == "independent" else 1
    post = 1.0 if fr.gap_convention == "post_publish" else 0.0
    if fr.overrun_policy == "drop":
        tails = [_gap_tail(law, cadence, k, members) for k in range(kept + 1)]
        mass = [1.0 - tails[0]] + [tails[k - 1] - tails[k] for k in range(1, kept + 1)]  # P(G = k), k <= K
        kept_share = math.fsum(mass)
        mean = math.fsum(k * p for k, p in enumerate(mass)) / kept_share
        reached = 0.0
        for k, p in enumerate(mass):
            reached += p
            if reached >= 0.99 * kept_share * (1 - P99_TOL):
                return mean + post, k + post
        return mean + post, kept + post
    # E[G] = E[floor(u + M/L)] = E[M]/L: E[M] = ∫ S_M(t) dt, by quadrature over z = (ln t - mu)/sigma (or the
    # empirical law's steps); the p99 from P(G > k), term by term until it falls to 1 %.
    mean = _completion_mean(law, members) / cadence
    k = 0
    while _gap_tail(law, cadence, k, members) > 0.01 * (1 + P99_TOL):
        k += 1
    return mean + post, k + post


def _completion_mean(law: laws.Law, members: int) -> float:
    """E[M] = ∫_0^∞ P(M > t) dt, M the largest of ``members`` lifetimes."""
    if law.samples is not None:
        knots = np.concatenate(([0.0], law.samples))
        return math.fsum(_completion_survival(law, a, members) * (b - a) for a, b in zip(knots, knots[1:]))

    def integrand(z: float) -> float:
        t = math.exp(law.mu + law.sigma * z)
        return _completion_survival(law, t, members) * law.sigma * t

    cuts = [-40.0, -8.0, -2.0, 0.0, 2.0, 4.0, 8.0, 40.0]
    head = math.exp(law.mu + law.sigma * cuts[0])  # ∫ over t below e^(mu - 40·sigma), where P(M > t) = 1
    return math.fsum([head, *(laws.integral(integrand, a, b) for a, b in zip(cuts, cuts[1:]))])
