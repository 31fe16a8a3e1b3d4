"""The compact staged MIP of MODEL.md §12: the capacities as counts, a cadence binary per stage row.

With one capacity for the whole run the pair blocks of :mod:`solver.stages.model` (a copy of every count per
stage and pair) are not needed to keep the rows linear: every row of MODEL §3 in stage ``p`` reads the
shared counts on one side and the selected pair's constants on the other. Only the total cost,
``hourly · T / 3600``, is a product; :mod:`solver.stages.hull` minimises it over the lower convex hull of
the (hourly, T) plans, each point found by a MIP with a linear objective ``a·hourly + b·T``.

Decisions: the shared K (``kept[K]``, one on), the replicas of each shape per K (``x[K, s]``, 0 unless K is
on: the supply multiplier depends on K), the training groups ``G``, nodes ``N[k]`` and VMs ``V[v]``, a
binary per stage and pair (``z[p, i]``, one per stage, of the chosen K) and each stage's sandbox splits.
Under ``replan`` (``own``) each stage has its own counts, ``x[p, K, s]``, ``G[p]``, ``N[p, k]``, ``V[p, v]``, and
every row of stage ``p`` reads them; :mod:`solver.stages.replan` adds the run's rows and costs.
With the start-up counted and more than one stage, the last stage's final update is bounded by the lines
through neighbouring group counts where U is convex in the count, else ``Σ_g U(g)·final_on[g]`` with
``Σ_g g·final_on[g] = G`` (:func:`add_final_update`). Every block states its inequality; the coefficients
are those of the pair model's (:class:`solver.table.coefficients.PairValues`, :func:`solver.table.coefficients.global_values`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyomo.core as pyo

from trainground.models.instance import Instance
from trainground.solver.stages.tables import StageTables
from trainground.solver.table.coefficients import Index, PairValues, global_values, index_of
from trainground.solver.tolerances import CONVEX_TOL


@dataclass
class CompactModel:
    """The compact model and what reads it: the stage tables, each stage row's numbers, the run's
    expressions ``hourly`` ($/h) and ``makespan`` (s), and the index of names."""

    inst: Instance
    found: StageTables
    values: list[list[dict]]  # per stage, per pair: PairValues
    shared: dict
    ix: Index
    model: pyo.ConcreteModel
    hourly: Any = None
    makespan: Any = None
    Ks: list[int] = field(default_factory=list)  # the K some stage row has
    caps: dict[str, dict[str, int]] = field(default_factory=dict)  # bounds of x, N, V
    own: bool = False  # each stage its own counts (replan)

    def x(self, p: int, K: int, s: str):
        """Stage ``p``'s replicas of shape ``s`` with K versions kept (0 unless K is on)."""
        return self.model.x[p, K, s] if self.own else self.model.x[K, s]

    def G(self, p: int):
        return self.model.G[p] if self.own else self.model.G

    def N(self, p: int, k: str):
        return self.model.N[p, k] if self.own else self.model.N[k]

    def V(self, p: int, v: str):
        return self.model.V[p, v] if self.own else self.model.V[v]

    def capacities(self) -> list[int]:
        """The stages whose counts are variables of their own: the first alone under ``fixed``, each under replan."""
        return list(range(len(self.found.tables))) if self.own else [0]


def build_compact(inst: Instance, found: StageTables) -> CompactModel:
    """The compact model of a ``fixed`` staged instance over the stage tables ``found`` (none empty)."""
    c = compact_rows(inst, found, own=False)
    add_final_update(c)
    add_run(c)
    return c


def compact_rows(inst: Instance, found: StageTables, own: bool) -> CompactModel:
    """The decisions and every stage's rows of MODEL §3 over the stage tables ``found`` (none empty), on one
    capacity or (``own``) one per stage; no makespan, cost or objective yet."""
    ix = index_of(found.insts[0])
    values = []
    for si, table in zip(found.insts, found.tables):
        read = PairValues(si, index_of(si))
        values.append([read(table, i) for i in range(table.size)])
    shared = global_values(found.insts[0], ix)
    c = CompactModel(inst, found, values, shared, ix, pyo.ConcreteModel(name=inst.name), own=own)
    declare(c)
    add_selection(c)
    add_pool_capacity(c)
    add_throughput(c)
    add_update_time(c)
    add_sandboxes(c)
    return c


