"""The metrics of a pipelined plan (MODEL.md §6 with §14's keys), from the batch the pair table reads.

The §6 keys keep their meaning where a batch run has one: ``attempts_per_s`` is ``N/L``; ``token_demand_per_s``
is what the supply must carry for the batch to fit its generation budget, ``N·tokens/(L - t_s - U)`` (``k = 0``)
or ``N·tokens/(L - t_s)`` (``k = 1``), so ``throughput_margin`` is the slack of that row; nothing is dropped
(``exceedance`` and ``group_drop_rate`` 0) and every consumed trajectory has the batch's gap. No pyomo.
"""

from __future__ import annotations

import math

import numpy as np

from trainground.models.instance import Instance
from trainground.models.result import Metrics, Plan
from trainground.solver.laws import calculus as calc
from trainground.solver.laws import holding
from trainground.solver.laws import regimes as law
from trainground.solver.regimes.admission import Admission, publish_peaks
from trainground.solver.regimes.batch import Batch, launch_peak
from trainground.solver.regimes.drop import Drop
from trainground.solver.table.pairs import shape_availability


def batch_metrics(inst: Instance, plan: Plan, batch: Batch, allowance: float = 0.0) -> Metrics:
    """MODEL §6 and §14's metrics of a pipelined ``plan``; ``allowance`` as :func:`solver.mip.metrics.plan_metrics`."""
    env = inst.environment
    L = plan.cadence_s
    update = float(calc.update_time(inst.training.update_time, plan.training_gpus))
    budget = float(batch.generation_budget(L, update))
    supply = batch_supply(inst, plan)
    need = batch.attempts * batch.tokens
    demand = need / budget if budget > 0 else math.inf
    phase = law.generation_phase(batch.attempts, batch.tokens, supply, batch.slowest) if supply > 0 else math.inf
    shares = np.array([b.share for b in env.backends])
    mean_load = batch.attempts / L * batch.w_use * shares
    launch = launch_peak(inst, batch)
    occ = calc.occupancy_of(env.occupancy)
    return Metrics(
        effective_trajectories_per_s=inst.workload.batch_trajectories / L,
        attempts_per_s=batch.attempts / L,
        token_demand_per_s=demand,
        token_supply_per_s=supply,
        update_time_s=update,
        inflight_mean=float(mean_load.sum()),
        inflight_peak=float(np.maximum(mean_load * env.peak_to_mean, launch).sum()),
        occupancy_mean_s=law.timeout_mean(occ, law.timeout_of(inst)),
        mean_version_gap=batch.gap,
        p99_version_gap=batch.gap,
        exceedance=0.0,
        group_drop_rate=0.0,
        effective_intake=batch.intake,
        time_margin=(inst.schedule.deadline - plan.makespan_s - allowance) / inst.schedule.deadline,
        throughput_margin=supply / demand - 1,
        update_margin=1 - update / L,
        generation_phase_s=phase,
        slowest_attempt_s=batch.slowest,
        generation_busy_share=law.busy_share(batch.attempts, batch.tokens, supply, phase) if supply > 0 else 0.0,
        launch_peak=float(launch.sum()),
        consumed_mean_gap=batch.gap,
        consumed_p99_gap=batch.gap,
    )


def batch_supply(inst: Instance, plan: Plan) -> float:
    """Σ_s x_s·a·g_s·r_s [tokens/s]: one version resident, no slowdown, no sync factor (t_s is in L)."""
    replicas = {r.shape: r.replicas for r in plan.inference}
    a = shape_availability(inst)
    terms = [
        replicas[s.name] * a[i] * s.gpus_per_replica * s.tokens_per_gpu_s for i, s in enumerate(inst.inference.shapes)
    ]
    return math.fsum(terms)


