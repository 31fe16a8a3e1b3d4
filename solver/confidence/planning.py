"""Planning for a confidence α (MODEL.md §9): the scenario set, the cost bounds, and what the result reports.

:class:`Confidence` draws the ``S`` scenarios of the instance's ``uncertainty`` section and keeps what each
asks of a plan (:class:`solver.confidence.table.ScenarioTable`). Per allowance Δ of MODEL §11 (the scenarios
are on time iff T_s + Δ <= deadline), :class:`Screen` says which pairs can hold a plan, bounds each pair's
hourly cost from below — for every pair at once from the levels every plan of its K reaches, and for one
pair from its own scenarios (:mod:`solver.confidence.pair`) when the search comes to it — and gives the
scenario side of its model (:mod:`solver.confidence.model`). :func:`report` evaluates the plan found in the
scenarios it was solved for and in fresh ones (another seed).
"""

from __future__ import annotations

from dataclasses import fields, replace

import numpy as np

from trainground.models.instance import Instance
from trainground.models.result import ConfidenceReport, Plan
from trainground.solver.confidence.cuts import frontier_grid
from trainground.solver.confidence.pair import PairNeeds, eta, pair_needs
from trainground.solver.confidence.table import ScenarioTable
from trainground.solver.laws import calculus as calc
from trainground.solver.laws.goodput import weight_sync_factor
from trainground.solver.laws.holding import sandbox_occupancy
from trainground.solver.table.bounds import SandboxCurve, SandboxLP, inference_lower_bound, sandbox_lower_bound
from trainground.solver.table.coefficients import gpu_prices, index_of, reserved_cost
from trainground.solver.table.pairs import Pairs
from trainground.solver.tolerances import INTEGER_TOL, RATIO_TOL, REL_TOL, WEIGHT_TOL
from trainground.solver.uncertainty import scenarios as sc

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

    def __init__(
        self,
        inst: Instance,
        pairs: Pairs,
        alpha: float,
        shared: dict,
        lp: SandboxLP,
        table: ScenarioTable | None = None,
    ):
        """``table``: the needs of the instance's scenarios, kept by the caller across solves of other α."""
        self.inst, self.pairs, self.alpha = inst, pairs, alpha
        self.scenarios = sc.draw(inst)
        self.table = ScenarioTable(inst, self.scenarios) if table is None else table
        self.needed = needed(alpha, self.table.scenarios)
        self.allowed = float(self.table.scenarios - self.needed)  # scenarios that may be late
        self.top_groups = _top_groups(inst)
        self.families = ("supply",) + (("steady",) if index_of(inst).steady_split else ()) + ("peak",)
        self.shared, self.lp = shared, lp
        self.nominal_sandbox = sandbox_lower_bound(inst, pairs, shared, lp)
        self.nominal_inference = inference_lower_bound(inst, pairs, pairs.attempts)
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

    def grid_bound(self, rows: np.ndarray, supply: np.ndarray, groups: np.ndarray, steady, peak) -> np.ndarray:
        """(rows,) the least over the columns j of a lower bound on the hourly cost of a plan at pair ``rows[i]``
        whose levels reach (``supply[i, j]`` in the pair's attempts/s, ``groups[i, j]`` training groups,
        ``steady[j]`` and ``peak[j]`` environments spread by share): each part of the nominal bound
        (:mod:`solver.table.bounds`) at the larger of the pair's own need and the level (nan supply: no plan there;
        inf where no column holds one)."""
        n, columns = supply.shape
        if n == 0 or columns == 0:
            return np.full(n, np.inf)
        sandbox = np.tile(self.sandbox_bound(np.asarray(steady, float), np.asarray(peak, float)), n)
        flat = np.repeat(rows, columns)
        total = self._parts(flat, np.nan_to_num(supply.ravel(), nan=np.inf), groups.ravel(), sandbox)
        return total.reshape(n, columns).min(axis=1)

    def _parts(self, rows: np.ndarray, supply: np.ndarray, groups: np.ndarray, sandbox: np.ndarray) -> np.ndarray:
        inst, pairs = self.inst, _take(self.pairs, rows)
        groups = np.maximum(pairs.groups, groups).astype(int)
        train = gpu_prices(inst)[inst.training.pool] * inst.training.gpus_per_group * groups
        with np.errstate(invalid="ignore"):
            inference = inference_lower_bound(inst, replace(pairs, groups=groups), np.maximum(pairs.attempts, supply))
        inference = np.where(np.isfinite(supply), inference, np.inf)
        return reserved_cost(inst) + train + inference + np.maximum(self.nominal_sandbox[rows], sandbox)

    def inference_bound(self, rows: np.ndarray, supply: np.ndarray) -> np.ndarray:
        """(rows,) a lower bound on the inference GPUs' $/h at pair ``rows[i]`` reaching the supply level
        ``supply[i]`` (attempts/s in the pair's units; nan or inf: none can)."""
        finite = np.isfinite(supply)
        out = np.full(rows.size, np.inf)
        if finite.any():
            out[finite] = inference_lower_bound(self.inst, _take(self.pairs, rows[finite]), supply[finite])
        return out

    def sandbox_bound(self, steady: np.ndarray, peak: np.ndarray) -> np.ndarray:
        """A lower bound on the hosts' $/h when they hold ``steady`` and ``peak`` environments spread by the
        backends' shares (arrays of one shape; :func:`solver.table.bounds.sandbox_lower_bound`)."""
        inst = self.inst
        steady = np.asarray(steady, dtype=float).ravel()
        peak = np.maximum(np.asarray(peak, dtype=float).ravel(), steady)
        shares = np.array([b.share for b in inst.environment.backends])
        per = sandbox_occupancy(inst)
        rate = np.minimum(steady / per, peak / (per * inst.environment.peak_to_mean))
        loaded = replace(
            _take(self.pairs, np.zeros(steady.size, dtype=int)),
            inflight=steady[:, None] * shares,
            peak=peak[:, None] * shares,
            attempts=rate,
            sandbox_rate=rate,
        )
        return sandbox_lower_bound(inst, loaded, self.shared, self.lp, self.curve)


