"""The regime comparison (MODEL.md §14) as a table, its rows without a plan each with one line, and a plot of cost
against consumed staleness."""

from __future__ import annotations

from trainground.drivers.tradeoffs.regimes import RegimeComparison, RegimeRow
from trainground.render.plots import _figure, _png, money
from trainground.render.tables import fitted

REGIME_PX = (900, 560)
COST = {"total_cost": "total cost", "hourly_cost": "hourly cost", "makespan": "total cost"}


def gaps(row: RegimeRow) -> tuple[float, float] | None:
    """(mean, p99) consumed gap of a row's plan (the driver's: one measure for every row)."""
    return row.consumed if row.ok else None


def cells(row: RegimeRow) -> list[str]:
    """The figures of a row with a plan, in the table's column order."""
    assert row.result is not None and row.result.plan is not None and row.result.metrics is not None
    plan, m = row.result.plan, row.result.metrics
    nodes = sum(n.count for n in plan.local_nodes)
    vms = sum(v.count for v in plan.cloud_vms)
    gap = gaps(row)
    assert gap is not None
    busy = (
        f"{m.generation_busy_share:.1%}"
        if m.generation_busy_share is not None
        else f"{1 / (1 + m.throughput_margin):.1%}"
    )
    peak = m.launch_peak if m.launch_peak is not None else m.inflight_peak
    return [
        f"${plan.total_cost:,.0f}",
        f"{plan.makespan_s / 86400:.3f} d",
        f"{plan.cadence_s:,.6g} s",
        f"{plan.inference_gpus:,} / {plan.training_gpus:,}",
        f"{nodes:,} / {vms:,}",
        f"{peak:,.0f}",
        f"{gap[0]:.2f} / {gap[1]:.2f}",
        busy,
    ]


def render_regimes(console, found: RegimeComparison) -> None:
    from rich.markup import escape
    from rich.table import Table

    inst = found.inst
    console.print(
        f"[bold]{escape(inst.name)}[/bold]: the optimum of each regime under {found.objective.replace('_', ' ')} "
        f"(planning.basis {inst.planning.basis}; one lifetime law and throughput for all, MODEL §14)"
    )
    table = Table(box=None, show_edge=False, pad_edge=False, header_style="bold")
    for name in (
        "regime",
        "total cost",
        "makespan",
        "cadence",
        "GPUs inf / train",
        "nodes / VMs",
        "launch peak",
        "gap mean / p99",
        "gen. busy",
    ):
        table.add_column(name, justify="left" if name == "regime" else "right")
    for i, row in enumerate(found.rows):
        label = f"{row.label} ★" if i == found.best else row.label
        if row.ok:
            table.add_row(escape(label), *cells(row))
        else:
            table.add_row(escape(label), "no plan" if row.refused is None else "not planned", *[""] * 7)
    fitted(console, table)
    if found.best is not None:
        console.print(f"★ the best under {found.objective.replace('_', ' ')}: {escape(found.rows[found.best].label)}")
    else:
        console.print("no regime of the list has a plan")
    for row in found.rows:
        if not row.ok:
            console.print(f"  {escape(row.label)}: {escape(one_line(row.label, row.reason or ''))}")


def one_line(label: str, reason: str) -> str:
    """A reason cut to its first clause (the refusal's name, or the diagnosis's conflict), without the label."""
    reason = reason.split(": `trainground explain`")[0]
    return reason.removeprefix(f"{label}: ").removeprefix(f"{label} is ")


def regimes_png(found: RegimeComparison) -> bytes:
    """Each regime with a plan: its total cost against its consumed mean gap, labelled; the best marked."""
    fig = _figure(REGIME_PX)
    ax = fig.add_subplot(1, 1, 1)
    for i, row in enumerate(found.rows):
        gap = gaps(row)
        if gap is None or row.result is None or row.result.plan is None:
            continue
        cost = row.result.plan.total_cost
        ax.scatter([gap[0]], [cost], marker="*" if i == found.best else "o", s=160 if i == found.best else 60)
        ax.annotate(row.label, (gap[0], cost), textcoords="offset points", xytext=(6, 6), fontsize=9)
    ax.set_xlabel("consumed mean version gap")
    ax.set_ylabel("total cost")
    ax.yaxis.set_major_formatter(money)
    ax.set_title(f"{found.inst.name}: regimes with a plan (★ best under {found.objective.replace('_', ' ')})")
    ax.grid(True, alpha=0.3)
    return _png(fig)


def render_batch_replay(console, report) -> None:
    """`simulate` of a batch or admission run (MODEL §14): each figure of the report's ``rows``, its model value
    beside the replications' mean and p10–p90, then the on-time count and the report's ``note``."""
    from rich.markup import escape
    from rich.table import Table

    from trainground.simulation.batch_report import spread

    inst, sim = report.inst, report.simulated()
    assert inst.regime is not None
    count = len(report.replications)
    console.print(
        f"[bold]{escape(inst.name)}[/bold]: {count} replication{'s' * (count != 1)} of the {escape(inst.regime.label)} "
        f"plan, {report.iterations:,} iterations (seed {report.seed})"
    )
    table = Table(box=None, show_edge=False, pad_edge=False, header_style="bold")
    for name in ("figure", "model", "simulated", "p10 – p90"):
        table.add_column(name, justify="left" if name == "figure" else "right")
    for key, label in report.rows:
        model, mean, band = report.predicted.get(key), sim.get(key), spread(report, key)
        table.add_row(
            label,
            _number(model),
            _number(mean),
            "" if band is None else f"{_number(band[0])} – {_number(band[1])}",
        )
    fitted(console, table)
    console.print(
        f"on time: {report.on_time} of {count} replications finish by the deadline ({report.deadline:,.0f} s); "
        f"{report.note}"
    )


def _number(value) -> str:
    if value is None:
        return "—"
    if abs(value) < 10:
        return f"{value:,.4g}"
    return f"{value:,.1f}"
