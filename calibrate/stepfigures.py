"""Figures a framework's step log holds beyond the update law and the cadence: weight-sync time per version,
checkpoint time per save, the trainer's wait for rollouts, the version gap's mean from staleness counters,
and tokens/s per inference GPU from the response tokens and the generation time of each step. Intervals
resample steps (200 replicates, percentile)."""

from __future__ import annotations

import numpy as np

from trainground.calibrate.figures import Figure, percentile_interval, resample
from trainground.calibrate.frameworks import FrameworkSteps
from trainground.calibrate.logs import Steps


def _median(values: np.ndarray, rng, replicates: int) -> tuple[float, float, float]:
    draws = resample(rng, values.size, replicates)
    boot = [np.median(np.repeat(values, d.astype(int))) for d in draws]
    lo, hi = percentile_interval(np.array(boot))
    return float(np.median(values)), lo, hi


def _ratio(num: np.ndarray, den: np.ndarray, rng, replicates: int) -> tuple[float, float, float]:
    w = resample(rng, num.size, replicates)
    lo, hi = percentile_interval((w @ num) / (w @ den))
    return float(num.sum() / den.sum()), lo, hi


def step_figures(
    steps: Steps,
    extra: FrameworkSteps,
    inference_gpus: float | None,
    rng: np.random.Generator,
    replicates: int,
    per_trajectory: bool = True,
) -> tuple[dict[str, Figure], list[str]]:
    """The figures and the notes on what could not be measured. ``per_trajectory``: a trajectory log gives
    the lifetime law (the agent loop's is shown beside it); else the agent loop's is the law written."""
    figures: dict[str, Figure] = {}
    notes: list[str] = []
    source = f"{steps.file} ({extra.name})"
    if extra.weight_sync_s is not None and np.isfinite(extra.weight_sync_s).sum() >= 2:
        sync = extra.weight_sync_s[np.isfinite(extra.weight_sync_s)]
        figures["weight_sync_s"] = Figure(
            "weight_sync_s", *_median(sync, rng, replicates), sync.size, "s", source, "median per published version"
        )
    if extra.checkpoint_s is not None:
        saves = np.flatnonzero(np.nan_to_num(extra.checkpoint_s) > 0)
        if saves.size >= 1:
            seconds = extra.checkpoint_s[saves]
            every = float(np.median(np.diff(steps.iteration[saves]))) if saves.size >= 2 else float("nan")
            value, lo, hi = _median(seconds, rng, replicates) if saves.size >= 2 else (float(seconds[0]), None, None)
            figures["checkpoint_s"] = Figure(
                "checkpoint_s",
                value,
                lo,
                hi,
                saves.size,
                "s",
                source,
                f"median per save; a save every {every:g} steps (taken out of those steps' times)"
                if saves.size >= 2
                else "one save",
            )
    if extra.wait_s is not None and steps.step_s is not None:
        ok = np.isfinite(extra.wait_s) & np.isfinite(steps.step_s) & (steps.step_s > 0)
        if ok.sum() >= 2:
            figures["trainer_wait_share"] = Figure(
                "trainer_wait_share",
                *_ratio(extra.wait_s[ok], steps.step_s[ok], rng, replicates),
                int(ok.sum()),
                "share",
                source,
                "share of step time the trainer waited for rollouts",
            )
    if extra.staleness_mean is not None and np.isfinite(extra.staleness_mean).sum() >= 2:
        gaps = extra.staleness_mean[np.isfinite(extra.staleness_mean)]
        w = resample(rng, gaps.size, replicates)
        lo, hi = percentile_interval(w @ gaps / gaps.size)
        figures["version_gap_mean"] = Figure(
            "version_gap_mean", float(gaps.mean()), lo, hi, gaps.size, "versions", source, "mean of staleness/mean"
        )
    _generation_throughput(steps, extra, inference_gpus, rng, replicates, figures, notes, source)
    loop = agent_loop_lifetimes(extra, rng, replicates, source)
    if loop:
        notes.append(_loop_note(extra.name, loop, per_trajectory))
    figures |= loop
    return figures, notes