def admission_metrics(inst: Instance, plan: Plan, a: Admission, allowance: float = 0.0) -> Metrics:
    """MODEL §6 and §14's metrics of an admission plan: the attempt rate ``B/(L·p_eff)``, the supply after the
    sync factor, the publish peak as the launch, the consumed gaps, E[M_g] as the slowest attempt; under hold the
    in-flight mean at mean(W_τ) and the sized loads E^hold_b over W_τ (MODEL §11 item 2 with §14)."""
    env = inst.environment
    L = plan.cadence_s
    update = float(calc.update_time(inst.training.update_time, plan.training_gpus))
    attempts = inst.workload.batch_trajectories / (L * a.intake)
    demand = attempts * float(a.tokens_per_attempt(L))
    supply = batch_supply(inst, plan) * max(0.0, 1.0 - a.sync / L)
    shares = np.array([b.share for b in env.backends])
    burst = publish_peaks(inst, a, L)
    occ = calc.occupancy_of(env.occupancy)
    tau = law.timeout_of(inst)
    if inst.holds:  # MODEL §11 item 2 over W_τ: the mean at mean(W_τ), rows 5 at E^hold_b
        mean_load = attempts * a.mean_cut * shares
        sized = law.hold_inflight(inst, occ, tau, np.array([attempts]))[0]
    else:
        mean_load = sized = attempts * a.w_use * shares
    mean_gap = float(a.mean_gap(L, update))
    p99 = law.consumed_gaps(occ, law.group_draws(inst), tau, L)[1] + a.post
    return Metrics(
        effective_trajectories_per_s=inst.workload.batch_trajectories / L,
        attempts_per_s=attempts,
        token_demand_per_s=demand,
        token_supply_per_s=supply,
        update_time_s=update,
        inflight_mean=float(mean_load.sum()),
        inflight_peak=float(np.maximum(sized * env.peak_to_mean, burst).sum()),
        occupancy_mean_s=a.mean_cut,
        mean_version_gap=mean_gap,
        p99_version_gap=float(p99),
        exceedance=0.0,
        group_drop_rate=0.0,
        effective_intake=a.intake,
        time_margin=(inst.schedule.deadline - plan.makespan_s - allowance) / inst.schedule.deadline,
        throughput_margin=supply / demand - 1,
        update_margin=1 - update / L,
        slowest_attempt_s=a.group_max,
        generation_busy_share=demand / supply if supply > 0 else 0.0,
        launch_peak=float(burst.sum()),
        consumed_mean_gap=mean_gap,
        consumed_p99_gap=float(p99),
        recompute_share=attempts * a.recompute / L / demand if demand > 0 else 0.0,
        inflight_sized=float(sized.sum()) if inst.holds else None,
    )


def drop_metrics(inst: Instance, plan: Plan, d: Drop, allowance: float = 0.0) -> Metrics:
    """MODEL §6 and §14's metrics of an async drop plan with regime fields set: §2's figures over the lifetimes W_τ
    at the plan's cadence and age limit K, the supply with its resident versions and the sync factor, the token
    demand with its re-prefills, and §11 item 3's consumed gap at K (the gap counts from the launch version). On
    the hold basis (§11 with §14) the version gaps are the consumed gap's, the in-flight mean is at mean(W_τ) and
    the peaks at E^hold_b over the cut moments."""
    w, env, fr = inst.workload, inst.environment, inst.freshness
    L = plan.cadence_s
    K = plan.age_limit if plan.age_limit is not None else plan.versions_kept
    q = float(d.exceedance(L, K))
    drop = float(calc.group_drop(q, w.group_size, fr.overrun_policy, fr.group_correlation))
    intake = d.intake * (1.0 - drop)
    attempts = w.batch_trajectories / (L * intake) if intake > 0 else math.inf
    recompute = float(d.recompute(attempts, L))
    demand = float(d.token_demand(attempts, L))
    replicas = {r.shape: r.replicas for r in plan.inference}
    mult = calc.supply_multiplier
    terms = [
        replicas[s.name]
        * a
        * s.gpus_per_replica
        * s.tokens_per_gpu_s
        * float(mult(s.version_slowdown, plan.versions_kept))
        for a, s in zip(shape_availability(inst), inst.inference.shapes)
    ]
    supply = math.fsum(terms) * float(d.sync_kept(L))
    update = float(calc.update_time(inst.training.update_time, plan.training_gpus))
    shares = np.array([b.share for b in env.backends])
    consumed = holding.consumed_gaps(inst, d.occupancy, L, K, d.tau)
    if inst.holds:  # MODEL §11 items 2 and 3 over W_τ
        mean_load = attempts * d.mean_cut * shares
        sized = law.hold_inflight(inst, d.occupancy, d.tau, np.array([attempts]))[0]
        gaps = consumed
    else:
        mean_load = sized = attempts * d.w_use * shares
        gaps = (d.w_use / L + d.post, d.p99 / L + d.post)
    return Metrics(
        effective_trajectories_per_s=w.batch_trajectories / L,
        attempts_per_s=attempts,
        token_demand_per_s=demand,
        token_supply_per_s=supply,
        update_time_s=update,
        inflight_mean=float(mean_load.sum()),
        inflight_peak=float(sized.sum() * env.peak_to_mean),
        occupancy_mean_s=d.mean_cut,
        mean_version_gap=gaps[0],
        p99_version_gap=gaps[1],
        exceedance=q,
        group_drop_rate=drop,
        effective_intake=intake,
        time_margin=(inst.schedule.deadline - plan.makespan_s - allowance) / inst.schedule.deadline,
        throughput_margin=supply / demand - 1,
        update_margin=1 - update / L,
        generation_busy_share=demand / supply if supply > 0 else 0.0,
        launch_peak=float(sized.sum() * env.peak_to_mean),
        consumed_mean_gap=consumed[0],
        consumed_p99_gap=consumed[1],
        recompute_share=recompute / demand if d.in_flight and demand > 0 else None,
        inflight_sized=float(sized.sum()) if inst.holds else None,
    )
