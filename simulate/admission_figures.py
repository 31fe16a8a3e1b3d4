"""The figures of one admission replay (MODEL.md §14; :mod:`simulation.admission`), JSON-ready, under the keys of
MODEL §10's ``simulated`` and §14's metrics where they mean the same.

Rates and shares are read over the steady window from the first boundary to the last, ``[b_0, b_{n-1}]`` (the
whole run when there is one batch): an attempt's tokens accrue evenly over its lifetime, so the window counts
the share of each attempt's tokens generated inside it, and the re-prefills of the publishes inside it.
"""

from __future__ import annotations

import numpy as np

from trainground.simulation.admission import AdmissionRun
from trainground.simulation.regimes import consumed_gaps

HELD_TOL = 1e-9  # relative: a launch this much after its due time was held back (by a slot or the cap)


def figures(run: AdmissionRun) -> dict:
    """``makespan_s``; ``startup_s`` (the first boundary); ``iteration_mean_s`` and ``iteration_p99_s`` over
    ``b_j - b_{j-1}``; ``slowest_attempt_s`` (the mean completion time of a launched group, E[M_g]);
    ``attempts_per_s`` (launched in the window); ``held_back_share`` (the window's groups launched after their due
    time: the slots or the cap held them); ``inflight_mean`` (the window's time-average of running attempts);
    ``inflight_max`` and ``inflight_max_by_backend`` (the most running at once, right after a launch);
    ``launch_peak`` (the mean of the attempts running right after each publish but the last, with the groups it
    launched: the publish peak); ``version_switches`` (the moves to a new version per attempt: the window's
    publishes, each weighted by the attempts it finds running, over the attempts the window launches); ``token_demand_per_s`` (tokens generated and re-prefilled per second),
    ``generation_busy_share`` (that over the supply the syncs leave), ``recompute_share`` (re-prefills over
    all); ``consumed_mean_gap`` and ``consumed_p99_gap`` over every sample. Figures of a run that did not finish
    are None where its end would be infinite."""
    s, d = run.setup, run.draws
    b, p = run.boundaries, run.publishes
    g, count = s.group_size, run.launched
    start = np.repeat(run.launch, g)
    life = d.life[:count].reshape(-1)
    end = start + life
    w0, w1 = (float(b[0]), float(b[-1])) if b.size > 1 else (0.0, float(b[-1]) if b.size else 0.0)
    span = w1 - w0
    steps = np.diff(b)
    inside = (run.launch >= w0) & (run.launch <= w1)
    due = np.arange(count) * s.spacing
    out: dict = {
        "makespan_s": run.makespan,
        "startup_s": float(b[0]) if b.size else None,
        "iteration_mean_s": float(steps.mean()) if steps.size else None,
        "iteration_p99_s": float(np.quantile(steps, 0.99)) if steps.size else None,
        "slowest_attempt_s": float(d.finish[:count].mean()) if count else None,
        "attempts_per_s": float(g * np.count_nonzero(inside) / span) if span > 0 else None,
        "held_back_share": float(np.mean(run.launch[inside] > due[inside] * (1 + HELD_TOL) + HELD_TOL))
        if inside.any()
        else None,
    }
    out.update(_in_flight(run, start, end, w0, w1))
    at = p[(p >= w0) & (p <= w1)]
    running, elapsed = _running(start, end, at)
    launched = g * np.count_nonzero(inside)
    out["version_switches"] = float(running.sum() / launched) if launched else None
    out.update(_tokens(run, start, end, w0, w1, at, running, elapsed))
    taken = np.flatnonzero(run.consumed >= 0)
    version = np.searchsorted(p, run.launch[taken], side="right")
    gap = run.consumed[taken] - version + (1 if s.post_publish else 0)
    out.update(consumed_gaps(gap, d.samples[taken]))
    return out


def _in_flight(run: AdmissionRun, start: np.ndarray, end: np.ndarray, w0: float, w1: float) -> dict:
    """The running attempts: their time-average over [w0, w1], the most at once (per backend too), and the mean
    right after each publish but the last."""
    s = run.setup
    span = w1 - w0
    overlap = np.clip(np.minimum(end, w1) - np.maximum(start, w0), 0.0, None)
    ends = np.sort(end)
    after = start[:: s.group_size]  # each group's launch (attempts start with their group, in launch order)
    running = np.searchsorted(start, after, side="right") - np.searchsorted(ends, after, side="right")
    at = run.publishes[:-1]
    peaks = np.searchsorted(start, at, side="right") - np.searchsorted(ends, at, side="right")
    backend = run.draws.backend[: run.launched].reshape(-1)
    by_backend = {}
    for i, name in enumerate(s.backends):
        mine = backend == i
        own_start, own_end = start[mine], np.sort(end[mine])
        alive = np.searchsorted(own_start, after, side="right") - np.searchsorted(own_end, after, side="right")
        by_backend[name] = int(alive.max()) if alive.size else 0
    return {
        "inflight_mean": float(overlap.sum() / span) if span > 0 else None,
        "inflight_max": int(running.max()) if running.size else 0,
        "inflight_max_by_backend": by_backend,
        "launch_peak": float(peaks.mean()) if peaks.size else None,
    }


def _running(start: np.ndarray, end: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """At each time of ``at``: the attempts begun before it and still running, and the sum of their ages."""
    begun = np.searchsorted(start, at, side="left")
    by_end = np.argsort(end, kind="stable")
    gone = np.searchsorted(end[by_end], at, side="right")  # ended by then (each begun before)
    starts_sum = np.concatenate(([0.0], np.cumsum(start)))
    gone_sum = np.concatenate(([0.0], np.cumsum(start[by_end])))
    running = begun - gone
    return running, running * at - (starts_sum[begun] - gone_sum[gone])


def _tokens(
    run: AdmissionRun,
    start: np.ndarray,
    end: np.ndarray,
    w0: float,
    w1: float,
    at: np.ndarray,
    running: np.ndarray,
    elapsed: np.ndarray,
) -> dict:
    """Tokens asked in [w0, w1]: generated (each attempt's tokens_per_attempt·W_τ/mean(W) at an even pace) and
    re-prefilled at each publish ``at`` inside it (the ``running`` attempts begun before it, their ages summing to
    ``elapsed``: prefill_cost·(context_tokens + their tokens so far)); per second, over the supply the syncs
    leave, and the re-prefills' share."""
    s = run.setup
    span = w1 - w0
    if span <= 0:
        return {"token_demand_per_s": None, "generation_busy_share": None, "recompute_share": None}
    pace = s.tokens_per_attempt / s.occupancy.mean  # tokens per second of an attempt's lifetime
    generated = pace * float(np.clip(np.minimum(end, w1) - np.maximum(start, w0), 0.0, None).sum())
    refill = s.prefill_cost * float(np.sum(running * s.context_tokens + pace * elapsed))
    demand = (generated + refill) / span
    supply = s.supply * (1.0 - s.sync_s * at.size / span)
    return {
        "token_demand_per_s": demand,
        "generation_busy_share": demand / supply if supply > 0 else None,
        "recompute_share": refill / (generated + refill) if generated + refill > 0 else 0.0,
    }
