"""Tables for frontier, compare and sweep."""

from __future__ import annotations

from pathlib import Path

from trainground.models.result import STATUSES
from trainground.render.labels import field_label
from trainground.render.tables import fitted, money, render_diagnosis

CORNER_ROWS = 12  # corners a frontier table shows without --all


def shown_corners(corners: list[int], show_all: bool = False, most: int = CORNER_ROWS) -> list[int]:
    """The corners a table prints: all of them, or ``most`` spread evenly from the fastest to the cheapest."""
    if show_all or len(corners) <= most:
        return list(corners)
    picks = sorted({round(i * (len(corners) - 1) / (most - 1)) for i in range(most)})
    return [corners[i] for i in picks]


def _allowance(result, carried: float | None) -> str:
    """A frontier point's run-variance allowance (MODEL §11): from its own replays (marked when they did not
    converge), or the cheapest plan's, carried (marked *)."""
    if result.hold is None:
        return "—" if carried is None else f"{carried:,.0f} s*"
    return f"{result.hold.allowance_s:,.0f} s" + ("" if result.hold.allowance_converged else " ✗")


def render_frontier(console, found, folder: Path, show_all: bool = False) -> None:
    from rich.table import Table

    from trainground.drivers.tradeoffs.frontier import DAY_S, cost_of, pools_of

    pools = pools_of(found)
    pools = pools if len(pools) > 1 else []

    for name, front in found.frontiers.items():
        what = "total cost" if name == "total_cost" else "hourly cost"
        if not front.points:
            none = "no plan found within the time limit" if front.stopped == "time_limit" else "no feasible plan"
            console.print(f"[bold]{found.instance}[/bold]: makespan vs {what}: {none}")
            if front.end is not None and front.end.diagnosis:
                render_diagnosis(console, front.end.diagnosis)
            continue
        fast, cheap = front.fastest.plan, front.cheapest.plan
        console.print(
            f"[bold]{found.instance}[/bold]: makespan vs {what}: {len(front.points):,} non-dominated plans, "
            f"{len(front.corners):,} corners (# 1 the fastest, # {len(front.points)} the cheapest): "
            f"from {money(cost_of(front.cheapest, name))} at {cheap.makespan_s / DAY_S:.3f} d "
            f"to {money(cost_of(front.fastest, name))} at {fast.makespan_s / DAY_S:.3f} d"
        )
        table = Table(box=None, show_edge=False, pad_edge=False, header_style="bold")
        per_day = "$/day saved" if name == "total_cost" else "$/h per day"
        simulated = bool(front.simulations)
        held = front.carried_allowance_s is not None or any(r.hold is not None for r in front.points)
        for col in (
            "#",
            "makespan",
            "cadence",
            "K",
            "inference",
            "training",
            *(f"GPUs in {p}" for p in pools),
            "nodes",
            "VMs",
            "$/hour",
            "total",
            "margin",
            *(("allowance",) if held else ()),
            per_day,
            *(("simulated", "verdict") if simulated else ()),
        ):
            table.add_column(col, justify="left" if col == "verdict" else "right", no_wrap=True)
        shown = set(shown_corners(front.corners, show_all))
        for i, price in zip(front.corners, front.price_of_time()):
            if i not in shown:
                continue
            plan, met = front.points[i].plan, front.points[i].metrics
            used = {p.pool: p.gpus_used for p in plan.pools}
            row = [
                str(i + 1),
                f"{plan.makespan_s / DAY_S:.3f} d",
                f"{plan.cadence_s:g} s",
                str(plan.versions_kept),
                f"{plan.inference_gpus:,}",
                f"{plan.training_gpus:,}",
                *(f"{used.get(p, 0):,}" for p in pools),
                f"{plan.node_count:,}",
                f"{plan.vm_count:,}",
                f"${plan.hourly_cost:,.0f}",
                f"${plan.total_cost:,.0f}",
                f"{met.time_margin:.2%}",
                *((_allowance(front.points[i], front.carried_allowance_s),) if held else ()),
                "—" if price is None else f"${price:,.0f}",
            ]
            if simulated:
                row += _simulated_cells(front.simulations.get(i))
            table.add_row(*row)
        fitted(console, table)
        if front.carried_allowance_s is not None:
            console.print(
                "* the allowance the cheapest plan's replays set, carried by every faster plan (not replayed; "
                "--simulate R replays the corners shown)",
                markup=False,
            )
        if front.stopped == "time_limit":
            console.print(
                f"the time limit ended the walk: faster plans than {fast.makespan_s / DAY_S:.3f} d may exist "
                "(a longer --time-limit walks further)",
                markup=False,
            )
        if front.resolution_s > 0:
            console.print(
                f"points at least {front.resolution_s:,.1f} s of makespan apart (the walk's resolution, each point "
                "exact); --resolution 0 walks every point",
                markup=False,
            )
        if len(shown) < len(front.corners):
            console.print(
                f"{len(shown)} of {len(front.corners)} corners shown (evenly spread, both ends); "
                "--all prints every one",
                markup=False,
            )
    console.print(
        f"{found.solves:,} solves; wrote {folder / 'frontier.csv'}, {folder / 'frontier.json'}, "
        f"{folder / 'frontier.png'}",
        markup=False,
    )


