"""Plans that hold (MODEL.md §11 item 4): the run-variance allowance, found by replaying each candidate plan.

A driver above the solver and the simulator: :class:`HoldingPlanner` wraps a
:class:`~solver.solve.Planner` (whose rows already follow the instance's basis: start-up
counted, E^hold sandboxes, consumed gaps) and runs the allowance loop of MODEL §11:

    round r = 1..4: solve with T + Δ_{r-1} <= deadline (Δ_0 = 0); replay the plan R = replays
    times (seeds seed + i, the §10 engine as ``simulate`` runs it); D_(k) = the k-th smallest of
    makespan - T, k = ceil(on_time·(R + 1)); the plan passes iff T + D_(k) <= deadline, else
    Δ_r = max(Δ_{r-1}, D_(k)).

The replays test the waits as they test the makespan (:mod:`drivers.hold_waits`): a plan whose k-th smallest
replay wait share is above ``planning.sandbox_wait`` does not pass either, and the next round sizes the sandbox
rows for a smaller share. The replays, and the cache that keeps them across the points of a frontier or a sweep,
are :mod:`drivers.replays`'s; the ``hold`` object is :mod:`drivers.hold_report`'s.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from trainground.drivers import hold_waits as waits
from trainground.drivers.hold_report import hold_report, replayed_costs, unconverged_message
from trainground.drivers.pace import ReplayPace
from trainground.drivers.replays import ReplayCache, Replays
from trainground.models.instance import Instance
from trainground.models.planning import fewest_replays, replay_order
from trainground.models.result import Plan, Result, Status, Timings
from trainground.simulation.admission import setup_of_plan as admission_setup_of_plan
from trainground.simulation.admission_replay import replicate as admission_replicate
from trainground.simulation.regimes import replicate as batch_replicate
from trainground.simulation.regimes import setup_of_plan as batch_setup_of_plan
from trainground.simulation.runner import seed_for
from trainground.simulation.setup import setup_of
from trainground.solver.laws.replay_drift import ReplayEstimate, replay_estimate
from trainground.solver.solve import Planner
from trainground.solver.stopwatch import Stopwatch
from trainground.solver.uncertainty import scenarios as sc

ROUNDS = 4  # MODEL §11 item 4: rounds of solve and replay before the allowance is declared unconverged
TOO_SAFE = 0.001  # MODEL §11 rule ii: a start that passes by more than this share of the deadline is re-solved at D_(k)


def replay_seeds(inst: Instance) -> list[int]:
    p = inst.planning
    return [p.seed + i for i in range(p.replays)]


def order_statistic(lateness: np.ndarray, k: int) -> float:
    """The k-th smallest value (1-based) of ``lateness``."""
    return float(np.sort(lateness)[k - 1])


class HoldingPlanner:
    """A Planner whose ``solve`` runs MODEL §11's allowance loop (instances under ``planning.basis: hold``).

    Restrictions (makespan caps, budgets, pinned cadences) hold in every round; the steady_state optimum
    under the same restrictions gives ``hold.steady_state_total_cost``.
    """

    def __init__(self, inst: Instance, replays: ReplayCache | None = None, **planner_options):
        """``planner_options``: those of :class:`~solver.solve.Planner`; its ``clock`` (a command's stopwatch)
        then bounds the first solve's rounds together."""
        self._inst = inst
        self.planner = base_planner(inst, **planner_options)
        self.cache = replays or ReplayCache()
        self._steady: Planner | None = None
        self._options = {k: v for k, v in planner_options.items() if k in ("threads", "confidence")}
        self._sized_options = {k: v for k, v in planner_options.items() if k in ("threads", "confidence", "cache")}
        self._clock: Stopwatch | None = planner_options.get("clock")  # the command's, for the first solve only

    @property
    def inst(self) -> Instance:
        """The instance as given; the planner's own may size its sandboxes for a smaller share (:meth:`size_for`)."""
        return self._inst

    @property
    def pairs(self):
        return self.planner.pairs

    def retarget(self, inst: Instance) -> bool:
        """Point the planner at another instance of the same structure and basis (False: build a new one)."""
        self._steady = None
        if not (inst.holds and self.planner.retarget(inst)):
            return False
        self._inst = inst
        return True

    def size_for(self, planner: Planner, share: float) -> Planner:
        """The planner of the instance with its sandbox rows sized for ``share`` (:mod:`drivers.hold_waits`):
        ``planner`` retargeted, or a new one where it cannot be; it becomes this planner's, so the solves that
        carry the allowance (a frontier's faster points) carry the sizing too."""
        sized = waits.sized_instance(self._inst, share)
        if not planner.retarget(sized):
            planner = base_planner(sized, **self._sized_options)
        self.planner = planner
        return planner

    def solve(
        self,
        objective: str | None = None,
        *,
        time_limit: float | None = None,
        start: float | None = None,
        **restrictions,
    ) -> Result:
        """The cheapest plan that passes its own replays (MODEL §11 item 4), with its ``hold`` report. A
        confidence solve's replays draw a scenario each and its scenarios carry the allowance (§11, last
        paragraphs): the order statistic is at α, over at least ceil(α/(1 - α)) replays.

        ``start``: Δ_0 from a neighbouring point (``allowance_start: neighbour``); None starts from the model's
        estimate of the replays' lateness (:mod:`solver.laws.replay_drift`) for the plan solved at Δ = 0, or from 0
        where the model has none. A start that passes by more than 0.001·deadline is solved again at D_(k)
        (rule ii); an infeasible round after a non-zero start restarts the loop from 0 (rule iii)."""
        clock, self._clock = self._clock or Stopwatch(time_limit, self.planner.listener), None
        replayed_before = self.cache.seconds
        inst, limit = self.inst, self.inst.planning.sandbox_wait
        count, k = self.replay_count()
        if self.planner.inst.planning.sandbox_wait != limit:  # a solve before sized them for less: start afresh
            self.size_for(self.planner, limit)
        planner, pace = self.planner, ReplayPace(clock, self.cache.threads)
        spent = Timings()

        def solve_at(allowance: float) -> Result:
            nonlocal spent
            result = planner.solve(
                objective, time_limit=clock.remaining(), allowance=allowance, confidence_report=False, **restrictions
            )
            spent = Timings(**{name: v + getattr(result.timings, name) for name, v in spent.model_dump().items()})
            return result

        first: Result | None = None
        origin = "neighbour"
        if start is None:  # the model's estimate for the plan at Δ = 0 (which also says whether any plan exists)
            first = solve_at(0.0)
            if first.plan is None:
                return first
            estimate = self.estimate(first)
            start, origin = (
                (0.0, "zero") if estimate is None or estimate.start_s <= 0 else (estimate.start_s, "estimate")
            )
            first = first if start == 0.0 else None  # round 1 at Δ = 0 is the solve just made
        elif start <= 0:
            start, origin = 0.0, "zero"
        allowance, rounds, last, why = float(start), 0, None, "rounds"
        passed = None  # (planner, result, replays, lateness, allowance, sized) of the last round that passed
        fresh = 0  # the rounds before a restart from 0 (rule iii), which gets ROUNDS of its own
        while rounds - fresh < ROUNDS:
            if not pace.next_round():  # the time limit leaves less than the last round took: its plan, every run
                why = "time"
                break
            result = first if first is not None else solve_at(allowance)
            first = None
            if result.plan is None:
                sized_down = planner.inst.planning.sandbox_wait < limit  # after waits above the limit
                if allowance > 0 and origin != "zero" and passed is None and not sized_down:  # rule iii
                    allowance, origin, fresh = 0.0, "zero", rounds  # a start never makes it infeasible
                    continue
                if last is None or (allowance == 0 and rounds == fresh and not sized_down):
                    return result  # no plan even at Δ = 0: infeasible (or out of time), as the solve says
                why = "infeasible"
                break
            rounds += 1
            sized = planner.inst.planning.sandbox_wait  # the share this round's sandbox rows were sized for
            clock.note(f"{inst.name}: round {rounds}, {count} replays of the plan (allowance {allowance:,.0f} s)")
            replays = self._replays(planner, result, count, pace)
            if replays.makespans.size < count:  # the time limit ran out during this round's replays
                why = "time"
                if last is None:
                    last = (planner, result, replays, math.inf, allowance, sized)
                else:
                    rounds -= 1  # the plan returned is the previous round's, whose replays all ran
                break
            planned = result.plan.makespan_s if replays.planned is None else replays.planned
            lateness = order_statistic(replays.makespans - planned, k)
            bound = waits.wait_bound(replays, k)
            if passed is not None:  # rule ii's second solve: returned only if it passes too
                if passes(planner, result, lateness) and waits.waits_pass(bound, limit):
                    last = (planner, result, replays, lateness, allowance, sized)
                else:
                    last = passed
                break
            last = (planner, result, replays, lateness, allowance, sized)
            on_time = passes(planner, result, lateness)
            if not waits.waits_pass(bound, limit):  # the next round sizes the sandboxes for a smaller share
                assert bound is not None
                if rounds - fresh >= ROUNDS or sized <= waits.SIZED_FLOOR:
                    break  # no round left, or no smaller share to size for: the plan does not hold
                planner = self.size_for(
                    planner, waits.next_sizing(sized, waits.model_share(inst, result), bound, limit)
                )
                if on_time:
                    continue
            elif on_time:
                needed = max(lateness, 0.0)  # Δ >= 0: replays that finish early ask no negative allowance
                if allowance - needed > TOO_SAFE * inst.schedule.deadline and rounds - fresh < ROUNDS:  # rule ii
                    passed, allowance = last, needed
                    continue
                break
            allowance = max(allowance, lateness)
            if not math.isfinite(allowance) or clock.expired():
                why = "time" if clock.expired() else "unfinished"
                break
        planner, result, replays, lateness, used, sized = last
        result.timings = spent  # every round's solve, not only the last
        bound = waits.wait_bound(replays, k)
        held = waits.waits_pass(bound, limit)
        converged = math.isfinite(lateness) and passes(planner, result, lateness) and held
        steady = None if clock.expired() else self.steady_optimum(objective, restrictions, clock)
        alpha = None if planner.confidence is None else planner.confidence.alpha
        result.hold = hold_report(inst, result.plan, replays, lateness, used, rounds, converged, steady, k, alpha)
        result.hold.sandbox_wait_bound = bound
        result.hold.sandbox_wait_sized = sized
        result.hold.sandbox_wait_model = waits.model_share(inst, result)
        result.hold.replay_seconds = self.cache.seconds - replayed_before
        final = self.estimate(result)
        result.hold.predicted_makespan_s = None if final is None else final.predicted_makespan(result.plan)
        result.hold.allowance_start = origin
        if planner.confidence is not None:  # a staged planner has no confidence solve (refused before)
            planner.report_confidence(result, used)
        if result.confidence is not None:
            result.confidence = result.confidence.model_copy(update=replayed_costs(result.hold, used))
        if not converged:
            result.status = Status.TIME_LIMIT
            result.message = unconverged_message(why, rounds, used, lateness, allowance, replays.makespans.size)
            if not held:
                result.message = waits.unheld_message(bound, limit, sized, k, count)
        return result

    def estimate(self, result: Result) -> ReplayEstimate | None:
        """The model's estimate of the replays' lateness for ``result``'s plan (None: none for this instance,
        or a confidence solve, whose replays each draw a scenario)."""
        if result.plan is None or result.metrics is None or self.planner.confidence is not None:
            return None
        return replay_estimate(self.inst, result.plan, result.metrics)

    def replay_count(self) -> tuple[int, int]:
        """(R, k): the replays of each round and the order statistic that sets the allowance; a confidence
        solve's at α (MODEL §11), with R raised to the fewest that have a k-th replay."""
        conf, p = self.planner.confidence, self.inst.planning
        if conf is None:
            return p.replays, p.order
        count = max(p.replays, fewest_replays(conf.alpha))
        return count, replay_order(conf.alpha, count)

    def _replays(self, planner: Planner, result: Result, count: int, stop: Callable[[], bool]) -> Replays:
        """The round's replays of ``result``'s plan: of the instance, or of a scenario each (a confidence solve)."""
        inst, seed = self.inst, self.inst.planning.seed
        if inst.regime is not None and inst.regime.batched:  # MODEL §14: the batch regime's own replay
            return batch_replays(inst, result.plan, replay_seeds(inst)[:count], stop)
        if _own_replay(inst):  # MODEL §14: an admission run's own replay
            return admission_replays(inst, result.plan, replay_seeds(inst)[:count], stop)
        if planner.confidence is None:
            return self.cache.replays(setup_of(inst, result.plan, result.metrics), replay_seeds(inst)[:count], stop)
        return self.cache.scenario_replays(inst, result.plan, result.metrics, seed, count, stop)

    def solve_carried(self, allowance: float, objective: str | None = None, **restrictions) -> Result:
        """One solve on the hold basis's rows with a given allowance, ``T + allowance <= deadline``, and no
        replays: a frontier's faster points carry the allowance of its cheapest plan (drivers.tradeoffs.frontier)."""
        return self.planner.solve(objective, allowance=allowance, **restrictions)

    def steady_optimum(self, objective: str | None, restrictions: dict, clock: Stopwatch) -> Result:
        """The steady_state optimum of the same instance under the same restrictions (MODEL §11's price),
        within what ``clock`` has left."""
        if self._steady is None:
            steady = self.inst.model_copy(
                update={"planning": self.inst.planning.model_copy(update={"basis": "steady_state"})}
            )
            self._steady = base_planner(steady, **self._options)
        return self._steady.solve(objective, time_limit=clock.remaining(), confidence_report=False, **restrictions)


def batch_replays(inst: Instance, plan: Plan, seeds: list[int], stop: Callable[[], bool]) -> Replays:
    """The replays of a batch run's plan (MODEL §14, simulate/regimes.py), replay i on ``simulate --seed
    seeds[i]``'s first stream; a replay not started when ``stop()`` says True is skipped. Its wait shares are NaN:
    the batch replay does not queue attempts for sandboxes (the hold report then gives none)."""
    setup = batch_setup_of_plan(inst, plan)
    spans = []
    for seed in seeds:
        if stop():
            break
        spans.append(batch_replicate(setup, seed_for(seed, 0)).makespan)
    return Replays(makespans=np.array(spans, dtype=float), wait_shares=np.full(len(spans), np.nan))


def admission_replays(inst: Instance, plan: Plan, seeds: list[int], stop: Callable[[], bool]) -> Replays:
    """The replays of an admission run's plan (MODEL §14, simulate/admission_replay.py), replay i on ``simulate
    --seed seeds[i]``'s first stream; a replay not started when ``stop()`` says True is skipped. Its wait shares are
    NaN: the admission replay does not queue attempts for sandboxes (the hold report then gives none)."""
    setup = admission_setup_of_plan(inst, plan)
    spans = []
    for seed in seeds:
        if stop():
            break
        spans.append(admission_replicate(setup, seed_for(seed, 0)).makespan)
    return Replays(makespans=np.array(spans, dtype=float), wait_shares=np.full(len(spans), np.nan))


def _own_replay(inst: Instance) -> bool:
    """A regime replayed by its own module (MODEL §14: a batch or an admission run), not the §10 engine."""
    return inst.regime is not None and inst.regime.own_replay


def passes(planner: Planner, result: Result, lateness: float) -> bool:
    """Whether the plan passes its replays with D_(k) = ``lateness``: T + D_(k) <= deadline (MODEL §11 item
    4) and, for a confidence solve, on time with that allowance in ceil(α·S) of its scenarios."""
    inst, plan = planner.inst, result.plan
    if plan.makespan_s + lateness > inst.schedule.deadline:
        return False
    conf = planner.confidence
    if conf is None:
        return True
    return int(sc.evaluate(inst, plan, conf.scenarios, lateness).on_time.sum()) >= conf.needed


def base_planner(inst: Instance, **options) -> Planner:
    """The solver's planner of ``inst`` on the rows of its basis: a Planner, or for a staged instance (MODEL
    §12) the staged MIP's StagedPlanner (which takes ``threads``, ``confidence`` and ``clock`` of the options)."""
    if inst.stages is not None:
        from trainground.solver.stages.solve import StagedPlanner

        kept = {k: v for k, v in options.items() if k in ("threads", "confidence", "clock")}
        return StagedPlanner(inst, **kept)  # type: ignore[return-value]
    return Planner(inst, **options)


def neighbour_start(planner, before: Result | None) -> dict:
    """The options that start ``planner``'s allowance loop from the final Δ of the point before it (MODEL §11:
    ``allowance_start: neighbour``): none unless ``planner`` holds and that point's allowance converged."""
    hold = None if before is None else before.hold
    if not isinstance(planner, HoldingPlanner) or hold is None or not hold.allowance_converged:
        return {}
    return {"start": hold.allowance_s}


def planner_for(inst: Instance, replays: ReplayCache | None = None, **options) -> Planner | HoldingPlanner:
    """The planner of ``inst``'s basis: its base planner under steady_state (:func:`base_planner`), a
    HoldingPlanner around it under hold."""
    if inst.holds:
        return HoldingPlanner(inst, replays, **options)
    return base_planner(inst, **options)


def solve_planned(
    inst: Instance,
    objective: str | None = None,
    time_limit: float | None = None,
    threads: int = 1,
    replays: ReplayCache | None = None,
    **options,
) -> Result:
    """One solve of ``inst`` on its basis (MODEL §11): :func:`solver.solve.solve_instance`, with the
    allowance loop under hold (``replays``: whose replays it may reuse, and on how many threads)."""
    planner = planner_for(inst, replays, threads=threads, **options)
    return planner.solve(objective, time_limit=time_limit)
