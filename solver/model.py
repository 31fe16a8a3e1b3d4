"""The planning MIP of MODEL.md §1–§4 in pyomo, disaggregated over admissible (cadence, K) pairs.

Each pair ``p`` (a cadence grid point with a number of resident versions, see
:mod:`solver.coefficients`) gets its own copy of the count and split variables, all
bounded by the pair's selection binary ``z[p]``; exactly one pair is selected. Every
coefficient is then a constant of its pair, ``total_cost = Σ_p T_p · hourly_p`` is
linear with no big-M product, and the LP relaxation is the convex hull of the
selection (MODEL.md §7). Building reads like a table of contents: decisions, one
``add_<block>`` per constraint family of MODEL.md §3, cost terms, objectives.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pyomo.environ as pyo

from models.instance import Instance
from solver.coefficients import Pairs

OBJECTIVES = ("total_cost", "hourly_cost", "makespan")
TIE_BREAKS = {"total_cost": "makespan", "hourly_cost": "makespan", "makespan": "total_cost"}


@dataclass(frozen=True)
class Index:
    """Names and admissible combinations the model is built over, in instance order."""

    shapes: list[str]
    pools: list[str]
    backends: list[str]
    nodes: list[str]
    vms: list[str]
    node_backends: list[tuple[str, str]]  # (node type, backend) the node can run, backend share > 0
    vm_backends: list[tuple[str, str]]  # (vm type, backend) the VM can run, eligible share > 0
    steady_split: bool  # False when no cloud capacity exists: peak coverage then implies steady coverage


def index_of(inst: Instance) -> Index:
    env = inst.environment
    active = [b.name for b in env.backends if b.share > 0]
    eligible = {b for b, share in env.cloud.eligible_share.items() if share > 0}
    vm_backends = [(v.name, b) for v in env.cloud.vm_types for b in active if b in v.density and b in eligible]
    return Index(
        shapes=[s.name for s in inst.inference.shapes],
        pools=[p.name for p in inst.gpu_pools],
        backends=active,
        nodes=[k.name for k in env.node_types],
        vms=[v.name for v in env.cloud.vm_types],
        node_backends=[(k.name, b) for k in env.node_types for b in active if b in k.density],
        vm_backends=vm_backends,
        steady_split=bool(vm_backends),
    )


def build_model(inst: Instance, pairs: Pairs, objective: str) -> pyo.ConcreteModel:
    """The whole MIP for ``inst`` over ``pairs``, minimising ``objective`` (tie-breaks are solve-time stages)."""
    m = pyo.ConcreteModel(name=inst.name)
    m.inst, m.pairs, m.ix = inst, pairs, index_of(inst)
    declare_decisions(m)
    add_selection(m)
    add_pool_capacity(m)
    add_throughput(m)
    add_update_time(m)
    add_deadline(m)
    add_steady_sandbox(m)
    add_peak_sandbox(m)
    add_freshness(m)
    add_cost_terms(m)
    add_budgets(m)
    add_objectives(m, objective)
    return m


def declare_decisions(m: pyo.ConcreteModel) -> None:
    """Per pair: selection z, replicas x[s], nodes N[k], VMs V[v], steady split y, peak split y', cloud split c."""
    inst, pairs, ix = m.inst, m.pairs, m.ix
    P = range(pairs.size)
    m.P = pyo.Set(initialize=P, ordered=True)
    m.z = pyo.Var(m.P, domain=pyo.Binary)
    shapes = {s.name: s for s in inst.inference.shapes}

    def replica_cap(p: int, s: str) -> int:
        shape = shapes[s]
        pool = inst.pool(shape.pool)
        free = pool.gpus - (int(pairs.groups[p]) * inst.training.gpus_per_group if pool.name == inst.training.pool else 0)
        return max(free, 0) // shape.gpus_per_replica

    m.x = pyo.Var(m.P, ix.shapes, domain=pyo.NonNegativeIntegers, bounds=lambda _, p, s: (0, replica_cap(p, s)))
    m.replica_cap = {(p, s): replica_cap(p, s) for p in P for s in ix.shapes}
    m.node_cap = {(p, k): _node_cap(inst, pairs, ix, p, k) for p in P for k in ix.nodes}
    m.vm_cap = {(p, v): _vm_cap(inst, pairs, ix, p, v) for p in P for v in ix.vms}
    m.N = pyo.Var(m.P, ix.nodes, domain=pyo.NonNegativeIntegers, bounds=lambda _, p, k: (0, m.node_cap[p, k]))
    m.V = pyo.Var(m.P, ix.vms, domain=pyo.NonNegativeIntegers, bounds=lambda _, p, v: (0, m.vm_cap[p, v]))
    m.y_peak = pyo.Var(m.P, ix.node_backends, domain=pyo.NonNegativeReals)
    m.c = pyo.Var(m.P, ix.vm_backends, domain=pyo.NonNegativeReals)
    m.y = pyo.Var(m.P, ix.node_backends if ix.steady_split else [], domain=pyo.NonNegativeReals)


