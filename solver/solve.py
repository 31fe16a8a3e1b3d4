"""Solve one instance: coefficients → pair blocks built on demand → HiGHS (probe, final and tie-break
runs) → extract → verify.

The HiGHS options live here and nowhere else; every HiGHS outcome is mapped once to
the project's status vocabulary (MODEL.md §6); values are read only when HiGHS
reports a primal solution.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import highspy
import numpy as np
from pyomo.core.expr.visitor import identify_mutable_parameters
from pyomo.contrib.solver.solvers.highs import Highs

from models.instance import OBJECTIVES, Instance
from models.result import Count, CostTerms, Placement, Plan, PoolUse, Result, ShapeReplicas, Timings
from solver import coefficients
from solver.model import add_pair, build_model, global_values, index_of, refresh_globals, set_pair_coefficients
from solver.verify import verify_plan

TIE_TOL = 1e-9  # MODEL §4: plans within this relative distance of the optimum tie on the primary criterion
NO_BOUND = float("inf")  # HiGHS objective_bound when no cut-off applies

# Tuned on the bundled seed instances (see bench/solve.py and the README): these models are
# small and their LP relaxation is the convex hull of the cadence choice, so HiGHS's primal
# heuristics and extra threads cost more time than they save; the optimum is unchanged.
PRESOLVE_PROBING, PRESOLVE_ENUMERATION = 1 << 15, 1 << 16  # HiGHS presolve rule bits (presolve_rule_off)
HIGHS_OPTIONS = {
    "presolve": "on",
    "mip_rel_gap": 0.0,
    "mip_abs_gap": 0.0,
    # Rows are scaled to O(1..1e5) (attempts/s, environments, GPUs): HiGHS's default 1e-6/1e-7
    # tolerances let a plan miss its throughput by a few 1e-7 attempts/s, which the verifier rejects.
    "mip_feasibility_tolerance": 1e-9,
    "primal_feasibility_tolerance": 1e-9,
    "mip_heuristic_run_feasibility_jump": False,
    "mip_heuristic_effort": 0.0,
    # Presolve without probing and enumeration (exact reductions, so optimal values are unchanged):
    # on these models they find nothing to fix, while being a quarter of a small solve's time
    # (bench/solve.py: seed total cost 1.5 -> 1.1 ms of HiGHS per solve; large three-pool instance 1.34 -> 1.28 s).
    "presolve_rule_off": PRESOLVE_PROBING | PRESOLVE_ENUMERATION,
    "output_flag": False,
}
# Per criterion: finding the shortest feasible cadence is a feasibility search that HiGHS's presolve
# (probing every selection binary) slows (seed baseline, bench/solve.py: 6.3 ms with it, 1.6 ms
# without; 225 ms vs 8 ms when all 81 pairs were in one model), while the cost criteria gain from it
# (1.4 ms with, 8.3 ms without; 21 ms vs 115 ms with all pairs).
STAGE_OPTIONS = {"makespan": {"presolve": "off"}, "total_cost": {"presolve": "on"}, "hourly_cost": {"presolve": "on"}}
MAX_REUSED_BLOCKS = 48  # a reusable model that has built more pairs is rebuilt: rows over all pairs grow with it
# Pairs opened by the first HiGHS run of a search (doubling while it finds no plan). Measured alternative
# (bench/solve.py, "probe sizes"): the cost bound is tight, so probing the single lowest-bound pair makes
# the bundled seed solves about twice as fast, but it also makes a fresh model so cheap that fixed costs
# dominate: a batch's worker start-up (overhead 28 % of solve time against a < 20 % target) and the work a
# sweep point shares with a rebuild (reuse 3.6x faster than rebuilding against a >= 5x target). Kept at 6
# until those targets are restated; see the README's Performance section.
COST_PROBE_PAIRS = 6
MAKESPAN_PROBE_PAIRS = 6


class PlanRejected(Exception):
    """The verifier found a violated constraint in a plan the MIP returned: a bug, never a result."""


class ExplicitHighs(Highs):
    """pyomo's persistent HiGHS interface, told about every model change explicitly.

    Costs of the stock interface dropped here, measured as most of a re-solve of the seed
    baseline: ``update()`` walks every constraint of the model before each solve even with all
    auto-updates off; each run copies the whole solver configuration and captures the C-level
    output through a thread although HiGHS's output is off; and ``update_parameters`` re-evaluates
    every mutable coefficient although a sweep point changes a few. Callers use add_constraints,
    remove_constraints, update_variables, update_changed_parameters and set_objective instead.
    """

    def update(self, timer=None) -> None:
        return None

    def set_instance(self, model) -> None:
        super().set_instance(model)
        self._solver_model.setOptionValue("output_flag", False)  # later row additions log otherwise
        self._param_index = None
        self._options_set: dict = {}  # options given to this HiGHS object, as last set

    def solve(self, model, time_limit: float | None = None, solver_options: dict | None = None) -> "Outcome":
        """One HiGHS run of ``model`` as it stands, with per-run options over the configured ones;
        the outcome is read straight from HiGHS (no pyomo Results object per run)."""
        if model is not self._model:
            self.set_instance(model)
        highs = self._solver_model
        config = self.config
        options = {**config.solver_options, **(solver_options or {}),
                   "time_limit": time_limit if time_limit is not None else float("inf")}
        if config.threads is not None:
            options["threads"] = config.threads
        for key, option in options.items():  # HiGHS keeps its options between runs: set only what changed
            if self._options_set.get(key, self) != option:
                highs.setOptionValue(key, option)
                self._options_set[key] = option
        highs.HandleKeyboardInterrupt = True
        highs.run()
        return outcome_of(highs, self._pyomo_var_to_solver_var_map)

    def update_changed_parameters(self, changed: set[int]) -> None:
        """Push to HiGHS only the coefficients and bounds whose expressions hold a changed Param
        (``changed``: ids of ParamData). The index of which helpers read which Param is rebuilt
        when rows were added or removed since it was made."""
        readers = self._parameter_index()
        helpers = {id(h): h for param in changed for h in readers.get(param, ())}
        for helper in helpers.values():
            helper.update()

    def _parameter_index(self) -> dict[int, list]:
        """id of each mutable Param -> the helpers (coefficients, bounds, objective terms) that read it."""
        objective = self._mutable_objective
        key = (len(self._mutable_helpers), len(self._mutable_bounds), id(objective))
        if getattr(self, "_param_index", None) is not None and self._param_index[0] == key:
            return self._param_index[1]
        readers: dict[int, list] = {}

        def read(helper, *exprs) -> None:
            for param in {id(p) for e in exprs if e is not None for p in identify_mutable_parameters(e)}:
                readers.setdefault(param, []).append(helper)

        for helpers in self._mutable_helpers.values():
            for helper in helpers:
                read(helper, *(getattr(helper, name) for name in ("expr", "lower_expr", "upper_expr") if hasattr(helper, name)))
        for _, helper in self._mutable_bounds.values():
            read(helper, helper.lower_expr, helper.upper_expr)
        if objective is not None:
            for helper in [objective.constant, *objective.linear_coefs]:
                read(helper, helper.expr)
        self._param_index = (key, readers)
        return readers


def make_solver(threads: int = 1) -> Highs:
    """The one place HiGHS is created and configured (threads: HiGHS fixes its pool at the first run of a process)."""
    opt = ExplicitHighs()
    opt.config.load_solutions = False
    opt.config.raise_exception_on_nonoptimal_result = False
    opt.config.threads = threads
    opt.config.solver_options = dict(HIGHS_OPTIONS)
    return opt


@dataclass
class Outcome:
    status: str  # optimal | infeasible | time_limit | error
    objective_value: float | None
    bound: float | None
    highs_seconds: float  # HiGHS's run time, cumulated over the handle's life
    values: "Solution | None" = None


class Solution:
    """Variable values of one HiGHS run, looked up by pyomo variable (``values.get(var)``)."""

    def __init__(self, columns: dict[int, int], col_value):
        self._columns = dict(columns)
        self._col_value = col_value

    def get(self, var, default=None):
        col = self._columns.get(id(var))
        return default if col is None else self._col_value[col]


_TIME_LIMITS = {highspy.HighsModelStatus.kTimeLimit, highspy.HighsModelStatus.kIterationLimit,
                getattr(highspy.HighsModelStatus, "kSolutionLimit", highspy.HighsModelStatus.kTimeLimit)}
_NO_PLAN = {highspy.HighsModelStatus.kInfeasible, highspy.HighsModelStatus.kUnboundedOrInfeasible,
            highspy.HighsModelStatus.kObjectiveBound}  # the last: nothing within a tie run's cut-off


def outcome_of(highs, columns: dict[int, int]) -> Outcome:
    """The single map from a HiGHS model status to the project's statuses; values only with a solution."""
    status = highs.getModelStatus()
    info = highs.getInfo()
    has_solution = info.primal_solution_status == 2
    if status == highspy.HighsModelStatus.kOptimal and has_solution:
        mapped = "optimal"
    elif status in _NO_PLAN:
        mapped = "infeasible"
    elif status in _TIME_LIMITS:
        mapped = "time_limit"
    else:
        mapped = "error"
    return Outcome(
        status=mapped,
        objective_value=info.objective_function_value if has_solution else None,
        bound=info.mip_dual_bound if info.mip_node_count >= 0 else None,
        highs_seconds=float(highs.getRunTime()),
        values=Solution(columns, highs.getSolution().col_value) if has_solution else None,
    )