def _simulated_cells(sim: dict | None) -> list[str]:
    """The simulated makespan (days) and the on-time verdict of one plan, or blanks."""
    from trainground.render.simulate import short_verdict

    if sim is None:
        return ["", ""]
    span = sim.get("makespan_s")
    return ["—" if span is None else f"{span / 86400:.3f} d", short_verdict(sim)]


def _figure(value, kind: str) -> str:
    if value is None:
        return "—"
    if kind == "map":
        if len(value) == 1:
            return f"{next(iter(value.values())):,}"
        return ", ".join(f"{k} {v:,}" for k, v in value.items()) or "—"
    if kind == "count":
        return f"{value:,.0f}"
    if kind == "seconds":
        return f"{value:,.6g} s"
    if kind == "days":
        return f"{value / 86400:.3f} d"
    if kind == "share":
        return f"{value * 100:.2f} %"
    if kind == "money":
        return f"${value:,.0f}"
    return f"{value:,.4g}" if abs(value) < 1000 else f"{value:,.0f}"


def render_comparison(console, result) -> None:
    from rich.table import Table

    from trainground.drivers.tradeoffs.compare_columns import ROWS

    console.print(
        f"{result.instance}: fewer cards, or a shorter schedule? "
        f"(baseline {result.baseline_gpus:,} inference GPUs: {result.baseline_source}"
        + (f"; cadence pinned to {result.pinned_cadence:g} s" if result.pinned_cadence else "")
        + ")",
        markup=False,
    )
    if result.mix is not None:
        console.print(
            f"arithmetic columns: inference GPUs of {result.mix.describe()}: "
            f"{result.mix.tokens_per_gpu_s:,.4g} tokens/s/GPU, ${result.mix.gpu_hour_cost:,.4g}/GPU-hour",
            markup=False,
        )
    if result.capacity is not None:
        console.print(
            "a staged instance: the arithmetic columns read the run as one stage (the workload's tokens per "
            "attempt and the environment's lifetimes for every iteration); the plan columns plan its stages",
            markup=False,
        )
    repeats = result.repeats()  # a column holding the plan of an earlier one is not shown twice
    shown = [(n, col) for n, col in enumerate(result.columns, start=1) if col.key not in repeats]
    table = Table(box=None, show_edge=False, pad_edge=False, header_style="bold")
    table.add_column("figure", no_wrap=True)
    for n, col in shown:
        table.add_column(f"({n}) {col.heading}", justify="right")
    table.add_row("status", *("arithmetic ✗" if col.yardstick else col.status for _, col in shown))
    for key, label, kind in ROWS:
        if kind == "map" and key == "inference_by_pool" and all(len(c.figures.get(key) or {}) <= 1 for _, c in shown):
            continue  # one pool: the row would repeat "inference GPUs"
        table.add_row(label, *(_figure(col.figures.get(key), kind) if col.ok else "" for _, col in shown))
    if any(col.simulation for _, col in shown):
        cells = [_simulated_cells(col.simulation) for _, col in shown]
        table.add_row("simulated makespan", *(c[0] for c in cells))
        table.add_row("simulated verdict", *(c[1] for c in cells))
    console.print(table)
    number = {col.key: n for n, col in enumerate(result.columns, start=1)}
    said = {f"({number[same]}) and ({number[key]}) coincide: " for key, same in repeats.items()}
    for n, col in enumerate(result.columns, start=1):
        console.print(f"({n}) {col.title}: {col.note}", markup=False)
        if col.key in repeats:
            same = result.column(repeats[col.key])
            head = f"({number[same.key]}) and ({n}) coincide: "
            why = next((text[len(head) :] for text in result.coincide if text.startswith(head)), "")
            margin = col.figures.get("time_margin")
            other = "" if margin == same.figures.get("time_margin") else f"; its time margin here {margin * 100:.2f} %"
            console.print(
                f"    the plan of ({number[same.key]}), not repeated in the table: {why}{other}", markup=False
            )
        if col.yardstick:
            console.print(f"    ✗ infeasible as a yardstick: {col.yardstick}", markup=False)
    for sentence in result.coincide:
        if not any(sentence.startswith(head) for head in said):
            console.print(sentence, markup=False)
    if result.capacity is not None:
        console.print(result.capacity.sentence(), markup=False)
    console.print("[bold]Against the baseline[/bold] (relative changes; the figures are in the table)")
    for key, line in result.changes().items():
        if key not in repeats:
            console.print(f"({number[key]}) {result.column(key).heading}: {line}", markup=False)