def _node_cap(inst: Instance, pairs: Pairs, ix: Index, p: int, k: str) -> int:
    """Nodes of type k worth having at pair p: enough to hold, alone, every peak environment it can run."""
    env = inst.environment
    node = next(n for n in env.node_types if n.name == k)
    backends = {b.name: b for b in env.backends}
    need = 0.0
    for (kk, b) in ix.node_backends:
        if kk != k:
            continue
        load = pairs.peak[p, ix.backends.index(b)] if b in ix.backends else 0.0
        per = 1.0 / node.density[b]
        if node.cores and backends[b].cores:
            per = max(per, backends[b].cores / node.cores)
        if node.memory_gb and backends[b].memory_gb:
            per = max(per, backends[b].memory_gb / node.memory_gb)
        need += load * per
    cap = math.ceil(need / env.utilisation_cap * (1 + 1e-9)) + 1
    return cap if node.max_nodes is None else min(cap, node.max_nodes)


def _vm_cap(inst: Instance, pairs: Pairs, ix: Index, p: int, v: str) -> int:
    env = inst.environment
    vm = next(x for x in env.cloud.vm_types if x.name == v)
    backends = {b.name: b for b in env.backends}
    need = 0.0
    for (vv, b) in ix.vm_backends:
        if vv != v:
            continue
        load = pairs.peak[p, ix.backends.index(b)] * env.cloud.eligible_share.get(b, 0.0)
        per = 1.0 / vm.density[b]
        if vm.cores and backends[b].cores:
            per = max(per, backends[b].cores / vm.cores)
        if vm.memory_gb and backends[b].memory_gb:
            per = max(per, backends[b].memory_gb / vm.memory_gb)
        need += load * per
    cap = math.ceil(need * (1 + 1e-9)) + 1
    return cap if vm.max_vms is None else min(cap, vm.max_vms)


def add_selection(m: pyo.ConcreteModel) -> None:
    """Exactly one (cadence, K) pair: Σ_p z_p = 1; every count of pair p is 0 unless z_p = 1."""
    m.one_cadence = pyo.Constraint(expr=sum(m.z[p] for p in m.P) == 1)
    m.replicas_off = pyo.Constraint(
        m.P, m.ix.shapes, rule=lambda m, p, s: m.x[p, s] <= m.replica_cap[p, s] * m.z[p]
    )
    m.nodes_off = pyo.Constraint(m.P, m.ix.nodes, rule=lambda m, p, k: m.N[p, k] <= m.node_cap[p, k] * m.z[p])
    m.vms_off = pyo.Constraint(m.P, m.ix.vms, rule=lambda m, p, v: m.V[p, v] <= m.vm_cap[p, v] * m.z[p])


def training_gpus(m: pyo.ConcreteModel, p: int):
    """GPUs of the fewest training groups that keep up at pair p (a constant times z_p)."""
    return int(m.pairs.groups[p]) * m.inst.training.gpus_per_group * m.z[p]


def add_pool_capacity(m: pyo.ConcreteModel) -> None:
    """MODEL §3.1, per pool and pair: Σ_{s in pool} x_s·g_s + [training pool] m·gpus_per_group <= gpus·z  [GPUs]."""
    inst = m.inst
    shapes = inst.inference.shapes

    def rule(m, pool_name, p):
        pool = inst.pool(pool_name)
        used = sum(s.gpus_per_replica * m.x[p, s.name] for s in shapes if s.pool == pool_name)
        if pool_name == inst.training.pool:
            used = used + training_gpus(m, p)
        if isinstance(used, int):
            return pyo.Constraint.Skip
        return used <= pool.gpus * m.z[p]

    m.pool_capacity = pyo.Constraint(m.ix.pools, m.P, rule=rule)


