"""Solve a staged instance (MODEL.md §12) under MODEL §4's order, then a verified result.

Under ``capacity: fixed`` the compact model (:mod:`solver.stages.compact`) is searched by
:mod:`solver.stages.hull`. Under ``replan`` the compact model with each stage's own counts and linear bills
(:mod:`solver.stages.replan`), and under ``fixed`` with a cap on the total cost the pair model
(:mod:`solver.stages.model`), are solved by a sequence of HiGHS runs: the primary criterion, then each
tie-break with the criteria before it held at their optimum (within TIE_TOL), so the plan returned is
the optimum of the lexicographic order on the grid. Each stage's decisions are read as a one-stage
plan of the instance that stage runs as; the run's plan (:func:`solver.stages.plans.run_plan`) carries
them in ``stages`` and the run's makespan and costs, which the staged verifier
(:mod:`solver.verify.stages`) recomputes on its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import pyomo.core as pyo

from trainground.models.errors import InstanceError, Problem, RefusedInstance
from trainground.models.instance import OBJECTIVES, Instance
from trainground.models.result import Plan, Result, Status
from trainground.solver.highs import NO_BOUND, STAGED_OPTIONS, HighsModel
from trainground.solver.mip.assemble import ObjectiveMismatch, PlanRejected, extract_plan, objective_of, timings_of
from trainground.solver.stages.compact import CompactModel, build_compact, supports
from trainground.solver.stages.hull import compact_plan, linear_value, solve_compact
from trainground.solver.stages.model import StagedModel, build_staged, card_rows
from trainground.solver.stages.plans import own_startup, run_plan
from trainground.solver.stages.replan import ReplanModel, build_replan, replan_plan
from trainground.solver.stages.replan import card_rows as replan_card_rows
from trainground.solver.stages.replan_search import SEARCHES, search_replan
from trainground.solver.stages.tables import StagedUnsupported, StageTables, stage_tables
from trainground.solver.stopwatch import Stopwatch
from trainground.solver.table.pairs import Pairs
from trainground.solver.tolerances import COST_CHECK_TOL, REL_TOL, SPAN_TOL, TIE_TOL
from trainground.solver.verify.stages import verify_staged

ORDER = {
    "total_cost": ("total_cost", "makespan", "hourly_cost"),
    "hourly_cost": ("hourly_cost", "makespan"),
    "makespan": ("makespan", "total_cost"),
}  # MODEL §4's lexicographic order, criterion by criterion


@dataclass
class _StageView:
    """What :func:`solver.mip.assemble.extract_plan` reads of a live model, for one stage's sub-model."""

    inst: Instance
    pairs: Pairs
    model: pyo.ConcreteModel
    block_rows: dict

    def selected(self, values):
        return max(self.model.blocks.values(), key=lambda blk: float(values.get(blk.z, 0.0) or 0.0))


