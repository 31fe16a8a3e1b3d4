"""What a person reads after `risk` (MODEL.md §9): the on-time probability, the spread of makespan and
cost, which factor matters, and the simulator's replays beside the analysis; the two plots."""

from __future__ import annotations

import math

import numpy as np

from trainground.drivers.risk import Risk, replay_summary, spread
from trainground.render.plots import _figure, _png
from trainground.render.simulate import duration
from trainground.render.tables import fitted, money

HOUR = 3600.0
HISTOGRAM_PX = (1100, 480)
TORNADO_PX = (1100, 420)


def _span(seconds: float) -> str:
    """A makespan or a swing as a person reads it; ∞ where no cadence works (the scenario never finishes)."""
    return duration(seconds) if math.isfinite(seconds) else "∞"


def _plan_line(risk: Risk) -> str:
    p = risk.plan
    shapes = ", ".join(f"{r.replicas:,} {r.shape}" for r in p.inference if r.replicas)
    hosts = ", ".join(f"{c.count:,} {c.type}" for c in p.local_nodes + p.cloud_vms if c.count)
    return (
        f"plan: cadence {p.cadence_s:g} s, K = {p.age_limit or p.versions_kept}, {shapes} replicas, {p.training_groups} training "
        f"groups, {hosts or 'no hosts'}; {money(p.hourly_cost)}/h, {money(p.total_cost)} planned"
    )


def _time(seconds: float) -> str:
    return "never (no cadence works)" if not math.isfinite(seconds) else f"{seconds:,.0f} s ({duration(seconds)})"


def render_risk(console, risk: Risk) -> None:
    from rich.table import Table

    lo, hi = risk.on_time_interval
    console.print(f"{risk.instance}: {risk.samples:,} scenarios (seed {risk.seed}), deadline {_time(risk.deadline_s)}")
    console.print(_plan_line(risk))
    summary = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    for column, justify in (
        ("figure", "left"),
        ("mean", "right"),
        ("p50", "right"),
        ("p90", "right"),
        ("p99", "right"),
    ):
        summary.add_column(column, justify=justify)
    span, cost = spread(risk.outcome.makespan), spread(risk.outcome.total_cost)
    summary.add_row(
        "makespan", *(duration(span[k]) if math.isfinite(span[k]) else "∞" for k in ("mean", "p50", "p90", "p99"))
    )
    summary.add_row(
        "total cost", *(money(cost[k]) if math.isfinite(cost[k]) else "∞" for k in ("mean", "p50", "p90", "p99"))
    )
    fitted(console, summary)
    allowance = risk.outcome.allowance
    held = f" with the plan's run-variance allowance of {allowance:,.0f} s (docs/model.md §11)" if allowance else ""
    lateness = risk.outcome.lateness
    never = int(np.count_nonzero(~np.isfinite(lateness)))
    late = (
        f"expected lateness {duration(float(np.mean(lateness)))}"
        if not never
        else f"{never:,} scenario(s) never finish (no cadence holds their rows with the plan's capacity), expected "
        f"lateness of the others {duration(float(np.mean(lateness[np.isfinite(lateness)])) if never < lateness.size else 0.0)}"
    )
    console.print(
        f"on time{held}: {risk.on_time_probability:.2%} of scenarios (95 % Wilson interval {lo:.2%} – {hi:.2%}); {late}"
    )
    _render_factors(console, risk)
    if risk.replays:
        _render_replays(console, risk)


def _render_factors(console, risk: Risk) -> None:
    from rich.table import Table

    table = Table(
        title="one at a time: this factor at its p10 / p90, the others at their median",
        title_justify="left",
        header_style="bold",
        box=None,
        pad_edge=False,
    )
    for column in (
        "factor",
        "p10 / p90 multiplier",
        "makespan at p10",
        "makespan at p90",
        "on time p10 / p90",
        "swing",
    ):
        table.add_column(column, justify="left" if column == "factor" else "right")
    ordered = sorted(risk.factors, key=lambda f: -f.swing_s if math.isfinite(f.swing_s) else -math.inf)
    for f in ordered:
        table.add_row(
            f.name,
            f"{f.low:.3f} / {f.high:.3f}",
            _span(f.makespan_s_low),
            _span(f.makespan_s_high),
            f"{'yes' if f.on_time_low else 'no'} / {'yes' if f.on_time_high else 'no'}",
            duration(f.swing_s) if math.isfinite(f.swing_s) else "∞",
        )
    fitted(console, table)
    if ordered and ordered[0].swing_s > 0:
        console.print(
            f"{ordered[0].name} moves the makespan most ({_span(ordered[0].swing_s)} between its "
            f"p10 and p90); with every factor at its median the plan takes {_span(risk.median_makespan_s)}."
        )


