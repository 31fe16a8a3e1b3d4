"""Tokens/s per GPU, tokens per attempt, intake and the within-group correlation of lifetimes.

Tokens/s per GPU is the seed's definition: output tokens over *allocated* inference GPU-seconds.
It is read over the steady part of the log, ``[b_0, b_last]`` (the first and last batch boundaries
of the step log) or, without boundaries, the span of starts less its first and last TRIM share:
the warm-up (the pipeline filling before the first batch) and the drain (no new launches at the
end) are trimmed. Tokens are counted by the attempts that *started* in the window (in a steady run
as many tokens start per second as are produced); a running attempt's empty ``output_tokens`` is
the mean of the ended attempts started in the window. Its interval is the Poisson bootstrap of the
launches (groups when the log has them) in closed form: the token count's sd is the square root of
the sum of squared tokens per launch. Idle time inside the window, when no attempt is running (a stall, a
checkpoint, a pause between runs), allocates GPUs that have nothing to generate: it is left out of the
GPU-seconds, and the window says how much was left out.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from trainground.calibrate.figures import Z_LEVEL, Figure, percentile_interval, resample
from trainground.calibrate.logs import Steps, Trajectories

TRIM = 0.10  # without batch boundaries: the share of the span of starts trimmed at each end
COMONOTONE_ABOVE = 0.5
SPREAD_BINS = 10  # without batch boundaries: equal parts of the window whose tokens/s give the spread
BLOCKS = 2000  # above this many groups, replicates resample blocks of groups (group index mod BLOCKS)


def steady_window(log: Trajectories, steps: Steps | None) -> tuple[float, float, str]:
    if (
        steps is not None
        and steps.boundary is not None
        and steps.boundary.size >= 2
        and steps.boundary[-1] > steps.boundary[0]
    ):
        return float(steps.boundary[0]), float(steps.boundary[-1]), "first to last batch boundary"
    lo, hi = float(np.nanmin(log.start)), float(np.nanmax(log.start))
    span = hi - lo
    return lo + TRIM * span, hi - TRIM * span, f"span of starts less {TRIM:.0%} at each end"


def idle_spans(log: Trajectories, t0: float, t1: float) -> list[tuple[float, float]]:
    """The parts of ``[t0, t1]`` in which no attempt is running (an attempt runs from its start to its end, or
    to the end of the log while it is still running)."""
    ok = np.isfinite(log.start)
    starts = log.start[ok]
    ends = np.where(np.isfinite(log.end[ok]), log.end[ok], log.log_end)
    order = np.argsort(starts, kind="stable")
    spans, covered = [], t0
    for a, b in zip(starts[order], ends[order]):
        if a > covered and covered < t1:
            spans.append((covered, min(a, t1)))
        covered = max(covered, b)
    if covered < t1:
        spans.append((covered, t1))
    return [(a, b) for a, b in spans if b > a]


def _overlap(spans: list[tuple[float, float]], lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Per part ``[lo, hi]``: the seconds of ``spans`` inside it."""
    out = np.zeros(lo.size)
    for a, b in spans:
        out += np.clip(np.minimum(hi, b) - np.maximum(lo, a), 0.0, None)
    return out


def allocated_gpus(steps: Steps | None, inference_gpus: int | None, t0: float, t1: float) -> tuple[float, str] | None:
    """Mean inference GPUs over the window: --inference-gpus, else the step log's column (time-weighted
    between boundaries when it has them)."""
    if inference_gpus is not None:
        return float(inference_gpus), "--inference-gpus"
    if steps is None or steps.inference_gpus is None:
        return None
    g = steps.inference_gpus
    if steps.boundary is not None and steps.boundary.size >= 2:
        b = steps.boundary
        lo, hi = np.clip(b[:-1], t0, t1), np.clip(b[1:], t0, t1)
        weights = hi - lo
        if weights.sum() > 0:
            return float(np.sum(g[1:] * weights) / weights.sum()), f"{Path(steps.file).name}: inference_gpus"
    return float(np.mean(g)), f"{Path(steps.file).name}: inference_gpus"


