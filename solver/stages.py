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
from trainground.solver import calculus as calc
from trainground.solver.assemble import ObjectiveMismatch, PlanRejected, extract_plan, objective_of, timings_of
from trainground.solver.highs import NO_BOUND, STAGED_OPTIONS, HighsModel
from trainground.solver.stage_model import StagedModel, build_staged
from trainground.solver.stage_tables import StagedUnsupported
from trainground.solver.stopwatch import Stopwatch
from trainground.solver.tolerances import COST_CHECK_TOL, REL_TOL, SPAN_TOL, TIE_TOL
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
    """One staged instance's model in HiGHS, solved under any objective (each solve's tie rows removed after).

    It answers what the drivers ask of a :class:`solver.solve.Planner`: ``solve`` with the same restrictions
    (but a pinned cadence), ``inst``, ``retarget`` (never: each point builds its own model), ``confidence``
    (None: confidence solves do not play stages) and ``listener``."""

    confidence = None
    listener = None

    def __init__(self, inst: Instance, threads: int = 1, confidence: float | None = None):
        if confidence is not None:
            raise InstanceError(
                inst.name or "instance",
                [Problem("stages", "a confidence solve (--confidence) is not available with stages; remove one")],
            )
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

    def retarget(self, inst: Instance) -> bool:
        """A staged model is built for one instance: another (a sweep point) builds its own."""
        return False

    def __getattr__(self, name: str):
        """What a driver reads of a :class:`solver.solve.Planner` beyond the above (the pair table) does not
        exist for stages: the driver is refused by name (exit 2) rather than given a wrong answer."""
        if name.startswith("__"):
            raise AttributeError(name)
        raise InstanceError(
            self.inst.name or "instance",
            [Problem("stages", f"this command reads the one-stage model ({name}); remove stages to use it")],
        )

    def solve(
        self,
        objective: str | None = None,
        time_limit: float | None = None,
        *,
        max_makespan: float | None = None,
        max_hourly_cost: float | None = None,
        max_total_cost: float | None = None,
        max_inference_gpus: int | None = None,
        allowance: float = 0.0,
        cadence: float | None = None,
        feasibility: bool = False,
    ) -> Result:
        """The optimal staged plan under ``objective`` (default the instance's), verified, under this call's
        restrictions (those of :meth:`solver.solve.Planner.solve`: a makespan cap, budgets, a card cap that
        every stage's inference meets, and the allowance Δ of MODEL §11 in the deadline row T + Δ <= deadline;
        ``feasibility`` asks nothing less of a staged solve). A pinned cadence is refused by name: each stage
        has its own."""
        if cadence is not None:
            raise InstanceError(
                self.inst.name or "instance",
                [Problem("stages", "each stage has its own cadence: a pinned cadence is not available with stages")],
            )
        objective = objective or self.inst.objective
        if objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
        clock = Stopwatch(time_limit)
        clock.seconds["build"], self._build_seconds = self._build_seconds, 0.0
        if self.staged.empty is not None:
            return self._no_plan(objective, Status.INFEASIBLE, clock, self.staged.empty)
        limits = restriction_rows(self.staged, allowance, max_makespan, max_hourly_cost, max_total_cost)
        limits += card_rows(self.staged, max_inference_gpus)
        with clock.phase("solve"):
            status, values, value, seconds = _lexicographic(self.staged, self.highs, objective, clock, limits)
        if values is None:
            return self._no_plan(objective, status, clock, None)
        return _assemble(self.staged, self.highs, objective, status, values, value, seconds, clock, allowance)

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
    staged: StagedModel,
    highs: HighsModel,
    objective: str,
    status: Status,
    values,
    value,
    seconds,
    clock: Stopwatch,
    allowance: float = 0.0,
) -> Result:
    """The verified result of a staged solution (the stage rows filled by the verifier's figures). HiGHS's
    objective must be the plan's figure when the plan is proved optimal (an incumbent cut short by the time
    limit may carry a last stage's update at fewer groups than it has, which only overstates T)."""
    inst = staged.inst
    with clock.phase("extract"):
        plan = extract_staged(staged, values)
        found = objective_of(plan, objective)
        off = value is not None and abs(value - found) > COST_CHECK_TOL * max(1.0, abs(found))
        if off and status == Status.OPTIMAL:
            raise ObjectiveMismatch(f"{inst.name}: HiGHS's {objective} is {value:.10g} but the plan's is {found:.10g}")
    with clock.phase("verify"):
        check = verify_staged(inst, plan, allowance)
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


