"""Independent plan verifier: every constraint of MODEL.md §3 and the costs of §4, recomputed from a plan.

No pyomo and no MIP coefficient tables: the plan's decisions (cadence, K, counts and
placements) are checked against the instance with the calculus alone. A violation
is a bug in the model, never a result to show.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from models.instance import Instance
from models.result import Metrics, Plan
from solver import calculus as calc

ROW_TOL = 1e-8  # relative (and absolute, in environments or nodes) slack for rows HiGHS solves to 1e-9
COST_TOL = 1e-7


@dataclass
class Check:
    violations: list[str] = field(default_factory=list)
    binding: list[str] = field(default_factory=list)
    metrics: Metrics | None = None

    @property
    def ok(self) -> bool:
        return not self.violations


def _leq(lhs: float, rhs: float) -> bool:
    return lhs <= rhs + ROW_TOL * max(1.0, abs(rhs))


def verify_plan(inst: Instance, plan: Plan) -> Check:
    out = Check()
    bad = out.violations.append
    w, env, fr, sched = inst.workload, inst.environment, inst.freshness, inst.schedule
    L, K = plan.cadence_s, plan.versions_kept
    occ = calc.occupancy_of(env.occupancy)
    w_use = calc.occupancy_used(occ, env.littles_law_uses)

    # Domains (MODEL §1).
    c = sched.cadence
    top = calc.cadence_top(inst)
    j = (L - c.min) / c.step
    if abs(j - round(j)) > 1e-6 or L < c.min * (1 - 1e-12) or L > top * (1 + calc.REL_TOL):
        bad(f"cadence {L} s is not on the grid {c.min:g}..{top:g} by {c.step:g}")
    if not 1 <= K <= fr.max_versions_kept:
        bad(f"versions_kept {K} outside 1..{fr.max_versions_kept}")
    lo, hi = calc.group_range(inst)
    if not lo <= plan.training_groups <= hi:
        bad(f"training_groups {plan.training_groups} outside {lo}..{hi}")
    if plan.training_gpus != plan.training_groups * inst.training.gpus_per_group:
        bad("training_gpus != training_groups · gpus_per_group")
    shapes = {s.name: s for s in inst.inference.shapes}
    replicas = {r.shape: r.replicas for r in plan.inference}
    if set(replicas) != set(shapes) or any(v < 0 for v in replicas.values()):
        bad("inference must list every shape once with replicas >= 0")
        return out
    nodes = {n.type: n.count for n in plan.local_nodes}
    vms = {v.type: v.count for v in plan.cloud_vms}
    for k in env.node_types:
        if nodes.get(k.name, 0) < 0 or (k.max_nodes is not None and nodes.get(k.name, 0) > k.max_nodes):
            bad(f"local_nodes[{k.name}] = {nodes.get(k.name, 0)} outside 0..{k.max_nodes}")
    for v in env.cloud.vm_types:
        if vms.get(v.name, 0) < 0 or (v.max_vms is not None and vms.get(v.name, 0) > v.max_vms):
            bad(f"cloud_vms[{v.name}] = {vms.get(v.name, 0)} outside 0..{v.max_vms}")

    # §3.1 pools.
    used = {p.name: 0 for p in inst.gpu_pools}
    for name, count in replicas.items():
        used[shapes[name].pool] += count * shapes[name].gpus_per_replica
    used[inst.training.pool] += plan.training_gpus
    for pool in inst.gpu_pools:
        if used[pool.name] > pool.gpus:
            bad(f"pool_capacity[{pool.name}]: {used[pool.name]} GPUs used > {pool.gpus}")
        smallest = min([s.gpus_per_replica for s in inst.inference.shapes if s.pool == pool.name], default=math.inf)
        if pool.gpus - used[pool.name] < smallest:
            out.binding.append(f"pool_capacity[{pool.name}]")

    # §3.2 throughput.
    q = float(calc.exceedance(occ, L, K))
    drop = float(calc.group_drop(q, w.group_size, fr.overrun_policy, fr.group_correlation))
    p_eff = w.intake_rate * (1 - drop)
    if p_eff <= 0:
        bad("effective intake is 0: every group is dropped")
        return out
    r_eff = w.batch_trajectories / L
    attempts = r_eff / p_eff
    demand = attempts * w.tokens_per_attempt
    a = inst.inference.availability
    per_replica = {
        name: a * s.gpus_per_replica * s.tokens_per_gpu_s * float(calc.supply_multiplier(s.version_slowdown, K))
        for name, s in shapes.items()
    }
    supply = sum(per_replica[n] * replicas[n] for n in shapes)
    if supply < demand * (1 - calc.REL_TOL) - calc.REL_TOL * w.tokens_per_attempt:
        bad(f"throughput: supply {supply:.6g} tokens/s < demand {demand:.6g}")
    step = min([per_replica[n] for n in shapes if replicas[n] > 0], default=math.inf)
    if supply - demand < step:
        out.binding.append("throughput")

    # §3.3 update time.
    update = float(calc.update_time(inst.training.update_time, plan.training_gpus))
    if math.isnan(update) or update > L * (1 + calc.REL_TOL):
        bad(f"update_time: U({plan.training_gpus} GPUs) = {update:.6g} s > cadence {L} s")
    elif plan.training_groups > lo and float(
        calc.update_time(inst.training.update_time, plan.training_gpus - inst.training.gpus_per_group)
    ) > L * (1 + calc.REL_TOL):
        out.binding.append("update_time")

    # §3.4 deadline.
    span = float(calc.makespan(inst, L))
    if abs(span - plan.makespan_s) > 1e-6 * span:
        bad(f"makespan_s {plan.makespan_s} != n·L + extra_time = {span}")
    if span > sched.deadline * (1 + calc.REL_TOL):
        bad(f"deadline: makespan {span:g} s > {sched.deadline:g} s")
    if span + inst.workload.iterations * sched.cadence.step > sched.deadline * (1 + calc.REL_TOL):
        out.binding.append("deadline")

    # §3.5 and §3.6 sandboxes.
    inflight = {b.name: attempts * b.share * w_use for b in env.backends}
    peak = {b: e * env.peak_to_mean for b, e in inflight.items()}
    _check_sandbox(inst, plan, nodes, vms, inflight, peak, out)

    # §3.7 freshness.
    mean_gap = float(calc.mean_version_gap(w_use, L, fr.gap_convention))
    if fr.max_mean_gap is not None and not _leq(mean_gap, fr.max_mean_gap):
        bad(f"max_mean_gap: {mean_gap:.6g} > {fr.max_mean_gap:g}")
    if fr.max_exceedance is not None and not _leq(q, fr.max_exceedance):
        bad(f"max_exceedance: {q:.6g} > {fr.max_exceedance:g}")
    if fr.max_group_drop is not None and not _leq(drop, fr.max_group_drop):
        bad(f"max_group_drop: {drop:.6g} > {fr.max_group_drop:g}")

    # §4 costs and §3.8 budgets.
    gpu_cost = sum(pool.gpu_hour_cost * used[pool.name] for pool in inst.gpu_pools)
    node_cost = sum(k.hour_cost * nodes.get(k.name, 0) for k in env.node_types)
    vm_cost = sum(v.hour_cost * v.billed_fraction * vms.get(v.name, 0) for v in env.cloud.vm_types)
    hourly = gpu_cost + node_cost + vm_cost
    total = hourly * span / 3600.0
    for name, mine, theirs in (
        ("hourly_cost", hourly, plan.hourly_cost), ("total_cost", total, plan.total_cost),
        ("cost_terms.gpu", gpu_cost, plan.cost_terms.gpu), ("cost_terms.node", node_cost, plan.cost_terms.node),
        ("cost_terms.vm", vm_cost, plan.cost_terms.vm),
    ):
        if abs(mine - theirs) > COST_TOL * max(1.0, abs(mine)):
            bad(f"{name}: plan says {theirs:.10g}, recomputed {mine:.10g}")
    limits = inst.limits
    if limits.max_hourly_cost is not None and not hourly <= limits.max_hourly_cost * (1 + calc.REL_TOL):
        bad(f"max_hourly_cost: {hourly:.6g} > {limits.max_hourly_cost:g}")
    if limits.max_total_cost is not None and not total <= limits.max_total_cost * (1 + calc.REL_TOL):
        bad(f"max_total_cost: {total:.6g} > {limits.max_total_cost:g}")
    for name, limit, value in (("max_hourly_cost", limits.max_hourly_cost, hourly),
                               ("max_total_cost", limits.max_total_cost, total)):
        if limit is not None and value >= limit * (1 - 1e-6):
            out.binding.append(name)

    out.metrics = Metrics(
        effective_trajectories_per_s=r_eff,
        attempts_per_s=attempts,
        token_demand_per_s=demand,
        token_supply_per_s=supply,
        update_time_s=update,
        inflight_mean=sum(inflight.values()),
        inflight_peak=sum(peak.values()),
        occupancy_mean_s=occ.mean,
        mean_version_gap=mean_gap,
        p99_version_gap=float(calc.p99_version_gap(occ, L, fr.gap_convention)),
        exceedance=q,
        group_drop_rate=drop,
        effective_intake=p_eff,
        time_margin=float(calc.time_margin(inst, L)),
        throughput_margin=supply / demand - 1,
        update_margin=1 - update / L,
    )
    return out


def _check_sandbox(inst, plan, nodes, vms, inflight, peak, out: Check) -> None:
    """Rows of MODEL §3.5 (steady, local, under cap u) and §3.6 (peak, local under u plus VMs, eligible shares)."""
    env = inst.environment
    bad = out.violations.append
    backends = {b.name: b for b in env.backends}
    u = env.utilisation_cap
    placement = plan.placement

    def host_rows(kind: str, host, count: int, load: dict[str, float], cap: float) -> None:
        for b, envs in load.items():
            if envs < -ROW_TOL:
                bad(f"{kind}[{host.name}][{b}]: negative placement {envs}")
            if envs > ROW_TOL and b not in host.density:
                bad(f"{kind}[{host.name}]: places backend {b} it cannot run")
        for row, lhs, per_host in _resource_rows(host, load, backends):
            rhs = cap * count * per_host
            if not _leq(lhs, rhs):
                bad(f"{kind}[{host.name}].{row}: {lhs:.6g} > {rhs:.6g}")

    node_types = {k.name: k for k in env.node_types}
    vm_types = {v.name: v for v in env.cloud.vm_types}
    for section, hosts in (("steady", placement.steady), ("peak", placement.peak), ("cloud", placement.cloud)):
        for host in hosts:
            if host not in (vm_types if section == "cloud" else node_types):
                bad(f"placement.{section}: unknown host type {host}")
    for k in env.node_types:
        host_rows("steady_sandbox", k, nodes.get(k.name, 0), placement.steady.get(k.name, {}), u)
        host_rows("peak_sandbox", k, nodes.get(k.name, 0), placement.peak.get(k.name, {}), u)
    for v in env.cloud.vm_types:
        host_rows("cloud_vms", v, vms.get(v.name, 0), placement.cloud.get(v.name, {}), 1.0)

    def placed(section: dict[str, dict[str, float]], b: str) -> float:
        return sum(load.get(b, 0.0) for load in section.values())

    for b in backends:
        if placed(placement.steady, b) < inflight[b] * (1 - ROW_TOL) - ROW_TOL:
            bad(f"steady_sandbox[{b}]: {placed(placement.steady, b):.6g} placed < {inflight[b]:.6g} in flight")
        cloud = placed(placement.cloud, b)
        if placed(placement.peak, b) + cloud < peak[b] * (1 - ROW_TOL) - ROW_TOL:
            bad(f"peak_sandbox[{b}]: {placed(placement.peak, b) + cloud:.6g} placed < {peak[b]:.6g} at peak")
        share = env.cloud.eligible_share.get(b, 0.0)
        if not _leq(cloud, share * peak[b]):
            bad(f"cloud_eligible[{b}]: {cloud:.6g} on VMs > {share:g} · {peak[b]:.6g}")
        if share > 0 and cloud >= share * peak[b] * (1 - 1e-6) and cloud > 0:
            out.binding.append(f"cloud_eligible[{b}]")
    for k in env.node_types:
        count = nodes.get(k.name, 0)
        if count > 0:
            need = max(_nodes_needed(k, placement.steady.get(k.name, {}), backends, u),
                       _nodes_needed(k, placement.peak.get(k.name, {}), backends, u))
            if need > count - 1 + 1e-9:
                out.binding.append(f"sandbox_nodes[{k.name}]")
            if k.max_nodes is not None and count == k.max_nodes:
                out.binding.append(f"max_nodes[{k.name}]")
    for v in env.cloud.vm_types:
        if v.max_vms is not None and vms.get(v.name, 0) == v.max_vms and v.max_vms > 0:
            out.binding.append(f"max_vms[{v.name}]")


def _resource_rows(host, load: dict[str, float], backends) -> list[tuple[str, float, float]]:
    """The resource rows of one node or VM type holding ``load`` (environments per backend it runs):
    (row, what the load takes, what one host gives) for density, and cores and memory where given."""
    hosted = {b: e for b, e in load.items() if b in host.density}
    rows = [("density", sum(e / host.density[b] for b, e in hosted.items()), 1.0)]
    if host.cores:
        rows.append(("cores", sum(e * (backends[b].cores or 0.0) for b, e in hosted.items()), host.cores))
    if host.memory_gb:
        rows.append(("memory", sum(e * (backends[b].memory_gb or 0.0) for b, e in hosted.items()), host.memory_gb))
    return rows


def _nodes_needed(host, load: dict[str, float], backends, cap: float) -> float:
    """Hosts (fractional) that ``load`` fills under the cap ``cap``, by its fullest row."""
    return max(lhs / (cap * per_host) for _, lhs, per_host in _resource_rows(host, load, backends))