def _render_replays(console, risk: Risk) -> None:
    from rich.table import Table

    iterations = risk.replays[0]["iterations"]
    table = Table(
        title=f"replayed by the simulator (docs/model.md §10) beside the analysis: {iterations:,} iterations, "
        "the deadline pro rata",
        title_justify="left",
        header_style="bold",
        box=None,
        pad_edge=False,
    )
    for column in ("scenario", "multipliers", "analytic makespan", "on time", "simulated makespan", "on time"):
        table.add_column(column, justify="left" if column in ("scenario", "multipliers") else "right")
    for row in risk.replays:
        draws = ", ".join(f"{k} {v:.3f}" for k, v in row["draws"].items())
        simulated = row["simulated_makespan_s"]
        table.add_row(
            str(row["scenario"]),
            draws,
            duration(row["analytic_makespan_s"]),
            "yes" if row["analytic_on_time"] else "no",
            duration(simulated) if simulated is not None else row.get("skipped", "did not finish"),
            "—" if row["simulated_on_time"] is None else "yes" if row["simulated_on_time"] else "no",
        )
    fitted(console, table)
    s = replay_summary(risk.replays)
    if s["replayed"]:
        console.print(
            f"on time in the {s['replayed']} replayed scenarios: analytic {s['analytic_on_time_share']:.0%}, "
            f"simulated {s['simulated_on_time_share']:.0%}; verdicts differ in {s['disagree']}. The simulation "
            "launches at the plan's attempt rate at its realised cadence and adds what the analysis averages "
            "away: the start-up, the last update, sandbox queues and stale groups as they fall."
        )


def risk_pngs(risk: Risk) -> dict[str, bytes]:
    return {"risk-makespan.png": makespan_png(risk), "risk-tornado.png": tornado_png(risk)}


def makespan_png(risk: Risk) -> bytes:
    """Histogram of the realised makespan over the scenarios, the deadline drawn."""
    fig = _figure(HISTOGRAM_PX)
    ax = fig.subplots()
    span = risk.outcome.makespan / HOUR
    deadline = risk.deadline_s / HOUR
    finite = span[np.isfinite(span)]
    top = deadline * 1.1  # the axis: to the p99.5, but not past 3 × the median (clipped draws run to absurd spans)
    if finite.size:
        top = max(min(float(np.quantile(finite, 0.995)), 3 * float(np.median(finite))), deadline) * 1.02
    shown = span[span <= top]
    if shown.size:
        ax.hist(shown, bins=60, color="tab:blue", alpha=0.8)
    ax.axvline(deadline, color="tab:red", linewidth=1.5, label=f"deadline {deadline:,.1f} h")
    if shown.size < span.size:
        ax.plot([], [], " ", label=f"{span.size - shown.size:,} scenarios beyond {top:,.0f} h (not drawn)")
    lo, hi = risk.on_time_interval
    ax.set_title(
        f"{risk.instance}: realised makespan over {risk.samples:,} scenarios — on time "
        f"{risk.on_time_probability:.1%} (95 % CI {lo:.1%}–{hi:.1%})",
        fontsize=11,
    )
    ax.set_xlabel("makespan (hours)")
    ax.set_ylabel("scenarios")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper right", fontsize=9)
    return _png(fig)


def tornado_png(risk: Risk) -> bytes:
    """Each factor's makespan at its p10 and p90 multiplier (others at their median), widest on top."""
    fig = _figure(TORNADO_PX)
    ax = fig.subplots()
    factors = sorted(risk.factors, key=lambda f: f.swing_s if math.isfinite(f.swing_s) else math.inf)
    base = risk.median_makespan_s / HOUR
    for y, f in enumerate(factors):
        for value, color, label in (
            (f.makespan_s_low, "tab:green", "p10 multiplier"),
            (f.makespan_s_high, "tab:orange", "p90 multiplier"),
        ):
            hours = value / HOUR if math.isfinite(value) else base
            ax.barh(y, hours - base, left=base, color=color, alpha=0.85, label=label if y == 0 else None)
    ax.axvline(base, color="0.3", linewidth=1.0, label=f"all at median {base:,.1f} h")
    ax.axvline(
        risk.deadline_s / HOUR,
        color="tab:red",
        linewidth=1.2,
        linestyle="--",
        label=f"deadline {risk.deadline_s / HOUR:,.1f} h",
    )
    ax.set_yticks(range(len(factors)), [f"{f.name} ({f.low:.2f}–{f.high:.2f})" for f in factors])
    ax.set_xlabel("makespan (hours)")
    ax.set_title(f"{risk.instance}: which uncertainty moves the makespan (one factor at a time)", fontsize=11)
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    return _png(fig)
