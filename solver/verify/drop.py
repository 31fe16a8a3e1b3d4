"""The verifier's reading of MODEL.md §14 for an async drop run with regime fields set — in-flight updates, a rollout
timeout, a concurrency cap, a weight-sync time — and its check of such a plan.

Read from MODEL §14 alone, with this folder's laws: a timeout τ cuts every lifetime, ``W_τ = min(W, τ)``, and every
formula of §2–§3 reads ``W_τ``: an empirical law becomes the empirical law of its cut samples (every integral then
exact), a lognormal's integrals stop at τ (``mean(W_τ) = ∫_0^τ S``, ``E[W_τ²] = ∫_0^τ 2t·S(t) dt``, the exceedance
``∫_K^{min(K+1, τ/L)} S(vL) dv``, the consumed gap's tails ``∫_k^{min(k+1, τ/L)} S_M(vL) dv``), the p99 is
``min(p99, τ)``. Under ``truncated: filter`` the intake is ``p·F(τ)``; tokens per attempt scale by
``mean(W_τ)/mean(W)``; ``recompute: prefix`` adds ``R_raw·mean(W_τ)·prefill_cost·(context_tokens +
tokens·E[W_τ²]/(2·E[W_τ]²))/L`` to the token demand; in-flight updates keep one version resident (the supply has
no version slowdown) and make K the plan's ``age_limit`` alone; the regime's weight sync scales the supply by
``(1 - t_s/L)⁺``; the cap is ``R_raw·mean(W_τ) <= max_concurrent_attempts``.

With the start-up counted (``schedule.count_startup``, always on the hold basis: MODEL §8, §11 item 1) the fill is
the smallest t with ``p·R_raw·∫_0^t F_grp,τ(s) ds = B`` (``F_grp,τ`` = 1 from τ on; ``p`` before drops, the first
batch dropping nothing) and ``T = fill + (n-1)·L + U(m) + extra_time``. On the hold basis rows 5 and 6 hold
``E^hold_b = R_raw·s_b·mean(W_τ) + β·sqrt(V_b)``, V_b from ``mean(W_τ)`` and ``E[min(W_τ, W'_τ)] = ∫_0^τ S(t)²
dt`` (§11 item 2), and the mean gap of constraint 7 and of the outputs is the consumed gap's given ``G <= K``
(§11 item 3). Imports nothing of solver/ but this folder.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from trainground.models.instance import Instance
from trainground.models.result import Metrics, Plan
from trainground.solver.verify import hold, laws
from trainground.solver.verify import regimes as regimes
from trainground.solver.verify.check import FILL_TOL, MAKESPAN_TOL, REL_TOL, Check
from trainground.solver.verify.fleet import check_budgets, check_costs, check_pools
from trainground.solver.verify.hosts import check_host_binding, check_peak_sandbox, check_steady_sandbox
from trainground.solver.verify.metrics import metric_differences

P99_TOL = 1e-12  # relative: a consumed gap's CDF this close below 0.99 reaches its p99 (rounding in the sums)


@dataclass(frozen=True)
class DropReading:
    law: laws.Law  # W; for an empirical law with a timeout, the law of the cut samples min(w, τ)
    tau: float | None  # where the lognormal's integrals stop (None: no timeout, or the samples are cut already)
    intake: float  # p, or p·F(τ) under truncated: filter
    tokens: float  # tokens per attempt, after the timeout's scale
    mean_cut: float  # mean(W_τ), s
    w_use: float  # s
    p99: float  # quantile_0.99(W_τ), s
    recompute: float  # tokens re-prefilled per attempt per publish, times L (0 without recompute: prefix)
    sync: float  # t_s, s
    members: int  # independent lifetimes of a group: g, or 1 when comonotone

    def top(self, t: float) -> float:
        return t if self.tau is None else min(t, self.tau)


def read_drop(inst: Instance, law: laws.Law) -> DropReading:
    """The quantities of an async drop run with regime fields set, as MODEL §14 defines them."""
    r = inst.regime
    assert r is not None
    w, tau = inst.workload, r.rollout_timeout
    intake = w.intake_rate * (law.cdf(tau) if tau is not None and r.truncated == "filter" else 1.0)
    cut, left = law, tau
    if tau is not None and law.samples is not None:
        cut, left = laws.empirical_law(np.minimum(law.samples, tau)), None
    mean_cut = cut.mean if left is None else laws.integral(law.survival, 0.0, left)
    tokens = w.tokens_per_attempt * mean_cut / law.mean
    recompute = 0.0
    if r.in_flight_updates and r.recompute == "prefix":
        if cut.samples is not None:
            second = math.fsum(cut.samples * cut.samples) / cut.samples.size
        else:
            far = law.p99
            while left is None and law.survival(far) > 1e-18:
                far *= 2.0
            far = left if left is not None else 4.0 * far
            second = laws.integral(lambda t: 2.0 * t * law.survival(t), 0.0, far)  # E[W_τ²]
        recompute = mean_cut * r.prefill_cost * (r.context_tokens + tokens * second / (2.0 * mean_cut**2))
    if inst.environment.littles_law_uses == "mean":
        w_use = mean_cut
    else:
        w_use = law.median if tau is None else min(law.median, tau)
    own = r.weight_sync_time
    return DropReading(
        law=cut,
        tau=left,
        intake=intake,
        tokens=tokens,
        mean_cut=mean_cut,
        w_use=w_use,
        p99=cut.p99 if left is None else min(law.p99, left),
        recompute=recompute,
        sync=own if own is not None else 0.0,
        members=1 if inst.freshness.group_correlation == "comonotone" else w.group_size,
    )


def _max_survival(law: laws.Law, t: float, members: int) -> float:
    """P(M > t), M the largest of ``members`` lifetimes."""
    s = law.survival(t)
    return s if members == 1 else (-math.expm1(members * math.log1p(-s)) if s < 1.0 else 1.0)


def exceedance(d: DropReading, cadence: float, kept: int) -> float:
    """MODEL §2's q(L, K) = ∫_K^{K+1} S_τ(vL) dv, S_τ = S below τ and 0 from τ on."""
    if d.tau is None:
        return laws.exceedance(d.law, cadence, kept)
    top = min(kept + 1.0, d.tau / cadence)
    return min(max(laws.integral(lambda v: d.law.survival(v * cadence), kept, top), 0.0), 1.0) if top > kept else 0.0


