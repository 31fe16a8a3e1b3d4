"""The verifier's reading of MODEL.md §14 for an admission plan (``staleness: admission``, in-flight updates): its
own quantities and rows, and on the hold basis (§11 with §14) its start-up and sandbox loads over W_τ.

Read from MODEL §14 alone, with this folder's laws (:mod:`solver.verify.laws`, :mod:`solver.verify.hold`): E[M_g]
``= ∫_0^τ (1 - F(t)^g) dt``, ``mean(W_τ) = ∫_0^τ S(t) dt``, ``E[W_τ²] = ∫_0^τ 2t·S(t) dt`` and ``E[min(W_τ, W'_τ)]
= ∫_0^τ S(t)² dt`` by quadrature; the admission row ``(E[M_g]/p + U + t_s)/(k + 1/2) <= L``; the consumed gap's
law; the publish peak ``(B/p)·s_b·Σ_i S_τ(i·L)``. With the start-up counted the fill is the smallest t with
``∫_0^t F_grp,τ(s) ds = L`` (F_grp,τ = 1 from τ on) and ``T = fill + (n-1)·L + U + extra_time``; under hold the
sandboxes hold ``E^hold_b = R_raw·s_b·mean(W_τ) + β·sqrt(V_b)``, V_b from the cut moments. Pools, hosts, costs and
budgets are §3's, checked by :mod:`solver.verify.plan`'s functions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from trainground.models.instance import Instance
from trainground.models.result import Metrics, Plan
from trainground.solver.verify import hold, laws
from trainground.solver.verify.regimes import REL, tail_end


@dataclass(frozen=True)
class AdmissionReading:
    steps_ahead: float  # k
    intake: float  # p_eff
    tokens: float  # tokens per attempt, after the timeout's scale
    group_max: float  # E[M_g], s
    members: int  # independent lifetimes of a group: g, or 1 when comonotone
    mean_cut: float  # mean(W_τ), s
    w_use: float  # s
    sync: float  # t_s, s
    recompute: float  # tokens re-prefilled per attempt per publish, times L
    tau: float | None
    post: float


def read_admission(inst: Instance, law: laws.Law) -> AdmissionReading:
    """An admission run's quantities as MODEL §14 defines them, by this folder's quadrature."""
    r = inst.regime
    assert r is not None
    w = inst.workload
    tau = r.rollout_timeout
    intake = w.intake_rate * (law.cdf(tau) if tau is not None and r.truncated == "filter" else 1.0)
    members = 1 if inst.freshness.group_correlation == "comonotone" else w.group_size
    top = tau if tau is not None else tail_end(law, members)
    group_max = laws.integral(lambda t: 1.0 - law.cdf(t) ** members, 0.0, top)
    mean_cut = law.mean if tau is None else laws.integral(law.survival, 0.0, tau)
    tokens = w.tokens_per_attempt * mean_cut / law.mean
    recompute = 0.0
    if r.recompute == "prefix":
        far = tau if tau is not None else tail_end(law, 1) * 4.0
        second = laws.integral(lambda t: 2.0 * t * law.survival(t), 0.0, far)  # E[W_τ²]
        recompute = mean_cut * r.prefill_cost * (r.context_tokens + tokens * second / (2.0 * mean_cut**2))
    if inst.environment.littles_law_uses == "mean":
        w_use = mean_cut
    else:
        w_use = law.median if tau is None else min(law.median, tau)
    own = r.weight_sync_time
    sync = own if own is not None else (inst.reliability.weight_sync_time if inst.reliability is not None else 0.0)
    return AdmissionReading(
        steps_ahead=float(r.steps_ahead or 1.0),
        intake=intake,
        tokens=tokens,
        group_max=group_max,
        members=members,
        mean_cut=mean_cut,
        w_use=w_use,
        sync=sync,
        recompute=recompute,
        tau=tau,
        post=1.0 if inst.freshness.gap_convention == "post_publish" else 0.0,
    )


def admission_gaps(a: AdmissionReading, law: laws.Law, cadence: float, update: float) -> tuple[float, float]:
    """(mean, p99) consumed gap G = floor(u + M_g/L), not truncated: the mean E[M_g]/L (k when the admission row has
    under 1 % slack), the p99 the smallest j with P(G <= j) >= 0.99, P(G > j) = (E[min(M, (j+1)L)] - E[min(M,
    jL)])/L; +1 under post_publish."""
    slack = 1.0 - (a.group_max / a.intake + update + a.sync) / ((a.steps_ahead + 0.5) * cadence)
    mean = (a.steps_ahead if slack < 0.01 else a.group_max / cadence) + a.post

    def limited(t: float) -> float:  # E[min(M, t)]
        top = t if a.tau is None else min(t, a.tau)
        return laws.integral(lambda s: 1.0 - law.cdf(s) ** a.members, 0.0, top)

    j, below = 0, limited(0.0)
    while True:
        above = limited((j + 1) * cadence)
        if 1.0 - (above - below) / cadence >= 0.99:
            return mean, j + a.post
        j, below = j + 1, above


def publish_peak(inst: Instance, a: AdmissionReading, law: laws.Law, cadence: float) -> dict[str, float]:
    """Per backend row 6's publish peak: (B/p)·s_b·Σ_{i>=0} S_τ(i·L), S_τ = 0 from τ on."""
    total, i = 0.0, 0
    while True:
        t = i * cadence
        alive = 0.0 if a.tau is not None and t >= a.tau else (1.0 if i == 0 else law.survival(t))
        if alive < 1e-12:
            break
        total += alive
        i += 1
    burst = inst.workload.batch_trajectories / a.intake * total
    return {x.name: burst * x.share for x in inst.environment.backends}