def add_throughput(m: pyo.ConcreteModel) -> None:
    """MODEL §3.2: a·Σ_s x_s·g_s·r_s·(1 - slowdown_s(K-1)) >= R_raw(L,K)·tokens_per_attempt  [tokens/s].

    Written per attempt (both sides divided by tokens_per_attempt) to keep the row well scaled.
    """
    pairs, tok = m.pairs, m.inst.workload.tokens_per_attempt
    shapes = m.ix.shapes

    def rule(m, p):
        supply = sum((pairs.supply_per_replica[p, i] / tok) * m.x[p, s] for i, s in enumerate(shapes))
        return supply >= pairs.attempts[p] * m.z[p]

    m.throughput = pyo.Constraint(m.P, rule=rule)


def add_update_time(m: pyo.ConcreteModel) -> None:
    """MODEL §3.3: U(m) <= L. Held by construction: pair p's training is the fewest groups with U <= L_p.

    More groups only take pool GPUs and cost more, so fixing m at that minimum loses no
    optimum; a table law whose feasible group counts have holes is handled exactly.
    """


def add_deadline(m: pyo.ConcreteModel) -> None:
    """MODEL §3.4: T = n·L + extra_time <= deadline. Held by construction: only grid points within it are pairs."""


def _sandbox_rows(m, p, k, split):
    """Node rows of MODEL §3.5/3.6 for node type k at pair p under utilisation cap u [nodes, cores, GB]."""
    env = m.inst.environment
    node = next(n for n in env.node_types if n.name == k)
    backends = {b.name: b for b in env.backends}
    hosted = [b for (kk, b) in m.ix.node_backends if kk == k]
    u = env.utilisation_cap
    rows = [sum(split[p, k, b] / node.density[b] for b in hosted) <= u * m.N[p, k]]
    if node.cores and all(backends[b].cores for b in hosted):
        rows.append(sum(split[p, k, b] * backends[b].cores for b in hosted) <= u * node.cores * m.N[p, k])
    if node.memory_gb and all(backends[b].memory_gb for b in hosted):
        rows.append(sum(split[p, k, b] * backends[b].memory_gb for b in hosted) <= u * node.memory_gb * m.N[p, k])
    return rows if hosted else []


def _resource_rows(m, split, host_rows, name: str) -> None:
    rows = pyo.ConstraintList()
    setattr(m, name, rows)
    for p in m.P:
        for k in m.ix.nodes:
            for row in host_rows(m, p, k, split):
                rows.add(row)


def add_steady_sandbox(m: pyo.ConcreteModel) -> None:
    """MODEL §3.5: steady load E_b stays local: Σ_k y_kb >= E_b; per node type, density, cores and memory
    rows under the cap u: Σ_b y_kb/density_kb <= u·N_k, Σ_b y_kb·cores_b <= u·N_k·cores_k, ... [environments].

    Without cloud capacity the peak split of §3.6 (E^pk >= E, same rows) implies this one, so it is omitted.
    """
    if not m.ix.steady_split:
        return
    pairs, ix = m.pairs, m.ix
    m.steady_cover = pyo.Constraint(
        m.P, ix.backends,
        rule=lambda m, p, b: sum(m.y[p, k, b] for (k, bb) in ix.node_backends if bb == b)
        >= pairs.inflight[p, ix.backends.index(b)] * m.z[p],
    )
    _resource_rows(m, m.y, _sandbox_rows, "steady_nodes")


def add_peak_sandbox(m: pyo.ConcreteModel) -> None:
    """MODEL §3.6: peaks E^pk_b = peak_to_mean·E_b on local nodes (same rows and cap as §3.5, same N_k)
    plus cloud VMs at full capacity: Σ_k y'_kb + Σ_v c_vb >= E^pk_b, Σ_v c_vb <= eligible_share_b·E^pk_b,
    and per VM type Σ_b c_vb/density_vb <= V_v, with cores and memory rows [environments]."""
    pairs, ix, env = m.pairs, m.ix, m.inst.environment
    m.peak_cover = pyo.Constraint(
        m.P, ix.backends,
        rule=lambda m, p, b: sum(m.y_peak[p, k, b] for (k, bb) in ix.node_backends if bb == b)
        + sum(m.c[p, v, b] for (v, bb) in ix.vm_backends if bb == b)
        >= pairs.peak[p, ix.backends.index(b)] * m.z[p],
    )
    _resource_rows(m, m.y_peak, _sandbox_rows, "peak_nodes")
    cloud_backends = sorted({b for (_, b) in ix.vm_backends}, key=ix.backends.index)

    def eligible(m, p, b):
        share = env.cloud.eligible_share.get(b, 0.0)
        return sum(m.c[p, v, b] for (v, bb) in ix.vm_backends if bb == b) <= share * pairs.peak[
            p, ix.backends.index(b)] * m.z[p]

    m.cloud_eligible = pyo.Constraint(m.P, cloud_backends, rule=eligible)
    backends = {b.name: b for b in env.backends}
    m.cloud_vms = pyo.ConstraintList()
    for vm in env.cloud.vm_types:
        hosted = [b for (v, b) in ix.vm_backends if v == vm.name]
        if not hosted:
            continue
        for p in m.P:
            m.cloud_vms.add(sum(m.c[p, vm.name, b] / vm.density[b] for b in hosted) <= m.V[p, vm.name])
            if vm.cores and all(backends[b].cores for b in hosted):
                m.cloud_vms.add(sum(m.c[p, vm.name, b] * backends[b].cores for b in hosted) <= vm.cores * m.V[p, vm.name])
            if vm.memory_gb and all(backends[b].memory_gb for b in hosted):
                m.cloud_vms.add(
                    sum(m.c[p, vm.name, b] * backends[b].memory_gb for b in hosted) <= vm.memory_gb * m.V[p, vm.name]
                )


