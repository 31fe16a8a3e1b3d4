"""Independent plan verifier: every constraint of MODEL.md §3, the costs of §4, the start-up of §8 and the
hold rows of §11, re-checked from a plan's decisions and its instance alone.

It shares no code with the model (STYLE.md: a checker must not share the reading it checks): no import from
solver/ but its own :mod:`solver.verify.laws` (occupancy fit, exceedance by quadrature, update laws, start-up
fill) and :mod:`solver.verify.hold` (E^hold, the consumed gap), its own cadence grid, resource rows
(:func:`solver.verify.laws.resource_rows`, MODEL §3.5's reading), cost formula and tolerances (below: the
model's are in solver/tolerances.py, none shared). One function per constraint family, each naming its
section. A violation is a bug in the model, never a result to show: :mod:`solver.solve` rejects such a plan.
"""

from __future__ import annotations

import math

from trainground.models.instance import Instance
from trainground.models.result import Metrics, Plan
from trainground.solver.verify import admission as admission
from trainground.solver.verify import goodput as reliability
from trainground.solver.verify import hold as hold
from trainground.solver.verify import laws as laws
from trainground.solver.verify import regimes as regimes
from trainground.solver.verify.check import (
    FILL_TOL,
    GRID_TOL,
    MAKESPAN_TOL,
    REGIME_ROW_TOL,
    REL_TOL,
    Check,
    leq,
)
from trainground.solver.verify.drop import verify_drop
from trainground.solver.verify.fleet import check_budgets, check_costs, check_pools
from trainground.solver.verify.hosts import check_host_binding, check_peak_sandbox, check_steady_sandbox
from trainground.solver.verify.laws import resource_rows
from trainground.solver.verify.metrics import metric_differences


def verify_plan(
    inst: Instance, plan: Plan, allowance: float = 0.0, reported: Metrics | None = None, memo: laws.Memo | None = None
) -> Check:
    """Every check below, in MODEL order; ``metrics`` (this reading's) is set when the plan can be read to the
    end, and ``reported`` metrics, when given, must equal them. ``allowance``: MODEL §11's Δ (s), in the deadline
    row T + Δ <= deadline; ``memo``: the lognormal integrals a caller verifying many plans keeps (laws.Memo)."""
    out = Check()
    if not check_domains(inst, plan, out):
        return out
    if inst.regime is not None and inst.regime.mode in ("pipelined", "colocated"):
        out.row_tol = REGIME_ROW_TOL
        return _verify_batch(inst, plan, allowance, reported, out)
    if inst.regime is not None and inst.regime.staleness == "admission":
        out.row_tol = REGIME_ROW_TOL
        return _verify_admission(inst, plan, allowance, reported, out)
    if inst.regime is not None and not inst.regime.is_default:  # async drop with regime fields set (MODEL §14)
        out.row_tol = REGIME_ROW_TOL
        return verify_drop(inst, plan, allowance, reported, out)
    if plan.age_limit not in (None, plan.versions_kept):
        out.violations.append(f"age_limit: {plan.age_limit}, the versions kept are {plan.versions_kept} (MODEL §14)")
    holds = inst.planning.basis == "hold"
    law = laws.law_of(inst.environment.occupancy, memo)
    run = laws.run_at(
        inst, law, plan.cadence_s, plan.versions_kept, plan.training_groups, startup=plan.startup_s is not None
    )
    used = check_pools(inst, plan, out)
    if run.intake <= 0:
        out.violations.append("effective_intake: every group is dropped (p_eff = 0)")
        return out
    supply, demand = check_throughput(inst, plan, run, out)
    trainer = reliability.check_goodput(inst, plan.training_gpus, out.violations)
    check_update_time(inst, plan, run, out)
    check_deadline(inst, plan, run, allowance, out)
    env = inst.environment
    mean_inflight = {b.name: run.attempts * b.share * (law.mean if holds else run.w_use) for b in env.backends}
    inflight = hold.hold_loads(inst, law, run.attempts) if holds else mean_inflight
    peak = {b: e * env.peak_to_mean for b, e in inflight.items()}
    rows = resource_rows(inst)
    check_steady_sandbox(inst, plan, rows, inflight, out)
    check_peak_sandbox(inst, plan, rows, peak, out)
    check_host_binding(inst, plan, rows, out)
    mean_gap, p99_gap = check_freshness(inst, plan, run, out)
    hourly, total = check_costs(inst, plan, run.makespan, used, out)
    check_budgets(inst, hourly, total, out)
    L = plan.cadence_s
    out.metrics = Metrics(
        effective_trajectories_per_s=inst.workload.batch_trajectories / L,
        attempts_per_s=run.attempts,
        token_demand_per_s=demand,
        token_supply_per_s=supply,
        update_time_s=run.update,
        inflight_mean=sum(mean_inflight.values()),
        inflight_peak=sum(peak.values()),
        occupancy_mean_s=law.mean,
        mean_version_gap=mean_gap,
        p99_version_gap=p99_gap,
        exceedance=run.exceedance,
        group_drop_rate=run.drop,
        effective_intake=run.intake,
        time_margin=(inst.schedule.deadline - run.makespan - allowance) / inst.schedule.deadline,
        throughput_margin=supply / demand - 1,
        update_margin=1 - run.update / L,
        inflight_sized=sum(inflight.values()) if holds else None,
        **reliability.metrics(inst, plan, run.makespan, run.law.mean, trainer),
    )
    if reported is not None:
        out.violations += metric_differences(out.metrics, reported)
    return out


