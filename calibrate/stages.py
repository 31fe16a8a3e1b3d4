"""Stages proposed from a trajectory log whose responses lengthen (MODEL.md §12): when the logged tokens per
attempt trend by more than TREND over the run, where to split it and each stage's tokens and lifetimes.

Each attempt is placed at the iteration current when it launched: its ``version_start`` when the log has
it, else the step log's boundaries (the boundaries before its start), else its start time's share of the
log (said in a note). The logged run is cut into equal spans of iterations, one per iteration up to BINS
(a split then falls between two iterations exactly); the trend compares the mean tokens per attempt of the
last tenth of the run with the first tenth's. The split points are those of the
piecewise-constant fit of the bins' mean tokens (least squares, weighted by the attempts in each bin,
found exactly by dynamic programming) with the fewest stages (2 to MAX_STAGES) that explain EXPLAINED of
the variance between bins. Each stage gets the mean tokens of its ended attempts and the lognormal fitted
to its lifetimes (running attempts right-censored, as :mod:`calibrate.lifetimes` fits the whole log), and,
with a step log's update times, its mean update time over the first stage's as ``update_time_scale``.
Stage iterations are the spans' shares of ``iterations`` (the instance's, or the log's), whole numbers of at
least one that sum to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from trainground.calibrate import lifetimes as lt
from trainground.calibrate.logs import Steps, Trajectories

TREND = 0.20  # tokens per attempt moving by more than this over the run (last tenth against first) asks for stages
BINS = 100  # the most spans of iterations the trend and the split points are read on
MAX_STAGES = 4
EXPLAINED = 0.90  # share of the variance between bins the proposed stages must explain
MIN_ENDED = 10  # ended attempts a stage needs for its lifetime law


@dataclass
class StageProposal:
    """What the logs say about stages: the trend, and the stages when it passes TREND."""

    trend: float  # mean tokens of the run's last tenth over its first tenth, minus 1
    first_tokens: float
    last_tenth_tokens: float
    placed_by: str  # how attempts were placed on iterations: version_start, boundaries or time
    iterations: int
    stages: list[dict] = field(default_factory=list)  # {name, iterations, tokens_per_attempt, occupancy, ...}
    explained: float | None = None  # share of the variance between bins the stages explain

    @property
    def proposed(self) -> bool:
        return bool(self.stages)

    def sentence(self) -> str:
        head = (
            f"tokens per attempt move {self.trend:+.0%} over the run (first tenth {self.first_tokens:,.0f}, "
            f"last tenth {self.last_tenth_tokens:,.0f}; attempts placed on iterations by {self.placed_by})"
        )
        if not self.proposed:
            return f"{head}: within ±{TREND:.0%}, no stages proposed"
        cuts = ", ".join(
            f"{s['name']} {s['iterations']:,} it. at {s['tokens_per_attempt']:,.0f} tokens" for s in self.stages
        )
        return f"{head}: more than ±{TREND:.0%}, so {len(self.stages)} stages are proposed: {cuts}"

    def to_json(self) -> dict:
        return {
            "trend": self.trend,
            "first_tenth_tokens": self.first_tokens,
            "last_tenth_tokens": self.last_tenth_tokens,
            "placed_by": self.placed_by,
            "iterations": self.iterations,
            "proposed": self.proposed,
            "explained": self.explained,
            "stages": self.stages,
        }


def iterations_of(log: Trajectories, steps: Steps | None) -> tuple[np.ndarray, str, int]:
    """(iteration per attempt as a float, how it was read, the run's iterations)."""
    started = np.where(np.isnan(log.start), np.nanmax(log.start), log.start)
    if log.version_start is not None and np.isfinite(log.version_start).any():
        v = np.where(np.isfinite(log.version_start), log.version_start, np.nanmax(log.version_start))
        return v.astype(float), "version_start", int(np.nanmax(v)) + 1
    if steps is not None and steps.boundary is not None and np.isfinite(steps.boundary).any():
        b = np.sort(steps.boundary[np.isfinite(steps.boundary)])
        return np.searchsorted(b, started, side="right").astype(float), "boundaries", int(b.size)
    span = max(float(np.nanmax(started)), 1e-9)
    count = int(steps.iteration.size) if steps is not None else BINS
    return started / span * count, "time", count


def propose(log: Trajectories, steps: Steps | None, iterations: int | None) -> StageProposal | None:
    """The stage proposal of ``log`` (None when no attempt with tokens ended in both ends of the run)."""
    place, how, logged = iterations_of(log, steps)
    total = iterations or logged
    ended = np.isfinite(log.tokens) & np.isfinite(log.end)
    spans = max(1, min(BINS, logged))
    bins = np.clip((place / max(logged, 1) * spans).astype(int), 0, spans - 1)
    counts = np.bincount(bins[ended], minlength=spans).astype(float)
    sums = np.bincount(bins[ended], weights=log.tokens[ended], minlength=spans)
    tenth = max(1, spans // 10)
    head, tail = counts[:tenth].sum(), counts[-tenth:].sum()
    if head == 0 or tail == 0:
        return None
    first, last = sums[:tenth].sum() / head, sums[-tenth:].sum() / tail
    trend = last / first - 1
    found = StageProposal(float(trend), float(first), float(last), how, int(total))
    if abs(trend) <= TREND or spans < 2 or total < 2:
        return found
    cuts, found.explained = split_points(sums, counts)
    edges = [0, *cuts, spans]
    sizes = _whole(np.diff(edges) / spans, int(total))
    if min(sizes) < 1:
        return found  # fewer iterations than stages: none proposed
    for k, (lo, hi) in enumerate(zip(edges, edges[1:])):
        mine = (bins >= lo) & (bins < hi)
        found.stages.append(_stage(log, steps, mine, ended, place, (lo / spans, hi / spans), f"stage{k + 1}", sizes[k]))
    base = found.stages[0].get("update_s")
    for s in found.stages:
        update = s.pop("update_s", None)
        if base and update:
            s["update_time_scale"] = round(update / base, 3)
    return found


def split_points(sums: np.ndarray, counts: np.ndarray) -> tuple[list[int], float]:
    """The bin edges of the fewest stages (2..MAX_STAGES) whose piecewise-constant fit of the bin means
    explains EXPLAINED of their variance (weighted by attempts), and the share it explains."""
    n = sums.size
    csum, ccount, csq = np.concatenate(([0], np.cumsum(sums))), np.concatenate(([0], np.cumsum(counts))), None
    means = np.divide(sums, counts, out=np.zeros(n), where=counts > 0)
    csq = np.concatenate(([0], np.cumsum(counts * means**2)))

    def sse(i: int, j: int) -> float:  # bins i..j-1 at their weighted mean
        c = ccount[j] - ccount[i]
        return 0.0 if c == 0 else float(csq[j] - csq[i] - (csum[j] - csum[i]) ** 2 / c)

    total = sse(0, n)
    cost = np.full((MAX_STAGES + 1, n + 1), np.inf)
    back = np.zeros((MAX_STAGES + 1, n + 1), dtype=int)
    cost[0, 0] = 0.0
    for k in range(1, MAX_STAGES + 1):
        for j in range(1, n + 1):
            options = [cost[k - 1, i] + sse(i, j) for i in range(j)]
            back[k, j] = int(np.argmin(options))
            cost[k, j] = options[back[k, j]]
    chosen = MAX_STAGES
    for k in range(2, MAX_STAGES + 1):
        if total == 0 or 1 - cost[k, n] / total >= EXPLAINED:
            chosen = k
            break
    edges, j = [], n
    for k in range(chosen, 0, -1):
        j = back[k, j]
        edges.append(j)
    cuts = sorted(e for e in edges if 0 < e < n)
    return cuts, 1.0 if total == 0 else float(1 - cost[chosen, n] / total)


def _whole(shares: np.ndarray, total: int) -> list[int]:
    """Whole iteration counts in proportion to ``shares`` that sum to ``total`` (largest remainders), each at
    least one (taken from the largest) when ``total`` allows."""
    raw = shares * total
    out = np.floor(raw).astype(int)
    for i in np.argsort(-(raw - out), kind="stable")[: total - int(out.sum())]:
        out[i] += 1
    while out.min() < 1 <= total // out.size:
        out[int(np.argmax(out))] -= 1
        out[int(np.argmin(out))] += 1
    return [int(x) for x in out]


def _stage(log, steps, mine, ended, place, span, name: str, size: int) -> dict:
    """One stage's figures: mean tokens of its ended attempts, the lognormal of its lifetimes (and the mean
    update time of its iterations, with a step log)."""
    out: dict = {"name": name, "iterations": size, "tokens_per_attempt": float(log.tokens[mine & ended].mean())}
    data = lt.lifetimes_of(log.start, log.end, log.log_end, mine, log.group, log.cut)
    if data.x.size >= MIN_ENDED:
        figures = lt.figures_of(*lt.fit_lognormal(data))
        out["occupancy"] = {
            "distribution": "lognormal",
            "median": float(figures["median"]),
            "p99": float(figures["p99"]),
        }
    if steps is not None and steps.update_s is not None:
        lo, hi = (span[0] * steps.iteration.max(), span[1] * steps.iteration.max())
        inside = (steps.iteration >= lo) & (steps.iteration <= hi) & np.isfinite(steps.update_s)
        if inside.any():
            out["update_s"] = float(steps.update_s[inside].mean())
    return out