def add_freshness(m: pyo.ConcreteModel) -> None:
    """MODEL §3.7: mean gap <= max_mean_gap, q(L,K) <= max_exceedance, drop <= max_group_drop.

    Held by construction: each is a function of the pair alone, so inadmissible pairs are not in the model.
    """


def add_cost_terms(m: pyo.ConcreteModel) -> None:
    """MODEL §4, per pair [$/h]: GPU = Σ_pools gpu_hour_cost·GPUs used; node = Σ_k N_k·hour_cost_k;
    VM = Σ_v V_v·hour_cost_v·billed_fraction_v. Named so each can be reported on its own."""
    inst, ix = m.inst, m.ix
    shapes = inst.inference.shapes
    train_price = inst.pool(inst.training.pool).gpu_hour_cost

    def gpu(m, p):
        inference = sum(inst.pool(s.pool).gpu_hour_cost * s.gpus_per_replica * m.x[p, s.name] for s in shapes)
        return inference + train_price * training_gpus(m, p)

    nodes = {k.name: k.hour_cost for k in inst.environment.node_types}
    vms = {v.name: v.hour_cost * v.billed_fraction for v in inst.environment.cloud.vm_types}
    m.gpu_cost = pyo.Expression(m.P, rule=gpu)
    m.node_cost = pyo.Expression(m.P, rule=lambda m, p: sum(nodes[k] * m.N[p, k] for k in ix.nodes))
    m.vm_cost = pyo.Expression(m.P, rule=lambda m, p: sum(vms[v] * m.V[p, v] for v in ix.vms))
    m.hourly_cost = pyo.Expression(expr=sum(m.gpu_cost[p] + m.node_cost[p] + m.vm_cost[p] for p in m.P))
    hours = m.pairs.makespan / 3600.0
    m.total_cost = pyo.Expression(
        expr=sum(float(hours[p]) * (m.gpu_cost[p] + m.node_cost[p] + m.vm_cost[p]) for p in m.P)
    )
    m.makespan = pyo.Expression(expr=sum(float(m.pairs.makespan[p]) * m.z[p] for p in m.P))


def add_budgets(m: pyo.ConcreteModel) -> None:
    """MODEL §3.8: hourly_cost <= max_hourly_cost [$/h], total_cost <= max_total_cost [$], each only if set."""
    limits = m.inst.limits
    if limits.max_hourly_cost is not None:
        m.max_hourly_cost = pyo.Constraint(expr=m.hourly_cost <= limits.max_hourly_cost)
    if limits.max_total_cost is not None:
        m.max_total_cost = pyo.Constraint(expr=m.total_cost <= limits.max_total_cost)


def add_objectives(m: pyo.ConcreteModel, objective: str) -> None:
    """MODEL §4: one objective per criterion; the requested one is active, the tie-break is a later stage."""
    m.objective_total_cost = pyo.Objective(expr=m.total_cost, sense=pyo.minimize)
    m.objective_hourly_cost = pyo.Objective(expr=m.hourly_cost, sense=pyo.minimize)
    m.objective_makespan = pyo.Objective(expr=m.makespan, sense=pyo.minimize)
    for name in OBJECTIVES:
        getattr(m, f"objective_{name}").deactivate()
    getattr(m, f"objective_{objective}").activate()
    m.tie = pyo.ConstraintList()  # the tie-break stage's rows, added and removed per solve
    m.caps = pyo.ConstraintList()  # a Planner's extra restrictions (makespan, budgets, cards), per solve


def selected_pair(m: pyo.ConcreteModel) -> int:
    values = np.array([pyo.value(m.z[p]) for p in m.P])
    return int(np.argmax(values))