def _loop_note(name: str, loop: dict[str, Figure], per_trajectory: bool) -> str:
    med, p99 = loop["agent_loop_median_s"], loop["agent_loop_p99_s"]
    if per_trajectory:
        return (
            f"{name}: lifetimes also estimated from the agent loop's per-step min/mean/max (median "
            f"{med.value:,.0f} s, p99 {p99.value:,.0f} s): a step-level estimate under an assumed lognormal, "
            "with a wider interval; the instance's law is the trajectory log's (per-trajectory times)"
        )
    return (
        f"{name}: no trajectory log: the lifetime law (median {med.value:,.0f} s, 90 % {med.low:,.0f}-"
        f"{med.high:,.0f}; p99 {p99.value:,.0f} s, 90 % {p99.low:,.0f}-{p99.high:,.0f}) comes from the agent "
        "loop's per-step min/mean/max, not per-trajectory times: a step-level estimate under an assumed "
        "lognormal (not checked), with a wider interval; give --trajectories for a per-trajectory fit"
    )


def agent_loop_lifetimes(extra: FrameworkSteps, rng, replicates: int, source: str) -> dict[str, Figure]:
    """Lifetime median and p99 from each step's min, mean and max per-trajectory time (verl's agent loop),
    a lognormal within the step: the max and min of n draws sit about ±z_n sigma from the median (Blom's
    z_n = Φ⁻¹((n - 0.375)/(n + 0.25))), so sigma = mean ln(max/min) / (2 mean z_n) over the steps, and the
    median is exp(mean ln(step mean) - sigma²/2). These approximations are biased by about a per cent, so
    the figures are corrected and their interval found by a parametric bootstrap: logs of the same steps
    drawn from the fitted lognormal, estimated alike (basic bootstrap in logs). The law itself is assumed,
    not checked, which the note says."""
    if extra.loop is None or extra.responses is None:
        return {}
    low, mean, high = extra.loop.T
    n = extra.responses
    ok = np.isfinite(low) & np.isfinite(mean) & np.isfinite(high) & (low > 0) & (high > low) & (n >= 2)
    if ok.sum() < 5:
        return {}
    counts = np.rint(n[ok]).astype(int)
    point = _loop_estimate(low[ok], mean[ok], high[ok], counts)
    draws = np.array([_loop_estimate(*_simulated_loop(rng, *point, counts), counts) for _ in range(LOOP_REPLICATES)])
    mu, sigma = point
    out = {}
    note = "lognormal from the agent loop's min/mean/max per step (assumed, not checked); step-level"
    for name, z in (("agent_loop_median_s", 0.0), ("agent_loop_p99_s", Z99)):
        t, t_star = mu + z * sigma, draws[:, 0] + z * draws[:, 1]
        lo, hi = percentile_interval(t_star)
        value = float(np.exp(2 * t - t_star.mean()))
        out[name] = Figure(
            name, value, float(np.exp(2 * t - hi)), float(np.exp(2 * t - lo)), int(ok.sum()), "s", source, note
        )
    return out


LOOP_REPLICATES = 100  # simulated agent-loop logs behind the bias correction and the interval
Z99 = 2.3263478740408408


def _loop_estimate(low, mean, high, counts) -> tuple[float, float]:
    from scipy import special

    z = special.ndtri((counts - 0.375) / (counts + 0.25))
    sigma = float(np.log(high / low).sum() / (2 * z.sum()))
    return float(np.log(mean).mean() - sigma * sigma / 2), sigma


def _simulated_loop(rng, mu: float, sigma: float, counts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Min, mean and max per step of ``counts`` lognormal draws."""
    out = np.empty((3, counts.size))
    for i, k in enumerate(counts):
        x = np.exp(rng.normal(mu, sigma, k))
        out[:, i] = x.min(), x.mean(), x.max()
    return out[0], out[1], out[2]


def _generation_throughput(steps, extra, inference_gpus, rng, replicates, figures, notes, source) -> None:
    if extra.response_tokens is None or steps.generation_s is None:
        return
    if inference_gpus is None:
        notes.append(
            f"{extra.name}: tokens/s per inference GPU not measured from the step log: give --inference-gpus N "
            "(the GPUs that generated; the log does not say)"
        )
        return
    ok = np.isfinite(extra.response_tokens) & np.isfinite(steps.generation_s) & (steps.generation_s > 0)
    if ok.sum() < 2:
        return
    num, den = extra.response_tokens[ok], steps.generation_s[ok] * inference_gpus
    figures["generation_tokens_per_gpu_s"] = Figure(
        "generation_tokens_per_gpu_s",
        *_ratio(num, den, rng, replicates),
        int(ok.sum()),
        "tok/s/GPU",
        source,
        f"response tokens / (generation time x {inference_gpus:,.0f} GPUs); a step-level figure, not per trajectory",
    )
