"""The staged planning MIP of MODEL.md §12: one cadence per stage on its grid, K shared, one capacity or one per stage.

Each stage is the single-stage model of :mod:`solver.model` over every admissible (cadence, K) pair of
the instance the stage runs as (:func:`models.stage_rules.stage_instance`), dominated K included
(K is shared, so a K one stage would never pick can be the one another needs): its pair blocks,
their rows of MODEL §3 (2, 3, 5, 6, 7 per stage, at the stage's values) and one selected pair
per stage. The stage models are sub-blocks of one model whose rows span them:

- ``same_kept``: Σ_{pairs of stage p with K} z = Σ_{pairs of stage 1 with K} z, for every K and p > 1;
- every pair block gets ``extra_groups``, the groups beyond the pair's fewest, and host caps that are the
  largest of any stage's, so one capacity can serve several stages at their own cadences;
- ``fixed``: the counts are shared: Σ_pairs x_s = X_s, Σ N_k = N_k, Σ V_v = V_v and Σ (m_pair·z + extra)
  = G per stage;
- ``replan``: a switch binary δ_p per pair of consecutive stages, 1 when any count differs
  (|x_{s,p} - x_{s,p+1}| <= cap·δ_p, the same for groups, nodes and VMs);
- ``deadline``: T = Σ_p n_p·L_p + extra_time + switch_time·Σ δ_p <= deadline;
- the costs of §12: ``fixed`` bills hourly·T/3600; ``replan`` each stage's hourly over n_p·L_p, the
  extra time at the last stage's rate and a switch at the rate of the stage after it (σ_p >=
  hourly_{p+1} - H·(1 - δ_p), σ_p >= 0, H an upper bound of any stage's hourly cost);
- the objectives of §4 (under ``replan`` hourly_cost is the largest stage's) and the budgets of §3.8.

Every row is linear; each stage's pair blocks are the convex hull of its cadence choice (MODEL §7).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pyomo.core as pyo

from trainground.models.instance import OBJECTIVES, Instance
from trainground.models.stage_rules import stage_instance
from trainground.solver import calculus as calc
from trainground.solver import pairs as pair_tables
from trainground.solver.coefficients import PairValues, index_of
from trainground.solver.model import add_pair, build_model, refresh_globals
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
    subs: list[pyo.ConcreteModel]
    model: pyo.ConcreteModel
    criteria: dict[str, Any]  # pyomo expressions
    hourly: list[Any]
    empty: str | None = None  # why no plan exists when a stage has no admissible pair (then nothing is built)


def build_staged(inst: Instance) -> StagedModel:
    """The staged MIP of ``inst`` (which has ``stages``), every stage's pairs built."""
    assert inst.stages is not None, "a staged model needs stages"
    insts = [stage_instance(inst, s) for s in inst.stages.list]
    if len(insts) == 1:  # one stage: the instance's own pair table (its K dominance holds)
        tables = [pair_tables.build(insts[0])]
    else:
        tables = prune(inst, insts, [pair_tables.build(si, dominated=True) for si in insts])
    extension = SharedTraining(_top_groups(inst, insts), _host_caps(insts, tables))
    top = pyo.ConcreteModel(name=inst.name)
    for stage, table in zip(inst.stages.list, tables):
        if table.size == 0:
            cut = ", ".join(f"{name} ({count})" for name, count in sorted(table.rejected.items())) or "none"
            why = f"stage {stage.name}: no cadence on its grid meets its rows with any K (cut by: {cut})"
            return StagedModel(inst, insts, tables, [], top, {}, [], empty=why)
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
    staged = StagedModel(inst, insts, tables, subs, top, {}, [sub.hourly_cost for sub in subs])
    add_same_kept(staged)
    if inst.stages.capacity == "fixed":
        add_shared_counts(staged)
    else:
        add_switches(staged)
    add_run_rows(staged)
    return staged


def prune(inst: Instance, insts: list[Instance], tables: list[pair_tables.Pairs]) -> list[pair_tables.Pairs]:
    """The pairs a staged plan may use, with no optimum lost: K that some other K dominates in every stage
    at every cadence are dropped (:func:`dominated_kept`), then each stage's cadences past the deadline
    left by the other stages at their shortest admissible cadence, repeated until nothing changes:
    n_p·L_p <= deadline - extra_time - Σ_{q != p} n_q·min L_q."""
    assert inst.stages is not None
    gone = dominated_kept(inst, tables)
    rows = [~np.isin(t.kept, gone) for t in tables]
    n = [s.iterations for s in inst.stages.list]
    room = inst.schedule.deadline - inst.schedule.extra_time
    while True:
        shortest = [float(t.cadence[r].min()) if r.any() else np.inf for t, r in zip(tables, rows)]
        if not np.all(np.isfinite(shortest)):
            break
        spent = sum(k * L for k, L in zip(n, shortest))
        new = [
            r & (n_p * t.cadence <= (room - spent + n_p * L) * (1 + REL_TOL))
            for t, r, n_p, L in zip(tables, rows, n, shortest)
        ]
        if all(np.array_equal(a, b) for a, b in zip(new, rows)):
            break
        rows = new
    out = []
    for t, r in zip(tables, rows):
        cut = int(np.count_nonzero(~r))
        rejected = {**t.rejected, "deadline with the other stages": cut} if cut else t.rejected
        out.append(replace(_subset(t, r), rejected=rejected))
    return out