def _rows(c: CompactModel, p: int, K: int) -> list[int]:
    return [i for i in range(c.found.tables[p].size) if int(c.found.tables[p].kept[i]) == K]


def declare(c: CompactModel) -> None:
    """K on/off, replicas per (K, shape), groups, nodes, VMs, a binary per stage pair, the splits."""
    m, ix, found = c.model, c.ix, c.found
    c.Ks = sorted({int(k) for t in found.tables for k in t.kept})
    pairs = [(p, i) for p, t in enumerate(found.tables) for i in range(t.size)]
    replica_cap = {s: max(v["replica_cap"][s] for stage in c.values for v in stage) for s in ix.shapes}
    node_cap = {k: max(v["node_cap"][k] for stage in c.values for v in stage) for k in ix.nodes}
    vm_cap = {v_: max(v["vm_cap"][v_] for stage in c.values for v in stage) for v_ in ix.vms}
    c.caps = {"x": replica_cap, "N": node_cap, "V": vm_cap}
    m.kept = pyo.Var(c.Ks, domain=pyo.Binary)
    # G from the fewest groups of any stage: the update-time rows raise it to least_groups (bounding G there
    # too leaves the same plans and slows HiGHS by about 10 % on steady-state staged solves)
    lo = min(int(t.groups.min()) for t in found.tables)
    integers = pyo.NonNegativeIntegers
    if c.own:
        P = c.capacities()
        m.x = pyo.Var(P, c.Ks, ix.shapes, domain=integers, bounds=lambda _, p, K, s: (0, replica_cap[s]))
        m.G = pyo.Var(P, domain=integers, bounds=(lo, max(lo, found.top)))
        m.N = pyo.Var(P, ix.nodes, domain=integers, bounds=lambda _, p, k: (0, node_cap[k]))
        m.V = pyo.Var(P, ix.vms, domain=integers, bounds=lambda _, p, v: (0, vm_cap[v]))
    else:
        m.x = pyo.Var(c.Ks, ix.shapes, domain=integers, bounds=lambda _, K, s: (0, replica_cap[s]))
        m.G = pyo.Var(domain=integers, bounds=(lo, max(lo, found.top)))
        m.N = pyo.Var(ix.nodes, domain=integers, bounds=lambda _, k: (0, node_cap[k]))
        m.V = pyo.Var(ix.vms, domain=integers, bounds=lambda _, v: (0, vm_cap[v]))
    m.z = pyo.Var(pairs, domain=pyo.Binary)
    stages = range(len(found.tables))
    m.y = pyo.Var(stages, ix.node_backends if ix.steady_split else [], domain=pyo.NonNegativeReals)
    m.y_peak = pyo.Var(stages, ix.node_backends, domain=pyo.NonNegativeReals)
    m.c = pyo.Var(stages, ix.vm_backends, domain=pyo.NonNegativeReals)


def least_groups(found: StageTables) -> int:
    """The fewest training groups a plan can have: each stage's update-time row asks G for at least its table's
    fewest (:func:`add_update_time`), so G is at least the largest of those."""
    return max(int(t.groups.min()) for t in found.tables)


def final_range(found: StageTables) -> tuple[int, np.ndarray]:
    """The group counts the final update is stated on, from :func:`least_groups` (or the table's last count,
    above which no plan has groups) to the table's last, and U_P at each (s)."""
    assert found.final is not None and len(found.final[1]), "the final update is stated on one count at least"
    lo, update = found.final
    cut = min(max(0, least_groups(found) - lo), len(update) - 1)
    return lo + cut, update[cut:]


