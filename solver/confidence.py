"""Planning for a confidence α (MODEL.md §9): the scenario set, the cost bounds, and what the result reports.

:class:`Confidence` draws the ``S`` scenarios of the instance's ``uncertainty`` section and keeps what each
asks of a plan (:class:`solver.confidence_table.ScenarioTable`). Per allowance Δ of MODEL §11 (the scenarios
are on time iff T_s + Δ <= deadline), :class:`Screen` says which pairs can hold a plan, bounds each pair's
hourly cost from below — for every pair at once from the levels every plan of its K reaches, and for one
pair from its own scenarios (:mod:`solver.confidence_pair`) when the search comes to it — and gives the
scenario side of its model (:mod:`solver.confidence_model`). :func:`report` evaluates the plan found in the
scenarios it was solved for and in fresh ones (another seed).
"""

from __future__ import annotations

from dataclasses import fields, replace

import numpy as np

from trainground.models.instance import Instance
from trainground.models.result import ConfidenceReport, Plan
from trainground.solver import calculus as calc
from trainground.solver import scenarios as sc
from trainground.solver.bounds import SandboxCurve, SandboxLP, inference_lower_bound, sandbox_lower_bound
from trainground.solver.coefficients import gpu_prices, index_of, reserved_cost
from trainground.solver.confidence_cuts import CUT_FAMILIES, corner_points, hull_2d, minimal
from trainground.solver.confidence_pair import PairNeeds, eta, pair_needs
from trainground.solver.confidence_table import ScenarioTable
from trainground.solver.goodput import weight_sync_factor
from trainground.solver.holding import sandbox_occupancy
from trainground.solver.pairs import Pairs
from trainground.solver.tolerances import INTEGER_TOL, REL_TOL

CHECK_SAMPLES = 10_000  # fresh scenarios the out-of-sample share is estimated on
CHECK_SEED_OFFSET = 1  # their seed: the section's seed plus this


def alpha_of(inst: Instance, override: float | None = None) -> float | None:
    """The confidence to plan for: ``override`` (solve --confidence), else the section's, else None."""
    if override is not None:
        return override
    return None if inst.uncertainty is None else inst.uncertainty.confidence


def needed(alpha: float, scenarios: int) -> int:
    """ceil(α·S), read so that α·S landing a hair above an integer in floating point does not add one."""
    return int(np.ceil(alpha * scenarios * (1 - INTEGER_TOL)))


class Confidence:
    """A confidence-α solve's scenarios and their needs; :meth:`at` gives what they ask of the pairs with an
    allowance (kept per allowance: MODEL §11's rounds ask again at another)."""

    def __init__(self, inst: Instance, pairs: Pairs, alpha: float, shared: dict, lp: SandboxLP):
        self.inst, self.pairs, self.alpha = inst, pairs, alpha
        self.scenarios = sc.draw(inst)
        self.table = ScenarioTable(inst, self.scenarios)
        self.needed = needed(alpha, self.table.scenarios)
        self.allowed = float(self.table.scenarios - self.needed)  # scenarios that may be late
        self.top_groups = _top_groups(inst)
        ix = index_of(inst)
        families = ("supply",) + (() if self.table.by_groups else ("groups",))
        self.families = families + (("steady",) if ix.steady_split else ()) + ("peak",)
        self.shared, self.lp = shared, lp
        self.nominal_sandbox = sandbox_lower_bound(inst, pairs, shared, lp)
        self.curve = SandboxCurve(lp, _rate_range(inst, pairs))
        self._screens: dict[float, Screen] = {}

    @property
    def groups(self) -> int:
        return int(self.table.weight.size)

    def at(self, allowance: float = 0.0) -> Screen:
        allowance = float(allowance)
        if allowance not in self._screens:
            self._screens[allowance] = Screen(self, allowance)
        return self._screens[allowance]

    def level_bound(self, rows: np.ndarray, levels: dict[str, np.ndarray]) -> np.ndarray:
        """(rows,) a lower bound on the hourly cost of a plan at pair ``rows[i]`` whose levels reach ``levels``
        (supply in the pair's attempts/s, training groups, steady and peak environments spread by share): each
        part of the nominal bound (:mod:`solver.bounds`) at the larger of the pair's own need and the level."""
        inst, pairs = self.inst, _take(self.pairs, rows)
        groups = np.maximum(pairs.groups, levels["groups"]).astype(int)
        train = gpu_prices(inst)[inst.training.pool] * inst.training.gpus_per_group * groups
        supply = np.maximum(pairs.attempts, levels["supply"])
        inference = inference_lower_bound(inst, replace(pairs, groups=groups), supply)
        shares = np.array([b.share for b in inst.environment.backends])
        steady, peak = levels["steady"], np.maximum(levels["peak"], levels["steady"])
        per = sandbox_occupancy(inst)
        rate = np.minimum(steady / per, peak / (per * inst.environment.peak_to_mean))
        loaded = replace(
            pairs, inflight=steady[:, None] * shares, peak=peak[:, None] * shares, attempts=rate, sandbox_rate=rate
        )
        sandbox = np.maximum(
            self.nominal_sandbox[rows], sandbox_lower_bound(inst, loaded, self.shared, self.lp, self.curve)
        )
        return reserved_cost(inst) + train + inference + sandbox


