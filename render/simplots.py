"""Plots of `simulate`, drawn headless with matplotlib's Agg canvas and returned as PNG bytes
(the conventions of :mod:`render.plots`: matplotlib imported inside each function, fixed sizes)."""

from __future__ import annotations

from trainground.render.plots import _figure, _png
from trainground.simulation.report import Report

INFLIGHT_PX = (1200, 520)
ITERATIONS_PX = (1200, 460)
GAPS_PX = (1000, 460)
HOUR = 3600.0


def simulation_pngs(report: Report) -> dict[str, bytes]:
    """The three figures by file name: in-flight over time, iteration durations, version-gap histogram."""
    return {
        "simulate-inflight.png": inflight_png(report),
        "simulate-iterations.png": iterations_png(report),
        "simulate-version-gaps.png": gaps_png(report),
    }


def inflight_png(report: Report) -> bytes:
    """In-flight sandboxes over the run (max and mean of each time bucket), one panel per backend, against
    the local sandboxes, local plus cloud, and the model's mean (Little's law)."""
    series = report.series["inflight"]
    names = list(series["max"])
    fig = _figure(INFLIGHT_PX)
    axes = fig.subplots(1, len(names), squeeze=False)[0]
    hours = [t / HOUR for t in series["time_s"]]
    shares = report.series["shares"]
    for ax, name in zip(axes, names):
        ax.plot(hours, series["max"][name], color="tab:blue", linewidth=0.7, label="simulated (max per bucket)")
        ax.plot(
            hours, series["mean"][name], color="tab:cyan", linewidth=0.7, alpha=0.8, label="simulated (mean per bucket)"
        )
        local = report.series["local"][name]
        total = report.series["capacity"][name]
        ax.axhline(local, color="tab:red", linestyle="--", linewidth=1.0, label=f"local sandboxes {local:,.0f}")
        if total > local:
            ax.axhline(total, color="tab:purple", linestyle=":", linewidth=1.0, label=f"local + cloud {total:,.0f}")
        model = report.predicted["inflight_mean"] * shares.get(name, 1.0)
        ax.axhline(model, color="tab:green", linewidth=1.0, label=f"model mean (Little) {model:,.0f}")
        startup = report.series.get("startup_s")
        if startup is not None:
            ax.axvline(startup / HOUR, color="0.5", linewidth=0.8, linestyle="-.", label="first batch")
        ax.set_title(f"{report.instance}: in-flight sandboxes, {name}", fontsize=11)
        ax.set_xlabel("hours from the start")
        ax.set_ylabel("attempts holding a sandbox")
        ax.grid(True, alpha=0.3)
        ax.legend(loc="lower right", fontsize=8)
    return _png(fig)


def iterations_png(report: Report) -> bytes:
    """Each iteration's duration (b_j - b_{j-1}) against the cadence and the update time."""
    steps = report.series["iterations_s"]
    fig = _figure(ITERATIONS_PX)
    ax = fig.subplots()
    ax.plot(
        range(1, len(steps) + 1),
        steps,
        color="tab:blue",
        linewidth=0.7,
        marker="o",
        markersize=1.5,
        label="simulated iteration",
    )
    L = report.plan["cadence_s"]
    ax.axhline(L, color="tab:green", linewidth=1.0, label=f"cadence L = {L:g} s")
    update = report.predicted.get("update_time_s")
    if update is not None:
        ax.axhline(update, color="tab:red", linestyle="--", linewidth=1.0, label=f"update time U = {update:,.1f} s")
    mean = report.simulated.get("iteration_mean_s")
    if mean is not None:
        ax.axhline(mean, color="tab:orange", linestyle=":", linewidth=1.0, label=f"simulated mean {mean:,.1f} s")
    ax.set_title(f"{report.instance}: iteration durations (replication 0)", fontsize=11)
    ax.set_xlabel("iteration j")
    ax.set_ylabel("b_j - b_(j-1) (s)")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper right", fontsize=8)
    return _png(fig)


def gaps_png(report: Report) -> bytes:
    """Version gaps of consumed trajectories (simulated) against each trajectory's own gap in the model."""
    sim = {int(k): v for k, v in (report.simulated.get("version_gap_histogram") or {}).items()}
    model = {int(k): v for k, v in report.series.get("model_gap_histogram", {}).items()}
    fig = _figure(GAPS_PX)
    ax = fig.subplots()
    if sim:
        ax.bar(
            list(sim),
            list(sim.values()),
            width=0.6,
            color="tab:blue",
            alpha=0.7,
            label="simulated: consumed trajectories",
        )
    if model:
        ax.plot(
            list(model),
            list(model.values()),
            color="tab:green",
            marker="o",
            markersize=4,
            linewidth=1.0,
            label="model: each trajectory's own gap (no drops)",
        )
    K = report.plan.get("age_limit") or report.plan["versions_kept"]  # in-flight updates: K is the age limit
    ax.axvline(K + 0.5, color="tab:red", linestyle="--", linewidth=1.0, label=f"version cap K = {K}")
    ax.set_title(f"{report.instance}: version gaps", fontsize=11)
    ax.set_xlabel("version gap")
    ax.set_ylabel("share of trajectories")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper right", fontsize=8)
    return _png(fig)