def consumed_gaps(inst: Instance, d: DropReading, cadence: float, kept: int) -> tuple[float, float]:
    """MODEL §11 item 3 over W_τ: (mean, p99) of G = floor(u + M_τ/L), given G <= K under drop, of G under
    downweight; +1 each under post_publish."""
    if d.tau is None:
        return hold.consumed_gaps(inst, d.law, cadence, kept)
    fr = inst.freshness
    post = 1.0 if fr.gap_convention == "post_publish" else 0.0

    def tail(k: int) -> float:  # P(G > k) = ∫_k^{k+1} S_{M_τ}(vL) dv
        top = min(k + 1.0, d.top((k + 1.0) * cadence) / cadence)
        if not top > k:
            return 0.0
        return min(max(laws.integral(lambda v: _max_survival(d.law, v * cadence, d.members), k, top), 0.0), 1.0)

    if fr.overrun_policy == "drop":
        tails = [tail(k) for k in range(kept + 1)]
        mass = [1.0 - tails[0]] + [tails[k - 1] - tails[k] for k in range(1, kept + 1)]
        share = math.fsum(mass)
        mean = math.fsum(k * p for k, p in enumerate(mass)) / share
        reached = 0.0
        for k, p in enumerate(mass):
            reached += p
            if reached >= 0.99 * share * (1 - P99_TOL):
                return mean + post, k + post
        return mean + post, kept + post
    whole = laws.integral(lambda t: _max_survival(d.law, t, d.members), 0.0, d.top(math.inf))  # E[M_τ]
    k = 0
    while tail(k) > 0.01 * (1 + P99_TOL):
        k += 1
    return whole / cadence + post, k + post