class Planner:
    """One model of an instance, built lazily pair by pair and re-solved under caps (frontier, compare).

    A solve opens only the (cadence, K) pairs a valid cost bound cannot rule out: cost criteria
    first solve over the few pairs with the lowest bounds, and every pair whose bound exceeds that
    plan's cost is closed (exact); the makespan criterion opens pairs shortest first, in growing
    chunks, until one chunk holds a plan. Pairs are built into the model the first time they are
    opened and stay; ``solve`` restrictions (makespan, cadence, budgets, cards) hold for one call.
    A ``reusable`` planner keeps every coefficient mutable, and :meth:`retarget` points it at
    another instance of the same structure (a sweep point) by a parameter update.
    """

    def __init__(self, inst: Instance, threads: int = 1, reusable: bool = False):
        clock = time.perf_counter()
        self.threads = threads
        self.reusable = reusable
        self._opt: Highs | None = None
        self._active: str | None = None
        self._highs_seen = 0.0  # HiGHS reports its run time cumulated over the handle's life
        self._dirty = True  # blocks were added since the global rows were last built
        self._caps: list = []  # this solve's extra restrictions (kind, limit)
        self._caps_rows: list = []  # their rows in the model, while a solve runs
        pairs = coefficients.build(inst)
        self.model = build_model(inst, pairs, reusable)
        self._use(inst, pairs)
        self._block_rows: dict[tuple[float, int], int] = {}  # key of a built block -> its row in self.pairs
        self._z_upper: dict[tuple[float, int], int] = {}
        self.build_seconds = time.perf_counter() - clock

    def _use(self, inst: Instance, pairs: coefficients.Pairs) -> None:
        self.inst, self.pairs = inst, pairs
        self.keys = pairs.keys()
        self.row_of = {key: row for row, key in enumerate(self.keys)}
        self.shared = global_values(inst, self.model.ix)  # prices, pool sizes, host rows (shared by every pair)
        self.hourly_lb = coefficients.hourly_lower_bound(inst, pairs, self.shared)

    def retarget(self, inst: Instance) -> bool:
        """Point a reusable model at another instance of the same structure: a parameter update of the
        built pairs, not a rebuild. False when it cannot (not reusable, another structure, or more
        than MAX_REUSED_BLOCKS pairs built, past which a fresh model is cheaper); the caller rebuilds."""
        if not self.reusable or index_of(inst) != self.model.ix or len(self.model.blocks) > MAX_REUSED_BLOCKS:
            return False
        clock = time.perf_counter()
        self._use(inst, coefficients.build(inst))
        where = {key: self.row_of[key] for key in self.model.blocks if key in self.row_of}
        changed = set_pair_coefficients(self.model, inst, self.pairs, where, self.shared)
        self._block_rows = where
        if self._opt is not None and changed:
            self._opt.update_changed_parameters(changed)
        self.build_seconds += time.perf_counter() - clock
        return True

    @property
    def opt(self) -> Highs:
        if self._opt is None:
            self._opt = make_solver(self.threads)
            self._opt.set_instance(self.model)
        return self._opt

    def solve(
        self,
        objective: str | None = None,
        *,
        time_limit: float | None = None,
        max_makespan: float | None = None,
        cadence: float | None = None,
        max_hourly_cost: float | None = None,
        max_total_cost: float | None = None,
        max_inference_gpus: int | None = None,
    ) -> Result:
        """The optimal plan under ``objective`` and this call's restrictions (an infeasible result carries
        no diagnosis: drivers.diagnose explains it on request)."""
        inst, pairs = self.inst, self.pairs
        objective = objective or inst.objective
        if objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
        clock = time.perf_counter()
        stop = None if time_limit is None else clock + time_limit
        candidates = np.ones(pairs.size, dtype=bool)
        if max_makespan is not None:
            candidates &= pairs.makespan <= max_makespan * (1 + 1e-12)
        if cadence is not None:
            candidates &= np.abs(pairs.cadence - cadence) <= 1e-9 * cadence
        # Budgets close every pair whose cost bound already breaks them (exact: the bound is valid).
        hourly_lb = self.hourly_lb
        total_lb = hourly_lb * pairs.makespan / 3600.0
        for limit, bound in ((inst.limits.max_hourly_cost, hourly_lb), (max_hourly_cost, hourly_lb),
                             (inst.limits.max_total_cost, total_lb), (max_total_cost, total_lb)):
            if limit is not None:
                candidates &= bound <= limit * (1 + 1e-9)
        self._caps = [("hourly", max_hourly_cost), ("total", max_total_cost), ("cards", max_inference_gpus)]
        self._build_time = build_before = self.build_seconds
        self.build_seconds = 0.0
        search = Search(highs_total=self._highs_seen)
        try:
            if candidates.any():
                if objective == "makespan":
                    self._shortest_first(candidates, search, stop)
                else:
                    self._cheapest_first(objective, candidates, {"total_cost": total_lb, "hourly_cost": hourly_lb}[objective],
                                         search, stop)
        finally:
            self._drop_caps()
        timings = Timings(build=self._build_time)
        timings.solve = max(0.0, time.perf_counter() - clock - (self._build_time - build_before))
        timings.highs = max(0.0, search.highs_total - self._highs_seen)
        self._highs_seen = max(self._highs_seen, search.highs_total)
        if search.status in ("infeasible", None):
            return Result(instance=inst.name, status="infeasible", objective=objective,
                          message="no plan meets every constraint", timings=timings)
        if search.values is None:
            message = "time limit reached before any plan was found" if search.status == "time_limit" else "HiGHS failed"
            return Result(instance=inst.name, status=search.status, objective=objective, message=message,
                          timings=timings)

        mark = time.perf_counter()
        blk = selected(self.model, search.values)
        plan = extract_plan(self.model, blk, self._block_rows[blk.key], search.values)
        timings.extract = time.perf_counter() - mark
        mark = time.perf_counter()
        check = verify_plan(inst, plan)
        timings.verify = time.perf_counter() - mark
        if not check.ok:
            raise PlanRejected(f"{inst.name}: the verifier rejected the MIP's plan: " + "; ".join(check.violations))
        value = {"total_cost": plan.total_cost, "hourly_cost": plan.hourly_cost, "makespan": plan.makespan_s}[objective]
        message = None
        if search.status == "error":
            message = "HiGHS failed while breaking ties (MODEL §4); the plan is verified and optimal on the objective"
        gap = 0.0
        if search.status == "time_limit":
            gap = None if search.bound is None or not value else max(0.0, (value - search.bound) / abs(value))
        m = self.model
        return Result(
            instance=inst.name,
            status=search.status,
            objective=objective,
            objective_value=value,
            plan=plan,
            metrics=check.metrics,
            binding=check.binding,
            mip_gap=gap,
            message=message,
            timings=timings,
            model_size={"grid_points": pairs.grid_points, "pairs": pairs.size, "pairs_built": len(m.blocks),
                        "variables": self.opt._solver_model.getNumCol(), "rows": self.opt._solver_model.getNumRow(),
                        "highs_runs": search.runs},
        )

    # -- the searches ---------------------------------------------------------

    def _cheapest_first(self, objective: str, candidates: np.ndarray, lower: np.ndarray, search: "Search", stop):
        """Cost criteria: probe the pairs with the lowest bounds (doubling the probe while it is
        infeasible); close every pair whose bound exceeds the probe's optimum; solve over the rest;
        then break ties by makespan (MODEL §4)."""
        rows = np.flatnonzero(candidates)[np.argsort(lower[candidates], kind="stable")]
        order = rows.tolist()
        size, start = COST_PROBE_PAIRS, 0
        while start < len(order):
            probe = order[start:start + size]
            self._run_over(objective, probe, search, stop)
            if search.status != "infeasible":
                break
            start += size
            size *= 2
        if search.status != "optimal":
            return
        best = search.value
        needed = rows[lower[rows] <= best + TIE_TOL * max(1.0, abs(best))].tolist()
        if not set(needed) <= set(probe):
            self._run_over(objective, needed, search, stop)
            if search.status != "optimal":
                return
            best = search.value
        # Ties on cost break by makespan: any strictly shorter pair within the tolerance?
        bound = best + TIE_TOL * max(1.0, abs(best))
        span = self.pairs.makespan
        while True:
            chosen = self._block_rows[selected(self.model, search.values).key]
            shorter = rows[(span[rows] < span[chosen] * (1 - 1e-12)) & (lower[rows] <= bound)].tolist()
            if not shorter:
                return
            tie = Search(highs_total=search.highs_total)
            self._run_over(objective, shorter, tie, stop, bound)
            search.absorb(tie)
            if tie.values is None or tie.value > bound:
                return
            search.values = tie.values

    def _shortest_first(self, candidates: np.ndarray, search: "Search", stop):
        """Makespan criterion: open pairs shortest first in doubling chunks until a chunk holds a plan
        (all shorter pairs were then proven infeasible); break ties by total cost at that makespan."""
        span = self.pairs.makespan
        order = [int(r) for r in np.flatnonzero(candidates)[np.argsort(span[candidates], kind="stable")]]
        size, start = MAKESPAN_PROBE_PAIRS, 0
        while start < len(order):
            end = min(start + size, len(order))
            while end < len(order) and span[order[end]] <= span[order[end - 1]] * (1 + 1e-12):
                end += 1  # keep every K of the last cadence in the chunk
            self._run_over("makespan", order[start:end], search, stop)
            if search.status != "infeasible":
                break
            start, size = end, size * 2
        if search.status != "optimal":
            return
        chosen = self._block_rows[selected(self.model, search.values).key]
        same = [r for r in order if abs(span[r] - span[chosen]) <= 1e-9 * span[chosen]]
        tie = Search(highs_total=search.highs_total)
        self._run_over("total_cost", same, tie, stop)
        search.absorb(tie)
        if tie.values is not None:
            search.values = tie.values

    def _run_over(self, objective: str, rows: list[int], search: "Search", stop, bound: float = NO_BOUND) -> None:
        """One HiGHS run with exactly ``rows`` open (built first if needed), under ``objective``."""
        self._build(rows)
        self._refresh()
        self._open(set(rows))
        self._set_objective(objective)
        options = {**STAGE_OPTIONS[objective], "objective_bound": bound}
        outcome = self.opt.solve(self.model, time_limit=_remaining(stop), solver_options=options)
        if outcome.status == "error" and options["presolve"] == "on":
            # HiGHS's postsolve can stop with a solve error on rows that sit a hair above an integer
            # (seen at 1e-6 over): the same run without presolve is exact, only slower.
            search.runs += 1
            outcome = self.opt.solve(self.model, time_limit=_remaining(stop), solver_options={**options, "presolve": "off"})
        search.runs += 1
        search.highs_total = max(search.highs_total, outcome.highs_seconds)
        search.status = outcome.status
        search.bound = outcome.bound
        search.value = outcome.objective_value
        search.values = outcome.values

    # -- model upkeep -----------------------------------------------------------

    def _build(self, rows: list[int]) -> None:
        mark = time.perf_counter()
        fresh = []
        for row in rows:
            key = self.keys[row]
            if key not in self.model.blocks:
                fresh.append(add_pair(self.model, row, key))
                self._block_rows[key] = row
                self._z_upper[key] = 1
        if fresh:
            self._dirty = True
            if self._opt is not None:
                for blk in fresh:
                    self._opt.add_block(blk)
        self._build_time += time.perf_counter() - mark

    def _refresh(self) -> None:
        """Rebuild the rows spanning the built pairs (and this call's caps) after blocks were added."""
        if not self._dirty and (self._caps_rows or not any(v is not None for _, v in self._caps)):
            return
        m = self.model
        opt = self.opt
        self._drop_caps()
        if self._dirty:
            removed, added = refresh_globals(m)
            if removed:
                opt.remove_constraints(removed)
            opt.add_constraints(added)
            self._active = None
            self._dirty = False
        rows = []
        for kind, value in self._caps:
            if value is None:
                continue
            if kind == "hourly":
                rows.append(m.caps.add(m.hourly_cost <= value))
            elif kind == "total":
                rows.append(m.caps.add(m.total_cost <= value))
            else:
                shapes = self.inst.inference.shapes
                rows.append(m.caps.add(
                    sum(s.gpus_per_replica * b.x[s.name] for b in m.blocks.values() for s in shapes) <= value))
        if rows:
            opt.add_constraints(rows)
        self._caps_rows = rows

    def _drop_caps(self) -> None:
        rows = self._caps_rows
        if rows:
            self.opt.remove_constraints(rows)
            self.model.caps.clear()
        self._caps_rows = []

    def _set_objective(self, objective: str) -> None:
        if objective == self._active:
            return
        m = self.model
        for name in OBJECTIVES:
            getattr(m, f"objective_{name}").deactivate()
        getattr(m, f"objective_{objective}").activate()
        self.opt.set_objective(getattr(m, f"objective_{objective}"))
        self._active = objective

    def _open(self, rows: set[int]) -> None:
        """Let exactly the pairs of ``rows`` be selected (z upper bounds), telling HiGHS what changed."""
        changed = []
        for key, blk in self.model.blocks.items():
            upper = 1 if self._block_rows.get(key) in rows else 0
            if self._z_upper.get(key) != upper:
                blk.z.setub(upper)
                self._z_upper[key] = upper
                changed.append(blk.z)
        if changed:
            self.opt.update_variables(changed)