def _verify_batch(inst: Instance, plan: Plan, allowance: float, reported: Metrics | None, out: Check) -> Check:
    """A batch plan (MODEL §14): §3's pools (colocated: in turn), hosts, costs and budgets, the batch's rows."""
    law = laws.law_of(inst.environment.occupancy)
    assert inst.regime is not None
    if inst.regime.mode == "colocated":
        used = regimes.shared_pools(inst, plan, out.violations)
    else:
        used = check_pools(inst, plan, out)
    supply = regimes.replica_supply(inst, plan)
    update = laws.update_time(inst.training.update_time, plan.training_gpus)
    if not update == update:
        out.violations.append(f"update_time: U({plan.training_gpus} GPUs) is outside the measured table")
        return out
    b = regimes.check_batch(inst, plan, supply, update, out.violations)
    if plan.versions_kept != 1:
        out.violations.append(f"versions_kept: a batch run keeps one version, the plan says {plan.versions_kept}")
    L, sched = plan.cadence_s, inst.schedule
    span = inst.workload.iterations * L + sched.extra_time
    if not abs(span - plan.makespan_s) <= MAKESPAN_TOL * span:
        out.violations.append(f"makespan_s: plan says {plan.makespan_s!r}, recomputed n·L + extra_time = {span!r}")
    if not span + allowance <= sched.deadline * (1 + REL_TOL):
        out.violations.append(f"deadline: makespan {span:g} s + allowance {allowance:g} s > {sched.deadline:g} s")
    env = inst.environment
    inflight = {x.name: b.attempts / L * x.share * b.w_use for x in env.backends}
    launch = regimes.launches(inst, b)
    peak = {n: max(e * env.peak_to_mean, launch[n]) for n, e in inflight.items()}
    rows = resource_rows(inst)
    check_steady_sandbox(inst, plan, rows, inflight, out)
    check_peak_sandbox(inst, plan, rows, peak, out)
    check_host_binding(inst, plan, rows, out)
    limit = inst.freshness.max_mean_gap
    if limit is not None and not out.leq(b.gap, limit):
        out.violations.append(f"max_mean_gap: {b.gap:g} > {limit:g}")
    run = laws.Run(law, b.w_use, 0.0, 0.0, b.intake, b.attempts / L, update, None, span)
    hourly, total = check_costs(inst, plan, run.makespan, used, out)
    check_budgets(inst, hourly, total, out)
    regimes.check_billed(inst, plan, used, out.violations)
    out.metrics = regimes.batch_metrics(inst, plan, b, supply, update, allowance)
    if reported is not None:
        out.violations += metric_differences(out.metrics, reported)
    return out


