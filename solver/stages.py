"""Solve a staged instance (MODEL.md §12): the staged MIP under MODEL §4's order, then a verified result.

The order is a sequence of HiGHS runs on one model: the primary criterion, then each tie-break
with the criteria before it held at their optimum (within TIE_TOL), so the plan returned is the
optimum of the lexicographic order on the grid. Each stage's decisions are read as a one-stage
plan of the instance that stage runs as (:func:`solver.assemble.extract_plan`); the run's plan
carries them in ``stages`` and the run's makespan and costs, which the staged verifier
(:mod:`solver.verify_stages`) recomputes on its own.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyomo.core as pyo
from pyomo.repn import generate_standard_repn

from trainground.models.errors import InstanceError, Problem
from trainground.models.instance import OBJECTIVES, Instance
from trainground.models.result import Plan, Result, StagePlan, Status
from trainground.solver.assemble import ObjectiveMismatch, PlanRejected, extract_plan, objective_of, timings_of
from trainground.solver.highs import NO_BOUND, STAGED_OPTIONS, HighsModel
from trainground.solver.stage_model import StagedModel, StagedUnsupported, build_staged
from trainground.solver.stopwatch import Stopwatch
from trainground.solver.tolerances import COST_CHECK_TOL, TIE_TOL
from trainground.solver.verify_stages import verify_staged

ORDER = {
    "total_cost": ("total_cost", "makespan", "hourly_cost"),
    "hourly_cost": ("hourly_cost", "makespan"),
    "makespan": ("makespan", "total_cost"),
}  # MODEL §4's lexicographic order, criterion by criterion


@dataclass
class _StageView:
    """What :func:`solver.assemble.extract_plan` reads of a live model, for one stage's sub-model."""

    inst: Instance
    pairs: object
    model: pyo.ConcreteModel
    block_rows: dict

    def selected(self, values):
        return max(self.model.blocks.values(), key=lambda blk: float(values.get(blk.z, 0.0) or 0.0))


class StagedPlanner:
    """One staged instance's model in HiGHS, solved under any objective (each solve's tie rows removed after)."""

    def __init__(self, inst: Instance, threads: int = 1):
        self.inst = inst
        clock = Stopwatch()
        with clock.phase("build"):
            try:
                self.staged = build_staged(inst)
            except StagedUnsupported as exc:
                raise InstanceError(inst.name or "instance", [Problem(exc.where, exc.rule)]) from None
            self.highs = HighsModel(threads)
            if self.staged.empty is None:
                self.highs.load(self.staged.model)
        self._build_seconds = clock.seconds.get("build", 0.0)  # counted in the first solve's timings

    def __getattr__(self, name: str):
        """What a driver reads of a :class:`solver.solve.Planner` beyond ``solve`` (the pair table, retargets)
        does not exist for stages: the driver is refused by name (exit 2) rather than given a wrong answer."""
        if name.startswith("__"):
            raise AttributeError(name)
        raise InstanceError(
            self.inst.name or "instance",
            [Problem("stages", "this command does not plan stages yet (solve and batch do); remove stages to use it")],
        )

    def solve(self, objective: str | None = None, time_limit: float | None = None, **restrictions) -> Result:
        """The optimal staged plan under ``objective`` (default the instance's), verified. The restrictions of
        :meth:`solver.solve.Planner.solve` (makespan cap, pinned cadence, caps, allowance) are refused by name."""
        asked = [name for name, value in restrictions.items() if value not in (None, 0, 0.0)]
        if asked:
            raise InstanceError(
                self.inst.name or "instance",
                [Problem("stages", f"{', '.join(asked)} is not available with stages yet; remove stages to use it")],
            )
        objective = objective or self.inst.objective
        if objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
        clock = Stopwatch(time_limit)
        clock.seconds["build"], self._build_seconds = self._build_seconds, 0.0
        if self.staged.empty is not None:
            return self._no_plan(objective, Status.INFEASIBLE, clock, self.staged.empty)
        with clock.phase("solve"):
            status, values, value, seconds = _lexicographic(self.staged, self.highs, objective, clock)
        if values is None:
            return self._no_plan(objective, status, clock, None)
        return _assemble(self.staged, self.highs, objective, status, values, value, seconds, clock)

    def _no_plan(self, objective: str, status: Status, clock: Stopwatch, why: str | None) -> Result:
        message = why or ("no plan meets every constraint" if status == Status.INFEASIBLE else f"no plan ({status})")
        return Result(
            instance=self.inst.name,
            status=status,
            objective=objective,
            message=message,
            timings=timings_of(clock, None, 0.0),
            basis=self.inst.planning.basis,
        )