class StagedPlanner:
    """One staged instance's models in HiGHS, solved under any objective (each solve's rows removed after).

    Under ``capacity: fixed`` (and no cap on the total cost) the compact model of :mod:`solver.stages.compact`
    is solved by :mod:`solver.stages.hull`'s searches; under ``replan`` the model of :mod:`solver.stages.replan`,
    and under ``fixed`` with a cap on the total cost the pair model of :mod:`solver.stages.model`, by a sequence
    of HiGHS runs (:func:`_lexicographic`). Each is built on first use, over one set of stage tables; ``clock``
    (a command's stopwatch) hears what the planner does and bounds its first solve. It answers what the drivers ask of a :class:`solver.solve.Planner`: ``solve`` with the same
    restrictions (but a pinned cadence), ``inst``, ``retarget`` (never: each point builds its own model),
    ``confidence`` (None: confidence solves do not play stages) and ``listener``."""

    confidence = None

    def __init__(
        self, inst: Instance, threads: int = 1, confidence: float | None = None, clock: Stopwatch | None = None
    ):
        if confidence is not None:
            raise InstanceError(
                inst.name or "instance",
                [Problem("stages", "a confidence solve (--confidence) is not available with stages; remove one")],
            )
        self.inst, self.threads = inst, threads
        self.listener = None if clock is None else clock.listener
        self._first_clock = clock
        built = Stopwatch(None, self.listener)
        with built.phase("build"):
            built.note(f"{inst.name}: the stages' pair tables")
            try:
                self.found = stage_tables(inst)
            except StagedUnsupported as exc:
                raise RefusedInstance(inst.name or "instance", [Problem(exc.where, exc.rule)]) from None
        self.empty = empty_stage(inst, self.found)
        self._pair: tuple[StagedModel, HighsModel] | None = None
        self._compact: tuple[CompactModel, HighsModel] | None = None
        self._replan: tuple[ReplanModel, HighsModel] | None = None
        self._build_seconds = built.seconds.get("build", 0.0)  # counted in the first solve's timings

    def pair_model(self) -> tuple[StagedModel, HighsModel]:
        if self._pair is None:
            self._pair = self._loaded(build_staged(self.inst, self.found))
        return self._pair

    def compact_model(self) -> tuple[CompactModel, HighsModel]:
        if self._compact is None:
            self._compact = self._loaded(build_compact(self.inst, self.found))
        return self._compact

    def replan_model(self) -> tuple[ReplanModel, HighsModel]:
        if self._replan is None:
            self._replan = self._loaded(build_replan(self.inst, self.found))
        return self._replan

    def _loaded(self, built):
        """A built model with its HiGHS copy, loaded once."""
        highs = HighsModel(self.threads)
        highs.load(built.model)
        return built, highs

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
        confidence_report: bool = True,
    ) -> Result:
        """The optimal staged plan under ``objective`` (default the instance's), verified, under this call's
        restrictions (those of :meth:`solver.solve.Planner.solve`: a makespan cap, budgets, a card cap that
        every stage's inference meets, and the allowance Δ of MODEL §11 in the deadline row T + Δ <= deadline;
        ``feasibility`` asks nothing less of a staged solve; ``confidence_report`` is the Planner's, and a staged
        instance has no confidence solve). A pinned cadence is refused by name: each stage has its own."""
        if cadence is not None:
            raise InstanceError(
                self.inst.name or "instance",
                [Problem("stages", "each stage has its own cadence: a pinned cadence is not available with stages")],
            )
        objective = objective or self.inst.objective
        if objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
        clock, self._first_clock = self._first_clock or Stopwatch(time_limit, self.listener), None
        clock.seconds["build"], self._build_seconds = self._build_seconds, 0.0
        if self.empty is not None:
            return self._no_plan(objective, Status.INFEASIBLE, clock, self.empty)
        pairs = sum(t.size for t in self.found.tables)
        caps = (max_makespan, max_hourly_cost, max_inference_gpus)
        if supports(self.inst, max_total_cost):
            with clock.phase("build"):
                if self._compact is None:
                    clock.note(f"{self.inst.name}: the compact staged model of {pairs:,} stage pairs")
                compact, highs = self.compact_model()
            with clock.phase("solve"):
                status, point, search = solve_compact(compact, highs, objective, clock, allowance, *caps)
            if point is None:
                return self._no_plan(objective, status, clock, None)
            size = {"compact_runs": search.runs}
            with clock.phase("extract"):
                plan = compact_plan(compact, point, status)
            return _verified(
                self.inst, plan, objective, status, clock, highs, allowance, size, self.found, search.seconds
            )
        staged: StagedModel | ReplanModel
        if self.inst.stages is not None and self.inst.stages.capacity == "replan":
            with clock.phase("build"):
                if self._replan is None:
                    clock.note(f"{self.inst.name}: the replan model of {pairs:,} stage pairs")
                staged, highs = self.replan_model()
            limits = replan_card_rows(staged, max_inference_gpus)
            extract = partial(replan_plan, staged.c)
        else:
            with clock.phase("build"):
                if self._pair is None:
                    clock.note(f"{self.inst.name}: the staged pair model of {pairs:,} pairs")
                staged, highs = self.pair_model()
            limits = card_rows(staged, max_inference_gpus)
            extract = partial(extract_staged, staged)
        limits += restriction_rows(staged, allowance, max_makespan, max_hourly_cost, max_total_cost)
        with clock.phase("solve"):
            if isinstance(staged, ReplanModel) and objective in SEARCHES:
                key = (objective, allowance, max_hourly_cost, max_total_cost, max_inference_gpus)
                room = self.inst.schedule.deadline * (1 + REL_TOL) - allowance
                room = room if max_makespan is None else min(room, max_makespan * (1 + SPAN_TOL))
                status, values, value, seconds = search_replan(staged, highs, clock, _lexicographic, limits, room, key)
            else:
                status, values, value, seconds = _lexicographic(staged, highs, objective, clock, limits)
        if values is None:
            return self._no_plan(objective, status, clock, None)
        solution = (values, value, seconds)
        return _assemble(staged, extract, highs, objective, status, solution, clock, allowance, self.found)

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


def empty_stage(inst: Instance, found: StageTables) -> str | None:
    """Why no staged plan exists when a stage has no admissible pair (None when every stage has one)."""
    assert inst.stages is not None
    for stage, table in zip(inst.stages.list, found.tables):
        if table.size == 0:
            cut = ", ".join(f"{name} ({count})" for name, count in sorted(table.rejected.items())) or "none"
            return f"stage {stage.name}: no cadence on its grid meets its rows with any K (cut by: {cut})"
    return None


def solve_staged(
    inst: Instance, objective: str | None = None, time_limit: float | None = None, threads: int = 1
) -> Result:
    """The optimal staged plan of ``inst`` under ``objective`` (default the instance's), verified."""
    return StagedPlanner(inst, threads).solve(objective, time_limit)