def _verify_admission(inst: Instance, plan: Plan, allowance: float, reported: Metrics | None, out: Check) -> Check:
    """An admission plan (MODEL §14): §3's pools, hosts, costs and budgets with the admission rows and loads, its
    start-up and E^hold loads on the hold basis (:mod:`solver.verify.admission`)."""
    law = laws.law_of(inst.environment.occupancy)
    used = check_pools(inst, plan, out)
    a = admission.read_admission(inst, law)
    L, sched, env = plan.cadence_s, inst.schedule, inst.environment
    supply = regimes.replica_supply(inst, plan) * max(0.0, 1.0 - a.sync / L)  # §13's sync factor, t_s of the mode
    update = laws.update_time(inst.training.update_time, plan.training_gpus)
    if not update == update:
        out.violations.append(f"update_time: U({plan.training_gpus} GPUs) is outside the measured table")
        return out
    demand = admission.check_admission(inst, plan, a, supply, update, out.violations)
    if plan.versions_kept != 1:
        out.violations.append(f"versions_kept: in-flight updates keep one version, the plan says {plan.versions_kept}")
    span, fill = admission.admission_span(inst, a, law, L, update)
    if not abs(span - plan.makespan_s) <= MAKESPAN_TOL * span + FILL_TOL * (fill or 0.0):
        out.violations.append(f"makespan_s: plan says {plan.makespan_s!r}, recomputed {span!r}")
    if fill is not None and not (plan.startup_s is not None and abs(plan.startup_s - fill) <= FILL_TOL * fill):
        out.violations.append(f"startup_s: plan says {plan.startup_s!r}, recomputed the fill over W_τ = {fill!r}")
    if not span + allowance <= sched.deadline * (1 + REL_TOL):
        out.violations.append(f"deadline: makespan {span:g} s + allowance {allowance:g} s > {sched.deadline:g} s")
    attempts = inst.workload.batch_trajectories / (L * a.intake)
    mean, sized = admission.admission_loads(inst, a, law, attempts)
    burst = admission.publish_peak(inst, a, law, L)
    peak = {n: max(e * env.peak_to_mean, burst[n]) for n, e in sized.items()}
    rows = resource_rows(inst)
    check_steady_sandbox(inst, plan, rows, sized, out)
    check_peak_sandbox(inst, plan, rows, peak, out)
    check_host_binding(inst, plan, rows, out)
    mean_gap, p99_gap = admission.admission_gaps(a, law, L, update)
    limit = inst.freshness.max_mean_gap
    if limit is not None and not out.leq(mean_gap, limit):
        out.violations.append(f"max_mean_gap: consumed {mean_gap:g} > {limit:g}")
    run = laws.Run(law, a.w_use, 0.0, 0.0, a.intake, attempts, update, fill, span)
    hourly, total = check_costs(inst, plan, run.makespan, used, out)
    check_budgets(inst, hourly, total, out)
    regimes.check_billed(inst, plan, used, out.violations)
    figures = dict(demand=demand, supply=supply, update=update, attempts=attempts, mean=mean, sized=sized, peak=peak)
    figures.update(burst=burst, mean_gap=mean_gap, p99_gap=p99_gap)
    out.metrics = admission.admission_metrics(inst, plan, a, figures, allowance)
    if reported is not None:
        out.violations += metric_differences(out.metrics, reported)
    return out