def dominated_kept(inst: Instance, tables: list[pair_tables.Pairs]) -> list[int]:
    """The K another K' beats in every stage at every cadence: K' admissible wherever K is, with an attempt
    rate no higher and every shape's supply multiplier no lower (among exact equals the smaller K stays)."""
    Ks = np.arange(1, inst.freshness.max_versions_kept + 1)
    mult = pair_tables.supply_multipliers(inst, Ks)
    blocks = []
    for t in tables:
        cadences, at = np.unique(np.round(t.cadence, 9), return_inverse=True)
        table = np.full((cadences.size, Ks.size), np.inf)
        table[at, t.kept - 1] = t.attempts
        blocks.append(table)
    attempts = np.vstack(blocks) if blocks else np.zeros((0, Ks.size))
    gone = []
    for k in range(Ks.size):
        for k2 in range(Ks.size):
            if k2 == k or k2 in gone or not np.all(mult[k2] >= mult[k]):
                continue
            no_worse = np.all(attempts[:, k2] <= attempts[:, k])
            equal = np.array_equal(attempts[:, k2], attempts[:, k]) and np.array_equal(mult[k2], mult[k])
            if no_worse and (not equal or k2 < k):
                gone.append(k)
                break
    return [int(Ks[k]) for k in gone]


def _subset(t: pair_tables.Pairs, rows: np.ndarray) -> pair_tables.Pairs:
    """The pair table ``t`` restricted to ``rows`` (a mask)."""
    columns = ("cadence", "kept", "makespan", "startup", "groups", "exceedance", "drop", "attempts", "inflight", "peak")
    update = {name: getattr(t, name)[rows] for name in columns}
    update["supply_per_replica"] = t.supply_per_replica[rows]
    if t.sandbox_rate is not None:
        update["sandbox_rate"] = t.sandbox_rate[rows]
    return replace(t, **update)


def _top_groups(inst: Instance, insts: list[Instance]) -> int:
    """The most training groups a shared G may take: the pool's (or max_groups), and for a table law no
    more than its measured range. Refused when a stage's update time is not non-increasing over a
    contiguous range of counts (one G must keep up in every stage: any G from a pair's fewest up does
    only then)."""
    lo, hi = calc.group_range(inst)
    counts = np.arange(lo, hi + 1)
    top = hi
    for si in insts:
        u = calc.update_time(si.training.update_time, counts * si.training.gpus_per_group)
        finite = np.flatnonzero(np.isfinite(u))
        if finite.size == 0:
            continue
        run = u[finite[0] : finite[-1] + 1]
        if finite.size != run.size or np.any(np.diff(run) > REL_TOL * run[:-1]):
            raise StagedUnsupported(
                "training.update_time",
                "a table law whose update time rises with more GPUs (or has holes) cannot be planned with "
                "stages: one training count may serve several stages; use a non-increasing table",
            )
        top = min(top, int(counts[finite[-1]]))
    return top


class StagedUnsupported(Exception):
    """A staged instance this model cannot plan exactly: the field and the rule (exit 2, not a bug)."""

    def __init__(self, where: str, rule: str):
        super().__init__(rule)
        self.where, self.rule = where, rule


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


def add_run_rows(s: StagedModel) -> None:
    """The run's makespan, costs, deadline, budgets and the three objectives (MODEL §12, §3.4, §3.8, §4)."""
    inst, m, subs = s.inst, s.model, s.subs
    assert inst.stages is not None
    P, extra = len(subs), inst.schedule.extra_time
    switches = sum(m.switch[p] for p in range(P - 1)) if P > 1 and hasattr(m, "switch") else 0
    m.makespan = pyo.Expression(
        expr=sum(sub.makespan for sub in subs) - (P - 1) * extra + inst.stages.switch_time * switches
    )
    if hasattr(m, "switch"):
        switch_cost = inst.stages.switch_time / 3600.0 * sum(m.switch_rate[p] for p in range(P - 1))
        early = extra / 3600.0 * sum(s.hourly[p] for p in range(P - 1))
        m.total_cost = pyo.Expression(expr=sum(sub.total_cost for sub in subs) - early + switch_cost)
        m.peak_hourly = pyo.Var(domain=pyo.NonNegativeReals)
        m.peak_row = pyo.Constraint(range(P), rule=lambda _, p: m.peak_hourly >= s.hourly[p])
        m.hourly_cost = pyo.Expression(expr=m.peak_hourly)
    else:
        m.total_cost = pyo.Expression(expr=sum(sub.total_cost for sub in subs) - (P - 1) * extra / 3600.0 * s.hourly[0])
        m.hourly_cost = pyo.Expression(expr=s.hourly[0])
    m.deadline = pyo.Constraint(expr=m.makespan <= inst.schedule.deadline * (1 + REL_TOL))
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
