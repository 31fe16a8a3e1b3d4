"""The levers under a plan: what relaxing each limit of the instance one step would save.

For a feasible plan, each limit that can bind — the versions kept (``max_versions_kept``),
each pool's size, each node or VM type's cap, the deadline (one day looser and one day
tighter), each freshness limit, each budget — is moved one step (models/limits.py) and the
edited instance is re-solved under the plan's own objective. The re-solves share one
reusable model (:class:`drivers.diagnosis.feasibility.Feasibility`: ``Planner.retarget`` while the
structure allows, as a sweep does), and every plan they return has passed the verifier.
The saving is the plan's objective value minus the re-solved one (positive: cheaper, or
faster under ``makespan``).

Nothing here prints; :mod:`render.levers` phrases the result.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from trainground.drivers.diagnosis.feasibility import Feasibility
from trainground.models.instance import Instance
from trainground.models.limits import LIMIT_STEP, RELIABILITY_STEP, set_limits
from trainground.models.result import Result
from trainground.solver.laws import goodput
from trainground.solver.table.pairs import TableCache

TOO_LARGE = "too_large"  # a lever's status when its edited copy's table is over the cap on rows, so not solved


@dataclass
class Lever:
    """One limit moved one step and the instance re-solved.

    ``kind`` says how to print ``before``/``after``: count, seconds, share, ratio or money.
    ``saving`` is the base objective value minus the re-solved one (None when the edited
    instance has no plan); ``saving_share`` that over the base value.
    """

    name: str
    path: str
    kind: str
    before: float
    after: float
    status: str
    objective_value: float | None
    saving: float | None
    saving_share: float | None
    buys_s: float | None = None  # a reliability lever (MODEL §13): time the change frees at the plan itself, s
    rows: int | None = None  # status too_large: the rows the edited copy's table would hold (at least), not solved

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "path": self.path,
            "kind": self.kind,
            "before": self.before,
            "after": self.after,
            "status": self.status,
            "objective_value": self.objective_value,
            "saving": self.saving,
            "saving_share": self.saving_share,
            "buys_s": self.buys_s,
            "rows": self.rows,
        }


@dataclass
class Levers:
    """Every lever of one plan, the largest saving first; levers whose edit has no plan come last."""

    objective: str
    base_value: float
    versions_kept: int
    group_drop_rate: float
    overrun_policy: str
    items: list[Lever] = field(default_factory=list)
    solves: int = 0
    seconds: float = 0.0

    def lever(self, path: str, after: float | None = None) -> Lever | None:
        """The lever moving ``path`` (to ``after``, when given)."""
        return next((lv for lv in self.items if lv.path == path and (after is None or lv.after == after)), None)

    def to_json(self) -> dict:
        return {
            "objective": self.objective,
            "base_value": self.base_value,
            "versions_kept": self.versions_kept,
            "group_drop_rate": self.group_drop_rate,
            "overrun_policy": self.overrun_policy,
            "items": [lv.to_json() for lv in self.items],
            "solves": self.solves,
            "seconds": self.seconds,
        }


def steps(inst: Instance) -> list[tuple[str, str, str, float, float]]:
    """(name, path, kind, value now, value one step relaxed) for every limit of ``inst`` that is set
    (models/limits.py: the table of limits and their steps); a regime that keeps one version resident has its
    own levers in place of the versions kept (MODEL §14)."""
    r = inst.regime
    own = r is not None and not r.is_default  # a regime with levers of its own (MODEL §14)
    aged = r is None or (r.mode == "async" and r.staleness == "drop")  # K still bounds the age of what is consumed
    out = []
    for s in set_limits(inst):
        if s.limit.key == "max_versions_kept" and own:
            if aged:  # under drop K is the age limit, with in-flight updates too: a lever beside the regime's own
                out += [(s.lever_name, s.path, s.limit.kind, s.value, after) for after in s.relaxed(inst)]
            out += regime_steps(inst)
            continue
        out += [(s.lever_name, s.path, s.limit.kind, s.value, after) for after in s.relaxed(inst)]
    return out


def regime_steps(inst: Instance) -> list[tuple[str, str, str, float, float]]:
    """A regime's own levers (MODEL §14): a rollout timeout LIMIT_STEP shorter (the slowest attempt ends sooner,
    fewer groups overrun their age limit), one step off for a pipelined run that generates then trains (on
    steady_state: one step off is planned there), twice as many steps ahead under admission, a concurrency cap
    LIMIT_STEP higher, and a colocated switch or a weight sync twice as fast."""
    r = inst.regime
    assert r is not None
    out = []
    if r.rollout_timeout is not None:
        tau = r.rollout_timeout
        out.append(("rollout_timeout", "regime.rollout_timeout", "seconds", tau, tau * (1 - LIMIT_STEP)))
    if r.mode == "pipelined" and r.steps_ahead == 0 and not inst.holds:
        out.append(("steps_ahead", "regime.steps_ahead", "count", 0.0, 1.0))
    if r.staleness == "admission" and r.steps_ahead is not None:
        out.append(("steps_ahead", "regime.steps_ahead", "count", r.steps_ahead, 2.0 * r.steps_ahead))
    cap = r.max_concurrent_attempts
    if cap is not None:
        out.append(
            (
                "max concurrent attempts",
                "regime.max_concurrent_attempts",
                "count",
                cap,
                cap + max(1, round(cap * LIMIT_STEP)),
            )
        )
    for key, name in (("switch_time", "switch time"), ("weight_sync_time", "weight sync time")):
        value = getattr(r, key) or 0.0
        if value > 0:
            out.append((name, f"regime.{key}", "seconds", value, value * RELIABILITY_STEP))
    return out


def time_bought(inst: Instance, result: Result, path: str, after: float) -> float | None:
    """Seconds a reliability change frees at ``result``'s own plan (MODEL §13): its trainer-paced time
    (T - fill - extra_time) × (1 - γ/γ'), γ' the goodput with ``path`` at ``after`` (None: not such a lever)."""
    rel, plan = inst.reliability, result.plan
    if rel is None or plan is None or not path.startswith("reliability."):
        return None
    now = float(goodput.training_terms(rel, plan.training_gpus).goodput)
    moved = rel.model_copy(update={path.split(".", 1)[1]: after})
    then = float(goodput.training_terms(moved, plan.training_gpus).goodput)
    if not (now > 0 and then > 0):
        return None
    paced = plan.makespan_s - (plan.startup_s or 0.0) - inst.schedule.extra_time
    return paced * (1 - now / then)


def levers(
    inst: Instance,
    result: Result,
    time_limit: float | None = None,
    cache: TableCache | None = None,
    allowance: float = 0.0,
) -> Levers | None:
    """The levers under ``result``'s plan (None when it has no optimal plan); ``cache``: the pair quantities
    the solve of ``result`` kept (:func:`solver.solve.solve_instance`), which the re-solves share.

    ``time_limit`` (seconds) bounds all the re-solves together: a re-solve cut short has status
    ``time_limit``, and the levers not reached by then ``skipped``, both without a saving; a lever whose edited
    copy's table would hold more rows than a table may is not solved (``too_large``, with those ``rows``). ``allowance``:
    the plan's run-variance allowance under hold (MODEL §11), kept in every re-solve's deadline row.
    """
    if result.status != "optimal" or result.plan is None or result.objective_value is None:
        return None
    clock = time.perf_counter()
    base = float(result.objective_value)
    checker = Feasibility(inst, cache)
    items = []
    for name, path, kind, before, after in steps(inst):
        left = None if time_limit is None else time_limit - (time.perf_counter() - clock)
        if left is not None and left <= 0:
            items.append(Lever(name, path, kind, float(before), float(after), "skipped", None, None, None))
            continue
        solved = checker.solve({path: after}, result.objective, left, allowance)
        proven = solved is not None and solved.status == "optimal"
        value = solved.objective_value if proven else None
        refused = checker.refused  # the edited copy's table would hold more rows than a table may: not solved
        status = TOO_LARGE if refused else "invalid" if solved is None else str(solved.status)
        saving = None if value is None else base - float(value)
        share = None if saving is None or not base else saving / base
        bought = time_bought(inst, result, path, after)
        rows = refused.rows if refused else None
        items.append(Lever(name, path, kind, float(before), float(after), status, value, saving, share, bought, rows))
    items.sort(key=lambda lv: (lv.saving is None, -(lv.saving or 0.0)))
    return Levers(
        objective=result.objective,
        base_value=base,
        versions_kept=result.plan.age_limit or result.plan.versions_kept,  # the K its drops are counted at
        group_drop_rate=result.metrics.group_drop_rate,
        overrun_policy=inst.freshness.overrun_policy,
        items=items,
        solves=checker.solves,
        seconds=time.perf_counter() - clock,
    )