def _lexicographic(staged: StagedModel, highs: HighsModel, objective: str, clock: Stopwatch, limits: list):
    """HiGHS runs of MODEL §4's order under this solve's ``limits`` (relational expressions: the deadline
    row and the restrictions): (status, values, primary value, HiGHS seconds). A criterion solved is held
    within TIE_TOL of its optimum while the next is minimised; every row added is removed after."""
    m = staged.model
    if not hasattr(m, "held"):
        m.held = pyo.ConstraintList()
    held: list = [m.held.add(row) for row in limits]
    try:
        highs.add_rows(held)
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


def restriction_rows(
    staged: StagedModel,
    allowance: float,
    max_makespan: float | None,
    max_hourly_cost: float | None,
    max_total_cost: float | None,
) -> list:
    """A solve's rows on the run: the deadline with the allowance Δ (MODEL §3.4, §11 item 4: T + Δ <=
    deadline), a makespan cap and the budgets it asks for."""
    m, deadline = staged.model, staged.inst.schedule.deadline
    rows = [m.makespan <= deadline * (1 + REL_TOL) - allowance]
    for expr, cap, tol in (
        (m.makespan, max_makespan, SPAN_TOL),
        (m.hourly_cost, max_hourly_cost, REL_TOL),
        (m.total_cost, max_total_cost, REL_TOL),
    ):
        if cap is not None:
            rows.append(expr <= cap * (1 + tol))
    return rows


def card_rows(staged: StagedModel, cap: int | None) -> list:
    """Every stage's inference GPUs within ``cap`` (none without one)."""
    if cap is None:
        return []
    shapes = staged.inst.inference.shapes
    return [
        sum(s.gpus_per_replica * blk.x[s.name] for blk in sub.blocks.values() for s in shapes) <= cap
        for sub in staged.subs
    ]


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
        parts.append(own_startup(si, extract_plan(view, values)))  # type: ignore[arg-type]
    stages = inst.stages
    durations, makespan, changes = run_span(inst, staged.stage_insts, parts)
    switch = stages.switch_time if stages.capacity == "replan" else 0.0
    hourly_of = [p.hourly_cost for p in parts]
    paid = [h * d for h, d in zip(hourly_of, durations)] + [hourly_of[-1] * inst.schedule.extra_time]
    paid += [b.hourly_cost * switch for a, b in zip(parts, parts[1:]) if capacity_of(a) != capacity_of(b)]
    if stages.capacity == "fixed":
        hourly, total = hourly_of[0], hourly_of[0] * makespan / 3600.0
    else:
        hourly, total = max(hourly_of), sum(paid) / 3600.0
    top = _largest(parts)
    return top.model_copy(
        update={
            "cadence_s": sum(s.iterations * p.cadence_s for s, p in zip(stages.list, parts)) / inst.workload.iterations,
            "makespan_s": makespan,
            "startup_s": parts[0].startup_s if inst.counts_startup else None,
            "hourly_cost": hourly,
            "total_cost": total,
            "stages": [
                _stage_row(s.name, s.iterations, p, d, stages.capacity)
                for s, p, d in zip(stages.list, parts, durations)
            ],
        }
    )


def own_startup(si: Instance, plan: Plan) -> Plan:
    """A stage's one-stage plan with its own start-up (MODEL §8) at the groups it has: the pair's row may
    count the update at fewer groups than the stage's (the shared count's ``extra_groups``)."""
    if not si.counts_startup or plan.startup_s is None:
        return plan
    span = plan.startup_s + (si.workload.iterations - 1) * plan.cadence_s + final_update(si, plan)
    span += si.schedule.extra_time
    return plan.model_copy(update={"makespan_s": span, "total_cost": plan.hourly_cost * span / 3600.0})


def final_update(si: Instance, plan: Plan) -> float:
    """U(m) of stage instance ``si`` at ``plan``'s training groups, s."""
    t = si.training
    return float(calc.update_time(t.update_time, plan.training_groups * t.gpus_per_group))


def run_span(inst: Instance, insts: list[Instance], parts: list[Plan]) -> tuple[list[float], float, int]:
    """Each stage's duration (its part of the run: n_p·L_p, with the start-up counted the first stage's fill
    less one cadence and the last stage's final update), the run's makespan T (MODEL §12) and the number
    of changes of capacity (replan)."""
    assert inst.stages is not None
    stages = inst.stages
    durations = [s.iterations * p.cadence_s for s, p in zip(stages.list, parts)]
    if inst.counts_startup:
        assert parts[0].startup_s is not None
        durations[0] += parts[0].startup_s - parts[0].cadence_s
        durations[-1] += final_update(insts[-1], parts[-1])
    changes = 0
    if stages.capacity == "replan":
        changes = sum(1 for a, b in zip(parts, parts[1:]) if capacity_of(a) != capacity_of(b))
    return durations, sum(durations) + inst.schedule.extra_time + stages.switch_time * changes, changes


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
