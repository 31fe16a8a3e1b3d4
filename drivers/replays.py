"""A round's replays (MODEL §11 item 4): each one :func:`simulation.engine.replicate` without its per-attempt
records (the makespan and the waits are the recorded run's), and a cache of them by setup and seeds.

Replays run ``threads`` at a time on threads: numpy releases the GIL in its bulk work, so two threads
replay a round about 1.85 times as fast as one on two cores. A :class:`ReplayCache`, owned by whoever
plans many points (a frontier, a sweep), keeps the replays of each distinct setup, so a point whose plan
is one already replayed costs no replay.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from trainground.models.instance import Instance
from trainground.models.result import Plan
from trainground.simulation.engine import replicate
from trainground.simulation.runner import seed_for
from trainground.simulation.scenarios import drawn_one_by_one, scenario_setups
from trainground.simulation.setup import Setup
from trainground.solver.uncertainty import scenarios as sc

REPLAY_THREADS = max(1, min(2, os.cpu_count() or 1))


@dataclass(frozen=True)
class Replays:
    """Makespans (s; inf for a replay that formed no last batch) and wait shares of a plan's replays; replays
    that draw a scenario each (a confidence solve, MODEL §11) carry per replay the scenario's planned T_s,
    deadline and hourly cost (None: every replay runs the nominal instance)."""

    makespans: np.ndarray
    wait_shares: np.ndarray
    planned: np.ndarray | None = None
    deadlines: np.ndarray | None = None
    hourly: np.ndarray | None = None


def setup_key(setup: Setup) -> tuple:
    """Every field of a setup but the deadline (a replay's makespan and waits do not depend on it), the
    occupancy law by its parameters or samples (and each stage's, MODEL §12)."""
    occ = setup.occupancy
    law = (occ.mu, occ.sigma) if occ.samples is None else (occ.samples.size, occ.samples.tobytes())
    special = {"occupancy": law, "stages": tuple(stage.key() for stage in setup.stages)}
    return tuple(
        special[f.name] if f.name in special else getattr(setup, f.name)
        for f in dataclasses.fields(setup)
        if f.name != "deadline"
    )


class ReplayCache:
    """Replays by (setup keys, seeds): a plan replayed once is never replayed again by its owner.
    ``threads``: replays run side by side (default REPLAY_THREADS; 1 in a batch's worker processes)."""

    def __init__(self, threads: int | None = None):
        self._store: dict[tuple, Replays] = {}
        self.threads = threads or REPLAY_THREADS
        self.replayed = 0  # replications actually run
        self.seconds = 0.0  # wall time of the replays run

    def replays(self, setup: Setup, seeds: list[int], stop: Callable[[], bool] | None = None) -> Replays:
        """The replays of ``setup`` with ``seeds`` (replay i as ``simulate --seed seeds[i]`` runs its first
        replication), run once; ``stop``: asked before each replay starts, True ends the round early (its
        replays are then fewer than the seeds and are not kept)."""
        return self._run([setup] * len(seeds), [seed_for(seed, 0) for seed in seeds], stop)

    def scenario_replays(
        self, inst: Instance, plan: Plan, metrics, seed: int, count: int, stop: Callable[[], bool] | None = None
    ) -> Replays:
        """``count`` replays of ``plan`` that draw a scenario each (MODEL §11 with §9): replay i runs in the
        scenario drawn with ``seed + i`` on the stream of replication i of ``simulate --scenarios --seed seed``
        (so that command replays them exactly), beside the scenario's T_s, deadline and hourly cost."""
        drawn = drawn_one_by_one(inst, count, seed)
        outcome = sc.evaluate(inst, plan, drawn)
        setups = scenario_setups(inst, plan, metrics, count, seed, drawn=(drawn, outcome))
        found = self._run(setups, [seed_for(seed, i) for i in range(count)], stop)
        n = found.makespans.size
        return dataclasses.replace(
            found, planned=outcome.makespan[:n], deadlines=outcome.deadline[:n], hourly=outcome.hourly_cost[:n]
        )

    def _run(self, setups: list[Setup], streams: list[list[int]], stop: Callable[[], bool] | None) -> Replays:
        key = (tuple(setup_key(s) for s in setups), tuple(tuple(x) for x in streams))
        found = self._store.get(key)
        if found is None:
            clock = time.perf_counter()
            found = run_streams(setups, streams, self.threads, stop)
            self.seconds += time.perf_counter() - clock
            self.replayed += found.makespans.size
            if found.makespans.size == len(streams):
                self._store[key] = found
        return found


def run_replays(
    setup: Setup, seeds: list[int], threads: int = REPLAY_THREADS, stop: Callable[[], bool] | None = None
) -> Replays:
    """Replay ``setup`` once per seed (replay i as ``simulate --seed seeds[i]`` runs its first replication)."""
    return run_streams([setup] * len(seeds), [seed_for(seed, 0) for seed in seeds], threads, stop)


def run_streams(
    setups: list[Setup],
    streams: list[list[int]],
    threads: int = REPLAY_THREADS,
    stop: Callable[[], bool] | None = None,
) -> Replays:
    """Replay ``setups[i]`` on the random stream ``streams[i]``, ``threads`` at a time; a replay not yet started
    when ``stop()`` says True is skipped, so the result may hold fewer (the first ones, in order)."""
    threads = min(threads, len(setups))

    def one(i: int) -> tuple[float, float] | None:
        if stop is not None and stop():
            return None
        run = replicate(setups[i], streams[i], record=False)
        return run.makespan, run.wait_share

    if threads > 1:
        with ThreadPoolExecutor(threads) as pool:
            done = list(pool.map(one, range(len(setups))))
    else:
        done = [one(i) for i in range(len(setups))]
    cut = next((i for i, d in enumerate(done) if d is None), len(done))
    kept = [d for d in done[:cut] if d is not None]
    return Replays(np.array([d[0] for d in kept]), np.array([d[1] for d in kept]))