def drop_fill(inst: Instance, d: DropReading, attempts: float) -> float:
    """MODEL §8 over W_τ: the smallest t with p·R_raw·∫_0^t F_grp,τ(s) ds >= B, ``p`` the intake before drops
    (p·F(τ) under truncated: filter), F_grp,τ = F_grp below τ and 1 from τ on."""
    need = inst.workload.batch_trajectories / (d.intake * attempts)
    if d.tau is None:
        return laws.fill_time(d.law, need, d.members)
    by_tau = laws.group_cdf_integral(d.law, d.tau, d.members)  # past τ every group has ended: the integral grows at 1
    return laws.fill_time(d.law, need, d.members) if by_tau >= need else d.tau + (need - by_tau)


def hold_loads(inst: Instance, d: DropReading, attempts: float) -> tuple[dict[str, float], dict[str, float]]:
    """MODEL §11 item 2 over W_τ, per backend: (R_raw·s_b·mean(W_τ), E^hold_b = that + β·sqrt(V_b)), V_b from
    mean(W_τ) and E[min(W_τ, W'_τ)] = ∫_0^τ S(t)² dt (an empirical law's cut samples: their exact pair mean)."""
    return hold.sized_loads(inst, attempts, d.mean_cut, hold.cut_min_of_two_mean(d.law, d.tau))


def verify_drop(inst: Instance, plan: Plan, allowance: float, reported: Metrics | None, out: Check) -> Check:
    """An async drop plan with regime fields set (MODEL §14): its age limit and resident versions, §3's rows over
    W_τ with the supply of the resident versions and the regime's sync, the cap, hosts, costs and budgets; with
    the start-up counted its fill and T, on the hold basis E^hold_b and the consumed gap (§8, §11)."""
    r, fr, w, env, sched = inst.regime, inst.freshness, inst.workload, inst.environment, inst.schedule
    assert r is not None
    d = read_drop(inst, laws.law_of(env.occupancy))
    given = plan.age_limit if plan.age_limit is not None or r.in_flight_updates else plan.versions_kept
    if given is None or not 1 <= given <= fr.max_versions_kept:
        out.violations.append(f"age_limit: {given} is not a K of 1..{fr.max_versions_kept} (MODEL §14)")
        return out
    K = given
    resident = 1 if r.in_flight_updates else K
    if plan.versions_kept != resident:
        out.violations.append(
            f"versions_kept: {resident} resident at age limit {K}, the plan says {plan.versions_kept}"
        )
    used = check_pools(inst, plan, out)
    L = plan.cadence_s
    q = exceedance(d, L, K)
    drop = laws.group_drop(q, w.group_size, fr.overrun_policy, fr.group_correlation)
    intake = d.intake * (1.0 - drop)
    if intake <= 0:
        out.violations.append("effective_intake: every group is dropped (p_eff = 0)")
        return out
    attempts = w.batch_trajectories / (L * intake)
    update = laws.update_time(inst.training.update_time, plan.training_gpus)
    if not update <= L * (1 + REL_TOL):
        out.violations.append(f"update_time: U({plan.training_gpus} GPUs) = {update:.6g} s > cadence {L:g} s")
    holds = inst.planning.basis == "hold"
    if laws.startup_counted(inst):
        fill = drop_fill(inst, d, attempts)
        span = fill + (w.iterations - 1) * L + update + sched.extra_time
        how = "fill + (n-1)·L + U(m) + extra_time"
        if not (plan.startup_s is not None and abs(plan.startup_s - fill) <= FILL_TOL * fill):
            out.violations.append(f"startup_s: plan says {plan.startup_s!r}, recomputed the fill over W_τ = {fill!r}")
    else:
        fill, span, how = 0.0, w.iterations * L + sched.extra_time, "n·L + extra_time"
    if not abs(span - plan.makespan_s) <= MAKESPAN_TOL * span + FILL_TOL * fill:
        out.violations.append(f"makespan_s: plan says {plan.makespan_s!r}, recomputed {how} = {span!r}")
    if not span + allowance <= sched.deadline * (1 + REL_TOL):
        out.violations.append(f"deadline: makespan {span:g} s + allowance {allowance:g} s > {sched.deadline:g} s")
    supply, demand = _throughput(inst, plan, d, resident, attempts, out)
    if r.max_concurrent_attempts is not None and attempts * d.mean_cut > r.max_concurrent_attempts * (1 + REL_TOL):
        out.violations.append(
            f"regime.max_concurrent_attempts: {attempts * d.mean_cut:.6g} running attempts > {r.max_concurrent_attempts}"
        )
    if holds:
        mean_inflight, inflight = hold_loads(inst, d, attempts)
    else:
        mean_inflight = {b.name: attempts * b.share * d.w_use for b in env.backends}
        inflight = dict(mean_inflight)
    peak = {b: e * env.peak_to_mean for b, e in inflight.items()}
    rows = laws.resource_rows(inst)
    check_steady_sandbox(inst, plan, rows, inflight, out)
    check_peak_sandbox(inst, plan, rows, peak, out)
    check_host_binding(inst, plan, rows, out)
    post = 1.0 if fr.gap_convention == "post_publish" else 0.0
    consumed = consumed_gaps(inst, d, L, K)
    mean_gap, p99_gap = consumed if holds else (d.w_use / L + post, d.p99 / L + post)
    for name, limit, value in (
        ("max_mean_gap", fr.max_mean_gap, mean_gap),
        ("max_exceedance", fr.max_exceedance, q),
        ("max_group_drop", fr.max_group_drop, drop),
    ):
        if limit is not None and not out.leq(value, limit):
            out.violations.append(f"{name}: {value:.6g} > {limit:g}")
    hourly, total = check_costs(inst, plan, span, used, out)
    check_budgets(inst, hourly, total, out)
    regimes.check_billed(inst, plan, used, out.violations)
    out.metrics = Metrics(
        effective_trajectories_per_s=w.batch_trajectories / L,
        attempts_per_s=attempts,
        token_demand_per_s=demand,
        token_supply_per_s=supply,
        update_time_s=update,
        inflight_mean=math.fsum(mean_inflight.values()),
        inflight_peak=math.fsum(peak.values()),
        occupancy_mean_s=d.mean_cut,
        mean_version_gap=mean_gap,
        p99_version_gap=p99_gap,
        exceedance=q,
        group_drop_rate=drop,
        effective_intake=intake,
        time_margin=(sched.deadline - plan.makespan_s - allowance) / sched.deadline,
        throughput_margin=supply / demand - 1,
        update_margin=1 - update / L,
        generation_busy_share=demand / supply if supply > 0 else 0.0,
        launch_peak=math.fsum(peak.values()),
        consumed_mean_gap=consumed[0],
        consumed_p99_gap=consumed[1],
        recompute_share=attempts * d.recompute / L / demand if r.in_flight_updates else None,
        inflight_sized=math.fsum(inflight.values()) if holds else None,
    )
    if reported is not None:
        out.violations += metric_differences(out.metrics, reported)
    return out