class Screen:
    """What the scenarios ask of the pairs with one allowance Δ: ``possible`` (pairs whose scenarios they
    cannot meet whatever their counts fit in the lateness allowed), ``hourly`` (a lower bound on each pair's
    hourly cost, inf where no plan), and per pair its :class:`PairNeeds` and a tighter bound, on first use."""

    def __init__(self, conf: Confidence, allowance: float):
        self.conf, self.allowance = conf, allowance
        self._needs: dict[int, PairNeeds | None] = {}
        self._bound: dict[int, float] = {}
        self._cuts: dict[int, list] = {}
        self._corners: dict[int, np.ndarray] = {}
        self.possible, self.hourly = self._screen()

    def needs(self, row: int) -> PairNeeds | None:
        if row not in self._needs:
            cuts = [] if self.conf.table.by_groups else self._class_cuts(int(self.conf.pairs.kept[row]))
            self._needs[row] = pair_needs(self.conf, self.conf.pairs, row, self.allowance, self.conf.families, cuts)
        return self._needs[row]

    def levels(self, row: int) -> tuple[float, float, int]:
        """(largest steady level, largest peak level, room for extra training groups) of pair ``row``'s model."""
        found, pairs = self.needs(row), self.conf.pairs
        if found is None:
            raise ValueError(f"pair {row} holds no confidence plan: it has no model")
        top = {f: max(found.floors[f], float(found.needs[f].max(initial=0.0))) for f in found.floors}
        room = 0 if self.conf.table.by_groups else max(0, self.conf.top_groups - int(pairs.groups[row]))
        return top.get("steady", top["peak"]), top["peak"], room

    def bound(self, row: int) -> float:
        """A lower bound on pair ``row``'s hourly cost from its own scenarios (inf: no plan)."""
        if row not in self._bound:
            self._bound[row] = self._pair_bound(row)
        return self._bound[row]

    def _pair_bound(self, row: int) -> float:
        conf, found = self.conf, self.needs(row)
        if found is None:
            return np.inf
        floors = found.floors
        if conf.table.by_groups:
            points = found.corners
            steady = np.full(points.shape[0], floors.get("steady", 0.0))
            groups = np.full(points.shape[0], float(conf.pairs.groups[row]))
        else:
            points = self._class_corners(int(conf.pairs.kept[row]))[:, [0, 2]]
            groups = np.maximum(self._class_corners(int(conf.pairs.kept[row]))[:, 1], floors["groups"])
            steady = np.full(points.shape[0], floors.get("steady", 0.0))
        if points.shape[0] == 0:
            return np.inf
        levels = {
            "supply": np.maximum(points[:, 0], floors["supply"]),
            "groups": groups,
            "steady": steady,
            "peak": np.maximum(points[:, 1], floors["peak"]),
        }
        return float(np.min(conf.level_bound(np.full(points.shape[0], row), levels)))

    def _screen(self) -> tuple[np.ndarray, np.ndarray]:
        """Per K, the scenarios no pair of it can meet and the levels η every plan of it reaches (needs at the
        largest pace any group count has: lower bounds), read against each pair's cadence and groups."""
        conf, pairs, table = self.conf, self.conf.pairs, self.conf.table
        possible = np.zeros(pairs.size, dtype=bool)
        levels = {f: np.zeros(pairs.size) for f in ("supply", "groups", "steady", "peak")}
        weight = table.weight
        for kept in np.unique(pairs.kept).tolist():
            rows = np.flatnonzero(pairs.kept == kept)
            up = table.needs(kept, self.allowance)
            never = ~up.fresh | (up.groups > conf.top_groups)
            late = (pairs.cadence[rows, None] > up.pace[None, :] * (1 + REL_TOL)) | never[None, :]
            if table.by_groups:
                late |= up.groups[None, :] > pairs.groups[rows, None]
            possible[rows] = late.astype(float) @ weight <= conf.allowed + 1e-9
            live, budget = ~never, conf.allowed - float(weight[never].sum())
            sync = weight_sync_factor(conf.inst, pairs.cadence[rows])
            for f, values in (("supply", up.supply), ("groups", up.groups), ("steady", up.steady), ("peak", up.peak)):
                level = eta(values[live], weight[live], budget) if live.any() else np.inf
                levels[f][rows] = level * (sync if f == "supply" else 1.0)
        if table.by_groups:
            levels["groups"] = pairs.groups.astype(float)
        rows = np.flatnonzero(possible)
        hourly = np.full(pairs.size, np.inf)
        if rows.size:
            hourly[rows] = conf.level_bound(rows, {f: v[rows] for f, v in levels.items()})
        return possible, hourly

    def _class_corners(self, kept: int) -> np.ndarray:
        """(points, 3) the K class's corners on (supply, groups, peak), the dominated ones left out: the levels
        of every plan keeping ``kept`` versions lie above one (:mod:`solver.confidence_cuts`; no weight sync
        where the makespan does not depend on the groups)."""
        if kept not in self._corners:
            conf, table = self.conf, self.conf.table
            up = table.needs(kept, self.allowance)
            live = up.fresh & (up.groups <= conf.top_groups)
            budget = conf.allowed - float(table.weight[~live].sum())
            floors = [eta(getattr(up, f)[live], table.weight[live], budget) for f in CUT_FAMILIES]
            points = corner_points(
                up.supply[live], up.groups[live], up.peak[live], table.weight[live], float(conf.needed), floors
            )
            self._corners[kept] = minimal(points)
        return self._corners[kept]

    def _class_cuts(self, kept: int) -> list[tuple[dict[str, float], float]]:
        """The K class's hull rows: on each two of (supply, groups, peak), the facets of the hull of its corners'
        projections (a plan's levels lie above a corner, so above its projection; :func:`hull_2d`)."""
        if kept not in self._cuts:
            points, cuts = self._class_corners(kept), []
            for i, j in ((0, 1), (0, 2), (1, 2)):
                for a, b, beta in hull_2d(minimal(points[:, [i, j]])):
                    cuts.append(({CUT_FAMILIES[i]: a, CUT_FAMILIES[j]: b}, beta))
            self._cuts[kept] = cuts
        return self._cuts[kept]


