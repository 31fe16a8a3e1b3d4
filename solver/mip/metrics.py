"""The metrics a plan reports (MODEL.md §6), computed on the model's side from its own calculus.

:func:`plan_metrics` reads a plan's decisions (L, K, m, the replica counts and its makespan) through the
helpers the pair table uses (:mod:`solver.laws.calculus`, :mod:`solver.laws.holding`, :mod:`solver.laws.goodput`), so
the figures users read are the model's. The verifier recomputes each from MODEL.md alone and rejects a
plan whose reported metrics differ (:func:`solver.verify.metrics.metric_differences`). No pyomo.
"""

from __future__ import annotations

import math

import numpy as np

from trainground.models.instance import Instance
from trainground.models.result import Metrics, Plan
from trainground.solver.laws import calculus as calc
from trainground.solver.laws import goodput, holding
from trainground.solver.regimes.admission import admission_of
from trainground.solver.regimes.batch import batch_of
from trainground.solver.regimes.drop import drop_of
from trainground.solver.regimes.metrics import admission_metrics, batch_metrics, drop_metrics


def plan_metrics(inst: Instance, plan: Plan, allowance: float = 0.0) -> Metrics:
    """MODEL §6's metrics of ``plan`` (§11's hold figures under that basis, §13's with reliability terms);
    ``allowance`` is the run-variance allowance Δ the time margin counts (§11 item 4)."""
    batch = batch_of(inst)
    if batch is not None:  # a batch run (MODEL §14)
        return batch_metrics(inst, plan, batch, allowance)
    admitted = admission_of(inst)
    if admitted is not None:  # an admission run (MODEL §14)
        return admission_metrics(inst, plan, admitted, allowance)
    dropped = drop_of(inst)
    if dropped is not None:  # an async drop run with regime fields set (MODEL §14)
        return drop_metrics(inst, plan, dropped, allowance)
    w, env, fr = inst.workload, inst.environment, inst.freshness
    occ = calc.occupancy_of(env.occupancy)
    w_use = calc.occupancy_used(occ, env.littles_law_uses)
    L, K = plan.cadence_s, plan.versions_kept
    q = float(calc.exceedance(occ, L, K))
    drop = float(calc.group_drop(q, w.group_size, fr.overrun_policy, fr.group_correlation))
    intake = w.intake_rate * (1.0 - drop)
    attempts = w.batch_trajectories / (L * intake) if intake > 0 else math.inf
    demand = attempts * w.tokens_per_attempt
    supply = _supply(inst, plan, occ.mean)
    update = float(calc.update_time(inst.training.update_time, plan.training_gpus))
    shares = np.array([b.share for b in env.backends])
    mean_inflight = attempts * shares * (occ.mean if inst.holds else w_use)
    sized = holding.hold_inflight(inst, occ, np.array([attempts]))[0] if inst.holds else mean_inflight
    if inst.holds:
        mean_gap, p99_gap = holding.consumed_gaps(inst, occ, L, K)
    else:
        mean_gap = float(calc.mean_version_gap(w_use, L, fr.gap_convention))
        p99_gap = float(calc.p99_version_gap(occ, L, fr.gap_convention))
    return Metrics(
        effective_trajectories_per_s=w.batch_trajectories / L,
        attempts_per_s=attempts,
        token_demand_per_s=demand,
        token_supply_per_s=supply,
        update_time_s=update,
        inflight_mean=float(mean_inflight.sum()),
        inflight_peak=float(sized.sum() * env.peak_to_mean),
        occupancy_mean_s=occ.mean,
        mean_version_gap=mean_gap,
        p99_version_gap=p99_gap,
        exceedance=q,
        group_drop_rate=drop,
        effective_intake=intake,
        time_margin=(inst.schedule.deadline - plan.makespan_s - allowance) / inst.schedule.deadline,
        throughput_margin=supply / demand - 1,
        update_margin=1 - update / L,
        inflight_sized=float(sized.sum()) if inst.holds else None,
        **_reliability(inst, plan, occ.mean),
    )


def _supply(inst: Instance, plan: Plan, mean_lifetime: float) -> float:
    """Σ_s x_s · a_s·g_s·r_s · (1 - slowdown_s·(K-1))⁺ · (1 - weight_sync_time/L)⁺ [tokens/s] (MODEL §2, §13)."""
    shapes = inst.inference.shapes
    a = goodput.availabilities(inst, mean_lifetime)
    kept = np.array([plan.versions_kept])
    sync = float(goodput.weight_sync_factor(inst, plan.cadence_s))
    replicas = {r.shape: r.replicas for r in plan.inference}
    terms = [
        replicas[s.name]
        * a[i]
        * s.gpus_per_replica
        * s.tokens_per_gpu_s
        * float(calc.supply_multiplier(s.version_slowdown, kept)[0])
        for i, s in enumerate(shapes)
    ]
    return math.fsum(terms) * sync


def _reliability(inst: Instance, plan: Plan, mean_lifetime: float) -> dict:
    """MODEL §13's metrics (none without a reliability section or a preemptible pool)."""
    if not inst.reliable:
        return {}
    shapes = inst.inference.shapes
    replicas = {r.shape: r.replicas for r in plan.inference}
    span = plan.makespan_s
    rates = goodput.replica_event_rates(inst)
    failures = {s.name: span * float(rates[i]) * replicas[s.name] for i, s in enumerate(shapes)}
    rel = inst.reliability
    if rel is None or plan.training_gpus <= 0:
        gamma, interval, mtbf = 1.0, None, None
    else:
        terms = goodput.training_terms(rel, np.array([plan.training_gpus]))
        gamma, interval, mtbf = float(terms.goodput[0]), float(terms.interval[0]), float(terms.mtbf[0])
    return {
        "training_goodput": gamma,
        "checkpoint_interval_s": interval,
        "mtbf_training_s": mtbf,
        "failures_expected": {"training": span / mtbf if mtbf else 0.0} | failures,
        "availability": {s.name: float(a) for s, a in zip(shapes, goodput.availabilities(inst, mean_lifetime))},
        "weight_sync_share": 0.0 if rel is None else rel.weight_sync_time / plan.cadence_s,
    }