def _throughput(
    inst: Instance, plan: Plan, d: DropReading, resident: int, attempts: float, out: Check
) -> tuple[float, float]:
    """MODEL §3.2 with §14: Σ_s x_s·a·g_s·r_s·(1 - slowdown_s·(resident - 1))⁺·(1 - t_s/L)⁺ >= R_raw·(tokens +
    recompute/L) [tokens/s]; binding when the supply is within one replica of the demand. Returns (supply, demand)."""
    L, a = plan.cadence_s, inst.inference.availability
    kept = 1.0 - d.sync / L
    if kept <= 0:
        out.violations.append(f"weight_sync: regime.weight_sync_time {d.sync:g} s >= cadence {L:g} s: no generation")
    shapes = {s.name: s for s in inst.inference.shapes}
    per_replica = {
        n: a * s.gpus_per_replica * s.tokens_per_gpu_s * max(0.0, 1.0 - s.version_slowdown * (resident - 1))
        for n, s in shapes.items()
    }
    per_replica = {n: v * max(0.0, kept) for n, v in per_replica.items()}
    replicas = {x.shape: x.replicas for x in plan.inference}
    supply = math.fsum(per_replica[n] * replicas[n] for n in shapes)
    demand = attempts * (d.tokens + d.recompute / L)
    if supply < demand * (1 - REL_TOL) - REL_TOL * d.tokens:
        out.violations.append(f"throughput: supply {supply:.6g} tokens/s < demand {demand:.6g} (W_τ, re-prefills)")
    step = min((per_replica[n] for n in shapes if replicas[n] > 0), default=math.inf)
    if supply - demand < step:
        out.binding.append("throughput")
    return supply, demand
