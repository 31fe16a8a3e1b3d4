"""The trajectory-level simulator (MODEL.md §10) against the model where the model is exact: Little's law,
§8's fill and makespan on a plan with slack, the group-drop bounds of §2, conservation, a zero-variance law
checked by hand, sandbox waits, and the FIFO sandbox queue against a heap reference."""

from __future__ import annotations

import heapq
import math
from pathlib import Path

import numpy as np
import pytest

from trainground.models.edits import edited
from trainground.models.load import load_instance
from trainground.simulation import engine
from trainground.simulation.buffer import _stable_order
from trainground.simulation.engine import UNCONSUMED, replicate
from trainground.simulation.runner import simulate_plan
from trainground.simulation.sandbox import SandboxQueue
from trainground.simulation.setup import setup_of
from trainground.simulation.summary import counts, inflight, summarize
from trainground.solver.laws import calculus as calc
from trainground.solver.laws import startup
from trainground.solver.solve import solve_instance
from trainground.solver.verify.plan import verify_plan

DATA = Path(__file__).parent / "data" / "simulate"
_PLANS: dict = {}


def planned(name: str, **changes):
    """(instance, plan, metrics) of a test instance's optimal plan, solved once per set of edits."""
    key = (name, tuple(sorted(changes.items())))
    if key not in _PLANS:
        inst = load_instance(DATA / f"{name}.yaml")
        if changes:
            inst = edited(inst, changes)
        plan = solve_instance(inst).plan
        _PLANS[key] = (inst, plan, verify_plan(inst, plan).metrics)
    return _PLANS[key]


# ---------------------------------------------------------------- the sandbox queue


def heap_queue(arrivals, lifetimes, c: int) -> np.ndarray:
    """FIFO with c servers, one attempt at a time: start when the earliest of c busy servers frees."""
    busy: list[float] = []
    starts = np.empty(arrivals.size)
    last = -math.inf
    for i, (a, w) in enumerate(zip(arrivals, lifetimes)):
        t = max(a, last)
        while busy and busy[0] <= t:
            heapq.heappop(busy)
        if len(busy) >= c:
            t = max(t, heapq.heappop(busy))
        starts[i] = last = t
        heapq.heappush(busy, t + w)
    return starts


@pytest.mark.parametrize("seed", range(40))
def test_sandbox_queue_matches_a_heap_reference(seed):
    rng = np.random.default_rng(seed)
    n, c = int(rng.integers(1, 2500)), int(rng.integers(1, 80))
    arrivals = np.sort(rng.uniform(0, rng.uniform(5, 300), n))
    if seed % 3 == 0:
        arrivals = np.sort(np.repeat(arrivals[::4], 4)[:n])  # groups arriving together
    lifetimes = rng.lognormal(0, 1, n) * rng.uniform(0.5, 10)
    queue = SandboxQueue(c)
    windows = np.split(np.arange(n), np.sort(rng.integers(0, n, 3)))
    starts = np.concatenate([queue.admit(arrivals[w], lifetimes[w]) for w in windows])
    assert np.array_equal(starts, heap_queue(arrivals, lifetimes, c))