def solve_staged(
    inst: Instance, objective: str | None = None, time_limit: float | None = None, threads: int = 1
) -> Result:
    """The optimal staged plan of ``inst`` under ``objective`` (default the instance's), verified."""
    return StagedPlanner(inst, threads).solve(objective, time_limit)


def _assemble(
    staged: StagedModel, highs: HighsModel, objective: str, status: Status, values, value, seconds, clock
) -> Result:
    """The verified result of a staged solution (the stage rows filled by the verifier's figures)."""
    inst = staged.inst
    with clock.phase("extract"):
        plan = extract_staged(staged, values)
        found = objective_of(plan, objective)
        if value is not None and abs(value - found) > COST_CHECK_TOL * max(1.0, abs(found)):
            raise ObjectiveMismatch(f"{inst.name}: HiGHS's {objective} is {value:.10g} but the plan's is {found:.10g}")
    with clock.phase("verify"):
        check = verify_staged(inst, plan)
    if not check.ok:
        raise PlanRejected(f"{inst.name}: the verifier rejected the staged plan: " + "; ".join(check.violations))
    assert plan.stages is not None
    plan = plan.model_copy(
        update={"stages": [row.model_copy(update=figures) for row, figures in zip(plan.stages, check.stages)]}
    )
    columns, rows = highs.size()
    return Result(
        instance=inst.name,
        status=status,
        objective=objective,
        objective_value=found,
        plan=plan,
        metrics=check.metrics,
        binding=check.binding,
        mip_gap=0.0 if status == Status.OPTIMAL else None,
        timings=timings_of(clock, None, 0.0).model_copy(update={"highs": seconds}),
        model_size={
            "stages": len(staged.subs),
            "pairs": sum(t.size for t in staged.pairs),
            "variables": columns,
            "rows": rows,
        },
        basis=inst.planning.basis,
    )


def _lexicographic(staged: StagedModel, highs: HighsModel, objective: str, clock: Stopwatch):
    """HiGHS runs of MODEL §4's order: (status, values, primary value, HiGHS seconds). A criterion solved is
    held within TIE_TOL of its optimum while the next is minimised."""
    m = staged.model
    if not hasattr(m, "held"):
        m.held = pyo.ConstraintList()
    held: list = []
    try:
        return _runs(staged, highs, objective, clock, held)
    finally:
        highs.remove_rows(held)
        m.held.clear()


def _runs(staged: StagedModel, highs: HighsModel, objective: str, clock: Stopwatch, held: list):
    """The runs of :func:`_lexicographic`. A tie-break run looks only for plans strictly better on its criterion
    than the plan in hand (a HiGHS objective bound), so a tie-break that finds none ends as soon as HiGHS
    proves it, and the plan in hand stays."""
    m = staged.model
    values, primary, status, seconds = None, None, Status.OPTIMAL, 0.0
    for i, name in enumerate(ORDER[objective]):
        highs.use_objective(getattr(m, f"objective_{name}"))
        incumbent: float | None = None if values is None else value_at(staged.criteria[name], values)
        bound = NO_BOUND if incumbent is None else incumbent - TIE_TOL * max(1.0, abs(incumbent))
        outcome = highs.run({**STAGED_OPTIONS, "objective_bound": bound}, clock.remaining())
        seconds = outcome.highs_seconds
        if incumbent is not None and outcome.status == Status.INFEASIBLE:
            best = incumbent  # nothing strictly better: the plan in hand is this criterion's optimum
        elif outcome.status != Status.OPTIMAL or outcome.values is None or outcome.objective_value is None:
            if values is None:
                return outcome.status, outcome.values, outcome.objective_value, seconds
            return (Status.TIME_LIMIT if outcome.status == Status.TIME_LIMIT else status), values, primary, seconds
        else:
            values, best = outcome.values, outcome.objective_value
        if i == 0:
            primary = best
        row = m.held.add(staged.criteria[name] <= best + TIE_TOL * max(1.0, abs(best)))
        held.append(row)
        highs.add_rows([row])
    return status, values, primary, seconds