def check_admission(
    inst: Instance, plan: Plan, a: AdmissionReading, supply: float, update: float, violations: list[str]
) -> float:
    """MODEL §14's rows of an admission plan beyond §3's: the admission row, the trainer's own row, the supply with
    its re-prefills, the concurrency cap. Returns the token demand."""
    L = plan.cadence_s
    need = (a.group_max / a.intake + update + a.sync) / (a.steps_ahead + 0.5)
    if not need <= L * (1 + REL):
        violations.append(f"regime.admission: (E[M_g]/p + U + t_s)/(k + 1/2) = {need:.6g} s > cadence {L:g} s")
    if not update <= L * (1 + REL):
        violations.append(f"update_time: U = {update:.6g} s > cadence {L:g} s")
    attempts = inst.workload.batch_trajectories / (L * a.intake)
    demand = attempts * (a.tokens + a.recompute / L)
    if supply < demand * (1 - REL) - REL * a.tokens:
        violations.append(f"throughput: supply {supply:.6g} tokens/s < demand {demand:.6g} (with re-prefills)")
    cap = inst.regime.max_concurrent_attempts if inst.regime is not None else None
    if cap is not None and attempts * a.mean_cut > cap * (1 + REL):
        violations.append(f"regime.max_concurrent_attempts: {attempts * a.mean_cut:.6g} running attempts > {cap}")
    return demand


def admission_span(
    inst: Instance, a: AdmissionReading, law: laws.Law, cadence: float, update: float
) -> tuple[float, float | None]:
    """(T, fill): ``n·L + extra_time`` and no fill on steady_state; with the start-up counted (MODEL §8, always under
    hold) the fill over W_τ at R_raw = B/(L·p) and ``T = fill + (n-1)·L + U + extra_time``."""
    n, extra = inst.workload.iterations, inst.schedule.extra_time
    if not laws.startup_counted(inst):
        return n * cadence + extra, None
    if a.tau is None:
        fill = laws.fill_time(law, cadence, a.members)
    else:
        by_tau = laws.group_cdf_integral(law, a.tau, a.members)  # ∫_0^τ F_grp; past τ every group has ended
        fill = laws.fill_time(law, cadence, a.members) if by_tau >= cadence else a.tau + (cadence - by_tau)
    return fill + (n - 1) * cadence + update + extra, fill


def admission_loads(
    inst: Instance, a: AdmissionReading, law: laws.Law, attempts: float
) -> tuple[dict[str, float], dict[str, float]]:
    """(mean, sized) in-flight environments per backend: R_raw·s_b·W_use and the same on steady_state; under hold
    R_raw·s_b·mean(W_τ) and E^hold_b = that + β·sqrt(V_b) (MODEL §11 item 2 over W_τ)."""
    backends = inst.environment.backends
    if inst.planning.basis != "hold":
        mean = {b.name: attempts * b.share * a.w_use for b in backends}
        return mean, dict(mean)
    return hold.sized_loads(inst, attempts, a.mean_cut, hold.cut_min_of_two_mean(law, a.tau))


def admission_metrics(inst: Instance, plan: Plan, a: AdmissionReading, figures: dict, allowance: float) -> Metrics:
    """MODEL §6's metrics with §14's keys from this reading's ``figures`` (demand, supply, update, attempts, the
    loads and peaks per backend, the publish peak, the consumed gaps)."""
    L, sched = plan.cadence_s, inst.schedule
    demand, supply, update = figures["demand"], figures["supply"], figures["update"]
    attempts = figures["attempts"]
    holds = inst.planning.basis == "hold"
    return Metrics(
        effective_trajectories_per_s=inst.workload.batch_trajectories / L,
        attempts_per_s=attempts,
        token_demand_per_s=demand,
        token_supply_per_s=supply,
        update_time_s=update,
        inflight_mean=math.fsum(figures["mean"].values()),
        inflight_peak=math.fsum(figures["peak"].values()),
        occupancy_mean_s=a.mean_cut,
        mean_version_gap=figures["mean_gap"],
        p99_version_gap=figures["p99_gap"],
        exceedance=0.0,
        group_drop_rate=0.0,
        effective_intake=a.intake,
        time_margin=(sched.deadline - plan.makespan_s - allowance) / sched.deadline,
        throughput_margin=supply / demand - 1,
        update_margin=1 - update / L,
        slowest_attempt_s=a.group_max,
        generation_busy_share=demand / supply if supply > 0 else 0.0,
        launch_peak=math.fsum(figures["burst"].values()),
        consumed_mean_gap=figures["mean_gap"],
        consumed_p99_gap=figures["p99_gap"],
        recompute_share=attempts * a.recompute / L / demand if demand > 0 else 0.0,
        inflight_sized=math.fsum(figures["sized"].values()) if holds else None,
    )
