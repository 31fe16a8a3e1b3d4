"""Figures a framework's step log holds beyond the update law and the cadence: weight-sync time per version,
checkpoint time per save, validation time per pass (each its own term, out of the cadence), the trainer's
wait for rollouts, the version gap's mean from staleness counters, and tokens/s per inference GPU from the
response tokens and the generation time of each step. Each figure's source names the keys it comes from.
Intervals resample steps (200 replicates, percentile); a figure of one row has none."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from trainground.calibrate.figures import Figure, percentile_interval, resample
from trainground.calibrate.logs import Steps
from trainground.calibrate.stepreader import FrameworkSteps


def _median(values: np.ndarray, rng, replicates: int) -> tuple[float, float | None, float | None]:
    if values.size < 2:
        return float(np.median(values)), None, None
    draws = resample(rng, values.size, replicates)
    boot = [np.median(np.repeat(values, d.astype(int))) for d in draws]
    lo, hi = percentile_interval(np.array(boot))
    return float(np.median(values)), lo, hi


def _ratio(num: np.ndarray, den: np.ndarray, rng, replicates: int) -> tuple[float, float | None, float | None]:
    if num.size < 2:
        return float(num.sum() / den.sum()), None, None
    w = resample(rng, num.size, replicates)
    lo, hi = percentile_interval((w @ num) / (w @ den))
    return float(num.sum() / den.sum()), lo, hi


def step_figures(
    steps: Steps,
    extra: FrameworkSteps,
    inference_gpus: float | np.ndarray | None,
    rng: np.random.Generator,
    replicates: int,
    per_trajectory: bool = True,
    gpus_from: str = "",
) -> tuple[dict[str, Figure], list[str]]:
    """The figures and the notes on what could not be measured. ``per_trajectory``: a trajectory log gives
    the lifetime law (the agent loop's is shown beside it); else the agent loop's is the law written.
    ``inference_gpus``: a count, or one per step; ``gpus_from``: where it came from when it is not
    --inference-gpus. Each figure's source
    names the keys it comes from; a figure of one row has no interval."""
    figures: dict[str, Figure] = {}
    notes: list[str] = []
    name = Path(steps.file).name
    terms = extra.terms
    if extra.weight_sync_s is not None:
        sync = extra.weight_sync_s[np.isfinite(extra.weight_sync_s) & (extra.weight_sync_s > 0)]
        if sync.size:
            figures["weight_sync_s"] = Figure(
                "weight_sync_s",
                *_median(sync, rng, replicates),
                sync.size,
                "s",
                f"{name}: {' + '.join(terms.sync)}",
                "median per published version; its own term, out of the cadence",
            )
    for key, what, seconds, keys in (
        ("checkpoint_s", "save", extra.checkpoint_s, terms.checkpoint),
        ("validation_s", "validation pass", extra.validation_s, terms.validation),
    ):
        figure = _stall(key, what, seconds, keys, steps.iteration, name, rng, replicates)
        if figure is not None:
            figures[key] = figure
    if extra.wait_s is not None and steps.step_s is not None:
        ok = np.isfinite(extra.wait_s) & np.isfinite(extra.logged_step) & (extra.logged_step > 0)
        if ok.sum():
            figures["trainer_wait_share"] = Figure(
                "trainer_wait_share",
                *_ratio(extra.wait_s[ok], extra.logged_step[ok], rng, replicates),
                int(ok.sum()),
                "share",
                f"{name}: {' + '.join(terms.wait)} / {extra.step_keys[0] if extra.step_keys else 'step'}",
                "share of step time the trainer waited for rollouts",
            )
    if extra.staleness_mean is not None and np.isfinite(extra.staleness_mean).sum():
        gaps = extra.staleness_mean[np.isfinite(extra.staleness_mean)]
        w = resample(rng, gaps.size, replicates)
        lo, hi = percentile_interval(w @ gaps / gaps.size) if gaps.size > 1 else (None, None)
        figures["version_gap_mean"] = Figure(
            "version_gap_mean",
            float(gaps.mean()),
            lo,
            hi,
            gaps.size,
            "versions",
            f"{name}: staleness/mean",
            "mean of staleness/mean",
        )
    if extra.trainer == "fully_async":
        _window_throughput(steps, extra, inference_gpus, rng, replicates, figures, notes, name)
    else:
        _generation_throughput(steps, extra, inference_gpus, rng, replicates, figures, notes, name, gpus_from)
    loop = agent_loop_lifetimes(extra, rng, replicates, f"{steps.file} ({extra.name})")
    if loop:
        notes.append(_loop_note(extra.name, loop, per_trajectory))
    figures |= loop
    return figures, notes


def stall_steps(seconds: np.ndarray | None, iteration: np.ndarray) -> tuple[np.ndarray, float]:
    """The rows that had a save (or a validation pass), and how many steps apart they came: the median
    difference of their step numbers (NaN with fewer than two)."""
    if seconds is None:
        return np.array([], dtype=int), float("nan")
    had = np.flatnonzero(np.nan_to_num(seconds) > 0)
    return had, float(np.median(np.diff(iteration[had]))) if had.size >= 2 else float("nan")


def _stall(key, what, seconds, keys, iteration, name, rng, replicates) -> Figure | None:
    """Median seconds per save (or validation pass) over the steps that had one, and how often they came."""
    had, every = stall_steps(seconds, iteration)
    if not had.size:
        return None
    values = seconds[had]
    value, lo, hi = _median(values, rng, replicates)
    how = f"a {what} every {every:g} steps" if had.size >= 2 else f"one {what} in the log"
    return Figure(
        key,
        value,
        lo,
        hi,
        had.size,
        "s",
        f"{name}: {' + '.join(keys)}",
        f"median per {what}; {how}; its own term",
        every=every if np.isfinite(every) else None,
    )


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


def _generation_throughput(steps, extra, inference_gpus, rng, replicates, figures, notes, name, gpus_from) -> None:
    """Response tokens per second per generating GPU over each step's generation phase (never a window, so
    never one holding a save or a validation; verl's one-step-off trainer: the batch's own generation, beside
    the step). slime logs the rate with its own GPU count; verl's needs the generating GPUs (--inference-gpus,
    or every GPU of a colocated run)."""
    gen = steps.generation_s
    if extra.rate is not None and gen is not None:
        ok = np.isfinite(extra.rate) & np.isfinite(gen) & (gen > 0)
        if ok.sum():
            figures["generation_tokens_per_gpu_s"] = Figure(
                "generation_tokens_per_gpu_s",
                *_ratio(extra.rate[ok] * gen[ok], gen[ok], rng, replicates),
                int(ok.sum()),
                "tok/s/GPU",
                f"{name}: {extra.token_keys[0]} weighted by {' + '.join(extra.terms.generation)}",
                "response tokens / (rollout time x the rollout GPUs slime counted); generation phase only",
            )
        return
    if extra.response_tokens is None or gen is None:
        if extra.name == "areal":
            notes.append(
                "AReaL: tokens/s per GPU not measured: timeperf/rollout is the trainer's wait for a batch, not a "
                "generation time (its rollouts run beside training)"
            )
        return
    if inference_gpus is None:
        notes.append(
            f"{extra.name}: tokens/s per inference GPU not measured from the step log: give --inference-gpus N "
            "(the GPUs that generated; the log does not say)"
        )
        return
    gpus = np.broadcast_to(np.asarray(inference_gpus, dtype=float), gen.shape)
    ok = np.isfinite(extra.response_tokens) & np.isfinite(gen) & (gen > 0) & np.isfinite(gpus) & (gpus > 0)
    if not ok.sum():
        return
    num, den = extra.response_tokens[ok], gen[ok] * gpus[ok]
    keys = extra.terms.generation or extra.terms.overlapped
    counts = np.unique(gpus[ok])
    count = f"{counts[0]:,.0f}" if counts.size == 1 else f"{', '.join(f'{c:,.0f}' for c in counts[:6])} (per step)"
    figures["generation_tokens_per_gpu_s"] = Figure(
        "generation_tokens_per_gpu_s",
        *_ratio(num, den, rng, replicates),
        int(ok.sum()),
        "tok/s/GPU",
        f"{name}: {', '.join(extra.token_keys)}, {' + '.join(keys)}",
        f"response tokens / (generation time x {count} GPUs{gpus_from}); "
        + (
            "each batch's own generation, beside the step"
            if extra.terms.overlapped
            else "generation phase of each step"
        ),
    )


def _window_throughput(steps, extra, inference_gpus, rng, replicates, figures, notes, name) -> None:
    """verl's fully-async trainer: rollouts run beside training, so a step holds no generation phase; response
    tokens per second per rollout GPU over the steps' time (less the weight sync), the steps with a save or a
    validation left out (a stall is never in the window)."""
    if extra.response_tokens is None or steps.step_s is None:
        return
    if inference_gpus is None:
        notes.append(
            f"{extra.name}: tokens/s per rollout GPU not measured from the step log: give --inference-gpus N (the "
            "rollout GPUs; the log does not say)"
        )
        return
    stalled = np.zeros(steps.rows, bool)
    for seconds in (extra.checkpoint_s, extra.validation_s):
        if seconds is not None:
            stalled |= np.nan_to_num(seconds) > 0
    ok = np.isfinite(extra.response_tokens) & np.isfinite(steps.step_s) & (steps.step_s > 0) & ~stalled
    if not ok.sum():
        return
    figures["generation_tokens_per_gpu_s"] = Figure(
        "generation_tokens_per_gpu_s",
        *_ratio(extra.response_tokens[ok], steps.step_s[ok] * inference_gpus, rng, replicates),
        int(ok.sum()),
        "tok/s/GPU",
        f"{name}: {', '.join(extra.token_keys)}, {steps.step_source}",
        f"response tokens / (step time x {inference_gpus:,.0f} rollout GPUs): rollouts run beside training, over "
        f"the steps' time; {int(stalled.sum()):,} steps with a save or a validation left out",
    )