def tokens_per_gpu_s(
    log: Trajectories, steps: Steps | None, inference_gpus: float | dict[str, float] | None
) -> tuple[Figure | None, dict, dict[str, Figure]]:
    """The pooled figure (when the GPUs of all pools are known), the window, and one figure per pool of the
    log's ``pool`` column whose GPUs ``inference_gpus`` names."""
    t0, t1, rule = steady_window(log, steps)
    window = {"start_s": t0, "end_s": t1, "rule": rule}
    per_pool = inference_gpus if isinstance(inference_gpus, dict) else {}
    total = sum(per_pool.values()) if per_pool else inference_gpus
    gpus = allocated_gpus(steps, total, t0, t1)
    if per_pool:
        gpus = (float(total), "--inference-gpus " + ",".join(f"{k}={v:g}" for k, v in per_pool.items()))
    inside = (log.start >= t0) & (log.start < t1)
    if gpus is None or t1 <= t0 or not inside.any():
        window["missing"] = "needs --inference-gpus or an inference_gpus column" if gpus is None else "empty window"
        return None, window, {}
    bins = _bins(steps, t0, t1)
    idle = idle_spans(log, t0, t1)
    window["idle_s"] = float(sum(b - a for a, b in idle))
    if window["idle_s"] >= t1 - t0:
        window["missing"] = "no attempt runs in the window"
        return None, window, {}
    window["gpus"] = gpus[0]
    window["attempts_per_s"] = float(inside.sum() / (t1 - t0))  # the launch rate the run kept up, idle or not
    if per_pool:
        window["pool_gpus"] = dict(per_pool)
    pooled = _throughput(log, inside, gpus, (t0, t1, rule, idle), bins, "")
    pools = {}
    for index, name in enumerate(log.pools or []):
        if name in per_pool:
            mine = inside & (log.pool == index)
            if mine.any():
                pools[name] = _throughput(
                    log, mine, (per_pool[name], f"--inference-gpus {name}"), (t0, t1, rule, idle), bins, name
                )
    return pooled, window, pools


def _bins(steps: Steps | None, t0: float, t1: float) -> np.ndarray:
    """Edges of the parts of the window whose figures give the spread: the batch boundaries, else SPREAD_BINS
    equal parts."""
    if steps is not None and steps.boundary is not None and steps.boundary.size >= 3:
        edges = steps.boundary[(steps.boundary >= t0) & (steps.boundary <= t1)]
        if edges.size >= 3:
            return edges
    return np.linspace(t0, t1, SPREAD_BINS + 1)


def _throughput(log: Trajectories, rows: np.ndarray, gpus: tuple[float, str], span, bins, pool: str) -> Figure:
    t0, t1, rule, idle = span
    tokens = log.tokens[rows]
    known = ~np.isnan(tokens)
    tokens = np.where(known, tokens, np.mean(tokens[known]) if known.any() else 0.0)
    idle_s = float(sum(b - a for a, b in idle))
    denominator = gpus[0] * (t1 - t0 - idle_s)
    value = float(tokens.sum() / denominator)
    if log.group is not None:  # attempts launch by group: the group is the unit that is resampled
        units = np.bincount(dense_ids(log.group[rows]), weights=tokens)
    else:
        units = tokens
    sd = math.sqrt(float(np.sum(units * units))) / denominator  # Poisson bootstrap of the launches, closed form
    part = np.clip(np.searchsorted(bins, log.start[rows], side="right") - 1, 0, bins.size - 2)
    busy = np.diff(bins) - _overlap(idle, bins[:-1], bins[1:])
    live = busy > 0
    parts = np.bincount(part, weights=tokens, minlength=bins.size - 1)[live] / (gpus[0] * busy[live])
    rates = parts
    spread = float(np.std(rates, ddof=1) / value) if value > 0 and rates.size > 1 else 0.0
    left_out = (
        f"; {idle_s:,.0f} s with no attempt running left out ({len(idle)} span{'s' if len(idle) != 1 else ''})"
        if idle_s > 0
        else ""
    )
    note = (
        f"window {t0:,.0f}-{t1:,.0f} s ({rule}){left_out}; {gpus[0]:,.0f} GPUs from {gpus[1]}; "
        f"spread {spread:.1%} over {rates.size} parts"
    )
    return Figure(
        f"tokens_per_gpu_s{'[' + pool + ']' if pool else ''}",
        value,
        value - Z_LEVEL * sd,
        value + Z_LEVEL * sd,
        int(rows.sum()),
        "tok/s/GPU",
        f"{log.file}: output_tokens, start" + (", pool" if pool else ""),
        note,
        spread,
    )