def check_domains(inst: Instance, plan: Plan, out: Check) -> bool:
    """MODEL §1 domains: L on the grid, 1 <= K <= max_versions_kept, min_groups <= m <= max_groups (and
    what the pool holds), every shape listed once with its pool and GPUs, 0 <= N_k <= max_nodes,
    0 <= V_v <= max_vms. False when the plan cannot be read further (a shape missing or twice)."""
    bad = out.violations.append
    c, L, K = inst.schedule.cadence, plan.cadence_s, plan.versions_kept
    j = (L - c.min) / c.step
    top = laws.cadence_top(inst)
    if not (abs(j - round(j)) <= GRID_TOL and j >= -GRID_TOL and L <= top * (1 + REL_TOL) + GRID_TOL * c.step):
        bad(f"cadence {L} s is not on the grid {c.min:g}..{top:g} by {c.step:g}")
    if not 1 <= K <= inst.freshness.max_versions_kept:
        bad(f"versions_kept {K} outside 1..{inst.freshness.max_versions_kept}")
    regime = inst.regime
    if plan.age_limit is not None and regime is not None and (regime.mode != "async" or regime.staleness != "drop"):
        bad(f"age_limit {plan.age_limit}: {regime.label} drops nothing for age (MODEL §14: no age limit)")
    t = inst.training
    top_groups = inst.pool(t.pool).gpus // t.gpus_per_group
    top_groups = top_groups if t.max_groups is None else min(top_groups, t.max_groups)
    if not t.min_groups <= plan.training_groups <= top_groups:
        bad(f"training_groups {plan.training_groups} outside {t.min_groups}..{top_groups}")
    if plan.training_gpus != plan.training_groups * t.gpus_per_group:
        bad(f"training_gpus {plan.training_gpus} != training_groups · gpus_per_group")
    shapes = {s.name: s for s in inst.inference.shapes}
    listed = [r.shape for r in plan.inference]
    if sorted(listed) != sorted(shapes) or any(r.replicas < 0 for r in plan.inference):
        bad("inference must list every shape once with replicas >= 0")
        return False
    for r in plan.inference:
        s = shapes[r.shape]
        if r.pool != s.pool or r.gpus != r.replicas * s.gpus_per_replica:
            bad(
                f"inference[{r.shape}]: pool {r.pool}, {r.gpus} GPUs; the instance says {s.pool}, "
                f"{r.replicas} · {s.gpus_per_replica}"
            )
    if plan.inference_gpus != sum(r.gpus for r in plan.inference):
        bad(f"inference_gpus {plan.inference_gpus} != the shapes' GPUs {sum(r.gpus for r in plan.inference)}")
    _check_counts(
        plan.local_nodes, {k.name: k.max_nodes for k in inst.environment.node_types}, "max_nodes", "local_nodes", out
    )
    _check_counts(
        plan.cloud_vms, {v.name: v.max_vms for v in inst.environment.cloud.vm_types}, "max_vms", "cloud_vms", out
    )
    return True


def _check_counts(counts, limits: dict[str, int | None], row: str, section: str, out: Check) -> None:
    listed = [c.type for c in counts]
    for c in counts:
        if c.type not in limits or listed.count(c.type) > 1:
            out.violations.append(f"{section}: {c.type} is not a host type of the instance, or is listed twice")
        elif c.count < 0 or (limits[c.type] is not None and c.count > limits[c.type]):
            out.violations.append(f"{row}[{c.type}]: {section}[{c.type}] = {c.count} outside 0..{limits[c.type]}")


def check_throughput(inst: Instance, plan: Plan, run: laws.Run, out: Check) -> tuple[float, float]:
    """MODEL §3.2: a·Σ_s x_s·g_s·r_s·max(0, 1 - slowdown_s·(K-1)) >= R_raw·tokens_per_attempt [tokens/s].
    Returns (supply, demand)."""
    shapes = {s.name: s for s in inst.inference.shapes}
    a, K = reliability.availability(inst, run.law.mean), plan.versions_kept
    kept = 1.0 - reliability.sync_share(inst, plan.cadence_s)  # MODEL §13 weight sync
    if kept <= 0:
        out.violations.append(f"weight_sync: weight_sync_time >= cadence {plan.cadence_s:g} s: no generation")
    per_replica = {
        name: a[name]
        * s.gpus_per_replica
        * s.tokens_per_gpu_s
        * max(0.0, 1.0 - s.version_slowdown * (K - 1))
        * max(0.0, kept)
        for name, s in shapes.items()
    }
    replicas = {r.shape: r.replicas for r in plan.inference}
    supply = math.fsum(per_replica[n] * replicas[n] for n in shapes)
    tokens = inst.workload.tokens_per_attempt
    demand = run.attempts * tokens
    if supply < demand * (1 - REL_TOL) - REL_TOL * tokens:
        out.violations.append(f"throughput: supply {supply:.6g} tokens/s < demand {demand:.6g}")
    step = min((per_replica[n] for n in shapes if replicas[n] > 0), default=math.inf)
    if supply - demand < step:
        out.binding.append("throughput")
    return supply, demand


