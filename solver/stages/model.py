"""The staged planning MIP of MODEL.md §12: one cadence per stage on its grid, K shared, one capacity or one per stage.

Each stage is the single-stage model of :mod:`solver.mip.model` over the admissible pairs of the instance the
stage's rows run as (:mod:`solver.stages.tables`, dominated K included: K is shared, so a K one stage would
never pick can be the one another needs): its pair blocks, their rows of MODEL §3 (2, 3, 5, 6, 7 per
stage, at the stage's values; E^hold sandboxes and consumed gaps under hold) and one selected pair per
stage. The stage models are sub-blocks of one model whose rows span them:

- ``same_kept``: Σ_{pairs of stage p with K} z = Σ_{pairs of stage 1 with K} z, for every K and p > 1;
- every pair block gets ``extra_groups``, the groups beyond the pair's fewest, and host caps that are the
  largest of any stage's, so one capacity can serve several stages at their own cadences;
- ``fixed``: the counts are shared: Σ_pairs x_s = X_s, Σ N_k = N_k, Σ V_v = V_v and Σ (m_pair·z + extra)
  = G per stage;
- ``replan``: a switch binary δ_p per pair of consecutive stages, 1 when any count differs
  (|x_{s,p} - x_{s,p+1}| <= cap·δ_p, the same for groups, nodes and VMs);
- the makespan T = Σ_p part_p + extra_time + switch_time·Σ δ_p, each pair's part its stage's share
  (n_p·L_p; with the start-up counted the first stage's fill, :mod:`solver.stages.tables`), plus the last
  stage's final update at its groups (``final_on``, :func:`add_final_update`); the deadline row
  T + Δ <= deadline is added per solve;
- the costs of §12: each stage's hourly cost over its part (``fixed``: one hourly cost, so hourly·T/3600),
  the extra time at the last stage's rate and a switch at the rate of the stage after it (σ_p >=
  hourly_{p+1} - H·(1 - δ_p), σ_p >= 0, H an upper bound of any stage's hourly cost);
- the objectives of §4 (under ``replan`` hourly_cost is the largest stage's) and the budgets of §3.8.

Every row is linear; each stage's pair blocks are the convex hull of its cadence choice (MODEL §7).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyomo.core as pyo

from trainground.models.instance import OBJECTIVES, Instance
from trainground.solver.laws import calculus as calc
from trainground.solver.mip.model import add_pair, build_model, refresh_globals
from trainground.solver.stages.tables import StageTables, stage_tables
from trainground.solver.table import pairs as pair_tables
from trainground.solver.table.coefficients import PairValues, index_of
from trainground.solver.tolerances import REL_TOL


class SharedTraining:
    """The model extension of a staged model: each pair block's groups beyond the pair's fewest
    (``extra_groups``, integer, at most ``top - fewest`` and 0 unless the pair is selected), and host caps
    that are the largest of any stage's. A count shared by stages (``fixed``, or a ``replan`` that keeps
    its capacity to save a switch) must be free to take what another stage needs."""

    def __init__(self, top: int, caps: dict[str, dict[str, int]]):
        self.top, self.caps = top, caps

    def declare_globals(self, m) -> None:
        return None

    def adjust(self, values: dict, p: int) -> None:
        values["node_cap"] = dict(self.caps["node_cap"])
        values["vm_cap"] = dict(self.caps["vm_cap"])

    def declare(self, m, blk, p: int) -> None:
        room = max(0, self.top - int(m.pairs.groups[p]))
        blk.extra_groups = pyo.Var(domain=pyo.NonNegativeIntegers, bounds=(0, room))
        blk.extra_off = pyo.Constraint(expr=blk.extra_groups <= room * blk.z)

    def add_rows(self, m, blk, p: int, host_rows) -> None:
        return None

    def refresh(self, m) -> tuple[list, list]:
        return [], []


@dataclass
class StagedModel:
    """The staged model and what reads it: each stage's instance, pair table and sub-model, and the run's
    expressions (``criteria[name]`` for the three objectives; ``hourly[p]`` each stage's hourly cost)."""

    inst: Instance
    stage_insts: list[Instance]
    pairs: list[pair_tables.Pairs]
    parts: list[np.ndarray]  # per stage, per pair: its part of the run's makespan (solver.stages.tables), s
    subs: list[pyo.ConcreteModel]
    model: pyo.ConcreteModel
    criteria: dict[str, Any]  # pyomo expressions
    hourly: list[Any]
    empty: str | None = None  # why no plan exists when a stage has no admissible pair (then nothing is built)


def build_staged(inst: Instance, found: StageTables | None = None) -> StagedModel:
    """The staged MIP of ``inst`` (which has ``stages``) over its stage tables ``found`` (default built here),
    every stage's pairs built."""
    assert inst.stages is not None, "a staged model needs stages"
    found = found or stage_tables(inst)
    insts, tables = found.insts, found.tables
    extension = SharedTraining(found.top, _host_caps(insts, tables))
    top = pyo.ConcreteModel(name=inst.name)
    for stage, table in zip(inst.stages.list, tables):
        if table.size == 0:
            cut = ", ".join(f"{name} ({count})" for name, count in sorted(table.rejected.items())) or "none"
            why = f"stage {stage.name}: no cadence on its grid meets its rows with any K (cut by: {cut})"
            return StagedModel(inst, insts, tables, found.parts, [], top, {}, [], empty=why)
    subs = []
    for i, (si, table) in enumerate(zip(insts, tables)):
        sub = build_model(si, table, extension=extension)
        for row, key in enumerate(table.keys()):
            add_pair(sub, row, key)
        refresh_globals(sub)
        for name in OBJECTIVES:
            sub.del_component(f"objective_{name}")
        top.add_component(f"stage_{i}", sub)
        subs.append(sub)
    staged = StagedModel(inst, insts, tables, found.parts, subs, top, {}, [sub.hourly_cost for sub in subs])
    add_same_kept(staged)
    if inst.stages.capacity == "fixed":
        add_shared_counts(staged)
    else:
        add_switches(staged)
    if found.final is not None:
        add_final_update(staged, *found.final)
    add_run_rows(staged)
    return staged


def _host_caps(insts: list[Instance], tables: list[pair_tables.Pairs]) -> dict[str, dict[str, int]]:
    """Per host type, the most hosts any pair of any stage could want (the caps of a shared count)."""
    caps: dict[str, dict[str, int]] = {"node_cap": {}, "vm_cap": {}}
    for si, table in zip(insts, tables):
        values = PairValues(si, index_of(si))
        for row in range(table.size):
            v = values(table, row)
            for kind in caps:
                for name, cap in v[kind].items():
                    caps[kind][name] = max(caps[kind].get(name, 0), cap)
    return caps


def _blocks(sub) -> list:
    return list(sub.blocks.values())


def _kept_sum(sub, K: int):
    return sum(b.z for b in _blocks(sub) if b.key[1] == K)


def add_same_kept(s: StagedModel) -> None:
    """K shared: each stage selects a pair with the first stage's K."""
    Ks = range(1, s.inst.freshness.max_versions_kept + 1)
    first = s.subs[0]
    rows = [(p, K) for p in range(1, len(s.subs)) for K in Ks]

    def rule(_, p, K):
        lhs, rhs = _kept_sum(s.subs[p], K), _kept_sum(first, K)
        if isinstance(lhs, int) and isinstance(rhs, int):
            return pyo.Constraint.Skip
        return lhs - rhs == 0

    s.model.same_kept = pyo.Constraint(rows, rule=rule)


def _counts(sub) -> dict[tuple[str, str], object]:
    """A stage's counts as linear expressions over its pair blocks: replicas, groups, nodes, VMs."""
    blocks = _blocks(sub)
    out: dict[tuple[str, str], object] = {}
    for name in sub.ix.shapes:
        out["x", name] = sum(b.x[name] for b in blocks)
    for name in sub.ix.nodes:
        out["N", name] = sum(b.N[name] for b in blocks)
    for name in sub.ix.vms:
        out["V", name] = sum(b.V[name] for b in blocks)
    out["G", ""] = sum(
        int(sub.pairs.groups[i]) * b.z + (b.extra_groups if hasattr(b, "extra_groups") else 0)
        for i, b in enumerate(blocks)
    )
    return out


def add_shared_counts(s: StagedModel) -> None:
    """``fixed``: every stage's counts equal the shared ones (the first stage's)."""
    first = _counts(s.subs[0])
    rows = [(p, kind, name) for p in range(1, len(s.subs)) for (kind, name) in first]
    later = {p: _counts(s.subs[p]) for p in range(1, len(s.subs))}
    s.model.shared = pyo.Constraint(rows, rule=lambda _, p, kind, name: later[p][kind, name] == first[kind, name])


def count_caps(s: StagedModel) -> dict[tuple[str, str], float]:
    """An upper bound of each count in any stage (the bound a switch row's big-M needs)."""
    caps: dict[tuple[str, str], float] = {}
    for sub in s.subs:
        for b in _blocks(sub):
            for kind, var in (("x", b.x), ("N", b.N), ("V", b.V)):
                for name in var:
                    caps[kind, name] = max(caps.get((kind, name), 0.0), float(var[name].ub or 0.0))
    caps["G", ""] = float(calc.group_range(s.inst)[1])
    return caps


def add_switches(s: StagedModel) -> None:
    """``replan``: δ_p = 1 when any count differs between stages p and p+1, and σ_p the switch's hourly cost."""
    P = len(s.subs)
    m, caps = s.model, count_caps(s)
    counts = [_counts(sub) for sub in s.subs]
    m.switch = pyo.Var(range(P - 1), domain=pyo.Binary)
    m.switch_rate = pyo.Var(range(P - 1), domain=pyo.NonNegativeReals)
    keys = [(p, kind, name, sign) for p in range(P - 1) for (kind, name) in counts[0] for sign in (1, -1)]
    m.switch_on = pyo.Constraint(
        keys,
        rule=lambda _, p, kind, name, sign: (
            sign * (counts[p][kind, name] - counts[p + 1][kind, name]) <= caps[kind, name] * m.switch[p]
        ),
    )
    top = hourly_bound(s, caps)
    m.switch_paid = pyo.Constraint(
        range(P - 1), rule=lambda _, p: m.switch_rate[p] >= s.hourly[p + 1] - top * (1 - m.switch[p])
    )


def hourly_bound(s: StagedModel, caps: dict[tuple[str, str], float]) -> float:
    """An upper bound of any stage's hourly cost: every count at its cap, every pool billed whole."""
    inst = s.inst
    gpus = sum(p.gpus * p.gpu_hour_cost for p in inst.gpu_pools)
    nodes = sum(k.hour_cost * caps.get(("N", k.name), 0.0) for k in inst.environment.node_types)
    vms = sum(v.hour_cost * v.billed_fraction * caps.get(("V", v.name), 0.0) for v in inst.environment.cloud.vm_types)
    return gpus + nodes + vms + 1.0


def add_final_update(s: StagedModel, lo: int, update) -> None:
    """The last stage's final update U_P(G_P) with the start-up counted (MODEL §8, §12), at the groups G_P
    that stage has, kept linear in T and in the cost by one small block per count g = lo..top: a binary
    ``final_on[g]`` (exactly one on, Σ_g g·final_on[g] = G_P) and a copy of the last stage's replicas,
    nodes and VMs that is theirs when g is on (0 otherwise; Σ_g copy = the stage's count). T gains
    Σ_g U_P(g)·final_on[g] and the cost Σ_g U_P(g)/3600·hourly_g, hourly_g the copy's hourly cost
    (the last stage's when g is on). [s, $]"""
    m, last, inst = s.model, s.subs[-1], s.inst
    gs = list(range(lo, lo + len(update)))
    seconds = {g: float(u) for g, u in zip(gs, update)}
    counts, caps = _counts(last), count_caps(s)
    kinds = [key for key in counts if key[0] != "G"]
    m.final_on = pyo.Var(gs, domain=pyo.Binary)
    m.final_count = pyo.Var(gs, kinds, domain=pyo.NonNegativeReals)
    m.final_one = pyo.Constraint(expr=sum(m.final_on[g] for g in gs) == 1)
    m.final_groups = pyo.Constraint(expr=sum(g * m.final_on[g] for g in gs) == counts["G", ""])
    m.final_off = pyo.Constraint(
        gs, kinds, rule=lambda _, g, kind, name: m.final_count[g, kind, name] <= caps[kind, name] * m.final_on[g]
    )
    m.final_copy = pyo.Constraint(
        kinds, rule=lambda _, kind, name: sum(m.final_count[g, kind, name] for g in gs) == counts[kind, name]
    )
    k, ix = last.k, last.ix
    shapes = {sh.name: sh for sh in inst.inference.shapes}
    per_group = k["gpu_price"][ix.training_pool] * inst.training.gpus_per_group

    def hourly(g: int):
        copy = m.final_count
        return (
            sum(k["gpu_price"][shapes[n].pool] * shapes[n].gpus_per_replica * copy[g, "x", n] for n in ix.shapes)
            + sum(k["node_price"][n] * copy[g, "N", n] for n in ix.nodes)
            + sum(k["vm_price"][v] * copy[g, "V", v] for v in ix.vms)
            + (per_group * g + k["reserved_cost"][None]) * m.final_on[g]
        )

    m.final_update = pyo.Expression(expr=sum(seconds[g] * m.final_on[g] for g in gs))
    m.final_cost = pyo.Expression(expr=sum(seconds[g] / 3600.0 * hourly(g) for g in gs))


def add_run_rows(s: StagedModel) -> None:
    """The run's makespan and costs (MODEL §12), the budgets of §3.8 and the three objectives of §4. The
    deadline row ``T + Δ <= deadline`` is added per solve with its allowance Δ (§11 item 4) by
    :class:`solver.stages.solve.StagedPlanner`.

    ``T = Σ_p part_p + extra_time + switch_time·Σ δ_p``, each pair's part a constant of the pair
    (:mod:`solver.stages.tables`). Each stage is billed over its part at its own hourly cost
    (Σ_pairs part·hourly_pair, linear: a pair's hourly cost is 0 unless it is selected), the extra time and
    the final update (:func:`add_final_update`) at the last stage's and a switch at the stage's after it;
    under ``fixed`` every stage's hourly cost is one, so this is hourly·T/3600."""
    inst, m, subs = s.inst, s.model, s.subs
    assert inst.stages is not None
    P, extra = len(subs), inst.schedule.extra_time
    switches = sum(m.switch[p] for p in range(P - 1)) if P > 1 and hasattr(m, "switch") else 0
    pairs = [(float(part[i]), blk) for sub, part in zip(subs, s.parts) for i, blk in enumerate(_blocks(sub))]
    final, final_cost = (m.final_update, m.final_cost) if hasattr(m, "final_update") else (0, 0)
    m.makespan = pyo.Expression(
        expr=sum(part * blk.z for part, blk in pairs) + final + extra + inst.stages.switch_time * switches
    )
    billed = sum(part / 3600.0 * blk.hourly_cost for part, blk in pairs) + final_cost + extra / 3600.0 * s.hourly[-1]
    if hasattr(m, "switch"):
        switch_cost = inst.stages.switch_time / 3600.0 * sum(m.switch_rate[p] for p in range(P - 1))
        m.total_cost = pyo.Expression(expr=billed + switch_cost)
        m.peak_hourly = pyo.Var(domain=pyo.NonNegativeReals)
        m.peak_row = pyo.Constraint(range(P), rule=lambda _, p: m.peak_hourly >= s.hourly[p])
        m.hourly_cost = pyo.Expression(expr=m.peak_hourly)
    else:
        m.total_cost = pyo.Expression(expr=billed)
        m.hourly_cost = pyo.Expression(expr=s.hourly[0])
    limits = inst.limits
    if limits.max_hourly_cost is not None:
        m.max_hourly_cost = pyo.Constraint(expr=m.hourly_cost <= limits.max_hourly_cost * (1 + REL_TOL))
    if limits.max_total_cost is not None:
        m.max_total_cost = pyo.Constraint(expr=m.total_cost <= limits.max_total_cost * (1 + REL_TOL))
    s.criteria = {"total_cost": m.total_cost, "hourly_cost": m.hourly_cost, "makespan": m.makespan}
    for name, expr in s.criteria.items():
        objective = pyo.Objective(expr=expr, sense=pyo.minimize)
        m.add_component(f"objective_{name}", objective)
        objective.deactivate()


def card_rows(staged: StagedModel, cap: int | None) -> list:
    """Every stage's inference GPUs within ``cap`` (none without one)."""
    if cap is None:
        return []
    shapes = staged.inst.inference.shapes
    return [
        sum(s.gpus_per_replica * blk.x[s.name] for blk in sub.blocks.values() for s in shapes) <= cap
        for sub in staged.subs
    ]