def add_selection(c: CompactModel) -> None:
    """One K: Σ_K kept[K] = 1; per stage and K, Σ_{pairs with K} z = kept[K]; x[K, s] <= cap_s·kept[K] (each
    stage's, under replan)."""
    m, found = c.model, c.found
    m.one_kept = pyo.Constraint(expr=sum(m.kept[K] for K in c.Ks) == 1)
    keys = [(p, K) for p in range(len(found.tables)) for K in c.Ks]
    m.one_pair = pyo.Constraint(keys, rule=lambda _, p, K: sum(m.z[p, i] for i in _rows(c, p, K)) == m.kept[K])
    if c.own:
        m.replicas_off = pyo.Constraint(
            c.capacities(), c.Ks, c.ix.shapes, rule=lambda _, p, K, s: c.x(p, K, s) <= c.caps["x"][s] * m.kept[K]
        )
    else:
        m.replicas_off = pyo.Constraint(c.Ks, c.ix.shapes, rule=lambda _, K, s: m.x[K, s] <= c.caps["x"][s] * m.kept[K])


def add_pool_capacity(c: CompactModel) -> None:
    """MODEL §3.1 per pool (and per stage, under replan): Σ_{s in pool} g_s·Σ_K x[K, s] + [training pool]
    gpus_per_group·G <= gpus [GPUs]."""
    m, inst, ix = c.model, c.inst, c.ix
    shapes = inst.inference.shapes

    def used_of(p: int, pool: str):
        used = sum(s.gpus_per_replica * c.x(p, K, s.name) for K in c.Ks for s in shapes if s.pool == pool)
        if pool == ix.training_pool:
            used = used + inst.training.gpus_per_group * c.G(p)
        if isinstance(used, int):
            return pyo.Constraint.Skip
        return used <= c.shared["pool_gpus"][pool]

    if c.own:
        m.pool_capacity = pyo.Constraint(c.capacities(), ix.pools, rule=lambda _, p, pool: used_of(p, pool))
    else:
        m.pool_capacity = pyo.Constraint(ix.pools, rule=lambda _, pool: used_of(0, pool))


def add_throughput(c: CompactModel) -> None:
    """MODEL §3.2 per stage and K (per attempt): Σ_s supply_s(K)·x[K, s] >= Σ_{pairs with K} R_raw·z [1/s].
    A stage's supply per replica depends on K alone (its rows agree)."""
    m = c.model
    keys = [(p, K) for p in range(len(c.found.tables)) for K in c.Ks if _rows(c, p, K)]

    def rule(_, p, K):
        rows = _rows(c, p, K)
        supply = c.values[p][rows[0]]["supply"]
        return sum(supply[s] * c.x(p, K, s) for s in c.ix.shapes) >= sum(
            c.values[p][i]["attempts"][None] * m.z[p, i] for i in rows
        )

    m.throughput = pyo.Constraint(keys, rule=rule)


def add_update_time(c: CompactModel) -> None:
    """MODEL §3.3 per stage: G >= Σ_pairs m_pair·z, m_pair the fewest groups with U <= L (U non-increasing in
    the groups, :func:`solver.stages.tables.top_groups`) [groups]."""
    m, found = c.model, c.found
    m.update_time = pyo.Constraint(
        range(len(found.tables)),
        rule=lambda _, p: (
            c.G(p) >= sum(int(found.tables[p].groups[i]) * m.z[p, i] for i in range(found.tables[p].size))
        ),
    )


def _host_rows(c: CompactModel, p: int, kind: str, count, split, name: str) -> None:
    """Per (host, resource) row: Σ_b split[p, h, b]·load <= cap·count(p, h) [hosts]."""
    m, ix = c.model, c.ix
    hosted = ix.node_backends if kind == "node" else ix.vm_backends
    keys = [(h, r) for (k, h, r) in ix.rows if k == kind]
    load, cap = c.shared["row_load"], c.shared["row_cap"]

    def rule(_, h, r):
        used = sum(split[p, hh, b] * load[kind, h, r, b] for (hh, b) in hosted if hh == h)
        return used <= cap[kind, h, r] * count(p, h)

    m.add_component(f"{name}_{p}", pyo.Constraint(keys, rule=rule))