class Screen:
    """What the scenarios ask of the pairs with one allowance Δ: ``possible`` (pairs whose scenarios they
    cannot meet whatever their counts fit in the lateness allowed), ``hourly`` (a lower bound on each pair's
    hourly cost, inf where no plan), and per pair its :class:`PairNeeds` and a tighter bound, on first use."""

    def __init__(self, conf: Confidence, allowance: float):
        self.conf, self.allowance = conf, allowance
        self._needs: dict[int, PairNeeds | None] = {}
        self._bound: dict[int, float] = {}
        self.possible, self.hourly = self._screen()

    def needs(self, row: int) -> PairNeeds | None:
        if row not in self._needs:
            self._needs[row] = pair_needs(self.conf, self.conf.pairs, row, self.allowance, self.conf.families)
        return self._needs[row]

    def levels(self, row: int) -> tuple[float, float]:
        """(largest steady level, largest peak level) of pair ``row``'s model."""
        found = self.needs(row)
        if found is None:
            raise ValueError(f"pair {row} holds no confidence plan: it has no model")
        top = {f: max(found.floors[f], float(found.needs[f].max(initial=0.0))) for f in found.floors}
        return top.get("steady", top["peak"]), top["peak"]

    def bound(self, row: int) -> float:
        """A lower bound on pair ``row``'s hourly cost from its own scenarios (inf: no plan)."""
        if row not in self._bound:
            self._bound[row] = self._pair_bound(row)
        return self._bound[row]

    def _pair_bound(self, row: int) -> float:
        found = self.needs(row)
        if found is None or found.corners.shape[0] == 0:
            return np.inf
        points, floors = found.corners, found.floors
        steady = np.full(points.shape[0], floors.get("steady", 0.0))
        if found.ratio is not None:  # every group's peak one multiple of its steady need
            steady = np.maximum(steady, points[:, 1] / found.ratio)
        groups = np.full((1, points.shape[0]), float(self.conf.pairs.groups[row]))
        return float(self.conf.grid_bound(np.array([row]), points[None, :, 0], groups, steady, points[:, 1])[0])

    def _screen(self) -> tuple[np.ndarray, np.ndarray]:
        """Per K, the scenarios no pair of it can meet (needs at the largest pace any group count has: lower
        bounds), read against each pair's cadence and groups, and the least cost over the corners of its class
        (:meth:`_corner_bound`)."""
        conf, pairs, table = self.conf, self.conf.pairs, self.conf.table
        possible = np.zeros(pairs.size, dtype=bool)
        hourly = np.full(pairs.size, np.inf)
        for kept in np.unique(pairs.kept).tolist():
            rows = np.flatnonzero(pairs.kept == kept)
            up = table.needs(kept, self.allowance)
            never = ~up.fresh | (up.groups > conf.top_groups)
            lost = _late_weight(pairs.cadence[rows], pairs.groups[rows], up.pace, up.groups, never, table.weight)
            possible[rows] = lost <= conf.allowed + WEIGHT_TOL
            at = rows[possible[rows]]
            if at.size and not never.all():
                hourly[at] = self._corner_bound(kept, at)
        return possible, hourly

    def _corner_bound(self, kept: int, rows: np.ndarray) -> np.ndarray:
        """(rows,) the least cost of pairs ``rows`` (keeping ``kept`` versions) over the corners their plans'
        levels can lie above: the K class's grid over groups and peak needs (:func:`frontier_grid`, its floors
        the levels η every plan of the class reaches), in the row of the pair's training groups, at the supply
        it needs per peak threshold. A pair's supply coefficients differ from another's of the same K only by
        its weight-sync factor, which scales its need alike, so the inference part is priced once per count."""
        conf, pairs, table = self.conf, self.conf.pairs, self.conf.table
        up, weight = table.needs(kept, self.allowance), table.weight
        live = up.fresh & (up.groups <= conf.top_groups)
        budget = conf.allowed - float(weight[~live].sum())
        floors = [eta(getattr(up, f)[live], weight[live], budget) for f in ("supply", "groups", "peak")]
        g_up, _, p_low, q = frontier_grid(
            up.supply[live], up.groups[live], up.peak[live], weight[live], float(conf.needed), floors
        )
        steady = np.full(p_low.size, eta(up.steady[live], weight[live], budget))
        ratio = up.peak[live] / np.where(up.steady[live] > 0, up.steady[live], np.nan)
        if ratio.size and np.isfinite(ratio).all() and np.allclose(ratio, ratio[0], rtol=RATIO_TOL, atol=0.0):
            steady = np.maximum(steady, p_low / ratio[0])  # every group's peak one multiple of its steady need
        counts, first, which = np.unique(pairs.groups[rows], return_index=True, return_inverse=True)
        reps = rows[first]  # one pair of each count: the others' inference part is the same
        cells = q[np.minimum(np.searchsorted(g_up, counts.astype(float), side="left"), g_up.size - 1), :]
        sync = weight_sync_factor(conf.inst, pairs.cadence[reps])
        inference = conf.inference_bound(np.repeat(reps, p_low.size), (cells * sync[:, None]).ravel())
        inference = inference.reshape(counts.size, -1)[which.reshape(-1)]
        inference = np.maximum(inference, conf.nominal_inference[rows][:, None])
        sandbox = np.maximum(conf.nominal_sandbox[rows][:, None], conf.sandbox_bound(steady, p_low)[None, :])
        inst = conf.inst
        train = gpu_prices(inst)[inst.training.pool] * inst.training.gpus_per_group * pairs.groups[rows]
        return reserved_cost(inst) + train + (inference + sandbox).min(axis=1)


