"""Plans that hold (MODEL.md §11 item 4): the run-variance allowance, found by replaying each candidate plan.

A driver above the solver and the simulator: :class:`HoldingPlanner` wraps a
:class:`~solver.solve.Planner` (whose rows already follow the instance's basis: start-up
counted, E^hold sandboxes, consumed gaps) and runs the allowance loop of MODEL §11:

    round r = 1..4: solve with T + Δ_{r-1} <= deadline (Δ_0 = 0); replay the plan R = replays
    times (seeds seed + i, the §10 engine as ``simulate`` runs it); D_(k) = the k-th smallest of
    makespan - T, k = ceil(on_time·(R + 1)); the plan passes iff T + D_(k) <= deadline, else
    Δ_r = max(Δ_{r-1}, D_(k)).

The replays run :func:`simulate.engine.replicate` without its per-attempt records (the makespan and
the waits are the recorded run's), on threads (numpy releases the GIL in its bulk work). A
:class:`ReplayCache`, owned by whoever plans many points (a frontier, a sweep), keeps the replays
of each distinct setup, so a point whose plan is one already replayed costs no replay.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from trainground.models.instance import Instance
from trainground.models.result import HoldReport, Plan, Result, Status, Timings
from trainground.simulate.engine import replicate
from trainground.simulate.runner import seed_for
from trainground.simulate.setup import Setup, setup_of
from trainground.solver.calculus import wilson
from trainground.solver.solve import Planner
from trainground.solver.stopwatch import Stopwatch

ROUNDS = 4  # MODEL §11 item 4: rounds of solve and replay before the allowance is declared unconverged
REPLAY_THREADS = max(1, min(2, os.cpu_count() or 1))


@dataclass(frozen=True)
class Replays:
    """Makespans (s; inf for a replay that formed no last batch) and wait shares of a plan's replays."""

    makespans: np.ndarray
    wait_shares: np.ndarray


def setup_key(setup: Setup) -> tuple:
    """Every field of a setup but the deadline (a replay's makespan and waits do not depend on it), the
    occupancy law by its parameters or samples."""
    occ = setup.occupancy
    law = (occ.mu, occ.sigma) if occ.samples is None else (occ.samples.size, occ.samples.tobytes())
    return tuple(
        law if f.name == "occupancy" else getattr(setup, f.name)
        for f in dataclasses.fields(setup)
        if f.name != "deadline"
    )


class ReplayCache:
    """Replays by (setup key, seeds): a plan replayed once is never replayed again by its owner.
    ``threads``: replays run side by side (default REPLAY_THREADS; 1 in a batch's worker processes)."""

    def __init__(self, threads: int | None = None):
        self._store: dict[tuple, Replays] = {}
        self.threads = threads or REPLAY_THREADS
        self.replayed = 0  # replications actually run
        self.seconds = 0.0  # wall time of the replays run

    def replays(self, setup: Setup, seeds: list[int], stop: Callable[[], bool] | None = None) -> Replays:
        """The replays of ``setup`` with ``seeds``, run once; ``stop``: asked before each replay starts, True
        ends the round early (its replays are then fewer than the seeds and are not kept)."""
        key = (setup_key(setup), tuple(seeds))
        found = self._store.get(key)
        if found is None:
            clock = time.perf_counter()
            found = run_replays(setup, seeds, self.threads, stop)
            self.seconds += time.perf_counter() - clock
            self.replayed += found.makespans.size
            if found.makespans.size == len(seeds):
                self._store[key] = found
        return found