def check_update_time(inst: Instance, plan: Plan, run: laws.Run, out: Check) -> None:
    """MODEL §3.3: U(m) <= L [s]; binding when one group fewer would be too slow."""
    t, L = inst.training, plan.cadence_s
    if not run.update <= L * (1 + REL_TOL):
        out.violations.append(f"update_time: U({plan.training_gpus} GPUs) = {run.update:.6g} s > cadence {L} s")
    elif plan.training_groups > t.min_groups:
        fewer = laws.update_time(t.update_time, (plan.training_groups - 1) * t.gpus_per_group)
        if not fewer <= L * (1 + REL_TOL):
            out.binding.append("update_time")


def check_deadline(inst: Instance, plan: Plan, run: laws.Run, allowance: float, out: Check) -> None:
    """MODEL §3.4 with §11's allowance Δ: T + Δ <= deadline, T = n·L + extra_time (§2) or fill + (n-1)·L + U(m)
    + extra_time (§8, always under hold); the plan's makespan_s (and startup_s, if given) is that T (fill) [s]."""
    sched = inst.schedule
    counted = laws.startup_counted(inst)
    fill_slack = FILL_TOL * (run.startup or 0.0) if counted else 0.0
    if not abs(run.makespan - plan.makespan_s) <= MAKESPAN_TOL * run.makespan + fill_slack:
        how = "fill + (n-1)·L + U(m) + extra_time" if counted else "n·L + extra_time"
        out.violations.append(f"makespan_s: plan says {plan.makespan_s!r}, recomputed {how} = {run.makespan!r}")
    if plan.startup_s is not None and not abs(plan.startup_s - run.startup) <= FILL_TOL * run.startup:
        out.violations.append(f"startup_s: plan says {plan.startup_s!r}, recomputed fill(L, K) = {run.startup!r}")
    if not run.makespan + allowance <= sched.deadline * (1 + REL_TOL):
        with_allowance = f" + allowance {allowance:g} s" if allowance else ""
        out.violations.append(f"deadline: makespan {run.makespan:g} s{with_allowance} > {sched.deadline:g} s")
    law = run.law
    after = laws.run_at(
        inst, law, plan.cadence_s + sched.cadence.step, plan.versions_kept, plan.training_groups, startup=False
    )
    if after.makespan + allowance > sched.deadline * (1 + REL_TOL):
        out.binding.append("deadline")


def check_freshness(inst: Instance, plan: Plan, run: laws.Run, out: Check) -> tuple[float, float]:
    """MODEL §3.7 (each only if set): mean gap <= max_mean_gap, q(L, K) <= max_exceedance, drop <=
    max_group_drop. The mean gap is W_use/L (§2; +1 post_publish), or under hold the consumed gap's (§11
    item 3). Returns the mean and p99 gaps."""
    fr = inst.freshness
    post = 1.0 if fr.gap_convention == "post_publish" else 0.0
    if inst.planning.basis == "hold":
        mean_gap, p99_gap = hold.consumed_gaps(inst, run.law, plan.cadence_s, plan.versions_kept)
    else:
        mean_gap, p99_gap = run.w_use / plan.cadence_s + post, run.law.p99 / plan.cadence_s + post
    for name, limit, value in (
        ("max_mean_gap", fr.max_mean_gap, mean_gap),
        ("max_exceedance", fr.max_exceedance, run.exceedance),
        ("max_group_drop", fr.max_group_drop, run.drop),
    ):
        if limit is not None and not leq(value, limit):
            out.violations.append(f"{name}: {value:.6g} > {limit:g}")
    return mean_gap, p99_gap
