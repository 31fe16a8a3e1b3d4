"""The staged MIP of MODEL.md §12 under ``capacity: replan``: the compact model with each stage's own counts
(:mod:`solver.stages.compact`, ``own``), its bill made linear by one variable per stage and makespan.

A stage is billed its part of the run times its hourly cost, both decisions. The pairs of stage p whose parts are
equal form a class j (part d_j); each pair's bound lo_i (:func:`solver.table.bounds.hourly_lower_bound`, a valid
lower bound on the stage's hourly cost at that pair) and one excess per class ``v[p, j]`` make it linear:

    v[p, j] <= (H - lo_j)·Σ_{i in j} z[p, i],   Σ_j v[p, j] = hourly_p - Σ_i lo_i·z[p, i]   [$/h]
    bill_p = Σ_i part_i·lo_i·z[p, i] + Σ_j d_j·v[p, j]                                          [$·s/h]

(lo_j the least bound of class j, H a bound on any stage's hourly cost): at a solution exactly one pair i of class
j is on, every other class's excess is 0, so bill_p = part_i·hourly_p; the LP relaxation keeps each pair's bill at
least part·lo. With the start-up counted and more stages than one, the last stage's final update U_P(G_P) is billed
at that stage's rate the same way: one binary per group count g (Σ_g on[g] = 1, Σ_g g·on[g] = G_P), its bound the
training and reserved GPUs alone, and an excess per count. Then:

- switches: δ_p per consecutive pair of stages, 1 when any count differs (±(count_p - count_{p+1}) <= cap·δ_p),
  each adding switch_time to T and paid at the rate of the stage after (σ_p >= hourly_{p+1} - H·(1 - δ_p));
- T = Σ_{p,i} part_i·z[p, i] + extra_time + switch_time·Σ_p δ_p (+ Σ_g U_P(g)·on[g]);
- total = (Σ_p bill_p + extra_time·hourly_P + switch_time·Σ_p σ_p (+ the final update's bill)) / 3600;
- hourly_cost = the largest stage's (peak >= hourly_p); the budgets of §3.8 and the objectives of §4, searched
  in order by :func:`solver.stages.solve._lexicographic`.

The bound of a pair is lowered by BILL_SLACK, so a plan at its bound (common: the bound's counts are whole) is
never cut by rounding; the bills stay exact, the bound only steers the LP.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyomo.core as pyo

from trainground.models.instance import OBJECTIVES, Instance
from trainground.models.result import Plan
from trainground.solver.stages.compact import CompactModel, compact_rows
from trainground.solver.stages.compact_plans import part_plans
from trainground.solver.stages.plans import own_startup, run_plan
from trainground.solver.stages.tables import StageTables
from trainground.solver.table.bounds import bound_of_terms, hourly_bound_terms, shares_gpus
from trainground.solver.table.coefficients import reserved_cost
from trainground.solver.tolerances import BILL_SLACK, REL_TOL


@dataclass
class ReplanModel:
    """The replan model and what the lexicographic search reads of it: ``model`` (its rows, objectives and
    ``makespan``, ``hourly_cost``, ``total_cost``), ``criteria`` (the three criteria's expressions) and ``inst``;
    ``lows``, ``terms`` and ``fixed_rate``: each pair's cost bound, its terms and its fixed term, as the bills read
    them (terms None where the bound is not their sum), which the searches' floors read;
    ``optima``: the last optimum of each search under its restrictions, where a search in less room starts
    (:func:`solver.stages.replan_search.search`); ``floor_tables``: the floors' room-independent part, found by
    the first search (:func:`solver.stages.replan_search.floors`)."""

    c: CompactModel
    criteria: dict[str, Any]
    lows: list[np.ndarray]  # per stage, each pair's cost bound as the bills read it, $/h
    terms: list[np.ndarray] | None  # per stage, (pairs, 3): the bound's training, inference and host terms, as lows
    fixed_rate: float  # the bound's term no count changes (the reserved pools), as lows
    optima: dict[tuple, tuple[float, float]] = field(default_factory=dict)  # search key -> (room, optimum)
    floor_tables: Any = None  # what the searches' floors keep between rooms (solver.stages.replan_search)

    @property
    def model(self) -> pyo.ConcreteModel:
        return self.c.model

    @property
    def inst(self) -> Instance:
        return self.c.inst


def build_replan(inst: Instance, found: StageTables) -> ReplanModel:
    """The replan model of ``inst`` over its stage tables ``found`` (none empty)."""
    c = compact_rows(inst, found, own=True)
    top = hourly_top(c)
    add_hourly(c)
    bills, lows, terms = add_bills(c, top)
    add_switches(c, top)
    add_final_update(c, top)
    summed = None if shares_gpus(inst) else terms  # a colocated bound is not a sum of its terms
    return ReplanModel(c, add_run(c, bills), lows, summed, reserved_cost(inst) * (1 - BILL_SLACK))


def hourly_top(c: CompactModel) -> float:
    """An upper bound of any stage's hourly cost: every pool billed whole, every host at its cap."""
    prices = c.shared
    gpus = sum(p.gpus * p.gpu_hour_cost for p in c.inst.gpu_pools)
    nodes = sum(prices["node_price"][k] * c.caps["N"][k] for k in c.ix.nodes)
    vms = sum(prices["vm_price"][v] * c.caps["V"][v] for v in c.ix.vms)
    return gpus + nodes + vms + 1.0


def add_hourly(c: CompactModel) -> None:
    """Each stage's hourly cost (MODEL §4) at its own counts [$/h]: GPUs per pool at its price (reserved pools whole),
    nodes, VMs at their billed fraction."""
    m, inst, ix, k = c.model, c.inst, c.ix, c.shared
    price, gpg = k["gpu_price"], inst.training.gpus_per_group

    def hourly(p: int):
        gpus = sum(price[s.pool] * s.gpus_per_replica * c.x(p, K, s.name) for K in c.Ks for s in inst.inference.shapes)
        gpus = gpus + price[ix.training_pool] * gpg * c.G(p) + k["reserved_cost"][None]
        return (
            gpus
            + sum(k["node_price"][n] * c.N(p, n) for n in ix.nodes)
            + sum(k["vm_price"][v] * c.V(p, v) for v in ix.vms)
        )

    m.hourly = pyo.Expression(c.capacities(), rule=lambda _, p: hourly(p))


def classes(part: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct parts, the class of each pair): pairs of equal parts share a class."""
    values, inverse = np.unique(part, return_inverse=True)
    return values, inverse


def add_bills(c: CompactModel, top: float) -> tuple[list[Any], list[np.ndarray], list[np.ndarray]]:
    """Each stage's bill Σ_i part_i·lo_i·z + Σ_j d_j·v[p, j] with its excess rows (module docstring); returns the
    bills [$·s/h], each stage's bounds lo [$/h] and their terms (pairs, 3) [$/h], lowered as lo is."""
    m, found = c.model, c.found
    bills, lows, terms = [], [], []
    for p, (si, table, part) in enumerate(zip(found.insts, found.tables, found.parts)):
        each = hourly_bound_terms(si, table)
        lo = np.minimum(bound_of_terms(si, *each) * (1 - BILL_SLACK), top)
        lows.append(lo)
        terms.append(np.stack(each, axis=1) * (1 - BILL_SLACK))
        values, at = classes(part)
        least = np.full(values.size, top)
        np.minimum.at(least, at, lo)
        members: list[list[int]] = [[] for _ in range(values.size)]
        for i, j in enumerate(at.tolist()):
            members[j].append(i)
        excess = pyo.Var(range(values.size), domain=pyo.NonNegativeReals)
        m.add_component(f"excess_{p}", excess)
        m.add_component(
            f"excess_off_{p}",
            pyo.Constraint(
                range(values.size),
                rule=lambda _, j, ex=excess, members=members, least=least, p=p: (
                    ex[j] <= (top - float(least[j])) * sum(m.z[p, i] for i in members[j])
                ),
            ),
        )
        floor = sum(float(lo[i]) * m.z[p, i] for i in range(table.size))
        m.add_component(f"excess_sum_{p}", pyo.Constraint(expr=sum(excess.values()) == m.hourly[p] - floor))
        bill = sum(float(part[i]) * float(lo[i]) * m.z[p, i] for i in range(table.size))
        bills.append(bill + sum(float(d) * excess[j] for j, d in enumerate(values.tolist())))
    return bills, lows, terms


def count_pairs(c: CompactModel, p: int) -> list[tuple[Any, Any, float]]:
    """Stage p's and p+1's counts side by side, with a bound on each: replicas per shape, groups, nodes, VMs."""
    shapes, ix = c.inst.inference.shapes, c.ix
    out = [
        (sum(c.x(p, K, s.name) for K in c.Ks), sum(c.x(p + 1, K, s.name) for K in c.Ks), float(c.caps["x"][s.name]))
        for s in shapes
    ]
    out.append((c.G(p), c.G(p + 1), float(c.found.top)))
    out += [(c.N(p, k), c.N(p + 1, k), float(c.caps["N"][k])) for k in ix.nodes]
    out += [(c.V(p, v), c.V(p + 1, v), float(c.caps["V"][v])) for v in ix.vms]
    return out


def add_switches(c: CompactModel, top: float) -> None:
    """δ_p = 1 when any count differs between stages p and p+1, and σ_p the switch's hourly cost (module docstring)."""
    m, P = c.model, len(c.found.tables)
    m.switch = pyo.Var(range(P - 1), domain=pyo.Binary)
    m.switch_rate = pyo.Var(range(P - 1), domain=pyo.NonNegativeReals)
    m.switch_on = pyo.ConstraintList()
    for p in range(P - 1):
        for here, there, cap in count_pairs(c, p):
            m.switch_on.add(here - there <= cap * m.switch[p])
            m.switch_on.add(there - here <= cap * m.switch[p])
    m.switch_paid = pyo.Constraint(
        range(P - 1), rule=lambda _, p: m.switch_rate[p] >= m.hourly[p + 1] - top * (1 - m.switch[p])
    )


def add_final_update(c: CompactModel, top: float) -> None:
    """With the start-up counted and more stages than one, the last stage's final update U_P(G_P) [s] and its
    bill at that stage's rate [$·s/h] (module docstring): ``final_update`` and ``final_bill`` (0 otherwise)."""
    m, found = c.model, c.found
    if found.final is None:
        m.final_update, m.final_bill = pyo.Expression(expr=0), pyo.Expression(expr=0)
        return
    lo, update = found.final
    last = len(found.tables) - 1
    gs = list(range(lo, lo + len(update)))
    seconds = {g: float(u) for g, u in zip(gs, update)}
    inst = c.inst
    per_group = c.shared["gpu_price"][c.ix.training_pool] * inst.training.gpus_per_group
    floor = {g: min(top, (per_group * g + c.shared["reserved_cost"][None]) * (1 - BILL_SLACK)) for g in gs}
    m.final_on = pyo.Var(gs, domain=pyo.Binary)
    m.final_excess = pyo.Var(gs, domain=pyo.NonNegativeReals)
    m.final_one = pyo.Constraint(expr=sum(m.final_on[g] for g in gs) == 1)
    m.final_groups = pyo.Constraint(expr=sum(g * m.final_on[g] for g in gs) == c.G(last))
    m.final_off = pyo.Constraint(gs, rule=lambda _, g: m.final_excess[g] <= (top - floor[g]) * m.final_on[g])
    m.final_sum = pyo.Constraint(
        expr=sum(m.final_excess[g] for g in gs) == m.hourly[last] - sum(floor[g] * m.final_on[g] for g in gs)
    )
    m.final_update = pyo.Expression(expr=sum(seconds[g] * m.final_on[g] for g in gs))
    m.final_bill = pyo.Expression(expr=sum(seconds[g] * (floor[g] * m.final_on[g] + m.final_excess[g]) for g in gs))


def add_run(c: CompactModel, bills: list[Any]) -> dict[str, Any]:
    """The run's makespan, total cost and hourly cost (the largest stage's), the instance's budgets and the three
    objectives (deactivated); returns the criteria."""
    m, inst, found = c.model, c.inst, c.found
    assert inst.stages is not None
    P, extra, switch = len(found.tables), inst.schedule.extra_time, inst.stages.switch_time
    parts = sum(float(part[i]) * m.z[p, i] for p, part in enumerate(found.parts) for i in range(part.size))
    switches = sum(m.switch[p] for p in range(P - 1))
    m.makespan = pyo.Expression(expr=parts + m.final_update + extra + switch * switches)
    paid = sum(bills) + m.final_bill + extra * m.hourly[P - 1] + switch * sum(m.switch_rate[p] for p in range(P - 1))
    m.total_cost = pyo.Expression(expr=paid / 3600.0)
    m.peak_hourly = pyo.Var(domain=pyo.NonNegativeReals)
    m.peak_row = pyo.Constraint(range(P), rule=lambda _, p: m.peak_hourly >= m.hourly[p])
    m.hourly_cost = pyo.Expression(expr=m.peak_hourly)
    limits = inst.limits
    if limits.max_hourly_cost is not None:
        m.max_hourly_cost = pyo.Constraint(expr=m.hourly_cost <= limits.max_hourly_cost * (1 + REL_TOL))
    if limits.max_total_cost is not None:
        m.max_total_cost = pyo.Constraint(expr=m.total_cost <= limits.max_total_cost * (1 + REL_TOL))
    criteria = {"total_cost": m.total_cost, "hourly_cost": m.hourly_cost, "makespan": m.makespan}
    for name in OBJECTIVES:
        objective = pyo.Objective(expr=criteria[name], sense=pyo.minimize)
        m.add_component(f"objective_{name}", objective)
        objective.deactivate()
    return criteria


def card_rows(r: ReplanModel, cap: int | None) -> list:
    """Every stage's inference GPUs within ``cap`` (none without one)."""
    if cap is None:
        return []
    c, shapes = r.c, r.inst.inference.shapes
    return [sum(s.gpus_per_replica * c.x(p, K, s.name) for K in c.Ks for s in shapes) <= cap for p in c.capacities()]


def replan_plan(c: CompactModel, values) -> Plan:
    """The run's plan of a replan solution: each stage's plan at its own counts with its own start-up, then the
    run's (:func:`solver.stages.plans.run_plan`)."""
    parts = [own_startup(si, p) for si, p in zip(c.found.insts, part_plans(c, values))]
    return run_plan(c.inst, c.found.insts, parts)