@dataclass
class Search:
    """What the HiGHS runs of one solve found so far."""

    status: str | None = None
    value: float | None = None
    bound: float | None = None
    values: object = None
    runs: int = 0
    highs_total: float = 0.0  # HiGHS's cumulated run time after the last run (it counts over the handle's life)

    def absorb(self, tie: "Search") -> None:
        """Take in a tie-breaking run's HiGHS time and runs; a tie-break that ended unproven (time
        limit, error) marks this search so, which keeps the plan found."""
        self.highs_total, self.runs = tie.highs_total, self.runs + tie.runs
        if tie.status in ("time_limit", "error"):
            self.status = tie.status


def _remaining(stop: float | None) -> float | None:
    return None if stop is None else max(0.01, stop - time.perf_counter())


def solve_instance(
    inst: Instance,
    objective: str | None = None,
    time_limit: float | None = None,
    threads: int = 1,
) -> Result:
    """Solve one instance to proven optimality (or the time limit) and return its verified result."""
    return Planner(inst, threads).solve(objective, time_limit=time_limit)


def selected(model, values):
    """The built pair block whose selection binary is on in a solution."""
    return max(model.blocks.values(), key=lambda blk: float(values.get(blk.z, 0.0) or 0.0))


def extract_plan(model, blk, row: int, values) -> Plan:
    """The selected pair's decisions in the instance's vocabulary; integer counts rounded from HiGHS's values."""
    inst, pairs, ix = model.inst, model.pairs, model.ix

    def val(var) -> float:
        return float(values.get(var, 0.0) or 0.0)

    shapes = inst.inference.shapes
    replicas = {s.name: int(round(val(blk.x[s.name]))) for s in shapes}
    nodes = {k: int(round(val(blk.N[k]))) for k in ix.nodes}
    vms = {v: int(round(val(blk.V[v]))) for v in ix.vms}
    groups = int(pairs.groups[row])
    train_gpus = groups * inst.training.gpus_per_group

    def split(var, keys) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for host, b in keys:
            out.setdefault(host, {})[b] = max(0.0, val(var[host, b]))
        return out

    peak = split(blk.y_peak, ix.node_backends)
    if ix.steady_split:
        steady = split(blk.y, ix.node_backends)
    else:  # peak coverage (E^pk >= E, no cloud) scaled down is a steady split on the same nodes
        ratio = 1.0 / inst.environment.peak_to_mean
        steady = {k: {b: e * ratio for b, e in load.items()} for k, load in peak.items()}
    cloud = split(blk.c, ix.vm_backends)

    used = {pool.name: 0 for pool in inst.gpu_pools}
    for s in shapes:
        used[s.pool] += replicas[s.name] * s.gpus_per_replica
    used[inst.training.pool] += train_gpus
    gpu_cost = sum(pool.gpu_hour_cost * used[pool.name] for pool in inst.gpu_pools)
    node_cost = sum(k.hour_cost * nodes[k.name] for k in inst.environment.node_types)
    vm_cost = sum(v.hour_cost * v.billed_fraction * vms[v.name] for v in inst.environment.cloud.vm_types)
    hourly = gpu_cost + node_cost + vm_cost
    span = float(pairs.makespan[row])
    return Plan(
        cadence_s=float(pairs.cadence[row]),
        makespan_s=span,
        versions_kept=int(pairs.kept[row]),
        inference=[ShapeReplicas(shape=s.name, pool=s.pool, replicas=replicas[s.name],
                                 gpus=replicas[s.name] * s.gpus_per_replica) for s in shapes],
        inference_gpus=sum(replicas[s.name] * s.gpus_per_replica for s in shapes),
        training_groups=groups,
        training_gpus=train_gpus,
        local_nodes=[Count(type=k, count=nodes[k]) for k in ix.nodes],
        cloud_vms=[Count(type=v, count=vms[v]) for v in ix.vms],
        hourly_cost=hourly,
        total_cost=hourly * span / 3600.0,
        cost_terms=CostTerms(gpu=gpu_cost, node=node_cost, vm=vm_cost),
        pools=[PoolUse(pool=pool.name, gpus_used=used[pool.name], gpus=pool.gpus) for pool in inst.gpu_pools],
        placement=Placement(steady=steady, peak=peak, cloud=cloud),
    )

