"""What the allowance loop of MODEL.md §11 (drivers.hold) reports: the ``hold`` object of a plan from its final
replays, a confidence report's replayed costs, and why a plan that does not pass its replays was returned."""

from __future__ import annotations

import math

import numpy as np

from trainground.drivers.replays import Replays
from trainground.models.instance import Instance
from trainground.models.result import HoldReport, Plan, Result
from trainground.solver.laws.calculus import wilson


def replayed_costs(hold: HoldReport, allowance: float) -> dict:
    """A confidence report's figures from its plan's replays (MODEL §11): realised costs beside the nominal."""
    return {
        "allowance_s": allowance,
        "replays": hold.replays,
        "expected_total_cost": hold.expected_total_cost,
        "p90_total_cost": hold.p90_total_cost,
    }


def unconverged_message(
    why: str, rounds: int, used: float, lateness: float, allowance: float, replayed: int | None = None
) -> str:
    """Why the allowance loop returned a plan that does not pass its own replays (``replayed``: how many of the
    last round's replays ran, when the time limit cut them short)."""
    if why == "time" and not math.isfinite(lateness) and replayed is not None:
        return (
            f"the time limit ran out during round {rounds}'s replays ({replayed} run): the plan solved with "
            f"allowance {used:,.0f} s is not known to hold"
        )
    late = "never finishes in its replays" if not math.isfinite(lateness) else f"has D_(k) = {lateness:,.0f} s"
    head = f"the last plan that was solved (allowance {used:,.0f} s) {late}, beyond its slack"
    if why == "infeasible":
        return f"{head}; no plan exists with the allowance {allowance:,.0f} s its replays ask for (round {rounds + 1})"
    if why == "time":
        return f"{head}; the time limit ran out after {rounds} rounds"
    return f"{head}; the allowance did not converge in {rounds} rounds"


def hold_report(
    inst: Instance,
    plan: Plan,
    replays: Replays,
    lateness: float,
    allowance: float,
    rounds: int,
    converged: bool,
    steady: Result | None,
    order: int | None = None,
    target: float | None = None,
) -> HoldReport:
    """The ``hold`` object of MODEL §11 from a plan's final replays (figures of a replay that never formed
    its last batch are null where they would be infinite); replays of a scenario each are on time against
    their scenario's deadline and cost its prices. ``order``, ``target``: k and the on-time share it stands
    for, if not the instance's (a confidence solve's are at α)."""
    p = inst.planning
    spans = replays.makespans
    finished = spans.size > 0 and bool(np.isfinite(spans).all())
    deadlines = inst.schedule.deadline if replays.deadlines is None else replays.deadlines
    hourly = plan.hourly_cost if replays.hourly is None else replays.hourly
    on_time = int(np.count_nonzero(spans <= deadlines))
    costs = hourly * spans / 3600.0

    def pct(x: np.ndarray, q: float) -> float | None:
        return float(np.percentile(x, q)) if finished else None

    return HoldReport(
        allowance_s=float(allowance),
        rounds=rounds,
        replays=int(spans.size),
        seed=p.seed,
        order=p.order if order is None else order,
        on_time_target=p.on_time if target is None else target,
        lateness_s=float(lateness) if math.isfinite(lateness) else None,
        allowance_converged=converged,
        on_time_share=on_time / spans.size if spans.size else 0.0,
        on_time_interval=list(wilson(on_time, int(spans.size))) if spans.size else [0.0, 1.0],
        makespan_s={"p50": pct(spans, 50), "p90": pct(spans, 90), "max": float(spans.max()) if finished else None},
        sandbox_wait_share=float(replays.wait_shares.mean())
        if spans.size and np.isfinite(replays.wait_shares).all()
        else None,
        expected_total_cost=float(costs.mean()) if finished else None,
        p90_total_cost=pct(costs, 90),
        steady_state_total_cost=None if steady is None or steady.plan is None else steady.plan.total_cost,
        steady_state_makespan_s=None if steady is None or steady.plan is None else steady.plan.makespan_s,
        steady_state_status=None if steady is None else str(steady.status),
    )
