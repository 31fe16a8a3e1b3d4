"""The chance constraint of MODEL.md §9 as an extension of the disaggregated model (sample average approximation).

One binary ``w_g`` per scenario group ``g`` (scenarios that ask the same of every plan, weight
``n_g``) says the plan is on time in it; ``Σ_g n_g·w_g >= ceil(α·S)``. Inside each pair block
``p`` (selection ``z_p``), every need of :mod:`solver.confidence_table` is a level the block's
decisions reach — token supply ``Σ_i supply_i·x_i``, training groups ``m_p·z_p + e_p`` (``e_p``
extra groups beyond the fewest that keep up at the nominal cadence), and the environments a
second split of the sandbox load over the same hosts holds (``ℓ``, ``ℓ'`` for steady and peak)
— and scenario ``g`` asks ``level >= r_g`` when ``w_g = z_p = 1``:

    level >= η·z_p + (r_g - η)·(w_g + z_p - 1)        for r_g > η   (per-pair big-M r_g - η)
    level >= η·z_p + Σ_j (r_(j) - r_(j+1))·(w_(j) + z_p - 1)        (the sorted chain, one row)

Exact reductions: at most ``q_p = S - ceil(α·S) - (scenarios the pair cannot meet at all)`` scenarios
may be late at pair ``p``, so each level is at least ``η``, the requirement after the top ``q_p``
(weighted): rows exist only for the scenarios above it; a scenario the pair cannot meet at all
(cadence past its deadline pace, freshness, no group count keeps up) gets ``w_g + z_p <= 1``;
a pair with more such scenarios than allowed is never opened (:meth:`ConfidenceBlocks.possible`).
The relaxation of those rows lets a fractional ``w`` buy every level at a fraction of its price;
each K class's levels also meet the facets of the convex hull of the level vectors that are on
time often enough (:mod:`solver.confidence_cuts`), which closes most of that gap.
"""

from __future__ import annotations

import math

import numpy as np
import pyomo.core as pyo

from trainground.models.instance import Instance
from trainground.solver.confidence_cuts import CUT_FAMILIES, corner_points, hull_cuts, minimal
from trainground.solver.confidence_table import Requirements
from trainground.solver.pairs import Pairs
from trainground.solver.tolerances import INTEGER_TOL, REL_TOL

FAMILIES = ("supply", "groups", "steady", "peak")


def needed(alpha: float, scenarios: int) -> int:
    """ceil(α·S), read so that α·S landing a hair above an integer in floating point does not add one."""
    return int(math.ceil(alpha * scenarios * (1 - INTEGER_TOL)))