def render_sweep(console, report, files) -> None:
    from rich.table import Table

    table = Table(box=None, show_edge=False, pad_edge=False, header_style="bold")
    table.add_column("#", justify="right", no_wrap=True)
    for axis in report.axes:
        table.add_column(field_label(axis.path, report.names), no_wrap=True)
    pools = report.pools if len(report.pools) > 1 else []
    for col in (
        "status",
        "objective",
        "cadence",
        "K",
        "inference",
        "training",
        *(f"GPUs in {p}" for p in pools),
        "nodes",
        "VMs",
        "margin",
        "exceed.",
        "drop",
    ):
        table.add_column(col, justify="left" if col == "status" else "right", no_wrap=True)
    table.add_column("diagnosis / message", overflow="fold", min_width=20)

    def show(value, fmt: str) -> str:
        return "—" if value is None else format(value, fmt)

    prefix = f"{report.file}: "
    for row in report.rows:
        value = row["objective_value"]
        if value is None:
            shown = "—"
        elif row["objective"] == "makespan":
            shown = f"{value / 86400:.3f} d"
        else:
            shown = f"${value:,.0f}"
        table.add_row(
            str(row["index"]),
            *(row["edits"][a.path] for a in report.axes),
            row["status"],
            shown,
            show(row["cadence_s"], ",.6g"),
            show(row["versions_kept"], "d"),
            show(row["inference_gpus"], ",d"),
            show(row["training_gpus"], ",d"),
            *(show((row.get("pool_gpus") or {}).get(p), ",d") for p in pools),
            show(row["nodes"], ",d"),
            show(row["vms"], ",d"),
            show(row["time_margin"], ".2%"),
            show(row["exceedance"], ".2%"),
            show(row["group_drop_rate"], ".2%"),
            (row["message"] or "").replace(prefix, ""),
        )
    fitted(console, table)
    counts = report.counts
    tally = ", ".join(f"{counts[s]:,} {s}" for s in STATUSES if counts.get(s))
    solved = sum(counts[s] for s in ("optimal", "infeasible", "time_limit"))
    console.print(
        f"{len(report.rows):,} points: {tally}; {report.builds:,} model{'s' if report.builds != 1 else ''} "
        f"built for {solved:,} solved points ({report.workers} worker{'s' if report.workers > 1 else ''}); "
        f"{report.seconds:.1f} s",
        markup=False,
    )
    console.print("wrote " + ", ".join(str(f) for f in files), markup=False)
