"""One instance's answer: the plan `solve` returns and everything shown beside it, computed in one place.

`solve` (its text and its ``--json``), `report` and the Python API (``trainground.solve``) all call
:func:`answer`, so none of them computes a figure the others lack: the verified result (with its diagnosis
when infeasible), the levers, the simulated verdict, the §8 start-up fill at the plan's attempt rate and, for
a confidence solve, what the plan holds beyond the deterministic optimum (a second solve).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from trainground.drivers.replays import ReplayCache
from trainground.drivers.tradeoffs.levers import Levers
from trainground.drivers.tradeoffs.stage_levers import StageLever, stage_levers
from trainground.models.errors import InstanceError, Problem
from trainground.models.instance import Instance
from trainground.models.result import Plan, Result, Status
from trainground.simulation.report import Report
from trainground.solver.stopwatch import Stopwatch
from trainground.solver.table.pairs import TableCache

LEVERS_SECONDS = 10.0  # what all the lever re-solves may take together unless told (`solve --levers-time`)


@dataclass
class Beyond:
    """A confidence plan against the deterministic optimum of the same instance (MODEL §9)."""

    deterministic: Plan | None  # None: the instance without its confidence has no plan
    drove: dict  # solver.confidence.report.what_drove: decision deltas, the needs binding in the worst scenarios

    def to_json(self) -> dict:
        return {
            "deterministic_total_cost": None if self.deterministic is None else self.deterministic.total_cost,
            **self.drove,
        }


@dataclass
class Answer:
    """The result of one solve and what is attached to it; :meth:`to_json` is `solve --json`'s document."""

    inst: Instance
    result: Result
    levers: Levers | None = None
    simulation: Report | None = None
    startup_estimate_s: float | None = None
    beyond: Beyond | None = None
    stage_levers: list[StageLever] | None = None  # a staged plan's (MODEL §12): one unit more of what binds

    def to_json(self) -> dict:
        """The MODEL §6 result with the optional keys of what was computed beside it."""
        from trainground.simulation.verdicts import verdict_of

        payload = self.result.to_json()
        if self.levers is not None:
            payload["levers"] = self.levers.to_json()
        if self.stage_levers is not None:
            payload["stage_levers"] = [lever.to_json() for lever in self.stage_levers]
        if self.simulation is not None:
            payload["simulation"] = verdict_of(self.simulation)
        if self.startup_estimate_s is not None:
            payload["startup_estimate_s"] = self.startup_estimate_s
        if self.beyond is not None:
            payload["beyond_deterministic"] = self.beyond.to_json()
        return payload


def answer(
    inst: Instance,
    objective: str | None = None,
    *,
    clock: Stopwatch | None = None,
    cache: TableCache | None = None,
    replications: int | None = None,
    with_levers: bool = True,
    levers_time: float = LEVERS_SECONDS,
    notes: Sequence[str] = (),
    on_replay: Callable[[int, int], None] | None = None,
    replays: ReplayCache | None = None,
) -> Answer:
    """Solve ``inst`` on its basis (:func:`drivers.hold.solve_planned`; every plan verified), diagnose it when
    infeasible, then attach: the levers (an optimal deterministic plan; their re-solves share ``levers_time``
    seconds and what ``clock``'s time limit leaves), ``replications`` replays of the plan (MODEL §10) and the
    comparison of a confidence plan with the deterministic optimum. ``notes``: the loader's warnings, which
    lead a diagnosis's notes; ``on_replay(done, total)``: the replays' progress; ``replays``: the allowance
    loop's replays (MODEL §11) kept for a later solve of the same plans (the report's frontier)."""
    from trainground.drivers.hold import solve_planned

    clock = clock or Stopwatch()
    cache = cache or TableCache(8)  # the solve's pair quantities, which the levers' re-solves of edited copies share
    result = solve_planned(inst, objective, clock=clock, cache=cache, replays=replays)
    if result.status == Status.INFEASIBLE:  # the diagnosis's modules load only when it runs
        from trainground.drivers.diagnosis.diagnose import diagnosed

        result = diagnosed(inst, result, clock=clock, notes=notes)
    if inst.stages is not None:  # MODEL §12: the staged plan and its stage levers (no replays here yet)
        found = Answer(inst, result)
        if with_levers and result.status == Status.OPTIMAL:
            found.stage_levers = stage_levers(inst, result)
        return found
    regime = inst.regime is not None and not inst.regime.is_default  # MODEL §14: the seed's fill is not its start-up
    estimate = startup_estimate(inst, result) if not regime else None
    continuous = regime and inst.regime is not None and inst.regime.mode == "async"
    if continuous and result.plan is not None:  # an async regime's own fill over W_τ, when its start-up is counted
        estimate = result.plan.startup_s
    found = Answer(inst, result, startup_estimate_s=estimate)
    if replications and result.plan is not None and regime and inst.regime is not None and inst.regime.own_replay:
        raise InstanceError(
            inst.name or "instance",
            [
                Problem(
                    "regime.mode",
                    "solve --simulate replays the seed's regime and async drop runs: replay a batch or admission "
                    "plan with simulate",
                )
            ],
        )
    if replications and result.plan is not None:
        from trainground.models.regime_rules import refuse_unreplayed
        from trainground.simulation.verdicts import simulate_result

        refuse_unreplayed(inst)  # an async drop run is the §10 engine's, unless it caps its running attempts

        clock.note(f"{inst.name}: simulating the plan ({replications} replication(s))")
        found.simulation = simulate_result(inst, result, replications, on_progress=on_replay)
    if with_levers and result.status == Status.OPTIMAL and result.confidence is None:
        from trainground.drivers.tradeoffs.levers import levers

        left = None if clock.deadline is None else clock.deadline - time.perf_counter()
        budget = levers_time if left is None else min(levers_time, max(0.0, left))
        clock.note(f"{inst.name}: levers (each limit relaxed one step)")
        found.levers = levers(inst, result, budget, cache, allowance=result.hold.allowance_s if result.hold else 0.0)
    if result.confidence is not None and result.plan is not None:
        found.beyond = beyond_deterministic(inst, result, objective)
    return found


def startup_estimate(inst: Instance, result: Result) -> float | None:
    """§8's fill at the solved plan's attempt rate (what the first batch needs, counted or not); None without a plan."""
    if result.plan is None or result.metrics is None:
        return None
    from trainground.solver.laws.startup import run_fill

    return float(run_fill(inst, result.metrics.attempts_per_s))


def beyond_deterministic(inst: Instance, result: Result, objective: str | None) -> Beyond:
    """What a confidence plan holds beyond the optimum of ``inst`` without its confidence (a second solve, with
    the confidence plan's run-variance allowance under hold: the comparison prices the inputs' uncertainty), and
    which need binds in its worst scenarios, each on time iff T_s + Δ <= deadline (MODEL §11)."""
    from trainground.solver.confidence.report import what_drove
    from trainground.solver.solve import Planner
    from trainground.solver.uncertainty.scenarios import draw

    allowance = result.hold.allowance_s if result.hold is not None else 0.0
    deterministic = inst.model_copy(update={"uncertainty": inst.uncertainty.model_copy(update={"confidence": None})})
    base = Planner(deterministic).solve(objective, allowance=allowance).plan
    return Beyond(base, what_drove(inst, result.plan, base, draw(inst), allowance=allowance))