class ConfidenceBlocks:
    """The scenario binaries, the count row, each K class's levels and hull rows, and each pair block's levels."""

    def __init__(self, inst: Instance, pairs: Pairs, req: Requirements, alpha: float):
        self.inst, self.pairs, self.req, self.alpha = inst, pairs, req, alpha
        self.needed = needed(alpha, req.scenarios)
        self.allowed = req.scenarios - self.needed  # scenarios that may be late
        self.top_groups = _top_groups(inst)
        self._possible: np.ndarray | None = None
        self._levels: dict[int, dict] = {}
        self._corners: dict[int, np.ndarray] = {}

    # -- per pair, no pyomo ----------------------------------------------------------

    def unmet(self, row: int) -> np.ndarray:
        """(G,) scenario groups pair ``row`` cannot meet whatever its counts."""
        r, j = self.req, self.req.column(int(self.pairs.kept[row]))
        return (
            (self.pairs.cadence[row] > r.pace[:, j] * (1 + REL_TOL))
            | ~r.fresh[:, j]
            | ~np.isfinite(r.groups[:, j])
            | (r.groups[:, j] > self.top_groups)
        )

    def possible(self) -> np.ndarray:
        """(pairs,) pairs whose unmeetable scenarios fit in the lateness allowed."""
        if self._possible is None:
            self._possible = np.array(
                [self.req.weight[self.unmet(p)].sum() <= self.allowed for p in range(self.pairs.size)], dtype=bool
            )
        return self._possible

    def levels(self, row: int) -> dict[str, tuple[float, np.ndarray, np.ndarray]]:
        """Per need: (η, groups above it, their requirements), the groups sorted hardest first."""
        if row not in self._levels:
            self._levels[row] = self._levels_of(row)
        return self._levels[row]

    def _levels_of(self, row: int) -> dict[str, tuple[float, np.ndarray, np.ndarray]]:
        return self._levels_over(self.req.column(int(self.pairs.kept[row])), self.unmet(row))

    def _levels_over(self, j: int, excluded: np.ndarray) -> dict[str, tuple[float, np.ndarray, np.ndarray]]:
        """Per need at K column ``j``: at most ``allowed`` minus the weight of ``excluded`` (late anyway) of
        the other groups may be late, so the level reaches η, the need after the hardest of that weight."""
        r = self.req
        budget = self.allowed - r.weight[excluded].sum()
        values = {"supply": r.supply[:, j], "groups": r.groups[:, j], "steady": r.steady[:, j], "peak": r.peak[:, j]}
        live = np.flatnonzero(~excluded)
        out = {}
        for name, value in values.items():
            order = live[np.argsort(-value[live], kind="stable")]
            spent = np.cumsum(r.weight[order])
            cut = int(np.searchsorted(spent, budget, side="right"))  # the first group past the budget
            eta = float(value[order[cut]]) if cut < order.size else 0.0
            above = order[:cut][value[order[:cut]] > eta]
            out[name] = (eta, above, value[above])
        return out

    def lower_levels(self) -> dict[str, np.ndarray]:
        """(pairs,) per need the level η every plan of the pair reaches (for cost bounds)."""
        rows = [self.levels(p) if ok else None for p, ok in enumerate(self.possible())]
        return {name: np.array([np.inf if lv is None else lv[name][0] for lv in rows]) for name in FAMILIES}

    # -- the pyomo parts -------------------------------------------------------------

    def declare_globals(self, m: pyo.ConcreteModel) -> None:
        """w_g binaries and Σ_g n_g·w_g >= ceil(α·S) [scenarios]."""
        groups = range(self.req.weight.size)
        m.on_time = pyo.Var(groups, domain=pyo.Binary)
        m.on_time_count = pyo.Constraint(
            expr=sum(float(n) * m.on_time[g] for g, n in enumerate(self.req.weight)) >= self.needed
        )
        self._declare_levels(m)

    def adjust(self, values: dict[str, dict], row: int) -> None:
        """Raise the pair's host caps (hosts worth having, from its nominal peak) to the largest peak a
        scenario asks of it; the instance's max_nodes and max_vms still hold."""
        peak = float(self.pairs.peak[row].sum())
        eta, _, asked = self.class_levels(int(self.pairs.kept[row]))["peak"]
        top = float(asked.max(initial=eta))
        if not peak > 0 or top <= peak:
            return
        env = self.inst.environment
        limits = {("node_cap", k.name): k.max_nodes for k in env.node_types}
        limits |= {("vm_cap", v.name): v.max_vms for v in env.cloud.vm_types}
        for table in ("node_cap", "vm_cap"):
            for name, cap in values[table].items():
                raised = math.ceil(cap * top / peak) + 1
                limit = limits[table, name]
                values[table][name] = raised if limit is None else min(raised, limit)

    def declare(self, m: pyo.ConcreteModel, blk: pyo.Block, row: int) -> None:
        """The pair's extra training groups e_p <= (top - m_p)·z_p (read by the pool and GPU cost rows)."""
        room = max(0, self.top_groups - int(self.pairs.groups[row]))
        blk.extra_groups = pyo.Var(domain=pyo.NonNegativeIntegers, bounds=(0, room))
        blk.extra_groups_off = pyo.Constraint(expr=blk.extra_groups <= room * blk.z)

    def add_rows(self, m: pyo.ConcreteModel, blk: pyo.Block, row: int, host_rows) -> None:
        """The pair's unmeetable scenarios (w_g + z_p <= 1) and its sandbox copy at levels ℓ, ℓ'."""
        z, w = blk.z, m.on_time
        blk.late = pyo.Constraint(np.flatnonzero(self.unmet(row)).tolist(), rule=lambda b, g: w[g] + z <= 1)
        _sandbox_copy(m, blk, self.class_levels(int(self.pairs.kept[row])), host_rows)
        blk.row = row

    def refresh(self, m: pyo.ConcreteModel) -> tuple[list, list]:
        """The rows tying each K's level variables to the built pairs of that K (rebuilt when pairs are
        added; the scenario rows on the levels stay); returns the (removed, added) rows. A K's levels
        sum its pairs' (at most one is selected): selection Σ_p z_p, supply Σ_p Σ_i supply_i·x_pi,
        groups Σ_p (m_p·z_p + e_p), environments Σ_p ℓ_p and Σ_p ℓ'_p."""
        removed = list(m.level_link.values())
        m.del_component(m.level_link)
        by_kept: dict[int, list] = {K: [] for K in m.kinds}
        for blk in m.blocks.values():
            by_kept[int(self.pairs.kept[blk.row])].append(blk)

        def link(_, name: str, kept: int):
            blocks = by_kept[kept]
            if name == "on":
                return m.class_on[kept] == sum(b.z for b in blocks)
            level = {
                "supply": lambda: sum(b.k["supply"][s] * b.x[s] for b in blocks for s in m.ix.shapes),
                "groups": lambda: sum(float(self.pairs.groups[b.row]) * b.z + b.extra_groups for b in blocks),
                "steady": lambda: sum(b.level_steady for b in blocks),
                "peak": lambda: sum(b.level_peak for b in blocks),
            }[name]()
            return m.class_level[name, kept] <= level

        m.level_link = pyo.Constraint(["on", *self.families(m)], m.kinds, rule=link)
        return removed, list(m.level_link.values())

    def families(self, m: pyo.ConcreteModel) -> tuple[str, ...]:
        """The needs with rows: the steady split only exists beside cloud capacity (MODEL §3.5)."""
        return tuple(f for f in FAMILIES if f != "steady" or m.ix.steady_split)

    def _declare_levels(self, m: pyo.ConcreteModel) -> None:
        """Per K, a selection share and a level per need, with each need's scenario rows on them."""
        m.kinds = sorted({int(K) for K in self.pairs.kept[self.possible()]})
        m.class_on = pyo.Var(m.kinds, bounds=(0, 1))
        m.class_level = pyo.Var(FAMILIES, m.kinds, domain=pyo.NonNegativeReals)
        m.level_link = pyo.Constraint([])
        for kept in m.kinds:
            levels = self.class_levels(kept)
            self._declare_hull(m, kept)
            for name in self.families(m):
                eta, above, values = levels[name]
                _level_rows(
                    m,
                    f"level_{name}_{kept}",
                    m.class_level[name, kept],
                    eta,
                    above,
                    values,
                    m.class_on[kept],
                    m.on_time,
                )

    def corners(self, kept: int) -> np.ndarray:
        """(points, 3) the class's corner points on (supply, groups, peak), the dominated ones left out: the
        levels of every plan keeping ``kept`` versions lie above one (:mod:`solver.confidence_cuts`)."""
        if kept not in self._corners:
            r, j = self.req, self.req.column(kept)
            live = ~self._never(j)
            levels = self.class_levels(kept)
            points = corner_points(
                r.supply[live, j],
                r.groups[live, j],
                r.peak[live, j],
                r.weight[live],
                float(self.needed),
                [levels[name][0] for name in CUT_FAMILIES],
            )
            self._corners[kept] = minimal(points)
        return self._corners[kept]

    def _declare_hull(self, m: pyo.ConcreteModel, kept: int) -> None:
        """The class's valid inequalities on (supply, groups, peak) (:mod:`solver.confidence_cuts`)."""
        cuts = hull_cuts(self.corners(kept))
        level = [m.class_level[name, kept] for name in CUT_FAMILIES]
        rule = lambda _, c: (  # noqa: E731
            sum(float(a) * v for a, v in zip(cuts[c][0], level) if a > 0) >= cuts[c][1] * m.class_on[kept]
        )
        m.add_component(f"hull_{kept}", pyo.Constraint(range(len(cuts)), rule=rule))

    def _never(self, j: int) -> np.ndarray:
        """(G,) groups no pair at K column ``j`` can meet (freshness, update time)."""
        r = self.req
        return ~r.fresh[:, j] | ~np.isfinite(r.groups[:, j]) | (r.groups[:, j] > self.top_groups)

    def class_levels(self, kept: int) -> dict[str, tuple[float, np.ndarray, np.ndarray]]:
        """Memoised :meth:`_class_levels`."""
        if -kept not in self._levels:
            self._levels[-kept] = self._class_levels(kept)
        return self._levels[-kept]

    def _class_levels(self, kept: int) -> dict[str, tuple[float, np.ndarray, np.ndarray]]:
        """:meth:`levels` valid for every pair keeping ``kept`` versions: only the scenarios no such pair
        can meet (freshness, update time) are left out, so η is at most any of those pairs' own."""
        j = self.req.column(kept)
        return self._levels_over(j, self._never(j))


