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

from trainground.simulation.engine import UNCONSUMED, Run
from trainground.simulation.setup import Setup
from trainground.simulation.stage_report import stage_figures

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
    if run.failures is not None:
        out.update(run.failures)
    if setup.stages:
        out.update(stage_figures(setup, run))
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
    return _held(start, end, lo, step, size)[0]


def _held(start: np.ndarray, end: np.ndarray, lo: float, step: float, size: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`counts`, and the ends' sample bins (:func:`_bins`), which :func:`_exact_max` reuses."""
    if start.size and bool(np.all(start[1:] >= start[:-1])):  # FIFO starts come sorted: count them at each sample
        started = np.searchsorted(start, lo + step * np.arange(size), side="right")
    else:
        started = np.cumsum(np.bincount(_bins(start, lo, step, size), minlength=size + 1)[:size])
    end_bins = _bins(end, lo, step, size)
    return started - np.cumsum(np.bincount(end_bins, minlength=size + 1)[:size]), end_bins


def _bins(x: np.ndarray, lo: float, step: float, size: int) -> np.ndarray:
    """Per value, the first sample i with x <= lo + i·step: ceil((x - lo)/step), clipped to 0..size (size: at or
    past the last sample, counted in a bin that :func:`_held` drops)."""
    idx = np.subtract(x, lo)
    idx /= step
    np.ceil(idx, out=idx)
    np.clip(idx, 0, size, out=idx)
    return idx.astype(np.intp)


CANDIDATE_BINS = 256  # beyond this many sample bins to look into, _exact_max sorts every end instead


def _exact_max(
    start: np.ndarray, end: np.ndarray, held: np.ndarray, lo: float, step: float, end_bins: np.ndarray | None = None
) -> int:
    """The most attempts holding a sandbox at once within the sampled span, exactly: between two samples
    the count can only pass the sampled maximum by the starts in between, so only those starts are checked
    (each with the attempts started by then and not yet ended). With ``end_bins`` (from :func:`_held`), the
    ends compared one by one are those near a checked start (:func:`_near_max`); the others are counted by bin."""
    best = int(held.max())
    starts = start if bool(np.all(start[1:] >= start[:-1])) else np.sort(start)  # FIFO starts come sorted
    upto = np.searchsorted(starts, lo + step * np.arange(held.size), side="right")
    room = held[:-1] + np.diff(upto)
    bins = np.flatnonzero(room > best)
    if bins.size == 0:
        return best
    if end_bins is not None and bins.size <= CANDIDATE_BINS:
        return max(best, _near_max(starts, end, end_bins, upto, bins))
    size = upto[bins + 1] - upto[bins]
    index = np.repeat(upto[bins] - np.cumsum(np.concatenate(([0], size[:-1]))), size) + np.arange(size.sum())
    ends = np.sort(end[end <= lo + step * (held.size - 1)])
    now = index + 1 - np.searchsorted(ends, starts[index], side="right")
    return max(best, int(now.max()))


def _near_max(starts: np.ndarray, end: np.ndarray, end_bins: np.ndarray, upto: np.ndarray, bins: np.ndarray) -> int:
    """The most held at the starts in the sample bins ``bins`` (starts ``upto[b]..upto[b+1]-1`` lie after sample
    ``b``, at or before sample ``b + 1``). An end of bin ``i`` lies after sample ``i - 1``, at or before sample
    ``i``: ends of bin ``<= b - 1`` ended before every such start and ends of bin ``>= b + 3`` after it, so only
    ends of bins ``b..b + 2`` are compared with the starts (a bin either side of ``b + 1`` keeps the count exact
    where the bin's division and a comparison round differently)."""
    gone_by = np.cumsum(np.bincount(end_bins, minlength=upto.size + 1))  # ends of bin <= i
    near = np.zeros(max(int(end_bins.max()), upto.size) + 3, dtype=bool)
    for offset in range(3):
        near[bins + offset] = True
    close = near[end_bins]
    close_end, close_bin = end[close], end_bins[close]
    most = 0
    for b in bins:
        ends = np.sort(close_end[(close_bin >= b) & (close_bin <= b + 2)])
        before = int(gone_by[b - 1]) if b >= 1 else 0
        index = np.arange(upto[b], upto[b + 1])
        now = index + 1 - before - np.searchsorted(ends, starts[index], side="right")
        most = max(most, int(now.max()))
    return most


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
        held, end_bins = _held(start, end, lo, step, size)
        total += held
        local = setup.local[k]
        full |= held >= local
        beyond = np.maximum(held - local, 0)
        cloud_mean += float(beyond.mean())
        cloud_max = max(cloud_max, float(beyond.max()))
        per[name] = {
            "mean": _held_mean(start, end, lo, hi),
            "p99": float(np.percentile(held, 99)),
            "max": _exact_max(start, end, held, lo, step, end_bins),
            "local_capacity": local,
            "capacity": setup.capacity[k],
            "local_full_share": float((held >= local).mean()),
        }
    if len(setup.backends) == 1:
        whole = dict(per[setup.backends[0]])
    else:
        if not setup.backends:  # a run without sandboxes: the attempts in flight, none of them held by a sandbox
            total = _held(run.start, run.end, lo, step, size)[0]
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


HELD_CHUNK = 1 << 18  # attempts per pass of _held_mean: its temporaries stay in the cache


def _held_mean(start: np.ndarray, end: np.ndarray, lo: float, hi: float) -> float:
    """Time-average of attempts holding a sandbox over [lo, hi] (exact)."""
    total = 0.0
    for i in range(0, start.size, HELD_CHUNK):
        overlap = np.minimum(end[i : i + HELD_CHUNK], hi)
        overlap -= np.maximum(start[i : i + HELD_CHUNK], lo)
        total += float(np.maximum(overlap, 0.0, out=overlap).sum())
    return total / (hi - lo)


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
    known = int(np.count_nonzero(version + K <= b.size - 1))  # groups whose members' cap b_{v+K} is in the run
    if known:  # launches are in order, so those groups are the first ``known``
        cap = b[version[:known] + K]
        out["exceedance"] = float(np.count_nonzero(run.end[: known * g].reshape(-1, g) > cap[:, None]) / (known * g))
    else:
        out["exceedance"] = None
    steady = steady_groups(setup, run)
    decided = steady & (used | run.dropped)
    out["group_drop_rate"] = float(run.dropped[decided].mean()) if decided.any() else None
    consumed_eff = run.effective[steady & used].sum()
    out["effective_intake"] = float(consumed_eff / (g * steady.sum())) if steady.any() else None
    return out


def waits(setup: Setup, run: Run) -> dict:
    """Sandbox waits: share of attempts that waited, mean and p99 wait over all attempts, mean of those that waited.
    Only the waits above zero are kept: the rest are zeros, which the mean and the p99 count without storing."""
    n = run.start.size
    if n == 0:
        return {
            "sandbox_wait_share": 0.0,
            "sandbox_wait_mean_s": 0.0,
            "sandbox_wait_p99_s": 0.0,
            "sandbox_wait_mean_of_waiting_s": None,
        }
    arrival = np.repeat(run.launch, setup.group_size)
    late = np.flatnonzero(run.start > arrival)
    wait = run.start[late] - arrival[late]
    return {
        "sandbox_wait_share": run.wait_share,
        "sandbox_wait_mean_s": _num(wait.sum() / n),
        "sandbox_wait_p99_s": _num(percentile_with_zeros(wait, n, 99)),
        "sandbox_wait_mean_of_waiting_s": _num(wait.mean()) if wait.size else None,
    }


def percentile_with_zeros(positive: np.ndarray, n: int, q: float) -> float:
    """``np.percentile`` (linear interpolation) of ``n`` values: ``n - positive.size`` zeros and ``positive``."""
    zeros = n - positive.size
    pos = q / 100.0 * (n - 1)
    below = math.floor(pos)
    if below + 1 < zeros:
        return 0.0
    ordered = np.sort(positive)

    def value(i: int) -> float:
        i = min(i, n - 1)
        return 0.0 if i < zeros else float(ordered[i - zeros])

    return value(below) + (pos - below) * (value(below + 1) - value(below))


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