def _assemble(
    staged: StagedModel | ReplanModel,
    extract: Callable[[Any], Plan],
    highs: HighsModel,
    objective: str,
    status: Status,
    solution: tuple,
    clock: Stopwatch,
    allowance: float,
    found: StageTables,
) -> Result:
    """The verified result of a solution of the pair or the replan model (HiGHS's values, primary value and
    seconds), its plan read by ``extract``. HiGHS's objective must be the plan's figure when the plan is proved
    optimal (an incumbent cut short by the time limit may carry a last stage's update at fewer groups than it has,
    which only overstates T)."""
    values, value, seconds = solution
    with clock.phase("extract"):
        plan = extract(values)
        got = objective_of(plan, objective)
        off = value is not None and abs(value - got) > COST_CHECK_TOL * max(1.0, abs(got))
        if off and status == Status.OPTIMAL:
            raise ObjectiveMismatch(
                f"{staged.inst.name}: HiGHS's {objective} is {value:.10g} but the plan's is {got:.10g}"
            )
    return _verified(staged.inst, plan, objective, status, clock, highs, allowance, {}, found, seconds)


def _verified(
    run: Instance,
    plan: Plan,
    objective: str,
    status: Status,
    clock: Stopwatch,
    highs: HighsModel,
    allowance: float,
    size: dict,
    found: StageTables,
    seconds: float,
) -> Result:
    """The result of a staged plan the staged verifier passes (its stage rows filled by the verifier's
    figures); a plan it rejects is a bug (PlanRejected)."""
    with clock.phase("verify"):
        check = verify_staged(run, plan, allowance)
    if not check.ok:
        raise PlanRejected(f"{run.name}: the verifier rejected the staged plan: " + "; ".join(check.violations))
    assert plan.stages is not None
    plan = plan.model_copy(
        update={"stages": [row.model_copy(update=figures) for row, figures in zip(plan.stages, check.stages)]}
    )
    columns, rows = highs.size()
    return Result(
        instance=run.name,
        status=status,
        objective=objective,
        objective_value=objective_of(plan, objective),
        plan=plan,
        metrics=check.metrics,
        binding=check.binding,
        mip_gap=0.0 if status == Status.OPTIMAL else None,
        timings=timings_of(clock, None, 0.0).model_copy(update={"highs": seconds}),
        model_size={
            "stages": len(found.tables),
            "pairs": sum(t.size for t in found.tables),
            "variables": columns,
            "rows": rows,
            **size,
        },
        basis=run.planning.basis,
    )


def _lexicographic(
    staged: StagedModel | ReplanModel,
    highs: HighsModel,
    objective: str,
    clock: Stopwatch,
    limits: list,
    order: tuple[str, ...] | None = None,
    solved: tuple | None = None,
):
    """HiGHS runs of MODEL §4's order (``order``: its first criteria alone) under this solve's ``limits``
    (relational expressions: the deadline row and the restrictions): (status, values, primary value, HiGHS
    seconds). A criterion solved is held within TIE_TOL of its optimum while the next is minimised; every row
    added is removed after. ``solved``: (values, value) of a plan optimal on the primary criterion under the
    same rows, whose run is then not repeated."""
    m = staged.model
    if not hasattr(m, "held"):
        m.held = pyo.ConstraintList()
    held: list = [m.held.add(row) for row in limits]
    try:
        highs.add_rows(held)
        return _runs(staged, highs, order or ORDER[objective], clock, held, solved)
    finally:
        highs.remove_rows(held)
        m.held.clear()


def _runs(staged: StagedModel | ReplanModel, highs: HighsModel, order: tuple, clock: Stopwatch, held: list, solved):
    """The runs of :func:`_lexicographic`. A tie-break run looks only for plans strictly better on its criterion
    than the plan in hand (a HiGHS objective bound), so one that finds none ends as soon as HiGHS proves it."""
    m = staged.model
    values, primary, status, seconds = None, None, Status.OPTIMAL, 0.0
    for i, name in enumerate(order):
        if i == 0 and solved is not None:
            values, primary = solved
            row = m.held.add(staged.criteria[name] <= primary + TIE_TOL * max(1.0, abs(primary)))
            held.append(row)
            highs.add_rows([row])
            continue
        clock.note(f"{staged.inst.name}: HiGHS, {name}" + (" (a tie-break)" if i else ""))
        highs.use_objective(getattr(m, f"objective_{name}"))
        incumbent: float | None = None if values is None else linear_value(staged.criteria[name], values)
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
    staged: StagedModel | ReplanModel,
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


def extract_staged(staged: StagedModel, values) -> Plan:
    """The run's plan: each stage's one-stage plan (its own start-up at its groups), the run's figures."""
    parts = []
    for si, table, sub in zip(staged.stage_insts, staged.pairs, staged.subs):
        view = _StageView(si, table, sub, {key: row for row, key in enumerate(sub.blocks)})
        parts.append(own_startup(si, extract_plan(view, values)))
    return run_plan(staged.inst, staged.stage_insts, parts)