def run_replays(
    setup: Setup, seeds: list[int], threads: int = REPLAY_THREADS, stop: Callable[[], bool] | None = None
) -> Replays:
    """Replay ``setup`` once per seed (replay i as ``simulate --seed seeds[i]`` runs its first replication);
    a replay not yet started when ``stop()`` says True is skipped, so the result may hold fewer."""

    def one(seed: int) -> tuple[float, float] | None:
        if stop is not None and stop():
            return None
        run = replicate(setup, seed_for(seed, 0), record=False)
        return run.makespan, run.wait_share

    threads = min(threads, len(seeds))
    if threads > 1:
        with ThreadPoolExecutor(threads) as pool:
            done = list(pool.map(one, seeds))
    else:
        done = [one(s) for s in seeds]
    kept = [d for d in done if d is not None]
    return Replays(np.array([d[0] for d in kept]), np.array([d[1] for d in kept]))


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
        self.planner = Planner(inst, **planner_options)
        self.cache = replays or ReplayCache()
        self._steady: Planner | None = None
        self._options = {k: v for k, v in planner_options.items() if k in ("threads", "confidence")}
        self._clock: Stopwatch | None = planner_options.get("clock")  # the command's, for the first solve only

    @property
    def inst(self) -> Instance:
        return self.planner.inst

    @property
    def pairs(self):
        return self.planner.pairs

    def retarget(self, inst: Instance) -> bool:
        """Point the planner at another instance of the same structure and basis (False: build a new one)."""
        self._steady = None
        return inst.holds and self.planner.retarget(inst)

    def solve(self, objective: str | None = None, *, time_limit: float | None = None, **restrictions) -> Result:
        """The cheapest plan that passes its own replays (MODEL §11 item 4), with its ``hold`` report."""
        clock, self._clock = self._clock or Stopwatch(time_limit, self.planner.listener), None
        replayed_before = self.cache.seconds
        inst = self.inst
        deadline, k = inst.schedule.deadline, inst.planning.order
        seeds = replay_seeds(inst)
        allowance, rounds, last, why = 0.0, 0, None, "rounds"
        spent = Timings()
        while rounds < ROUNDS:
            result = self.planner.solve(objective, time_limit=clock.remaining(), allowance=allowance, **restrictions)
            spent = Timings(**{name: v + getattr(result.timings, name) for name, v in spent.model_dump().items()})
            if result.plan is None:
                if last is None:
                    return result  # no plan even at Δ = 0: infeasible (or out of time), as the solve says
                why = "infeasible"
                break
            rounds += 1
            clock.note(f"{inst.name}: round {rounds}, {len(seeds)} replays of the plan (allowance {allowance:,.0f} s)")
            replays = self.cache.replays(setup_of(inst, result.plan, result.metrics), seeds, clock.expired)
            if replays.makespans.size < len(seeds):  # the time limit ran out during this round's replays
                why = "time"
                if last is None:
                    last = (result, replays, math.inf, allowance)
                else:
                    rounds -= 1  # the plan returned is the previous round's, whose replays all ran
                break
            lateness = order_statistic(replays.makespans - result.plan.makespan_s, k)
            last = (result, replays, lateness, allowance)
            if result.plan.makespan_s + lateness <= deadline:
                break
            allowance = max(allowance, lateness)
            if not math.isfinite(allowance) or clock.expired():
                why = "time" if clock.expired() else "unfinished"
                break
        result, replays, lateness, used = last
        result.timings = spent  # every round's solve, not only the last
        converged = result.plan.makespan_s + lateness <= deadline
        steady = None if clock.expired() else self.steady_optimum(objective, restrictions, clock)
        result.hold = hold_report(inst, result.plan, replays, lateness, used, rounds, converged, steady)
        result.hold.replay_seconds = self.cache.seconds - replayed_before
        if not converged:
            result.status = Status.TIME_LIMIT
            result.message = unconverged_message(why, rounds, used, lateness, allowance, replays.makespans.size)
        return result

    def solve_carried(self, allowance: float, objective: str | None = None, **restrictions) -> Result:
        """One solve on the hold basis's rows with a given allowance, ``T + allowance <= deadline``, and no
        replays: a frontier's faster points carry the allowance of its cheapest plan (drivers.frontier)."""
        return self.planner.solve(objective, allowance=allowance, **restrictions)

    def steady_optimum(self, objective: str | None, restrictions: dict, clock: Stopwatch) -> Result:
        """The steady_state optimum of the same instance under the same restrictions (MODEL §11's price),
        within what ``clock`` has left."""
        if self._steady is None:
            steady = self.inst.model_copy(
                update={"planning": self.inst.planning.model_copy(update={"basis": "steady_state"})}
            )
            self._steady = Planner(steady, **self._options)
        return self._steady.solve(objective, time_limit=clock.remaining(), **restrictions)


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
) -> HoldReport:
    """The ``hold`` object of MODEL §11 from a plan's final replays (figures of a replay that never formed
    its last batch are null where they would be infinite)."""
    p = inst.planning
    spans = replays.makespans
    finished = spans.size > 0 and bool(np.isfinite(spans).all())
    on_time = int(np.count_nonzero(spans <= inst.schedule.deadline))
    costs = plan.hourly_cost * spans / 3600.0

    def pct(x: np.ndarray, q: float) -> float | None:
        return float(np.percentile(x, q)) if finished else None

    return HoldReport(
        allowance_s=float(allowance),
        rounds=rounds,
        replays=int(spans.size),
        seed=p.seed,
        order=p.order,
        on_time_target=p.on_time,
        lateness_s=float(lateness) if math.isfinite(lateness) else None,
        allowance_converged=converged,
        on_time_share=on_time / spans.size if spans.size else 0.0,
        on_time_interval=list(wilson(on_time, int(spans.size))) if spans.size else [0.0, 1.0],
        makespan_s={"p50": pct(spans, 50), "p90": pct(spans, 90), "max": float(spans.max()) if finished else None},
        sandbox_wait_share=float(replays.wait_shares.mean()) if spans.size else None,
        expected_total_cost=float(costs.mean()) if finished else None,
        p90_total_cost=pct(costs, 90),
        steady_state_total_cost=None if steady is None or steady.plan is None else steady.plan.total_cost,
        steady_state_makespan_s=None if steady is None or steady.plan is None else steady.plan.makespan_s,
        steady_state_status=None if steady is None else str(steady.status),
    )


def planner_for(inst: Instance, replays: ReplayCache | None = None, **options) -> Planner | HoldingPlanner:
    """The planner of ``inst``'s basis: a plain Planner under steady_state, a HoldingPlanner under hold; a
    staged instance's (MODEL §12, steady_state only) is a StagedPlanner."""
    if inst.stages is not None:
        from trainground.solver.stages import StagedPlanner

        return StagedPlanner(inst, threads=options.get("threads", 1))  # type: ignore[return-value]
    if inst.holds:
        return HoldingPlanner(inst, replays, **options)
    return Planner(inst, **options)


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