def _late_weight(
    cadence: np.ndarray, groups: np.ndarray, pace: np.ndarray, need: np.ndarray, never: np.ndarray, weight: np.ndarray
) -> np.ndarray:
    """(pairs,) the weight of the scenario groups each pair (``cadence``, ``groups``) cannot meet: those no pair
    of its class can (``never``), those whose pace it passes and those that need more groups than it has. From
    one table over the pairs' distinct cadences and counts (the weight of the groups a cadence passes and a
    count falls short of, cumulated), not a (pairs, groups) one."""
    live = ~never
    base = float(weight[never].sum())
    if not live.any():
        return np.full(cadence.size, base)
    cadences, at_cadence = np.unique(cadence, return_inverse=True)
    counts, at_count = np.unique(groups, return_inverse=True)
    passed = np.searchsorted(cadences, pace[live] * (1 + REL_TOL), side="right")  # cadences from here pass it
    short = np.searchsorted(counts, need[live], side="left")  # counts below here fall short of it
    table = np.zeros((cadences.size + 1, counts.size + 1))
    np.add.at(table, (passed, short), weight[live])
    by_pace = np.cumsum(table.sum(axis=1))[:-1]  # (cadences,) the weight each cadence passes
    by_count = np.cumsum(table.sum(axis=0)[::-1])[::-1][1:]  # (counts,) the weight needing more than each
    both = np.cumsum(np.cumsum(table[:, ::-1], axis=1)[:, ::-1], axis=0)[:-1, 1:]  # passed and needing more
    at_cadence, at_count = at_cadence.reshape(-1), at_count.reshape(-1)
    return base + by_pace[at_cadence] + by_count[at_count] - both[at_cadence, at_count]


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