def add_sandboxes(c: CompactModel) -> None:
    """MODEL §3.5-3.6 per stage, on the shared nodes and VMs: Σ_k y >= E_b (if a steady split is kept), the
    node rows under u; Σ_k y' + Σ_v c >= E^pk_b, Σ_v c <= eligible·E^pk_b, the VM rows [environments]."""
    m, ix = c.model, c.ix
    for p, t in enumerate(c.found.tables):
        rows = range(t.size)

        def need(key: str, b: str, p=p, rows=rows):
            return sum(c.values[p][i][key][b] * m.z[p, i] for i in rows)

        if ix.steady_split:
            m.add_component(
                f"steady_cover_{p}",
                pyo.Constraint(
                    ix.backends,
                    rule=lambda _, b, p=p: (
                        sum(m.y[p, k, bb] for (k, bb) in ix.node_backends if bb == b) >= need("inflight", b)
                    ),
                ),
            )
            _host_rows(c, p, "node", c.N, m.y, "steady_nodes")
        m.add_component(
            f"peak_cover_{p}",
            pyo.Constraint(
                ix.backends,
                rule=lambda _, b, p=p: (
                    sum(m.y_peak[p, k, bb] for (k, bb) in ix.node_backends if bb == b)
                    + sum(m.c[p, v, bb] for (v, bb) in ix.vm_backends if bb == b)
                    >= need("peak", b)
                ),
            ),
        )
        _host_rows(c, p, "node", c.N, m.y_peak, "peak_nodes")
        clouded = sorted({b for (_, b) in ix.vm_backends}, key=ix.backends.index)
        m.add_component(
            f"cloud_eligible_{p}",
            pyo.Constraint(
                clouded,
                rule=lambda _, b, p=p: (
                    sum(m.c[p, v, bb] for (v, bb) in ix.vm_backends if bb == b) <= need("cloud_cap", b)
                ),
            ),
        )
        _host_rows(c, p, "vm", c.V, m.c, "cloud_vms")


def add_final_update(c: CompactModel) -> None:
    """With the start-up counted and more stages than one, the last stage's final update U_P(G) [s], G on
    :func:`final_range` (counts below it would only add rows no plan reaches). U_P is non-increasing in G
    (:func:`solver.stages.tables.top_groups`); where it is also convex on the integers (the inverse and Amdahl
    laws), ``final_update >= U(g) + (U(g+1) - U(g))·(G - g)`` for every g, exact at every integer G, whose largest
    line is U_P(G) (the model may leave it above, which only lengthens the T it reads: :func:`run_makespan` reads
    the plan's); otherwise one binary per count, one on, Σ_g g·final_on[g] = G and U_P(G) = Σ_g U(g)·final_on[g]."""
    m = c.model
    if c.found.final is None:
        m.final_update = pyo.Expression(expr=0)
        return
    lo, update = final_range(c.found)
    gs = list(range(lo, lo + len(update)))
    if convex(update):
        m.final_update = pyo.Var(domain=pyo.NonNegativeReals)
        m.final_range = pyo.Constraint(expr=pyo.inequality(gs[0], m.G, gs[-1]))
        lines = range(len(gs) - 1)
        m.final_lines = pyo.Constraint(
            lines,
            rule=lambda _, j: m.final_update >= float(update[j]) + float(update[j + 1] - update[j]) * (m.G - gs[j]),
        )
        if not lines:
            m.final_at_lo = pyo.Constraint(expr=m.final_update >= float(update[0]))
        return
    m.final_on = pyo.Var(gs, domain=pyo.Binary)
    m.final_one = pyo.Constraint(expr=sum(m.final_on[g] for g in gs) == 1)
    m.final_groups = pyo.Constraint(expr=sum(g * m.final_on[g] for g in gs) == m.G)
    m.final_update = pyo.Expression(expr=sum(float(u) * m.final_on[g] for g, u in zip(gs, update)))


