"""The step log: the update-time law, the cadence achieved, where the time went, the version gaps.

Update law (MODEL.md §2) from the (training GPUs, update seconds) rows by least squares on relative
errors (a framework log's update seconds are the trainer's busy time, calibrate/stepreader.py):
``inverse`` ``U = k/G`` when it misses the median of every GPU count by at most LAW_TOLERANCE,
else ``amdahl`` ``U = a + b/G`` (a, b >= 0) under the same test, else a ``table`` of the medians.
One GPU count only: ``inverse`` through its median (amdahl needs two counts).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from trainground.calibrate.figures import Figure, percentile_interval, resample
from trainground.calibrate.logs import Steps

LAW_TOLERANCE = 0.05  # largest relative miss of a law on the per-GPU-count medians for it to be kept
UPDATE_BOUND_SLACK = 0.02  # a boundary within this share of the cadence after its update's end waited for it


@dataclass
class UpdateFit:
    law: str  # inverse | amdahl | table
    reference_gpus: float
    reference: Figure  # U at reference_gpus
    serial_fraction: float | None = None
    points: list[tuple[float, float]] = field(default_factory=list)  # (gpus, median seconds) per GPU count
    miss: dict[str, float] = field(default_factory=dict)  # law -> largest relative miss on the medians
    observed: tuple[np.ndarray, np.ndarray] | None = None  # (gpus, seconds) of every row

    def seconds(self, gpus: np.ndarray) -> np.ndarray:
        if self.law == "table":
            g, s = zip(*self.points)
            return np.interp(gpus, g, s)
        f = self.serial_fraction or 0.0
        return self.reference.value * (f + (1 - f) * self.reference_gpus / np.asarray(gpus, dtype=float))

    def to_json(self) -> dict:
        return {
            "law": self.law,
            "reference_gpus": self.reference_gpus,
            "reference_time_s": self.reference.to_json(),
            "serial_fraction": self.serial_fraction,
            "points": [{"gpus": g, "seconds": s} for g, s in self.points],
            "relative_miss": self.miss,
        }


def _weighted_fits(w: np.ndarray, g: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row of weights: inverse k, and amdahl (a, b) by least squares on relative errors, so that a 5 %
    miss counts alike at every GPU count, a and b clipped at 0. Relative to the law, not to the observed
    time: a first pass weighted 1/u² gives the law f, the fit is then weighted 1/f² (weights of 1/u² alone
    favour the updates that came out short and bias the law low by about 1.5 σ² of the noise)."""
    k, a, b = _least_squares(w / (u * u), g, u)
    k = _least_squares(w / np.square(k[:, None] / g), g, u)[0]
    amdahl = np.maximum(a[:, None] + b[:, None] / g, 1e-300)
    _, a, b = _least_squares(w / np.square(amdahl), g, u)
    return k, a, b


