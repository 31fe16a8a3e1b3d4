"""One pair's confidence model (MODEL.md §9, sample average approximation): the pair's block and the scenario
rows, given to HiGHS as arrays (:class:`solver.highs.ArrayModel`).

The pair block is the model's own (:func:`solver.mip.model.add_pair`, read by :mod:`solver.mip.block_arrays`), its
selection fixed on (a confidence solve has a pair per training-group count, so the pair's count is the plan's),
with :class:`PairExtension`'s part: a second sandbox split over the same hosts holding ``ℓ`` (steady) and
``ℓ'`` (peak) environments spread by the backends' shares. On it, with the uncertain groups of
:class:`solver.confidence.pair.PairNeeds`:

    level_f >= floor_f                                     (a column bound; f = supply, steady, peak)
    level_f >= floor_f + (r_gf - floor_f)·w_g              (per uncertain group g whose need r_gf is above it)
    level_f >= floor_f + Σ_j (r_(j)f - r_(j+1)f)·w_(j)     (the sorted chain, r_(U+1)f = floor_f)
    Σ_g n_g·w_g >= count                                   (ceil(α·S) less the free groups' weight)
    a·levels >= β                                          (the hull rows, solver/confidence/cuts.py)
    Σ_i share_gi·c_i·x_i >= r_g,supply·w_g                 (where shapes' multipliers differ)

with ``level_supply <= Σ_i c_i·x_i`` (c_i the block's per-replica supply) and the sandbox levels the copy's
``ℓ``, ``ℓ'``. Budgets, a card cap and the objective are the block's cost terms.
"""

from __future__ import annotations

import math

import numpy as np
import pyomo.core as pyo

from trainground.solver.confidence.pair import PairNeeds
from trainground.solver.highs import ArrayModel
from trainground.solver.mip.block_arrays import BlockArrays

INF = np.inf


class PairExtension:
    """The confidence part of a pair block (see :func:`solver.mip.model.build_model`): raised host caps and the
    sandbox copy. ``levels(row)`` gives the largest steady and peak level a scenario asks of the pair."""

    def __init__(self, levels):
        self.levels = levels

    def declare_globals(self, m: pyo.ConcreteModel) -> None:
        """Nothing global: the scenario rows are the model's arrays (:func:`pair_model`)."""

    def adjust(self, values: dict[str, dict], row: int) -> None:
        """Raise the pair's host caps (hosts worth having, from its nominal peak) to the largest peak a
        scenario asks of it; the instance's max_nodes and max_vms still hold."""
        inst, pairs = self.levels.inst, self.levels.pairs
        peak = float(pairs.peak[row].sum())
        _, top = self.levels(row)
        if not peak > 0 or top <= peak:
            return
        env = inst.environment
        limits = {("node_cap", k.name): k.max_nodes for k in env.node_types}
        limits |= {("vm_cap", v.name): v.max_vms for v in env.cloud.vm_types}
        for table in ("node_cap", "vm_cap"):
            for name, cap in values[table].items():
                raised = math.ceil(cap * top / peak) + 1
                limit = limits[table, name]
                values[table][name] = raised if limit is None else min(raised, limit)

    def declare(self, m: pyo.ConcreteModel, blk: pyo.Block, row: int) -> None:
        """No decision beside the block's before its rows: the pair's training groups are its own."""

    def add_rows(self, m: pyo.ConcreteModel, blk: pyo.Block, row: int, host_rows) -> None:
        """The pair's sandbox copy at levels ℓ, ℓ'."""
        steady, peak = self.levels(row)
        _sandbox_copy(m, blk, steady, peak, host_rows)