def convex(values: np.ndarray) -> bool:
    """Whether a sequence is convex (non-decreasing steps), up to rounding."""
    steps = np.diff(values)
    return bool(np.all(np.diff(steps) >= -CONVEX_TOL * np.maximum(1.0, np.abs(values[1:-1]))))


def run_makespan(c: CompactModel, makespan: float, values) -> float:
    """The plan's T from the model's ``makespan`` at a solution: the final update at U_P(G) itself."""
    m = c.model
    if c.found.final is None or not isinstance(m.final_update, pyo.Var):
        return makespan
    lo, update = c.found.final
    read = float(values.get(m.final_update, 0.0) or 0.0)
    groups = int(round(float(values.get(m.G, 0.0) or 0.0)))
    return makespan - read + float(update[min(max(groups - lo, 0), len(update) - 1)])


def add_run(c: CompactModel) -> None:
    """The run's makespan T = Σ_p Σ_pairs part·z + final update + extra_time [s] and hourly cost [$/h]
    (MODEL §4: each pool's GPUs at its price, reserved pools whole, nodes, VMs at their billed fraction)."""
    m, inst, ix = c.model, c.inst, c.ix
    parts = c.found.parts
    m.makespan = pyo.Expression(
        expr=sum(float(parts[p][i]) * m.z[p, i] for p, t in enumerate(c.found.tables) for i in range(t.size))
        + m.final_update
        + inst.schedule.extra_time
    )
    price = c.shared["gpu_price"]
    gpus = sum(price[s.pool] * s.gpus_per_replica * m.x[K, s.name] for K in c.Ks for s in inst.inference.shapes)
    gpus = gpus + price[ix.training_pool] * inst.training.gpus_per_group * m.G + c.shared["reserved_cost"][None]
    m.gpu_cost = pyo.Expression(expr=gpus)
    m.node_cost = pyo.Expression(expr=sum(c.shared["node_price"][k] * m.N[k] for k in ix.nodes))
    m.vm_cost = pyo.Expression(expr=sum(c.shared["vm_price"][v] * m.V[v] for v in ix.vms))
    m.hourly_cost = pyo.Expression(expr=m.gpu_cost + m.node_cost + m.vm_cost)
    c.hourly, c.makespan = m.hourly_cost, m.makespan
    m.weighted = pyo.Objective(expr=m.hourly_cost, sense=pyo.minimize)


def supports(inst: Instance, max_total_cost: float | None) -> bool:
    """Whether the compact model plans this staged instance: one capacity and no cap on the total cost (a
    product, which the hull search does not bound)."""
    assert inst.stages is not None
    return inst.stages.capacity == "fixed" and inst.limits.max_total_cost is None and max_total_cost is None


def selected(values, var_index) -> int:
    """The index whose binary HiGHS set (the largest value)."""
    best = max(var_index, key=lambda item: float(values.get(item[1], 0.0) or 0.0))
    return best[0]


def counts_of(c: CompactModel, values, p: int = 0) -> dict[str, Any]:
    """The solution's K, stage ``p``'s replicas per shape, groups, nodes and VMs (rounded), and each stage's pair."""
    m = c.model

    def val(var) -> float:
        return float(values.get(var, 0.0) or 0.0)

    K = selected(values, [(K, m.kept[K]) for K in c.Ks])
    return {
        "K": K,
        "x": {s: int(round(val(c.x(p, K, s)))) for s in c.ix.shapes},
        "G": int(round(val(c.G(p)))),
        "N": {k: int(round(val(c.N(p, k)))) for k in c.ix.nodes},
        "V": {v: int(round(val(c.V(p, v)))) for v in c.ix.vms},
        "pairs": [selected(values, [(i, m.z[q, i]) for i in range(t.size)]) for q, t in enumerate(c.found.tables)],
    }
