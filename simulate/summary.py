"""The figures of one replication (MODEL.md §10 ``simulated`` keys and more), from a :class:`Run`.

Steady-state figures are measured where the pipeline is full and every fate is decided:
in-flight over ``[b_0, b_{n-1}]`` (from the first batch to the last boundary); group drop,
effective intake and exceedance over groups launched at versions ``1..n-1-K`` (whose
version cap is reached within the run). In-flight p99 and the plotted curves sample the
count every ``CURVE_STEP_S`` seconds; its mean and maximum are exact.
"""

from __future__ import annotations

import math

import numpy as np

from trainground.simulate.engine import UNCONSUMED, Run
from trainground.simulate.setup import Setup

CURVE_STEP_S = 1.0  # in-flight is sampled at least this often (coarser only past 2^21 samples)
CURVE_POINTS = 2000  # points of the plotted in-flight curve (each the max and mean of its bucket)
MAX_SAMPLES = 1 << 21


def summarize(setup: Setup, run: Run) -> dict:
    """The simulated figures of one replication (JSON-ready: floats, ints, bools, None, dicts)."""
    b = run.boundaries
    out: dict = {
        "finished": run.finished,
        "batches": int(b.size),
        "makespan_s": _num(run.makespan),
        "startup_s": _num(b[0]) if b.size else None,
    }
    steps = np.diff(b)
    out.update(_spread_of(steps, "iteration", "s"))
    out.update(inflight(setup, run))
    out.update(versions(setup, run))
    out.update(waits(setup, run))
    out.update(accounting(setup, run))
    lateness = run.makespan - setup.deadline
    out["on_time"] = bool(lateness <= 0)
    out["lateness_s"] = _num(lateness)
    return out


def _num(x) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def _spread_of(x: np.ndarray, name: str, unit: str) -> dict:
    keys = (f"{name}_mean_{unit}", f"{name}_p50_{unit}", f"{name}_p99_{unit}", f"{name}_max_{unit}")
    if x.size == 0:
        return dict.fromkeys(keys)
    values = (x.mean(), np.percentile(x, 50), np.percentile(x, 99), x.max())
    return {k: float(v) for k, v in zip(keys, values)}


def steady_window(run: Run) -> tuple[float, float]:
    """[b_0, b_{n-1}] when at least two batches formed; else from 0 to the run's end."""
    b = run.boundaries
    if b.size >= 2:
        return float(b[0]), float(b[-1])
    return 0.0, max(float(run.run_end), 1.0)


def counts(start: np.ndarray, end: np.ndarray, lo: float, step: float, size: int) -> np.ndarray:
    """Attempts holding a sandbox at lo + i·step, i = 0..size-1 (started at or before, not yet ended)."""

    def upto(x):
        if x.size and bool(np.all(x[1:] >= x[:-1])):  # FIFO starts come sorted: count them at each sample
            return np.searchsorted(x, lo + step * np.arange(size), side="right")
        idx = np.ceil((x - lo) / step)
        np.clip(idx, 0, size, out=idx)  # at or past the last sample: counted in a bin dropped below
        return np.cumsum(np.bincount(idx.astype(np.intp), minlength=size + 1)[:size])

    return upto(start) - upto(end)


def _exact_max(start: np.ndarray, end: np.ndarray, held: np.ndarray, lo: float, step: float) -> int:
    """The most attempts holding a sandbox at once within the sampled span, exactly: between two samples
    the count can only pass the sampled maximum by the starts in between, so only those starts are checked
    (each with the attempts started by then and not yet ended)."""
    best = int(held.max())
    starts = start if bool(np.all(start[1:] >= start[:-1])) else np.sort(start)  # FIFO starts come sorted
    upto = np.searchsorted(starts, lo + step * np.arange(held.size), side="right")
    room = held[:-1] + np.diff(upto)
    bins = np.flatnonzero(room > best)
    if bins.size == 0:
        return best
    size = upto[bins + 1] - upto[bins]
    index = np.repeat(upto[bins] - np.cumsum(np.concatenate(([0], size[:-1]))), size) + np.arange(size.sum())
    ends = np.sort(end[end <= lo + step * (held.size - 1)])
    now = index + 1 - np.searchsorted(ends, starts[index], side="right")
    return max(best, int(now.max()))


def inflight(setup: Setup, run: Run) -> dict:
    """In-flight sandboxes over the steady window: mean (exact), p99 (sampled), max (exact), per
    backend; the share of time some backend's local sandboxes are all taken; cloud sandboxes used."""
    lo, hi = steady_window(run)
    step = max(CURVE_STEP_S, (hi - lo) / MAX_SAMPLES)
    size = int(math.floor((hi - lo) / step)) + 1
    total = np.zeros(size, dtype=np.int64)
    full = np.zeros(size, dtype=bool)
    per: dict[str, dict] = {}
    cloud_mean = cloud_max = 0.0
    for k, name in enumerate(setup.backends):
        mine = run.backend == k if len(setup.backends) > 1 else slice(None)
        start, end = run.start[mine], run.end[mine]
        held = counts(start, end, lo, step, size)
        total += held
        local = setup.local[k]
        full |= held >= local
        beyond = np.maximum(held - local, 0)
        cloud_mean += float(beyond.mean())
        cloud_max = max(cloud_max, float(beyond.max()))
        per[name] = {
            "mean": _held_mean(start, end, lo, hi),
            "p99": float(np.percentile(held, 99)),
            "max": _exact_max(start, end, held, lo, step),
            "local_capacity": local,
            "capacity": setup.capacity[k],
            "local_full_share": float((held >= local).mean()),
        }
    if len(setup.backends) == 1:
        whole = dict(per[setup.backends[0]])
    else:
        whole = {
            "mean": _held_mean(run.start, run.end, lo, hi),
            "p99": float(np.percentile(total, 99)),
            "max": _exact_max(run.start, run.end, total, lo, step),
        }
    return {
        "inflight_mean": whole["mean"],
        "inflight_p99": whole["p99"],
        "inflight_max": whole["max"],
        "inflight_by_backend": per,
        "local_full_share": float(full.mean()),
        "cloud_sandboxes_mean": cloud_mean,
        "cloud_sandboxes_max": cloud_max,
        "steady_window_s": [lo, hi],
    }