def _level_rows(m, name: str, level, eta: float, above: np.ndarray, values: np.ndarray, z, w) -> list:
    """level >= η·z, one row per group above η, and the sorted chain (docs/confidence.md); returns the rows."""
    groups = above.tolist()
    need = dict(zip(groups, values.tolist()))
    floor = pyo.Constraint(expr=level >= eta * z)
    m.add_component(f"{name}_floor", floor)
    each = pyo.Constraint(groups, rule=lambda _, g: level >= eta * z + (need[g] - eta) * (w[g] + z - 1))
    m.add_component(f"{name}_scenario", each)
    rows = [floor, each]
    if len(groups) > 1:
        ext = np.append(values, eta)
        steps = ext[:-1] - ext[1:]  # r_(j) - r_(j+1), with r_(t+1) = η
        chain = pyo.Constraint(expr=level >= eta * z + sum(float(d) * (w[g] + z - 1) for g, d in zip(groups, steps)))
        m.add_component(f"{name}_chain", chain)
        rows.append(chain)
    return rows


def _sandbox_copy(m, blk, levels: dict, host_rows) -> None:
    """A second steady and peak split over the pair's own hosts N, V, holding ℓ (steady) and ℓ' (peak)
    environments spread by the backends' shares; same rows as MODEL §3.5-3.6."""
    ix, inst = m.ix, m.inst
    share = {b.name: b.share for b in inst.environment.backends}
    eligible = inst.environment.cloud.eligible_share
    top = {name: float(max(levels[name][2].max(initial=0.0), levels[name][0])) for name in ("steady", "peak")}
    blk.level_steady = pyo.Var(domain=pyo.NonNegativeReals, bounds=(0, top["steady"]))
    blk.level_peak = pyo.Var(domain=pyo.NonNegativeReals, bounds=(0, top["peak"]))
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


def _top_groups(inst: Instance) -> int:
    """The most training groups the nominal update law admits (a table's measured range ends somewhere)."""
    from trainground.solver import calculus as calc

    lo, hi = calc.group_range(inst)
    counts = np.arange(lo, hi + 1)
    u = calc.update_time(inst.training.update_time, counts * inst.training.gpus_per_group)
    finite = np.flatnonzero(np.isfinite(u))
    return int(counts[finite[-1]]) if finite.size else 0