def _sandbox_copy(m, blk, steady: float, peak: float, host_rows) -> None:
    """A second steady and peak split over the pair's own hosts N, V, holding ℓ (steady) and ℓ' (peak)
    environments spread by the backends' shares; same rows as MODEL §3.5-3.6."""
    ix, inst = m.ix, m.inst
    share = {b.name: b.share for b in inst.environment.backends}
    eligible = inst.environment.cloud.eligible_share
    blk.level_steady = pyo.Var(domain=pyo.NonNegativeReals, bounds=(0, steady))
    blk.level_peak = pyo.Var(domain=pyo.NonNegativeReals, bounds=(0, peak))
    blk.yc = pyo.Var(ix.node_backends if ix.steady_split else [], domain=pyo.NonNegativeReals)
    blk.yc_peak = pyo.Var(ix.node_backends, domain=pyo.NonNegativeReals)
    blk.cc = pyo.Var(ix.vm_backends, domain=pyo.NonNegativeReals)
    if ix.steady_split:
        blk.level_steady_cover = pyo.Constraint(
            ix.backends,
            rule=lambda b, bk: (
                sum(b.yc[n, bb] for (n, bb) in ix.node_backends if bb == bk) >= share[bk] * b.level_steady
            ),
        )
        host_rows(m, blk, "node", blk.N, blk.yc, "level_steady_nodes")
    blk.level_peak_cover = pyo.Constraint(
        ix.backends,
        rule=lambda b, bk: (
            sum(b.yc_peak[n, bb] for (n, bb) in ix.node_backends if bb == bk)
            + sum(b.cc[v, bb] for (v, bb) in ix.vm_backends if bb == bk)
            >= share[bk] * b.level_peak
        ),
    )
    host_rows(m, blk, "node", blk.N, blk.yc_peak, "level_peak_nodes")
    cloud = sorted({bk for (_, bk) in ix.vm_backends}, key=ix.backends.index)
    blk.level_cloud_eligible = pyo.Constraint(
        cloud,
        rule=lambda b, bk: (
            sum(b.cc[v, bb] for (v, bb) in ix.vm_backends if bb == bk)
            <= eligible.get(bk, 0.0) * share[bk] * b.level_peak
        ),
    )
    host_rows(m, blk, "vm", blk.V, blk.cc, "level_cloud_vms")


class _Rows:
    """Rows being gathered (row-wise sparse) over columns being added."""

    def __init__(self, columns: int):
        self.columns = columns
        self.lower: list[float] = []
        self.upper: list[float] = []
        self.starts: list[int] = [0]
        self.index: list[np.ndarray] = []
        self.value: list[np.ndarray] = []

    def add(self, cols, coefs, lower: float, upper: float = INF) -> None:
        cols, coefs = np.asarray(cols, dtype=np.int64), np.asarray(coefs, dtype=float)
        keep = coefs != 0
        self.index.append(cols[keep])
        self.value.append(coefs[keep])
        self.starts.append(self.starts[-1] + int(keep.sum()))
        self.lower.append(lower)
        self.upper.append(upper)

    def new_columns(self, count: int) -> np.ndarray:
        first = self.columns
        self.columns += count
        return np.arange(first, first + count)


def pair_model(blk, arrays: BlockArrays, needs: PairNeeds, objective: str, caps: list[tuple[str, float]]) -> ArrayModel:
    """The MIP of one pair: its block (selection fixed on), the scenario rows of ``needs``, ``caps`` ((kind,
    limit): hourly | total | cards) and the block's cost term ``objective`` as the objective."""
    rows = _Rows(len(arrays.variables))
    col = arrays.columns
    level = {}
    supply = {s: (col[id(blk.x[s])], c) for s, c in blk.k["supply"].items()}
    level["supply"] = rows.new_columns(1)[0]
    rows.add([j for j, _ in supply.values()] + [level["supply"]], [c for _, c in supply.values()] + [-1.0], 0.0)
    if "steady" in needs.floors:
        level["steady"] = col[id(blk.level_steady)]
    level["peak"] = col[id(blk.level_peak)]
    w = rows.new_columns(needs.groups.size)
    _scenario_rows(rows, level, w, needs)
    if needs.share is not None:
        _exact_supply_rows(rows, supply, w, needs.needs["supply"], needs.share)
    for coef, beta in needs.cuts:
        rows.add([level[f] for f in coef], list(coef.values()), beta)
    _cap_rows(rows, blk, arrays, caps)
    return _assemble(arrays, rows, blk, level, w, needs, objective)