@pytest.mark.parametrize("seed", range(20))
def test_the_engine_orders_completions_as_a_stable_argsort(seed):
    """The buffer's completion order (a radix sort on buckets, then a stable sort) is numpy's stable argsort,
    ties in group order, on spread values, values on a coarse grid (many ties), and with infinities."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 5000))
    values = np.arange(n) * rng.uniform(0.1, 2) + rng.lognormal(6, 1.2, n)
    if seed % 3 == 1:
        values = np.round(values / 50) * 50
    if seed % 3 == 2 and n:
        values[rng.integers(0, n, 3)] = math.inf
    assert np.array_equal(_stable_order(values), np.argsort(values, kind="stable"))


@pytest.mark.parametrize("by_group", [False, True], ids=["by attempt", "by group"])
@pytest.mark.parametrize("seed", range(30))
def test_sandbox_queue_matches_the_heap_near_capacity(seed, by_group):
    """Long runs whose in-flight count hovers near the capacity, with heavy-tailed lifetimes (an attempt that
    waited keeps its sandbox long after the queue empties) and, in some, arrivals and lifetimes on one grid
    (departures tie with arrivals and with the bin count's edges): the bin count, the no-wait schedule and
    the fixed point together give the heap's starts. ``by_group``: windows cut at group boundaries and
    ``admit(..., runs=g)``, the engine's call, whose bin count reads each group's equal arrivals once."""
    rng = np.random.default_rng(1000 + seed)
    groups, g = int(rng.integers(200, 1500)), int(rng.choice([1, 4, 8]))
    rate = rng.uniform(0.5, 4.0)  # groups per second
    launch = np.arange(groups) / rate
    lifetimes = rng.lognormal(2.0, rng.uniform(0.5, 1.5), groups * g)
    if seed % 2 == 0:
        launch, lifetimes = np.round(launch * 4) / 4, np.ceil(lifetimes * 4) / 4
    arrivals = np.repeat(launch, g)
    mean_inflight = rate * g * float(np.mean(lifetimes))
    c = max(1, int(mean_inflight * rng.uniform(0.9, 1.3)))
    queue = SandboxQueue(c)
    cuts = np.sort(rng.integers(0, arrivals.size, 2))
    runs = g if by_group else 1
    windows = np.split(np.arange(arrivals.size), cuts // runs * runs)
    starts = np.concatenate([queue.admit(arrivals[w], lifetimes[w], runs=runs) for w in windows])
    assert np.array_equal(starts, heap_queue(arrivals, lifetimes, c))


def test_inflight_counts_and_max_match_an_event_sweep():
    rng = np.random.default_rng(7)
    start = np.sort(rng.uniform(0, 100, 500))
    end = start + rng.exponential(10, 500)
    held = counts(start, end, 20.0, 0.5, 121)
    for i, t in enumerate(20.0 + 0.5 * np.arange(121)):
        assert held[i] == np.count_nonzero((start <= t) & (end > t))
    events = sorted([(s, 1) for s in start] + [(e, -1) for e in end], key=lambda x: (x[0], x[1]))
    level, best = 0, 0
    for t, step in events:
        level += step
        if 20.0 <= t <= 80.0:
            best = max(best, level)
    best = max(best, int(np.count_nonzero((start <= 20) & (end > 20))))
    from trainground.simulation.summary import _exact_max

    assert _exact_max(start, end, counts(start, end, 20.0, 0.5, 121), 20.0, 0.5) == best


@pytest.mark.parametrize("seed", range(60))
def test_exact_max_from_end_bins_matches_every_start(seed):
    """The max read near the checked starts (the ends' bins reused) and the max from every end sorted both equal
    the count at every start, with starts and ends on sample points in some cases (ties with the bins)."""
    from trainground.simulation.summary import _exact_max, _held

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    start = np.sort(rng.uniform(0, 50, n))
    if seed % 3 == 0:
        start = np.round(start * 2) / 2
    life = rng.exponential(5, n) if seed % 2 else np.round(rng.exponential(5, n) * 2) / 2 + 0.5
    end = start + life
    lo, step, size = 10.0, 0.5, 81
    held, end_bins = _held(start, end, lo, step, size)
    best = int(held.max())
    for t in start[(start > lo) & (start <= lo + step * (size - 1))]:
        best = max(best, int(np.count_nonzero((start <= t) & (end > t))))
    assert _exact_max(start, end, held, lo, step, end_bins) == best
    assert _exact_max(start, end, held, lo, step) == best


def test_wait_percentile_from_the_waits_above_zero_is_numpys():
    from trainground.simulation.summary import percentile_with_zeros

    rng = np.random.default_rng(5)
    for _ in range(500):
        n = int(rng.integers(1, 60))
        positive = rng.uniform(1e-3, 10, int(rng.integers(0, n + 1)))
        q = float(rng.choice([0.0, 1.0, 50.0, 99.0, 100.0, rng.uniform(0, 100)]))
        every = np.concatenate((np.zeros(n - positive.size), positive))
        assert percentile_with_zeros(positive, n, q) == pytest.approx(float(np.percentile(every, q)), abs=1e-12)


# ---------------------------------------------------------------- agreement with the model on a plan with slack


def test_long_run_with_slack_agrees_with_littles_law_and_section_8():
    inst, plan, metrics = planned("slack")
    assert metrics.update_time_s < 0.5 * plan.cadence_s
    report = simulate_plan(inst, plan, metrics=metrics, seed=3)
    sim, pred = report.simulated, report.predicted
    assert sim["sandbox_wait_share"] == 0 and sim["local_full_share"] == 0  # sandboxes not binding
    assert sim["inflight_mean"] == pytest.approx(
        metrics.attempts_per_s * calc.occupancy_of(inst.environment.occupancy).mean, rel=0.01
    )
    assert sim["makespan_s"] == pytest.approx(pred["makespan_with_startup_s"], rel=0.005)
    assert pred["makespan_with_startup_s"] == pytest.approx(
        pred["startup_s"] + (inst.workload.iterations - 1) * plan.cadence_s + metrics.update_time_s, rel=1e-12
    )


def test_first_batch_matches_the_fill():
    inst, plan, metrics = planned("slack")
    report = simulate_plan(inst, plan, metrics=metrics, iterations=2, replications=12, seed=5)
    fill = startup.fill(
        calc.occupancy_of(inst.environment.occupancy),
        metrics.attempts_per_s,
        inst.workload.batch_trajectories,
        inst.workload.group_size,
        1.0,
        "independent",
    )
    assert report.predicted["startup_s"] == pytest.approx(float(fill), rel=1e-12)
    assert report.simulated["startup_s"] == pytest.approx(float(fill), rel=0.03)


@pytest.mark.parametrize("correlation", ["independent", "comonotone"])
def test_group_drop_lies_between_the_comonotone_and_independent_values(correlation):
    inst, plan, metrics = planned("drop", **{"freshness.group_correlation": correlation})
    run = replicate(setup_of(inst, plan, metrics), [11, 0])
    setup = setup_of(inst, plan, metrics)
    sim = summarize(setup, run)
    lower, upper = calc.group_drop_bounds(metrics.exceedance, inst.workload.group_size)
    groups = int(((run.consumed != UNCONSUMED) | run.dropped).sum())
    se = math.sqrt(sim["group_drop_rate"] * (1 - sim["group_drop_rate"]) / groups)
    assert lower - 4 * se <= sim["group_drop_rate"] <= upper + 4 * se
    assert upper - lower > 0.3  # the bounds are far apart: the test can tell them apart
    if correlation == "comonotone":  # one lifetime per group: a group overruns exactly when its members do
        assert sim["group_drop_rate"] == pytest.approx(metrics.exceedance, abs=4 * se + 0.005)
    assert sim["exceedance"] == pytest.approx(metrics.exceedance, rel=0.05)


# ---------------------------------------------------------------- conservation and consistency


def test_every_attempt_is_accounted_for_and_batches_are_whole():
    inst, plan, metrics = planned("drop", **{"workload.intake_rate": 0.8})
    setup = setup_of(inst, plan, metrics)
    run = replicate(setup, [2, 0])
    b, g, K, B = run.boundaries, setup.group_size, setup.versions_kept, setup.batch
    assert run.finished and b.size == inst.workload.iterations and np.all(np.diff(b) >= setup.update_s - 1e-9)
    consumed, dropped = run.consumed != UNCONSUMED, run.dropped
    assert not np.any(consumed & dropped)
    left = ~consumed & ~dropped
    # left over: still running at the last boundary, or in the buffer within the version cap
    version = np.searchsorted(b, run.launch, side="right")
    assert np.all((run.completion[left] > b[-1]) | (b.size - 1 - version[left] <= K))
    sim = summarize(setup, run)
    assert sim["attempts_consumed"] + sim["attempts_dropped"] + sim["attempts_left"] == sim["attempts_launched"]
    assert sim["attempts_launched"] == run.start.size == g * run.launch.size
    assert np.all(run.launch < b[-1])  # launches stop at the last boundary
    for j in range(b.size):  # whole groups, B effective at least, and no group more than needed
        mine = np.flatnonzero(run.consumed == j)
        effective = run.effective[mine]
        last = mine[np.argmax(run.completion[mine])]
        assert effective.sum() >= B and effective.sum() - run.effective[last] < B
        assert np.all(run.completion[mine] <= b[j])
    assert np.all(run.consumed[consumed] - version[consumed] <= K)  # within the version cap
    assert np.all(run.drop_batch[dropped] - version[dropped] > K)  # dropped only past it
    assert np.array_equal(run.effective, run.attempt_effective.reshape(-1, g).sum(axis=1))
    assert np.array_equal(run.completion, run.end.reshape(-1, g).max(axis=1))
    assert 0.75 < run.attempt_effective.mean() < 0.85


RUN_ARRAYS = ("boundaries", "launch", "completion", "effective", "consumed", "dropped", "drop_batch", "start", "end")


@pytest.mark.parametrize("load", [None, 0.97], ids=["sandboxes to spare", "sandboxes below the mean load"])
def test_a_run_that_draws_only_lifetimes_is_the_same_whatever_its_windows(monkeypatch, load):
    """Launches evenly spaced, one backend, every attempt effective: the random stream is the lifetimes alone,
    so windows of another size change no draw, and the sandbox queue (waits included, below the mean load),
    the completion order, the drops and the batches must give the same run, recorded or not. Each group's
    waiting members, counted per window, are those of its attempts' starts and launches."""
    inst, plan, metrics = planned("slack", **{"freshness.overrun_policy": "drop"})
    capacity = None if load is None else {"container": math.floor(load * metrics.inflight_mean)}
    setup = setup_of(inst, plan, metrics, capacity=capacity, iterations=300)
    wide = replicate(setup, [4, 0])
    bare = replicate(setup, [4, 0], record=False)
    monkeypatch.setattr(engine, "WINDOW_ATTEMPTS", 1 << 11)
    narrow = replicate(setup, [4, 0])
    assert wide.finished and (wide.waited.sum() > 0) == (load is not None)
    for name in RUN_ARRAYS:
        assert np.array_equal(getattr(wide, name), getattr(narrow, name)), name
    assert wide.makespan == narrow.makespan == bare.makespan and wide.wait_share == bare.wait_share
    g = setup.group_size
    assert np.array_equal(wide.waited, (wide.start > np.repeat(wide.launch, g)).reshape(-1, g).sum(axis=1))


# ---------------------------------------------------------------- a zero-variance law, by hand


def test_zero_variance_run_is_exact_against_hand_computation():
    inst, plan, metrics = planned("constant")
    setup = setup_of(inst, plan, metrics)
    run = replicate(setup, [0, 0])
    w, g, B, n, U = 250.0, 4, 64, inst.workload.iterations, metrics.update_time_s
    spacing = g / metrics.attempts_per_s
    per_batch = B // g
    expected = [w + ((j + 1) * per_batch - 1) * spacing for j in range(n)]
    for j in range(1, n):
        expected[j] = max(expected[j], expected[j - 1] + U)
    assert run.boundaries == pytest.approx(expected, rel=1e-12, abs=1e-9)
    assert run.makespan == pytest.approx(expected[-1] + U + inst.schedule.extra_time, rel=1e-12)
    launches = int(math.ceil(expected[-1] / spacing - 1e-9))
    assert run.launch.size == launches
    gaps = []
    for k in range(launches):  # group k: its launch version, the batch that takes it, its gap
        version = sum(1 for b in expected if b <= k * spacing)
        assert np.searchsorted(run.boundaries, run.launch[k], side="right") == version
        taken = k // per_batch if k < n * per_batch else UNCONSUMED
        assert run.consumed[k] == taken and not run.dropped[k]
        if taken != UNCONSUMED:
            gaps.append(taken - version)
    assert summarize(setup, run)["mean_version_gap"] == pytest.approx(np.mean(gaps), rel=1e-12)
    sim = inflight(setup, run)
    assert sim["inflight_mean"] == pytest.approx(metrics.attempts_per_s * w, rel=1e-9)  # exactly g·w per spacing
    assert sim["inflight_max"] == g * math.ceil(w / spacing)


def test_zero_variance_with_too_few_sandboxes_waits_exactly_as_by_hand():
    inst, plan, metrics = planned("constant", **{"freshness.overrun_policy": "downweight"})
    c = 300
    assert c < metrics.inflight_mean  # fewer sandboxes than the plan has in flight on average
    setup = setup_of(inst, plan, metrics, capacity={"container": c})
    run = replicate(setup, [0, 0])
    w, g, B, U = 250.0, 4, 64, metrics.update_time_s
    arrivals = np.repeat(run.launch, g)
    starts = []
    for i, a in enumerate(arrivals):  # the i-th attempt takes the sandbox the (i-c)-th frees
        starts.append(a if i < c else max(a, starts[i - c] + w))
    assert run.start == pytest.approx(starts, rel=1e-12)
    done = np.sort(np.asarray(starts).reshape(-1, g).max(axis=1) + w)
    expected = []
    for j in range(inst.workload.iterations):
        ready = done[(j + 1) * (B // g) - 1]
        expected.append(ready if j == 0 else max(ready, expected[-1] + U))
    assert run.boundaries == pytest.approx(expected, rel=1e-12)


def test_fewer_sandboxes_than_the_mean_make_attempts_wait_and_the_run_slower():
    from trainground.render.simulate import partings

    inst, plan, metrics = planned("slack", **{"workload.iterations": 200})
    full = simulate_plan(inst, plan, metrics=metrics, seed=1)
    cut = simulate_plan(inst, plan, metrics=metrics, seed=1, capacity={"container": 0.9 * metrics.inflight_mean})
    assert full.simulated["sandbox_wait_share"] == 0
    assert cut.simulated["sandbox_wait_share"] > 0.5 and cut.simulated["sandbox_wait_mean_s"] > 0
    assert cut.simulated["local_full_share"] > 0.5
    assert cut.simulated["makespan_s"] > 1.05 * full.simulated["makespan_s"]
    assert cut.simulated["inflight_max"] <= int(0.9 * metrics.inflight_mean)
    assert any("waited for a sandbox" in s for s in partings(cut))
    assert not any("waited for a sandbox" in s for s in partings(full))


# ---------------------------------------------------------------- seeds


def test_same_seed_same_figures_and_replications_differ():
    inst, plan, metrics = planned("drop")
    one = simulate_plan(inst, plan, metrics=metrics, iterations=40, replications=3, seed=9).to_json()
    two = simulate_plan(inst, plan, metrics=metrics, iterations=40, replications=3, seed=9).to_json()
    assert one == two
    spans = [r["makespan_s"] for r in one["runs"]]
    assert len(set(spans)) == 3
    other = simulate_plan(inst, plan, metrics=metrics, iterations=40, seed=10).to_json()
    assert other["simulated"]["makespan_s"] != one["runs"][0]["makespan_s"]


def test_poisson_launches_keep_the_attempt_rate():
    inst, plan, metrics = planned("slack", **{"workload.iterations": 100})
    setup = setup_of(inst, plan, metrics, launch="poisson")
    run = replicate(setup, [4, 0])
    gaps = np.diff(run.launch)
    assert gaps.mean() == pytest.approx(setup.group_size / metrics.attempts_per_s, rel=0.02)
    assert gaps.std() == pytest.approx(gaps.mean(), rel=0.05)  # exponential spacings
    assert run.finished


def test_workers_give_the_same_replications_as_one_process():
    inst, plan, metrics = planned("constant")
    here = simulate_plan(inst, plan, metrics=metrics, replications=3, seed=2).to_json()
    there = simulate_plan(inst, plan, metrics=metrics, replications=3, seed=2, workers=2).to_json()
    assert here == there


def test_dask_gives_the_same_replications():
    distributed = pytest.importorskip("distributed")
    inst, plan, metrics = planned("constant")
    here = simulate_plan(inst, plan, metrics=metrics, replications=2, seed=2).to_json()
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
    ) as cluster:
        there = simulate_plan(
            inst, plan, metrics=metrics, replications=2, seed=2, scheduler=cluster.scheduler_address
        ).to_json()
    assert here == there