def _held_mean(start: np.ndarray, end: np.ndarray, lo: float, hi: float) -> float:
    """Time-average of attempts holding a sandbox over [lo, hi] (exact)."""
    overlap = np.minimum(end, hi) - np.maximum(start, lo)
    return float(np.clip(overlap, 0.0, None).sum() / (hi - lo))


def steady_groups(setup: Setup, run: Run) -> np.ndarray:
    """Groups launched at versions 1..n-1-K (their fate is decided within the run); every decided group
    when there are none."""
    b = run.boundaries
    version = np.searchsorted(b, run.launch, side="right")
    chosen = (version >= 1) & (version <= b.size - 1 - setup.versions_kept)
    if not chosen.any():
        chosen = (run.consumed != UNCONSUMED) | run.dropped
    return chosen


def versions(setup: Setup, run: Run) -> dict:
    """Version gaps of consumed trajectories (weighted by effective members), exceedance, drop rate."""
    b = run.boundaries
    g, K = setup.group_size, setup.versions_kept
    version = np.searchsorted(b, run.launch, side="right")
    used = run.consumed != UNCONSUMED
    shift = 1 if setup.convention == "post_publish" else 0
    gap = run.consumed[used] - version[used] + shift
    weight = run.effective[used].astype(float)
    out: dict = {"mean_version_gap": None, "p99_version_gap": None, "version_gap_histogram": {}}
    if weight.sum() > 0:
        hist = np.bincount(gap, weights=weight)
        share = hist / hist.sum()
        out["mean_version_gap"] = float(np.dot(np.arange(hist.size), share))
        out["p99_version_gap"] = int(np.searchsorted(np.cumsum(share), 0.99 - 1e-12))
        out["version_gap_histogram"] = {int(k): float(v) for k, v in enumerate(share) if v > 0}
    known = version + K <= b.size - 1  # per group: its members' cap b_{v+K} is within the run
    if known.any():
        cap = b[version[known] + K]
        out["exceedance"] = float((run.end.reshape(-1, g)[known] > cap[:, None]).mean())
    else:
        out["exceedance"] = None
    steady = steady_groups(setup, run)
    decided = steady & (used | run.dropped)
    out["group_drop_rate"] = float(run.dropped[decided].mean()) if decided.any() else None
    consumed_eff = run.effective[steady & used].sum()
    out["effective_intake"] = float(consumed_eff / (g * steady.sum())) if steady.any() else None
    return out


def waits(setup: Setup, run: Run) -> dict:
    """Sandbox waits: share of attempts that waited, mean and p99 wait over all attempts, mean of those that waited."""
    wait = run.start - np.repeat(run.launch, setup.group_size)
    if wait.size == 0:
        return {
            "sandbox_wait_share": 0.0,
            "sandbox_wait_mean_s": 0.0,
            "sandbox_wait_p99_s": 0.0,
            "sandbox_wait_mean_of_waiting_s": None,
        }
    waited = wait > 0
    return {
        "sandbox_wait_share": run.wait_share,
        "sandbox_wait_mean_s": _num(wait.mean()),
        "sandbox_wait_p99_s": _num(np.percentile(wait, 99)),
        "sandbox_wait_mean_of_waiting_s": _num(wait[waited].mean()) if waited.any() else None,
    }


def accounting(setup: Setup, run: Run) -> dict:
    """Where every launched attempt went: consumed, dropped, or left (in flight or in the buffer at the end)."""
    g = setup.group_size
    consumed = int((run.consumed != UNCONSUMED).sum()) * g
    dropped = int(run.dropped.sum()) * g
    launched = int(run.launch.size) * g
    return {
        "attempts_launched": launched,
        "attempts_consumed": consumed,
        "attempts_dropped": dropped,
        "attempts_left": launched - consumed - dropped,
        "effective_consumed": int(run.effective[run.consumed != UNCONSUMED].sum()),
    }


def curve(setup: Setup, run: Run, points: int = CURVE_POINTS) -> dict:
    """In-flight over the whole run for plotting: per backend, the max and mean of each of ``points`` buckets."""
    hi = max(float(run.run_end), 1.0)
    step = max(CURVE_STEP_S, hi / MAX_SAMPLES)
    size = int(math.floor(hi / step)) + 1
    per = max(1, size // points)
    size = per * math.ceil(size / per)
    time = (np.arange(size // per) + 0.5) * per * step
    out = {"time_s": time.tolist(), "max": {}, "mean": {}}
    for k, name in enumerate(setup.backends):
        mine = run.backend == k if len(setup.backends) > 1 else slice(None)
        held = counts(run.start[mine], run.end[mine], 0.0, step, size).reshape(-1, per)
        out["max"][name] = held.max(axis=1).tolist()
        out["mean"][name] = held.mean(axis=1).tolist()
    return out