def _rate_range(inst: Instance, pairs: Pairs) -> np.ndarray:
    """Attempt rates the sandbox curve is sampled over: the pairs' own, up to four times the largest (scenario
    levels reach above the nominal; beyond the samples its lines still bound the cost from below)."""
    rates = pairs.attempts if pairs.sandbox_rate is None else pairs.sandbox_rate
    finite = rates[np.isfinite(rates)]
    if finite.size == 0:
        return finite
    return np.array([finite.min(), 4.0 * finite.max()])


def _take(pairs: Pairs, rows: np.ndarray) -> Pairs:
    """The pair table's rows ``rows`` (repeats allowed)."""
    arrays = {
        f.name: getattr(pairs, f.name)[rows] for f in fields(pairs) if isinstance(getattr(pairs, f.name), np.ndarray)
    }
    return replace(pairs, **arrays)


def _top_groups(inst: Instance) -> int:
    """The most training groups the nominal update law admits (a table's measured range ends somewhere)."""
    lo, hi = calc.group_range(inst)
    counts = np.arange(lo, hi + 1)
    u = calc.update_time(inst.training.update_time, counts * inst.training.gpus_per_group)
    finite = np.flatnonzero(np.isfinite(u))
    return int(counts[finite[-1]]) if finite.size else 0


def report(
    inst: Instance, plan: Plan, conf: Confidence, allowance: float = 0.0, check_samples: int = CHECK_SAMPLES
) -> ConfidenceReport:
    """The plan's on-time share in its own scenarios and in ``check_samples`` fresh ones (MODEL §9 keys), each
    on time iff T_s + ``allowance`` <= deadline (MODEL §11)."""
    inside = sc.evaluate(inst, plan, conf.scenarios, allowance).on_time
    seed = (conf.scenarios.seed or 0) + CHECK_SEED_OFFSET
    fresh = sc.evaluate(inst, plan, sc.draw(inst, check_samples, seed), allowance).on_time
    lo, hi = calc.wilson(int(fresh.sum()), fresh.size)
    return ConfidenceReport(
        target=conf.alpha,
        scenarios=conf.scenarios.size,
        needed=conf.needed,
        groups=conf.groups,
        in_sample=float(inside.mean()),
        out_of_sample=float(fresh.mean()),
        out_of_sample_interval=[lo, hi],
        check_samples=check_samples,
        seed=conf.scenarios.seed,
        check_seed=seed,
        allowance_s=allowance,
    )
