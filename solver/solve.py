"""Solve one instance: coefficients → build → HiGHS (with the tie-break stage) → extract → verify.

The HiGHS options live here and nowhere else; every HiGHS outcome is mapped once to
the project's status vocabulary (MODEL.md §6); values are read only when HiGHS
reports a primal solution.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pyomo.environ as pyo
from pyomo.contrib.solver.common.results import SolutionStatus, TerminationCondition
from pyomo.contrib.solver.solvers.highs import Highs

from models.instance import Instance
from models.result import Count, CostTerms, Placement, Plan, PoolUse, Result, ShapeReplicas, Timings
from solver import coefficients
from solver.model import OBJECTIVES, TIE_BREAKS, build_model
from solver.verify import verify_plan

TIE_TOL = 1e-9  # MODEL §4: plans within this relative distance of the optimum tie on the primary criterion

# Tuned on the bundled seed instances (see bench/solve.py and the README): these models are
# small and their LP relaxation is the convex hull of the cadence choice, so HiGHS's primal
# heuristics and extra threads cost more time than they save; the optimum is unchanged.
HIGHS_OPTIONS = {
    "mip_rel_gap": 0.0,
    "mip_abs_gap": 0.0,
    "mip_heuristic_run_feasibility_jump": False,
    "mip_heuristic_effort": 0.0,
    "output_flag": False,
}


class PlanRejected(Exception):
    """The verifier found a violated constraint in a plan the MIP returned: a bug, never a result."""


def make_solver(threads: int = 1) -> Highs:
    opt = Highs()
    opt.config.load_solutions = False
    opt.config.raise_exception_on_nonoptimal_result = False
    opt.config.threads = threads
    opt.config.solver_options = dict(HIGHS_OPTIONS)
    return opt


@dataclass
class Outcome:
    status: str  # optimal | infeasible | time_limit | error
    has_solution: bool
    objective_value: float | None
    bound: float | None
    highs_seconds: float


def outcome_of(results) -> Outcome:
    """The single map from a HiGHS outcome (via pyomo's Results) to the project's statuses."""
    term = results.termination_condition
    has_solution = results.solution_status in (SolutionStatus.optimal, SolutionStatus.feasible)
    if term == TerminationCondition.convergenceCriteriaSatisfied and has_solution:
        status = "optimal"
    elif term in (TerminationCondition.provenInfeasible, TerminationCondition.infeasibleOrUnbounded):
        status = "infeasible"
    elif term in (TerminationCondition.maxTimeLimit, TerminationCondition.iterationLimit):
        status = "time_limit"
    else:
        status = "error"
    return Outcome(
        status=status,
        has_solution=has_solution,
        objective_value=results.incumbent_objective if has_solution else None,
        bound=results.objective_bound,
        highs_seconds=float(getattr(results.timing_info, "highs_time", 0.0) or 0.0),  # cumulative per handle
    )


def make_persistent(threads: int = 1) -> Highs:
    """A HiGHS handle told about every model change explicitly (no rescans of the model per solve)."""
    opt = make_solver(threads)
    updates = opt.config.auto_updates
    for flag in ("check_for_new_or_removed_constraints", "check_for_new_or_removed_vars",
                 "check_for_new_or_removed_params", "check_for_new_objective", "update_constraints",
                 "update_vars", "update_parameters", "update_named_expressions", "update_objective"):
        setattr(updates, flag, False)
    return opt


class Planner:
    """One built model of an instance, re-solved under extra caps without rebuilding (frontier, compare).

    ``solve`` may restrict the plan to a makespan, a cadence, an hourly or total budget or an
    inference card count; every restriction is undone after the solve, so calls are independent.
    """

    def __init__(self, inst: Instance, threads: int = 1):
        clock = time.perf_counter()
        self.inst = inst
        self.pairs = coefficients.build(inst)
        self.model = build_model(inst, self.pairs, inst.objective) if self.pairs.size else None
        self.build_seconds = time.perf_counter() - clock
        self.threads = threads
        self._opt: Highs | None = None
        self._active = inst.objective
        self._highs_seen = 0.0  # HiGHS reports its run time cumulated over the handle's life

    @property
    def opt(self) -> Highs:
        if self._opt is None:
            self._opt = make_persistent(self.threads)
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
        diagnose: bool = True,
    ) -> Result:
        inst, pairs = self.inst, self.pairs
        objective = objective or inst.objective
        if objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
        timings = Timings(build=self.build_seconds)
        self.build_seconds = 0.0  # charged to the first solve only
        if self.model is None:
            return _infeasible(inst, objective, timings, pairs, diagnose)
        m = self.model
        closed = np.zeros(pairs.size, dtype=bool)
        if max_makespan is not None:
            closed |= pairs.makespan > max_makespan * (1 + 1e-12)
        if cadence is not None:
            closed |= np.abs(pairs.cadence - cadence) > 1e-9 * cadence
        if closed.all():
            return _infeasible(inst, objective, timings, pairs, diagnose)

        clock = time.perf_counter()
        opt = self.opt
        caps = []
        if closed.any():
            caps.append(sum(m.z[p] for p in m.P if closed[p]) == 0)
        if max_hourly_cost is not None:
            caps.append(m.hourly_cost <= max_hourly_cost)
        if max_total_cost is not None:
            caps.append(m.total_cost <= max_total_cost)
        if max_inference_gpus is not None:
            shapes = inst.inference.shapes
            caps.append(sum(s.gpus_per_replica * m.x[p, s.name] for p in m.P for s in shapes) <= max_inference_gpus)
        added = [m.caps.add(expr) for expr in caps]
        if added:
            opt.add_constraints(added)
        self._set_objective(objective)
        stop = None if time_limit is None else clock + time_limit
        try:
            results = opt.solve(m, time_limit=time_limit)
            outcome = outcome_of(results)
            first_bound = outcome.bound
            highs_total = outcome.highs_seconds
            values = results.solution_loader.get_vars() if outcome.has_solution else None
            if outcome.status == "optimal":
                tie = self._tie_break(objective, outcome.objective_value, selected(m, values), closed, stop)
                if tie is not None:
                    tie_outcome, tie_values = tie
                    highs_total = tie_outcome.highs_seconds
                    if tie_values is not None:
                        values = tie_values
                    if tie_outcome.status == "time_limit":
                        outcome.status = "time_limit"
        finally:
            if added:
                opt.remove_constraints(added)
                m.caps.clear()
        timings.solve = time.perf_counter() - clock
        timings.highs = max(0.0, highs_total - self._highs_seen)
        self._highs_seen = highs_total
        if outcome.status == "infeasible":
            return _infeasible(inst, objective, timings, pairs, diagnose)
        if values is None:
            message = "time limit reached before any plan was found" if outcome.status == "time_limit" else "HiGHS failed"
            return Result(instance=inst.name, status=outcome.status, objective=objective, message=message,
                          timings=timings)

        clock = time.perf_counter()
        plan = extract_plan(m, values)
        timings.extract = time.perf_counter() - clock
        clock = time.perf_counter()
        check = verify_plan(inst, plan)
        timings.verify = time.perf_counter() - clock
        if not check.ok:
            raise PlanRejected(f"{inst.name}: the verifier rejected the MIP's plan: " + "; ".join(check.violations))
        value = {"total_cost": plan.total_cost, "hourly_cost": plan.hourly_cost, "makespan": plan.makespan_s}[objective]
        gap = 0.0
        if outcome.status == "time_limit":
            gap = None if first_bound is None or not value else max(0.0, (value - first_bound) / abs(value))
        return Result(
            instance=inst.name,
            status=outcome.status,
            objective=objective,
            objective_value=value,
            plan=plan,
            metrics=check.metrics,
            binding=check.binding,
            mip_gap=gap,
            timings=timings,
            model_size={"pairs": pairs.size, "grid_points": pairs.grid_points,
                        "variables": m.nvariables(), "constraints": m.nconstraints()},
        )

    def _set_objective(self, objective: str) -> None:
        m = self.model
        if objective != self._active:
            getattr(m, f"objective_{self._active}").deactivate()
            getattr(m, f"objective_{objective}").activate()
            self._active = objective
        self.opt.set_objective(getattr(m, f"objective_{objective}"))

    def _tie_break(self, objective: str, best: float, chosen: int, closed: np.ndarray, stop: float | None):
        """MODEL §4's lexicographic order: among plans within TIE_TOL of the optimum, the best on the tie-break.

        Only pairs that could improve the tie-break stay open; when none does, the stage is skipped.
        Returns (outcome, values or None when nothing better exists), or None when skipped.
        """
        m, opt = self.model, self.opt
        span = self.pairs.makespan
        if TIE_BREAKS[objective] == "makespan":
            open_ = (span < span[chosen] * (1 - 1e-12)) & ~closed
            if not open_.any():
                return None
        else:
            # Stage 1 only chose the makespan: costs are minimised at it now, over its pairs.
            open_ = (np.abs(span - span[chosen]) <= 1e-9 * span[chosen]) & ~closed
        rows = [m.tie.add(getattr(m, objective) <= best + TIE_TOL * max(1.0, abs(best)))]
        if not open_.all():
            rows.append(m.tie.add(sum(m.z[p] for p in m.P if not open_[p]) == 0))
        opt.add_constraints(rows)
        self._set_objective(TIE_BREAKS[objective])
        try:
            remaining = None if stop is None else max(0.01, stop - time.perf_counter())
            results = opt.solve(m, time_limit=remaining)
            outcome = outcome_of(results)
            values = results.solution_loader.get_vars() if outcome.has_solution else None
        finally:
            opt.remove_constraints(rows)
            m.tie.clear()
        return outcome, (None if outcome.status == "infeasible" else values)


def solve_instance(
    inst: Instance,
    objective: str | None = None,
    time_limit: float | None = None,
    threads: int = 1,
    diagnose: bool = True,
) -> Result:
    """Solve one instance to proven optimality (or the time limit) and return its verified result."""
    return Planner(inst, threads).solve(objective, time_limit=time_limit, diagnose=diagnose)


def selected(model, values) -> int:
    """The pair whose selection binary is on in a solution."""
    return max(model.P, key=lambda p: float(values.get(model.z[p], 0.0) or 0.0))


def extract_plan(model, values) -> Plan:
    """The selected pair's decisions in the instance's vocabulary; integer counts rounded from HiGHS's values."""
    inst, pairs, ix = model.inst, model.pairs, model.ix

    def val(var) -> float:
        return float(values.get(var, 0.0) or 0.0)

    p = selected(model, values)
    shapes = inst.inference.shapes
    replicas = {s.name: int(round(val(model.x[p, s.name]))) for s in shapes}
    nodes = {k: int(round(val(model.N[p, k]))) for k in ix.nodes}
    vms = {v: int(round(val(model.V[p, v]))) for v in ix.vms}
    groups = int(pairs.groups[p])
    train_gpus = groups * inst.training.gpus_per_group

    def split(var, keys) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for host, b in keys:
            out.setdefault(host, {})[b] = max(0.0, val(var[p, host, b]))
        return out

    peak = split(model.y_peak, ix.node_backends)
    if ix.steady_split:
        steady = split(model.y, ix.node_backends)
    else:  # peak coverage (E^pk >= E, no cloud) scaled down is a steady split on the same nodes
        ratio = 1.0 / inst.environment.peak_to_mean
        steady = {k: {b: e * ratio for b, e in load.items()} for k, load in peak.items()}
    cloud = split(model.c, ix.vm_backends)

    used = {pool.name: 0 for pool in inst.gpu_pools}
    for s in shapes:
        used[s.pool] += replicas[s.name] * s.gpus_per_replica
    used[inst.training.pool] += train_gpus
    gpu_cost = sum(pool.gpu_hour_cost * used[pool.name] for pool in inst.gpu_pools)
    node_cost = sum(k.hour_cost * nodes[k.name] for k in inst.environment.node_types)
    vm_cost = sum(v.hour_cost * v.billed_fraction * vms[v.name] for v in inst.environment.cloud.vm_types)
    hourly = gpu_cost + node_cost + vm_cost
    span = float(pairs.makespan[p])
    inference_gpus = sum(replicas[s.name] * s.gpus_per_replica for s in shapes)
    return Plan(
        cadence_s=float(pairs.cadence[p]),
        makespan_s=span,
        versions_kept=int(pairs.kept[p]),
        inference=[ShapeReplicas(shape=s.name, pool=s.pool, replicas=replicas[s.name],
                                 gpus=replicas[s.name] * s.gpus_per_replica) for s in shapes],
        inference_gpus=inference_gpus,
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


def _infeasible(inst: Instance, objective: str, timings: Timings, pairs, diagnose: bool) -> Result:
    diagnosis = None
    if diagnose:
        from solver.diagnose import diagnose as run_diagnosis

        diagnosis = run_diagnosis(inst, pairs, objective)
    return Result(instance=inst.name, status="infeasible", objective=objective, diagnosis=diagnosis,
                  message="no plan meets every constraint", timings=timings)