def dense_ids(ids: np.ndarray) -> np.ndarray:
    """Group ids renumbered 0..k-1 (by counting when the ids are not much larger than their number)."""
    if ids.size and ids.max() < 4 * ids.size:
        present = np.bincount(ids) > 0
        return (np.cumsum(present) - 1)[ids]
    return np.unique(ids, return_inverse=True)[1]


def tokens_per_attempt(log: Trajectories) -> Figure:
    tokens = log.tokens[log.finished]
    n = tokens.size
    mean = float(tokens.mean())
    half = Z_LEVEL * float(tokens.std(ddof=1)) / math.sqrt(n) if n > 1 else 0.0
    return Figure(
        "tokens_per_attempt",
        mean,
        mean - half,
        mean + half,
        n,
        "tokens",
        f"{log.file}: output_tokens",
        "mean over ended attempts",
    )


def intake(log: Trajectories, rng: np.random.Generator, replicates: int) -> Figure | None:
    if log.effective is None:
        return None
    known = log.effective[~np.isnan(log.effective)]
    if known.size == 0:
        return None
    p = float(known.mean())
    lo, hi = percentile_interval(rng.binomial(known.size, p, replicates) / known.size)
    return Figure(
        "intake_rate",
        p,
        lo,
        hi,
        int(known.size),
        "share",
        f"{log.file}: effective",
        "share of attempts that entered a batch",
    )


def group_correlation(log: Trajectories, rng: np.random.Generator, replicates: int) -> Figure | None:
    """Intraclass correlation of log-lifetimes within groups (ended members of groups with two or more):
    0 for independent members, 1 for one lifetime per group (comonotone). Replicates resample groups
    (above BLOCKS groups: fixed blocks of groups, whose sums are what the correlation needs)."""
    if log.group is None:
        return None
    ended = log.finished if log.cut is None else log.finished & np.isnan(log.cut)
    group = dense_ids(log.group[ended])
    x = np.log(np.maximum(log.end[ended] - log.start[ended], 1e-6))
    n = np.bincount(group).astype(float)
    s1 = np.bincount(group, weights=x)
    s2 = np.bincount(group, weights=x * x)
    keep = n >= 2
    if keep.sum() < 3:
        return None
    n, s1, s2 = n[keep], s1[keep], s2[keep]
    sums = np.stack([np.ones(n.size), n, s1, s2, s1 * s1 / n, n * n])  # per group: what the ICC sums
    value = float(_icc(sums.sum(axis=1, keepdims=True).T)[0])
    blocks = (
        sums if n.size <= BLOCKS else np.stack([np.bincount(np.arange(n.size) % BLOCKS, weights=row) for row in sums])
    )
    k = blocks.shape[1]
    counts = resample(rng, k, replicates)
    lo, hi = percentile_interval(_icc(counts @ blocks.T))
    verdict = "comonotone" if value > COMONOTONE_ABOVE else "independent"
    return Figure(
        "group_correlation",
        value,
        lo,
        hi,
        int(n.sum()),
        "ICC",
        f"{log.file}: group, start, end",
        f"closer to {verdict} (0 independent, 1 comonotone); {int(keep.sum()):,} groups",
    )


def _icc(totals: np.ndarray) -> np.ndarray:
    """One-way ANOVA intraclass correlation from rows of summed (groups, n, s1, s2, s1^2/n, n^2)."""
    groups, total, s1, s2, between, nn = totals.T
    grand = s1 / total
    ssb = between - total * grand * grand
    ssw = s2 - between
    msb = ssb / np.maximum(groups - 1, 1)
    msw = ssw / np.maximum(total - groups, 1)
    k0 = (total - nn / total) / np.maximum(groups - 1, 1)
    return (msb - msw) / np.maximum(msb + (k0 - 1) * msw, 1e-300)