def _least_squares(w: np.ndarray, g: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    inv = 1.0 / g
    k = (w @ (u * inv)) / (w @ (inv * inv))
    sw, sx, sy, sxx, sxy = w.sum(axis=1), w @ inv, w @ u, w @ (inv * inv), w @ (inv * u)
    det = sw * sxx - sx * sx
    safe = np.where(np.abs(det) > 1e-300, det, 1.0)
    b = np.where(np.abs(det) > 1e-300, (sw * sxy - sx * sy) / safe, k)
    b = np.maximum(b, 0.0)
    a = np.maximum((sy - b * sx) / sw, 0.0)
    return k, a, b


def fit_update_law(steps: Steps, rng: np.random.Generator, replicates: int) -> UpdateFit | None:
    """The law over the rows with an update time and a GPU count (a framework log's missing cells left out);
    None when there is no such row."""
    ok = np.isfinite(steps.update_s) & np.isfinite(steps.training_gpus) & (steps.training_gpus > 0)
    if not ok.any():
        return None
    if not ok.all():
        steps = replace(
            steps, iteration=steps.iteration[ok], update_s=steps.update_s[ok], training_gpus=steps.training_gpus[ok]
        )
    fit = _fit_law(steps, rng, replicates)
    fit.observed = (steps.training_gpus, steps.update_s)
    if steps.rows > 1:  # how far single updates stray from the law: the spread a later run will see
        ratio = steps.update_s / fit.seconds(steps.training_gpus)
        fit.reference = replace(fit.reference, spread=float(np.std(ratio, ddof=1)))
    return fit


def _fit_law(steps: Steps, rng: np.random.Generator, replicates: int) -> UpdateFit:
    g, u = steps.training_gpus, steps.update_s
    counts = np.unique(g)
    medians = np.array([np.median(u[g == c]) for c in counts])
    values, freq = np.unique(g, return_counts=True)
    ref = float(values[np.argmax(freq)])  # the GPU count the run spent most iterations at
    ones = np.ones((1, g.size))
    draws = resample(rng, g.size, replicates)
    source = f"{steps.file}: " + (
        f"{steps.update_source} at training_gpus" if steps.update_source else "training_gpus, update_s"
    )
    if counts.size == 1:
        boot = [np.median(np.repeat(u, d.astype(int))) for d in draws]
        lo, hi = percentile_interval(np.array(boot)) if g.size > 1 else (None, None)
        fig = Figure(
            "update_reference_time_s",
            float(medians[0]),
            lo,
            hi,
            g.size,
            "s",
            source,
            f"one GPU count ({ref:g}): inverse through the median; amdahl needs two"
            + (" (one row: no interval)" if g.size == 1 else ""),
        )
        return UpdateFit("inverse", ref, fig, None, [(float(counts[0]), float(medians[0]))])
    k, a, b = (x[0] for x in _weighted_fits(ones, g, u))
    miss = {
        "inverse": float(np.max(np.abs(k / counts / medians - 1))),
        "amdahl": float(np.max(np.abs((a + b / counts) / medians - 1))),
    }
    points = [(float(c), float(m)) for c, m in zip(counts, medians)]
    kb, ab, bb = _weighted_fits(draws, g, u)
    if miss["inverse"] <= LAW_TOLERANCE:
        law, value, boot, f = "inverse", k / ref, kb / ref, None
    elif miss["amdahl"] <= LAW_TOLERANCE:
        law, value, boot = "amdahl", a + b / ref, ab + bb / ref
        f = float(a / value) if value > 0 else 0.0
    else:
        at_ref = [
            np.median(np.repeat(u[g == ref], d.astype(int)[g == ref])) if d[g == ref].sum() else np.nan for d in draws
        ]
        lo, hi = percentile_interval(np.array([x for x in at_ref if np.isfinite(x)]))
        fig = Figure(
            "update_reference_time_s",
            float(medians[counts == ref][0]),
            lo,
            hi,
            int((g == ref).sum()),
            "s",
            source,
            f"neither inverse nor amdahl within {LAW_TOLERANCE:.0%}: a table of medians",
        )
        return UpdateFit("table", ref, fig, None, points, miss)
    lo, hi = percentile_interval(boot)
    fig = Figure(
        "update_reference_time_s",
        float(value),
        lo,
        hi,
        g.size,
        "s",
        source,
        f"{law} by least squares; reference {ref:g} GPUs",
    )
    return UpdateFit(law, ref, fig, f, points, miss)


@dataclass
class Cadence:
    achieved: Figure | None
    update_bound: int  # iterations whose boundary waited for the previous update
    generation_bound: int  # iterations whose boundary waited for trajectories
    time_split: dict[str, float] | None = None  # framework logs: share of step time per phase

    def to_json(self) -> dict:
        return {
            "achieved_s": self.achieved.to_json() if self.achieved else None,
            "update_bound": self.update_bound,
            "generation_bound": self.generation_bound,
            "time_split": self.time_split,
        }


def cadence(steps: Steps, rng: np.random.Generator, replicates: int) -> Cadence:
    """Seconds per iteration from the boundaries (or the framework's step time) and the bound of each."""
    if steps.boundary is not None and steps.boundary.size >= 2:
        gaps, span = np.diff(steps.boundary), np.maximum(np.diff(steps.iteration), 1.0)
        value = float(gaps.sum() / span.sum())  # a gap over a missing iteration spans two iterations
        weights = resample(rng, gaps.size, replicates)
        lo, hi = percentile_interval((weights @ gaps) / (weights @ span))
        missing = int(span.sum() - span.size)
        fig = Figure(
            "cadence_s",
            value,
            lo,
            hi,
            int(gaps.size),
            "s",
            f"{steps.file}: boundary, iteration",
            "time between batch boundaries per iteration"
            + (f" ({missing:,} iterations missing from the log counted)" if missing else ""),
        )
        waited = steps.boundary[1:] - (steps.boundary[:-1] + steps.update_s[:-1])
        bound = waited <= UPDATE_BOUND_SLACK * value * span
        return Cadence(fig, int(bound.sum()), int((~bound).sum()))
    if steps.step_s is not None and np.isfinite(steps.step_s).any():
        total = steps.step_s[np.isfinite(steps.step_s)]
        value = float(total.mean())
        lo, hi = (
            percentile_interval(resample(rng, total.size, replicates) @ total / total.size)
            if total.size > 1
            else (None, None)
        )
        fig = Figure(
            "cadence_s",
            value,
            lo,
            hi,
            int(total.size),
            "s",
            f"{steps.file}: {steps.step_source or 'step time'}",
            "mean step time; weight sync, saves and validations are their own terms",
        )
        both = np.isfinite(steps.step_s) & np.isfinite(steps.update_s)
        if steps.generation_s is not None:
            both &= np.isfinite(steps.generation_s)
        if steps.generation_s is None or not both.any():
            return Cadence(fig, 0, 0)
        step, gen, upd = steps.step_s[both], steps.generation_s[both], steps.update_s[both]
        split = {"generation": float(gen.sum() / step.sum()), "update": float(upd.sum() / step.sum())}
        split["other"] = max(0.0, 1.0 - split["generation"] - split["update"])
        gen_bound = int((gen > upd).sum())
        return Cadence(fig, int(both.sum()) - gen_bound, gen_bound, split)
    return Cadence(None, 0, 0)


def version_gaps(version_start: np.ndarray, version_consumed: np.ndarray, post_publish: bool) -> dict | None:
    """Observed gaps of consumed attempts (a dropped group's gap is never observed: the tail is capped at K)."""
    consumed = ~np.isnan(version_consumed) & ~np.isnan(version_start)
    if not consumed.any():
        return None
    gaps = version_consumed[consumed] - version_start[consumed] + (1 if post_publish else 0)
    return {"mean": float(gaps.mean()), "p99": float(np.percentile(gaps, 99)), "rows": int(consumed.sum())}