def _scenario_rows(rows: _Rows, level: dict, w: np.ndarray, needs: PairNeeds) -> None:
    """The count row, and per family each uncertain group's row and the sorted chain."""
    rows.add(w, needs.weight, needs.count)
    for f, floor in needs.floors.items():
        values = needs.needs[f]
        above = np.flatnonzero(values > floor)
        for g in above.tolist():
            rows.add([level[f], w[g]], [1.0, -(values[g] - floor)], floor)
        if above.size > 1:
            order = above[np.argsort(-values[above], kind="stable")]
            steps = values[order] - np.append(values[order[1:]], floor)
            rows.add(np.concatenate(([level[f]], w[order])), np.concatenate(([1.0], -steps)), floor)


def _exact_supply_rows(rows: _Rows, supply: dict, w: np.ndarray, needs: np.ndarray, share: np.ndarray) -> None:
    """Σ_i share_gi·c_i·x_i >= r_g·w_g where the shapes' multipliers differ (the level row takes the largest)."""
    cols = [j for j, _ in supply.values()]
    coefs = np.array([c for _, c in supply.values()])
    for g, r in enumerate(needs.tolist()):
        rows.add(cols + [w[g]], list(share[g] * coefs) + [-r], 0.0)


def _cap_rows(rows: _Rows, blk, arrays: BlockArrays, caps: list[tuple[str, float]]) -> None:
    """This solve's budgets and card cap as rows on the block's cost terms (z = 1)."""
    cols = np.arange(len(arrays.variables))
    z = arrays.columns[id(blk.z)]
    for kind, limit in caps:
        if kind in ("hourly", "total"):
            dense, constant = arrays.costs["hourly_cost" if kind == "hourly" else "total_cost"]
            fixed = dense[z]  # the selection's own term: a constant with z = 1
            rows.add(cols, np.where(cols == z, 0.0, dense), -INF, limit - constant - fixed)
        else:
            shapes = blk.model().inst.inference.shapes
            rows.add(
                [arrays.columns[id(blk.x[s.name])] for s in shapes], [s.gpus_per_replica for s in shapes], -INF, limit
            )


def _assemble(arrays: BlockArrays, rows: _Rows, blk, level: dict, w: np.ndarray, needs: PairNeeds, objective: str):
    n = rows.columns
    lower = np.concatenate([arrays.col_lower, np.zeros(n - len(arrays.variables))])
    upper = np.concatenate([arrays.col_upper, np.full(n - len(arrays.variables), INF)])
    integer = np.concatenate([arrays.integer, np.zeros(n - len(arrays.variables), dtype=bool)])
    z = arrays.columns[id(blk.z)]
    lower[z] = upper[z] = 1.0
    for f, j in level.items():
        lower[j] = max(lower[j], needs.floors[f])
    upper[w], integer[w] = 1.0, True
    dense, constant = arrays.costs[objective]
    cost = np.concatenate([dense, np.zeros(n - len(arrays.variables))])
    starts = np.concatenate([arrays.starts, arrays.starts[-1] + np.array(rows.starts[1:], dtype=np.int64)])
    index = np.concatenate([arrays.index, *rows.index]) if rows.index else arrays.index
    value = np.concatenate([arrays.value, *rows.value]) if rows.value else arrays.value
    return ArrayModel(
        cost=cost,
        offset=constant,
        col_lower=lower,
        col_upper=upper,
        integer=integer,
        row_lower=np.concatenate([arrays.row_lower, rows.lower]),
        row_upper=np.concatenate([arrays.row_upper, rows.upper]),
        starts=starts,
        index=index,
        value=value,
    )
