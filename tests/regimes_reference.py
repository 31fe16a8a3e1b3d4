"""Test-only brute force for the run regimes of MODEL.md §14, sharing nothing with solver/ but the instance schema
and tests/reference.py's own readings (grid, lognormal law by scipy, update laws, replica vectors, host counts).

Batch runs (pipelined, colocated): every (cadence, training groups) on the grid is tried: the slowest attempt of a
batch ``M_N`` by quadrature of ``1 - F(t)^N'`` (cut at the rollout timeout), the row ``D + U + t_s <= L`` (``k =
0``) or ``max(D, U) + t_s <= L`` (``k = 1``) or ``D + U + t_s + switch_time <= L`` (colocated) with ``D =
max(N·tokens/S, M_N)``, the cheapest replica vector whose supply ``S`` meets it in the pools beside the groups
(colocated: in turn with them), and the cheapest hosts holding the launch peak ``max(peak_to_mean·E, N·s)``.
Admission runs and async drop runs with regime fields set: every (cadence, K, training groups), their rows as
each function says. Instances: one backend, no cloud VMs, peak_to_mean >= 1 (then the peak rows imply the steady
ones), lognormal lifetimes.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import integrate, special

from tests import reference as ref
from trainground.models.instance import Instance

TOL = 1e-9
HOSTS_TOL = 1e-7  # a regime's model is solved to this relative tolerance (solver/tolerances.py): so are its hosts


def slowest(law: ref.Law, draws: int, tau: float | None) -> float:
    """E[max of ``draws`` lifetimes min(W, τ)] = ∫_0^τ (1 - F(t)^draws) dt, in log time."""

    def integrand(x: float) -> float:
        return -math.expm1(draws * math.log(max(special.ndtr((x - law.mu) / law.sigma), 1e-300))) * math.exp(x)

    top = math.log(tau) if tau is not None else law.mu + 40 * law.sigma
    low = law.mu - 12 * law.sigma  # below it F is under 1e-33: the integrand is e^x, whose integral is e^low
    body, _ = integrate.quad(integrand, low, top, epsabs=0, epsrel=1e-12, limit=400)
    return math.exp(low) + body


def cut_mean(law: ref.Law, tau: float | None) -> float:
    if tau is None:
        return law.mean
    value, _ = integrate.quad(law.dist.sf, 0.0, tau, epsabs=0, epsrel=1e-12, limit=200)
    return value


def batch_points(inst: Instance) -> list[ref.Point]:
    """Every cadence with its cheapest plan of a pipelined or colocated run (colocated: the replicas and the
    groups each fit the training pool, which bills the larger)."""
    r = inst.regime
    assert r is not None and r.mode in ("pipelined", "colocated")
    shared = r.mode == "colocated"
    switch = r.switch_time if shared else 0.0
    law = ref.Law(inst.environment.occupancy)
    w, t, env, fr = inst.workload, inst.training, inst.environment, inst.freshness
    tau = r.rollout_timeout
    intake = w.intake_rate * (law.dist.cdf(tau) if tau is not None and r.truncated == "filter" else 1.0)
    n_attempts = w.group_size * math.ceil(w.batch_trajectories / (w.group_size * intake) - 1e-9)
    draws = n_attempts // w.group_size if fr.group_correlation == "comonotone" else n_attempts
    m_n = slowest(law, draws, tau)
    mean = cut_mean(law, tau)
    tokens = w.tokens_per_attempt * mean / law.mean
    w_use = mean if env.littles_law_uses == "mean" else (law.median if tau is None else min(law.median, tau))
    sync = r.weight_sync_time or 0.0
    k = int(r.steps_ahead or 0)
    gap = k + (1 if fr.gap_convention == "post_publish" else 0)
    if fr.max_mean_gap is not None and gap > fr.max_mean_gap * (1 + TOL):
        return []
    if r.max_concurrent_attempts is not None and n_attempts > r.max_concurrent_attempts:
        return []
    replicas = ref._replica_vectors(inst)
    pools = {p.name: p for p in inst.gpu_pools}
    supply = sum(
        inst.inference.availability * s.gpus_per_replica * s.tokens_per_gpu_s * replicas.combos[:, i]
        for i, s in enumerate(inst.inference.shapes)
    )
    sandboxes = ref.Sandboxes(inst)
    sandboxes.w_use = w_use
    fit = pools[t.pool].gpus // t.gpus_per_group
    groups = range(t.min_groups, (fit if t.max_groups is None else min(t.max_groups, fit)) + 1)
    points = []
    for L in ref.grid(inst):
        span = w.iterations * L + inst.schedule.extra_time
        if span > inst.schedule.deadline * (1 + TOL) or m_n + sync + switch > L * (1 + TOL):
            continue
        costs = []
        for m in groups:
            update = ref.update_time(t.update_time, m * t.gpus_per_group)
            budget = L - sync - switch - (update if k == 0 else 0.0)
            busy = m_n + update + sync + switch if k == 0 else max(m_n, update) + sync
            if not math.isfinite(update) or busy > L * (1 + TOL) or budget <= 0:
                continue
            ok = supply >= n_attempts * tokens / budget * (1 - TOL)
            gpus = m * t.gpus_per_group
            for name, pool in pools.items():
                ok &= replicas.use[name] + (gpus if name == t.pool and not shared else 0) <= pool.gpus
            if not ok.any():
                continue
            pool = pools[t.pool]
            price = pool.gpu_hour_cost if pool.billing == "used" else 0.0
            if shared:  # the pool bills the larger of the replicas' GPUs and the groups'
                bill = replicas.cost + price * np.maximum(0.0, gpus - replicas.use[t.pool])
            else:
                bill = replicas.cost + price * gpus
            costs.append(replicas.reserved + float(np.min(bill[ok])))
        if not costs:
            continue
        rate = n_attempts / L
        equivalent = max(rate, n_attempts / (env.peak_to_mean * w_use))  # the launch peak as a rate's peak
        hosts = sandboxes.cheapest(equivalent * (1 - HOSTS_TOL))
        hourly = min(costs) + hosts
        if math.isfinite(hourly):
            points.append(ref.Point(L, 1, span, hourly, hourly * span / 3600))
    return points


def admission_points(inst: Instance) -> list[ref.Point]:
    """Every cadence with its cheapest plan of an admission run (MODEL §14): continuous launches at B/(L·p), the
    admission row (E[M_g]/p + U + t_s)/(k + 1/2) <= L beside U <= L, the supply with the sync factor and the
    re-prefills, the consumed gap (k when the row has under 1 % slack, else E[M_g]/L) within max_mean_gap, and
    hosts holding max(peak_to_mean·E, the publish peak) — every training-group count tried."""
    r = inst.regime
    assert r is not None and r.staleness == "admission"
    law = ref.Law(inst.environment.occupancy)
    w, t, env, fr = inst.workload, inst.training, inst.environment, inst.freshness
    tau = r.rollout_timeout
    intake = w.intake_rate * (law.dist.cdf(tau) if tau is not None and r.truncated == "filter" else 1.0)
    members = 1 if fr.group_correlation == "comonotone" else w.group_size
    group_max = slowest(law, members, tau)
    mean = cut_mean(law, tau)
    tokens = w.tokens_per_attempt * mean / law.mean
    recompute = 0.0
    if r.recompute == "prefix":
        top = tau if tau is not None else law.dist.ppf(1 - 1e-15)
        second, _ = integrate.quad(lambda x: 2 * x * law.dist.sf(x), 0.0, top, epsabs=0, epsrel=1e-12, limit=400)
        recompute = mean * r.prefill_cost * (r.context_tokens + tokens * second / (2 * mean * mean))
    w_use = mean if env.littles_law_uses == "mean" else (law.median if tau is None else min(law.median, tau))
    sync = r.weight_sync_time or 0.0
    k = float(r.steps_ahead)
    post = 1 if fr.gap_convention == "post_publish" else 0
    replicas = ref._replica_vectors(inst)
    pools = {p.name: p for p in inst.gpu_pools}
    rate = sum(
        inst.inference.availability * s.gpus_per_replica * s.tokens_per_gpu_s * replicas.combos[:, i]
        for i, s in enumerate(inst.inference.shapes)
    )
    sandboxes = ref.Sandboxes(inst)
    sandboxes.w_use = w_use
    fit = pools[t.pool].gpus // t.gpus_per_group
    groups = range(t.min_groups, (fit if t.max_groups is None else min(t.max_groups, fit)) + 1)
    points = []
    for L in ref.grid(inst):
        span = w.iterations * L + inst.schedule.extra_time
        if span > inst.schedule.deadline * (1 + TOL):
            continue
        attempts = w.batch_trajectories / (L * intake)
        if r.max_concurrent_attempts is not None and attempts * mean > r.max_concurrent_attempts * (1 + TOL):
            continue
        demand = attempts * (tokens + recompute / L)
        costs = []
        for m in groups:
            update = ref.update_time(t.update_time, m * t.gpus_per_group)
            need = (group_max / intake + update + sync) / (k + 0.5)
            if not math.isfinite(update) or update > L * (1 + TOL) or need > L * (1 + TOL):
                continue
            gap = (k if 1 - need / L < 0.01 else group_max / L) + post
            if fr.max_mean_gap is not None and gap > fr.max_mean_gap * (1 + TOL):
                continue
            ok = rate * max(0.0, 1 - sync / L) >= demand * (1 - TOL)
            for name, pool in pools.items():
                ok &= replicas.use[name] + (m * t.gpus_per_group if name == t.pool else 0) <= pool.gpus
            if ok.any():
                pool = pools[t.pool]
                train = pool.gpu_hour_cost * m * t.gpus_per_group if pool.billing == "used" else 0.0
                costs.append(replicas.reserved + float(np.min(replicas.cost[ok])) + train)
        if not costs:
            continue
        alive, i = 0.0, 0
        while True:
            x = i * L
            s_x = 0.0 if tau is not None and x >= tau else float(law.dist.sf(x)) if i else 1.0
            if s_x < 1e-12:
                break
            alive, i = alive + s_x, i + 1
        burst = w.batch_trajectories / intake * alive
        equivalent = max(attempts, burst / (env.peak_to_mean * w_use))  # the publish peak as a rate's peak
        hourly = min(costs) + sandboxes.cheapest(equivalent * (1 - HOSTS_TOL))
        if math.isfinite(hourly):
            points.append(ref.Point(L, 1, span, hourly, hourly * span / 3600))
    return points


def admission_hold_points(inst: Instance) -> list[ref.Point]:
    """Every (cadence, training groups) with its cheapest plan of an admission run on the hold basis (MODEL §11
    with §14): as :func:`admission_points`, with the start-up counted, T = fill + (n-1)·L + U(m) + extra_time (the
    fill the smallest t with ∫_0^t F_grp,τ = L, F_grp,τ = 1 from τ on), and hosts holding max(peak_to_mean·E^hold,
    the publish peak), E^hold = R·mean(W_τ) + β·sqrt(V) from the cut moments (one backend)."""
    from scipy import optimize, stats

    r = inst.regime
    assert r is not None and r.staleness == "admission" and inst.planning.basis == "hold"
    law = ref.Law(inst.environment.occupancy)
    w, t, env, fr = inst.workload, inst.training, inst.environment, inst.freshness
    tau = r.rollout_timeout
    intake = w.intake_rate * (law.dist.cdf(tau) if tau is not None and r.truncated == "filter" else 1.0)
    members = 1 if fr.group_correlation == "comonotone" else w.group_size
    group_max, mean = slowest(law, members, tau), cut_mean(law, tau)
    tokens = w.tokens_per_attempt * mean / law.mean
    top = tau if tau is not None else float(law.dist.ppf(1 - 1e-15))
    recompute = 0.0
    if r.recompute == "prefix":
        second, _ = integrate.quad(lambda x: 2 * x * law.dist.sf(x), 0.0, top, epsabs=0, epsrel=1e-12, limit=400)
        recompute = mean * r.prefill_cost * (r.context_tokens + tokens * second / (2 * mean * mean))
    pair, _ = integrate.quad(lambda x: law.dist.sf(x) ** 2, 0.0, top, epsabs=0, epsrel=1e-12, limit=400)
    wait = inst.planning.sandbox_wait
    beta = optimize.brentq(lambda b: 1 / (1 + b * special.ndtr(b) / stats.norm.pdf(b)) - wait, 1e-9, 10.0, xtol=1e-15)
    sync, k = r.weight_sync_time or 0.0, float(r.steps_ahead)
    post = 1 if fr.gap_convention == "post_publish" else 0
    replicas = ref._replica_vectors(inst)
    pools = {p.name: p for p in inst.gpu_pools}
    rate = sum(
        inst.inference.availability * s.gpus_per_replica * s.tokens_per_gpu_s * replicas.combos[:, i]
        for i, s in enumerate(inst.inference.shapes)
    )
    sandboxes = ref.Sandboxes(inst)
    sandboxes.per_attempt = [need * mean / sandboxes.w_use for need in sandboxes.per_attempt]
    sandboxes.w_use = mean
    fit = pools[t.pool].gpus // t.gpus_per_group
    points = []
    for L in ref.grid(inst):
        attempts = w.batch_trajectories / (L * intake)
        if r.max_concurrent_attempts is not None and attempts * mean > r.max_concurrent_attempts * (1 + TOL):
            continue
        by_tau = law.cdf_power_integral(tau, members) if tau is not None else math.inf
        fill = law.fill(L, members) if by_tau >= L else tau + (L - by_tau)
        demand = attempts * (tokens + recompute / L)
        variance = (w.group_size if fr.group_correlation == "comonotone" else 1) * attempts * (mean - pair)
        held = attempts * mean + beta * math.sqrt(max(variance, 0.0))
        burst = w.batch_trajectories / intake * _survivors(law, tau, L)
        hosts = sandboxes.cheapest(max(held * env.peak_to_mean, burst) / (env.peak_to_mean * mean) * (1 - HOSTS_TOL))
        for m in range(t.min_groups, (fit if t.max_groups is None else min(t.max_groups, fit)) + 1):
            update = ref.update_time(t.update_time, m * t.gpus_per_group)
            need = (group_max / intake + update + sync) / (k + 0.5)
            if not math.isfinite(update) or update > L * (1 + TOL) or need > L * (1 + TOL):
                continue
            span = fill + (w.iterations - 1) * L + update + inst.schedule.extra_time
            gap = (k if 1 - need / L < 0.01 else group_max / L) + post
            if span > inst.schedule.deadline * (1 + TOL):
                continue
            if fr.max_mean_gap is not None and gap > fr.max_mean_gap * (1 + TOL):
                continue
            ok = rate * max(0.0, 1 - sync / L) >= demand * (1 - TOL)
            for name, pool in pools.items():
                ok &= replicas.use[name] + (m * t.gpus_per_group if name == t.pool else 0) <= pool.gpus
            if ok.any() and math.isfinite(hosts):
                pool = pools[t.pool]
                train = pool.gpu_hour_cost * m * t.gpus_per_group if pool.billing == "used" else 0.0
                hourly = replicas.reserved + float(np.min(replicas.cost[ok])) + train + hosts
                points.append(ref.Point(L, 1, span, hourly, hourly * span / 3600))
    return points


def _survivors(law: ref.Law, tau: float | None, cadence: float) -> float:
    """Σ_{i>=0} S_τ(i·L), S_τ = 0 from τ on."""
    alive, i = 0.0, 0
    while True:
        x = i * cadence
        s_x = 0.0 if tau is not None and x >= tau else float(law.dist.sf(x)) if i else 1.0
        if s_x < 1e-12:
            return alive
        alive, i = alive + s_x, i + 1


def cut_exceedance(law: ref.Law, L: float, K: int, tau: float | None) -> float:
    """q(L, K) of the lifetimes min(W, τ): ∫_K^{K+1} P(min(W, τ) > vL) dv, the survival 0 from τ/L on."""
    top = K + 1.0 if tau is None else min(K + 1.0, tau / L)
    if top <= K:
        return 0.0
    value, _ = integrate.quad(lambda v: law.dist.sf(v * L), K, top, epsabs=1e-14, epsrel=1e-12, limit=200)
    return min(max(value, 0.0), 1.0)


def drop_points(inst: Instance) -> list[ref.Point]:
    """Every (cadence, K) with its cheapest plan of an async drop run with regime fields set (MODEL §14): §2's
    exceedance, drops and attempt rate over min(W, τ) (intake p·F(τ) when cut attempts are filtered), the token
    demand with the timeout's token scale and the re-prefills, the supply of the resident versions (one under
    in-flight updates) after the sync factor, the cap R_raw·mean(W_τ), the freshness limits, every training-group
    count tried, and hosts holding R_raw·W_use (peaks peak_to_mean times that).

    With the start-up counted (count_startup, or the hold basis: MODEL §8, §11) a point per (cadence, K, training
    groups): T = fill + (n-1)·L + U(m) + extra_time, the fill the smallest t with ∫_0^t F_τ(s)^g' ds = B/(p·R_raw)
    (F_τ = 1 from τ on, g' the group's independent lifetimes, p before drops). On the hold basis the mean gap is the
    consumed gap's (G = floor(u + M_τ/L) given G <= K under drop; E[M_τ]/L under downweight), and the hosts hold
    peak_to_mean·E^hold, E^hold = R_raw·mean(W_τ) + β·sqrt(V) from the cut moments (one backend)."""
    from scipy import optimize, stats

    r = inst.regime
    assert r is not None and r.mode == "async" and r.staleness == "drop"
    law = ref.Law(inst.environment.occupancy)
    w, t, env, fr = inst.workload, inst.training, inst.environment, inst.freshness
    counted, holds = inst.schedule.count_startup or inst.planning.basis == "hold", inst.planning.basis == "hold"
    tau = r.rollout_timeout
    intake = w.intake_rate * (law.dist.cdf(tau) if tau is not None and r.truncated == "filter" else 1.0)
    members = 1 if fr.group_correlation == "comonotone" else w.group_size
    mean = cut_mean(law, tau)
    tokens = w.tokens_per_attempt * mean / law.mean
    top = tau if tau is not None else float(law.dist.ppf(1 - 1e-15))
    recompute = 0.0
    if r.in_flight_updates and r.recompute == "prefix":
        second, _ = integrate.quad(lambda x: 2 * x * law.dist.sf(x), 0.0, top, epsabs=0, epsrel=1e-12, limit=400)
        recompute = mean * r.prefill_cost * (r.context_tokens + tokens * second / (2 * mean * mean))
    w_use = mean if env.littles_law_uses == "mean" else (law.median if tau is None else min(law.median, tau))
    sync = r.weight_sync_time or 0.0
    post = 1 if fr.gap_convention == "post_publish" else 0
    replicas = ref._replica_vectors(inst)
    pools = {p.name: p for p in inst.gpu_pools}
    sandboxes = ref.Sandboxes(inst)
    if holds:
        pair, _ = integrate.quad(lambda x: law.dist.sf(x) ** 2, 0.0, top, epsabs=0, epsrel=1e-12, limit=400)
        wait = inst.planning.sandbox_wait
        beta = optimize.brentq(
            lambda b: 1 / (1 + b * special.ndtr(b) / stats.norm.pdf(b)) - wait, 1e-9, 10.0, xtol=1e-15
        )
        sandboxes.per_attempt = [need * mean / sandboxes.w_use for need in sandboxes.per_attempt]
        sandboxes.w_use = mean
    else:
        sandboxes.w_use = w_use
    by_tau = law.cdf_power_integral(tau, members) if tau is not None else math.inf
    fit = pools[t.pool].gpus // t.gpus_per_group
    groups = range(t.min_groups, (fit if t.max_groups is None else min(t.max_groups, fit)) + 1)
    points = []
    for L in ref.grid(inst):
        span = w.iterations * L + inst.schedule.extra_time
        if span - (L if counted else 0.0) > inst.schedule.deadline * (1 + TOL):
            continue
        if not holds and fr.max_mean_gap is not None and w_use / L + post > fr.max_mean_gap * (1 + TOL):
            continue
        for K in range(1, fr.max_versions_kept + 1):
            q = cut_exceedance(law, L, K, tau)
            if fr.overrun_policy == "downweight":
                drop = 0.0
            else:
                drop = q if fr.group_correlation == "comonotone" else 1 - (1 - q) ** w.group_size
            p_eff = intake * (1 - drop)
            if p_eff <= 0:
                continue
            if fr.max_exceedance is not None and q > fr.max_exceedance * (1 + TOL) + 1e-15:
                continue
            if fr.max_group_drop is not None and drop > fr.max_group_drop * (1 + TOL) + 1e-15:
                continue
            if holds and fr.max_mean_gap is not None:
                gap = consumed_mean_gap(law, L, K, tau, members, fr.overrun_policy) + post
                if gap > fr.max_mean_gap * (1 + TOL):
                    continue
            attempts = w.batch_trajectories / (L * p_eff)
            if r.max_concurrent_attempts is not None and attempts * mean > r.max_concurrent_attempts * (1 + TOL):
                continue
            fill = 0.0
            if counted:
                need = w.batch_trajectories / (intake * attempts)
                fill = law.fill(need, members) if by_tau >= need else tau + (need - by_tau)
            resident = 1 if r.in_flight_updates else K
            rate = sum(
                inst.inference.availability
                * s.gpus_per_replica
                * s.tokens_per_gpu_s
                * max(0.0, 1 - s.version_slowdown * (resident - 1))
                * replicas.combos[:, i]
                for i, s in enumerate(inst.inference.shapes)
            )
            ok_supply = rate * max(0.0, 1 - sync / L) >= attempts * (tokens + recompute / L) * (1 - TOL)
            if holds:
                variance = (w.group_size if fr.group_correlation == "comonotone" else 1) * attempts * (mean - pair)
                held = attempts * mean + beta * math.sqrt(max(variance, 0.0))
                hosts = sandboxes.cheapest(held / mean * (1 - HOSTS_TOL))
            else:
                hosts = sandboxes.cheapest(attempts * (1 - HOSTS_TOL))
            costs = []
            for m in groups:
                update = ref.update_time(t.update_time, m * t.gpus_per_group)
                if not math.isfinite(update) or update > L * (1 + TOL):
                    continue
                length = fill + (w.iterations - 1) * L + update + inst.schedule.extra_time if counted else span
                if length > inst.schedule.deadline * (1 + TOL):
                    continue
                ok = ok_supply.copy()
                for name, pool in pools.items():
                    ok &= replicas.use[name] + (m * t.gpus_per_group if name == t.pool else 0) <= pool.gpus
                if ok.any():
                    pool = pools[t.pool]
                    train = pool.gpu_hour_cost * m * t.gpus_per_group if pool.billing == "used" else 0.0
                    costs.append((replicas.reserved + float(np.min(replicas.cost[ok])) + train + hosts, length))
            for hourly, length in costs if counted else sorted(costs)[:1]:  # a point per count when T reads U(m)
                if math.isfinite(hourly):
                    points.append(ref.Point(L, K, length, hourly, hourly * length / 3600))
    return points


def consumed_mean_gap(law: ref.Law, L: float, K: int, tau: float | None, members: int, policy: str) -> float:
    """MODEL §11 item 3 over min(W, τ), consumer convention: the mean of G = floor(u + M_τ/L) given G <= K (drop), or
    E[M_τ]/L (downweight), M_τ the largest of ``members`` cut lifetimes; P(G > k) = ∫_k^{k+1} P(M_τ > vL) dv."""
    if policy == "downweight":
        return slowest(law, members, tau) / L

    def survival(v: float) -> float:  # P(M_τ > vL): 0 from τ on
        x = v * L
        return 0.0 if tau is not None and x >= tau else 1.0 - float(law.dist.cdf(x)) ** members

    def tail(k: int) -> float:
        end = k + 1.0 if tau is None else min(k + 1.0, tau / L)
        if end <= k:
            return 0.0
        value, _ = integrate.quad(survival, k, end, epsabs=1e-14, epsrel=1e-12, limit=200)
        return min(max(value, 0.0), 1.0)

    tails = [tail(k) for k in range(K + 1)]
    mass = [1.0 - tails[0]] + [tails[k - 1] - tails[k] for k in range(1, K + 1)]
    return sum(k * share for k, share in enumerate(mass)) / sum(mass)