def value_at(expr, values) -> float:
    """A linear expression's value at a HiGHS solution."""
    repn = generate_standard_repn(expr, compute_values=True)
    return float(repn.constant) + sum(
        float(c) * float(values.get(v, 0.0) or 0.0) for c, v in zip(repn.linear_coefs, repn.linear_vars)
    )


def extract_staged(staged: StagedModel, values) -> Plan:
    """The run's plan: each stage's one-stage plan, the run's makespan and costs of MODEL §12."""
    inst = staged.inst
    assert inst.stages is not None
    parts = []
    for si, table, sub in zip(staged.stage_insts, staged.pairs, staged.subs):
        view = _StageView(si, table, sub, {key: row for row, key in enumerate(sub.blocks)})
        parts.append(extract_plan(view, values))  # type: ignore[arg-type]
    stages = inst.stages
    extra = inst.schedule.extra_time
    changes = sum(1 for a, b in zip(parts, parts[1:]) if capacity_of(a) != capacity_of(b))
    switch = stages.switch_time if stages.capacity == "replan" else 0.0
    durations = [s.iterations * p.cadence_s for s, p in zip(stages.list, parts)]
    makespan = sum(durations) + extra + switch * changes
    if stages.capacity == "fixed":
        hourly = parts[0].hourly_cost
        total = hourly * makespan / 3600.0
    else:
        hourly = max(p.hourly_cost for p in parts)
        paid = [p.hourly_cost * d for p, d in zip(parts, durations)]
        paid.append(parts[-1].hourly_cost * extra)
        paid += [b.hourly_cost * switch for a, b in zip(parts, parts[1:]) if capacity_of(a) != capacity_of(b)]
        total = sum(paid) / 3600.0
    top = _largest(parts)
    return top.model_copy(
        update={
            "cadence_s": sum(durations) / inst.workload.iterations,
            "makespan_s": makespan,
            "hourly_cost": hourly,
            "total_cost": total,
            "stages": [
                _stage_row(s.name, s.iterations, p, d, stages.capacity)
                for s, p, d in zip(stages.list, parts, durations)
            ],
        }
    )


def capacity_of(plan: Plan) -> tuple:
    """What a change of capacity compares: replicas per shape, training groups, nodes and VMs per type."""
    return (
        tuple(r.replicas for r in plan.inference),
        plan.training_groups,
        tuple(c.count for c in plan.local_nodes),
        tuple(c.count for c in plan.cloud_vms),
    )


def _largest(parts: list[Plan]) -> Plan:
    """The stage plan whose counts stand for the run's: under ``fixed`` every stage's are equal (the first);
    under ``replan`` the stage with the largest hourly cost (the most the run holds at once)."""
    return max(parts, key=lambda p: p.hourly_cost)


def _stage_row(name: str, iterations: int, plan: Plan, duration: float, capacity: str) -> StagePlan:
    """A stage's row before verification (the verifier fills demand, supply, update time, load, gap, binding)."""
    own = capacity == "replan"
    return StagePlan(
        name=name,
        iterations=iterations,
        cadence_s=plan.cadence_s,
        duration_s=duration,
        token_demand_per_s=0.0,
        token_supply_per_s=0.0,
        update_time_s=0.0,
        inflight_mean=0.0,
        mean_version_gap=0.0,
        inference=plan.inference if own else None,
        training_groups=plan.training_groups if own else None,
        local_nodes=plan.local_nodes if own else None,
        cloud_vms=plan.cloud_vms if own else None,
        hourly_cost=plan.hourly_cost if own else None,
        plan=plan,
    )
