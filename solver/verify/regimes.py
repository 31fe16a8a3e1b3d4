"""The verifier's reading of MODEL.md §14 for a batch plan (pipelined or colocated): its own batch quantities and rows.

Read from MODEL §14 alone, with this folder's laws (:mod:`solver.verify.laws`): ``N = g·ceil(B/(g·p_eff))``
(``p_eff = p·F(τ)`` when cut-short attempts are filtered), the slowest attempt ``M_N = ∫_0^τ (1 - F(t)^{N'}) dt``
by quadrature, ``mean(W_τ) = ∫_0^τ S(t) dt``, the generation phase ``D = max(N·tokens/S, M_N)`` and the cadence
row (``k = 0``: ``D + U + t_s <= L``; ``k = 1``: ``max(D, U) + t_s <= L``; colocated: ``D + U + t_s + switch_time
<= L``, the pool's GPUs used in turn, :func:`shared_pools`), ``T = n·L + extra_time``, the
sandbox loads ``E_b = (N/L)·s_b·W_use`` and the launch peak ``max(peak_to_mean·E_b, N·s_b)``, the gap ``k``
(+1 post_publish). Pools, hosts, costs and budgets are §3's, checked by :mod:`solver.verify.plan`'s functions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from trainground.models.instance import Instance
from trainground.models.result import Metrics, Plan
from trainground.solver.verify import hold, laws

REL = 1e-9  # MODEL §4's relative tolerance of every row
TAIL = 1e-18  # the max's integral stops where N'·S(t) falls below this


@dataclass(frozen=True)
class BatchReading:
    attempts: int  # N
    slowest: float  # M_N, s
    tokens: float  # tokens per attempt, after the timeout's scale
    intake: float  # p_eff
    w_use: float  # s
    sync: float  # t_s, s
    steps_ahead: int  # 0 under colocated
    switch: float  # colocated: switch_time, s (0 otherwise)
    gap: float
    mean_cut: float  # mean(W_τ), s


def read_batch(inst: Instance, law: laws.Law) -> BatchReading:
    """The batch of a pipelined ``inst`` as MODEL §14 defines it."""
    r = inst.regime
    assert r is not None
    w = inst.workload
    tau = r.rollout_timeout
    cut_share = 1.0 if tau is None else law.cdf(tau)
    intake = w.intake_rate * (cut_share if tau is not None and r.truncated == "filter" else 1.0)
    attempts = w.group_size * math.ceil(w.batch_trajectories / (w.group_size * intake) - 1e-9)
    draws = attempts // w.group_size if inst.freshness.group_correlation == "comonotone" else attempts
    top = tau if tau is not None else tail_end(law, draws)
    slowest = laws.integral(lambda t: 1.0 - law.cdf(t) ** draws, 0.0, top)
    mean_cut = law.mean if tau is None else laws.integral(law.survival, 0.0, tau)
    if inst.environment.littles_law_uses == "mean":
        w_use = mean_cut
    else:
        w_use = law.median if tau is None else min(law.median, tau)
    own = r.weight_sync_time
    sync = own if own is not None else (inst.reliability.weight_sync_time if inst.reliability is not None else 0.0)
    k = int(r.steps_ahead or 0)
    post = 1.0 if inst.freshness.gap_convention == "post_publish" else 0.0
    return BatchReading(
        attempts=attempts,
        slowest=slowest,
        tokens=w.tokens_per_attempt * mean_cut / law.mean,
        intake=intake,
        w_use=w_use,
        sync=sync,
        steps_ahead=k,
        switch=r.switch_time if r.mode == "colocated" else 0.0,
        gap=k + post,
        mean_cut=mean_cut,
    )


def tail_end(law: laws.Law, draws: int) -> float:
    """A time past which the max of ``draws`` lifetimes is below it with probability 1 - TAIL."""
    t = max(law.p99, 1.0)
    while draws * law.survival(t) > TAIL:
        t *= 2.0
    return t


def check_batch(inst: Instance, plan: Plan, supply: float, update: float, violations: list[str]) -> BatchReading:
    """The rows of MODEL §14 a pipelined plan must meet beyond §3's: the slowest attempt and the generation phase
    within the cadence, and the concurrency cap. Returns the batch read."""
    law = laws.law_of(inst.environment.occupancy)
    b = read_batch(inst, law)
    L = plan.cadence_s
    phase = max(b.attempts * b.tokens / supply, b.slowest) if supply > 0 else math.inf
    busy = max(phase, update) if b.steps_ahead == 1 else phase + update
    if not busy + b.sync + b.switch <= L * (1 + REL):
        how = "max(D, U) + t_s" if b.steps_ahead == 1 else "D + U + t_s" + (" + switch_time" if b.switch else "")
        violations.append(
            f"regime.cadence: {how} = {busy + b.sync + b.switch:.6g} s > cadence {L:g} s (D = {phase:.6g} s, "
            f"M_N = {b.slowest:.6g} s, U = {update:.6g} s)"
        )
    cap = inst.regime.max_concurrent_attempts if inst.regime is not None else None
    if cap is not None and b.attempts > cap:
        violations.append(f"regime.max_concurrent_attempts: a batch launches {b.attempts} attempts > {cap}")
    return b


def batch_metrics(
    inst: Instance, plan: Plan, b: BatchReading, supply: float, update: float, allowance: float
) -> Metrics:
    """The metrics MODEL §6 and §14 give a pipelined plan."""
    env = inst.environment
    L = plan.cadence_s
    budget = L - b.sync - b.switch - (update if b.steps_ahead == 0 else 0.0)
    demand = b.attempts * b.tokens / budget if budget > 0 else math.inf
    phase = max(b.attempts * b.tokens / supply, b.slowest) if supply > 0 else math.inf
    loads = {x.name: b.attempts / L * x.share * b.w_use for x in env.backends}
    launch = launches(inst, b)
    return Metrics(
        effective_trajectories_per_s=inst.workload.batch_trajectories / L,
        attempts_per_s=b.attempts / L,
        token_demand_per_s=demand,
        token_supply_per_s=supply,
        update_time_s=update,
        inflight_mean=math.fsum(loads.values()),
        inflight_peak=math.fsum(max(loads[n] * env.peak_to_mean, launch[n]) for n in loads),
        occupancy_mean_s=b.mean_cut,
        mean_version_gap=b.gap,
        p99_version_gap=b.gap,
        exceedance=0.0,
        group_drop_rate=0.0,
        effective_intake=b.intake,
        time_margin=(inst.schedule.deadline - plan.makespan_s - allowance) / inst.schedule.deadline,
        throughput_margin=supply / demand - 1,
        update_margin=1 - update / L,
        generation_phase_s=phase,
        slowest_attempt_s=b.slowest,
        generation_busy_share=b.attempts * b.tokens / (supply * phase) if supply > 0 else 0.0,
        launch_peak=math.fsum(launch.values()),
        consumed_mean_gap=b.gap,
        consumed_p99_gap=b.gap,
    )


def launches(inst: Instance, b: BatchReading) -> dict[str, float]:
    """Per backend the environments a batch's launch asks at once (MODEL §14): N·s_b, and under hold (§11's row 5
    for a batch mode) N·s_b + β·sqrt(N·s_b·(1 - s_b)), β the Halfin–Whitt factor of planning.sandbox_wait."""
    beta = hold.safety_factor(inst.planning.sandbox_wait) if inst.planning.basis == "hold" else 0.0
    out = {}
    for x in inst.environment.backends:
        mean = b.attempts * x.share
        out[x.name] = mean + beta * math.sqrt(max(mean * (1.0 - x.share), 0.0))
    return out


def shared_pools(inst: Instance, plan: Plan, violations: list[str]) -> dict[str, int]:
    """MODEL §14, colocated: the replicas and the training groups take turns on the training pool's GPUs, so
    each must fit the pool alone and the pool's GPUs used (and billed) are the larger of the two; every other
    pool as §3.1. Returns the GPUs used per pool (what the plan's ``pools`` must report)."""
    shapes = {s.name: s for s in inst.inference.shapes}
    inference = {p.name: 0 for p in inst.gpu_pools}
    for r in plan.inference:
        inference[shapes[r.shape].pool] += r.replicas * shapes[r.shape].gpus_per_replica
    used = dict(inference)
    train = inst.training.pool
    used[train] = max(inference[train], plan.training_groups * inst.training.gpus_per_group)
    for pool in inst.gpu_pools:
        if inference[pool.name] > pool.gpus or used[pool.name] > pool.gpus:
            violations.append(f"pool_capacity[{pool.name}]: {used[pool.name]} GPUs used in turn > {pool.gpus}")
    reported = {p.pool: (p.gpus_used, p.gpus) for p in plan.pools}
    for pool in inst.gpu_pools:
        if reported.get(pool.name) != (used[pool.name], pool.gpus):
            violations.append(
                f"pools[{pool.name}]: plan reports {reported.get(pool.name)}, recomputed ({used[pool.name]}, {pool.gpus})"
            )
    return used


def replica_supply(inst: Instance, plan: Plan) -> float:
    """Σ_s a·g_s·r_s·x_s [tokens/s]: one version resident, no slowdown (MODEL §14)."""
    shapes = {s.name: s for s in inst.inference.shapes}
    a = inst.inference.availability
    return math.fsum(
        a * shapes[r.shape].gpus_per_replica * shapes[r.shape].tokens_per_gpu_s * r.replicas for r in plan.inference
    )


def check_billed(inst: Instance, plan: Plan, used: dict[str, int], violations: list[str]) -> None:
    """MODEL §14's plan.billed_gpus: each pool's GPUs used (colocated: the larger use), all of a reserved pool."""
    billed = sum(p.gpus if p.billing == "reserved" else used[p.name] for p in inst.gpu_pools)
    if plan.billed_gpus != billed:
        violations.append(f"billed_gpus: plan says {plan.billed_gpus}, recomputed {billed}")
