"""Plots of the trade-off drivers, drawn headless with matplotlib's Agg canvas and returned as PNG bytes.

matplotlib is imported inside each function, so commands that draw nothing never load
it. Figures have a fixed size in pixels (``*_PX``), so a caller can check what it got.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Sequence

from trainground.drivers.tradeoffs.frontier import DAY_S, Frontiers
from trainground.drivers.tradeoffs.sweep import Axis, SweepReport
from trainground.drivers.tradeoffs.sweep_axes import dimensions
from trainground.render.labels import field_label

DPI = 100
FRONTIER_PX = (1200, 500)
SWEEP_PX = (1200, 760)
HEATMAP_PX = (1200, 900)
GROUPS_IN_LEGEND = 8  # more series than this are drawn alike, without a legend
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")

_LABELS = {"total_cost": "total cost", "hourly_cost": "hourly cost", "makespan": "makespan"}
# What held the frontier's fast end (Frontier.bounded_by), as its label says it.
FAST_END = {
    "grid": "fastest on the cadence grid",
    "budget": "fastest within budget",
    "constraints": "fastest feasible",
    "time_limit": "fastest found (time limit)",
    "error": "fastest found (solver error)",
}


def _figure(size_px: tuple[int, int]):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(size_px[0] / DPI, size_px[1] / DPI), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _png(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI)
    return buffer.getvalue()


def money(value: float, _pos=None) -> str:
    """An axis label in dollars, in thousands (k) or millions (M) to four significant figures: a tick at
    $12,500 reads $12.5k, never a rounded $12k that a tick at $12,000 would share."""
    if abs(value) >= 1e6:
        return f"${value / 1e6:,.4g}M"
    if abs(value) >= 1e4:
        return f"${value / 1e3:,.4g}k"
    return f"${value:,.0f}"


def _exact(value: float) -> str:
    return f"${value / 1e6:,.3f}M" if abs(value) >= 1e6 else f"${value:,.0f}"


# ---------------------------------------------------------------- frontier


def frontier_png(frontiers: Frontiers) -> bytes:
    """Cost against makespan (days), one panel per criterion: the deadline and any budget drawn, the
    cheapest plan within the deadline and the fastest within budget labelled, corners marked."""
    from matplotlib.ticker import FuncFormatter

    fig = _figure(FRONTIER_PX)
    names = list(frontiers.frontiers)
    axes = fig.subplots(1, max(1, len(names)), squeeze=False)[0]
    deadline = frontiers.deadline_s / DAY_S
    for ax, name in zip(axes, names):
        front = frontiers.frontiers[name]
        ax.axvline(deadline, color="tab:red", linestyle="--", linewidth=1.2, label=f"deadline {deadline:g} d")
        budget = frontiers.budgets.get(name)
        if budget is not None:
            ax.axhline(budget, color="tab:purple", linestyle=":", linewidth=1.2, label=f"budget {money(budget)}")
        ax.set_title(f"{frontiers.instance}: makespan vs {_LABELS[name]}", fontsize=11)
        ax.set_xlabel("makespan (days)")
        ax.set_ylabel(_cost_label(name))
        ax.yaxis.set_major_formatter(FuncFormatter(money))
        ax.grid(True, alpha=0.3)
        if not front.points:
            ax.text(0.5, 0.5, "no feasible plan", transform=ax.transAxes, ha="center", va="center")
            ax.legend(loc="upper right", fontsize=8)
            continue
        days = front.makespans / DAY_S
        costs = front.costs
        ax.plot(
            days,
            costs,
            marker="o",
            markersize=3,
            linewidth=0.8,
            color="tab:blue",
            label=f"frontier ({len(days)} plans)",
        )
        corners = front.corners
        ax.plot(
            days[corners],
            costs[corners],
            linestyle="none",
            marker="D",
            markersize=6,
            markerfacecolor="none",
            markeredgecolor="tab:orange",
            label=f"corners ({len(corners)})",
        )
        cheap, fast = len(days) - 1, 0
        _label(
            ax,
            days[cheap],
            costs[cheap],
            "cheapest in deadline\n"
            f"{_exact(costs[cheap])}, {days[cheap]:.3f} d, L={front.points[cheap].plan.cadence_s:g} s"
            + _pool_line(front.points[cheap].plan),
            (-40, -30),
            "right",
        )
        _label(
            ax,
            days[fast],
            costs[fast],
            f"{FAST_END[front.bounded_by]}\n"
            f"{_exact(costs[fast])}, {days[fast]:.3f} d, L={front.points[fast].plan.cadence_s:g} s"
            + _pool_line(front.points[fast].plan),
            (40, 10),
            "left",
        )
        low, high = min(days.min(), deadline), max(days.max(), deadline)
        pad = max(0.04 * (high - low), 0.05)
        ax.set_xlim(low - pad, high + pad)
        span = costs.max() - costs.min() or abs(costs.max()) * 0.05 or 1.0
        ax.set_ylim(costs.min() - 0.25 * span, costs.max() + 0.35 * span)
        ax.legend(loc="upper right", fontsize=8)
    return _png(fig)


def _pool_line(plan) -> str:
    """The GPUs a plan uses in each pool, as a label's last line (nothing for a single pool)."""
    if len(plan.pools) < 2:
        return ""
    return "\nGPUs: " + ", ".join(f"{p.pool} {p.gpus_used:,}" for p in plan.pools)


def _label(ax, x: float, y: float, text: str, offset: tuple[int, int], align: str) -> None:
    ax.annotate(
        text,
        (x, y),
        xytext=offset,
        textcoords="offset points",
        ha=align,
        fontsize=8,
        arrowprops={"arrowstyle": "->", "color": "0.3", "linewidth": 0.8},
        bbox={"boxstyle": "round,pad=0.3", "facecolor": "white", "edgecolor": "0.6", "alpha": 0.9},
    )
    ax.plot([x], [y], marker="o", markersize=7, color="tab:green", zorder=5)


# ---------------------------------------------------------------- sweep

PANELS = (  # (row key, panel title; None: the objective's own)
    ("objective_value", None),
    ("cadence_s", "cadence (s)"),
    ("inference_gpus", "inference GPUs"),
    ("training_gpus", "training GPUs"),
    ("nodes", "sandbox nodes"),
    ("vms", "cloud VMs"),
)


def _value(row: dict, key: str):
    """A row's value for a panel key; ``pool:NAME`` is the GPUs the plan uses in that pool."""
    if key.startswith("pool:"):
        return (row.get("pool_gpus") or {}).get(key[5:])
    return row[key]


def sweep_panels(report: SweepReport, panels=PANELS) -> list[tuple[str, str | None]]:
    """The panels worth drawing: ``panels`` plus the GPUs of each pool when there are several, less
    every panel (but the objective's) whose values are all zero or missing."""
    pools = report.pools
    extra = [(f"pool:{p}", f"GPUs used in pool {p}") for p in pools] if len(pools) > 1 else []
    out = []
    for key, title in [*panels, *extra]:
        values = [_value(row, key) for row in report.rows]
        if key == "objective_value" or any(v not in (None, 0) for v in values):
            out.append((key, title))
    return out


def _grid(fig, count: int, columns: int):
    """``count`` axes on a grid ``columns`` wide, the unused cells removed."""
    columns = max(1, min(columns, count))
    rows = math.ceil(count / columns)
    cells = fig.subplots(rows, columns, squeeze=False).ravel()
    for ax in cells[count:]:
        ax.remove()
    return list(cells[:count]), columns


def slug(path: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", path).strip("-").lower()


def _cost_label(name: str) -> str:
    return _LABELS.get(name, name) + (" ($/h)" if name == "hourly_cost" else " ($)")


def _objective_title(report: SweepReport) -> tuple[str, float, bool]:
    """The objective's axis title, the scale of its values and whether they are money."""
    objective = report.objective or next((r["objective"] for r in report.rows if r["objective"]), "total_cost")
    if objective == "makespan":
        return "makespan (days)", 1.0 / DAY_S, False
    return _cost_label(objective), 1.0, True


def _positions(axis: Axis) -> tuple[list[float], bool]:
    return (axis.numbers(), True) if axis.numeric else (list(range(len(axis.texts))), False)


def sweep_pngs(report: SweepReport) -> dict[str, bytes]:
    """One figure per swept path (objective and key decisions against it) and, for two, a heatmap.

    Paths given a single value are plain edits: they get no figure of their own. Zipped paths
    vary together: they are one factor of the product, so a heatmap takes one of them.
    """
    varying = [i for i, axis in enumerate(report.axes) if len(axis.texts) > 1]
    out = {f"sweep-{slug(report.axes[i].path)}.png": _axis_png(report, i, varying) for i in varying}
    dims = dimensions(report.axes)
    first_of: dict[int, int] = {}
    for i in varying:
        first_of.setdefault(dims[i], i)
    if len(first_of) == 2:
        out["sweep-heatmap.png"] = _heatmap_png(report, *(report.axes[i] for i in first_of.values()))
    return out


def _axis_png(report: SweepReport, k: int, varying: list[int]) -> bytes:
    axis = report.axes[k]
    xs, numeric = _positions(axis)
    where = {text: x for text, x in zip(axis.texts, xs)}
    dims = dimensions(report.axes)
    others = [i for i in varying if dims[i] != dims[k]]  # a zipped partner moves with this axis
    groups: dict[tuple[str, ...], list[dict]] = {}
    for row in report.rows:
        key = tuple(row["edits"][report.axes[i].path] for i in others)
        groups.setdefault(key, []).append(row)
    legend = 1 < len(groups) <= GROUPS_IN_LEGEND
    objective_title, objective_scale, objective_money = _objective_title(report)
    fig = _figure(SWEEP_PX)
    shown = sweep_panels(report)
    panels, columns = _grid(fig, len(shown), 3)
    for ax, (key, title) in zip(panels, shown):
        scale = objective_scale if key == "objective_value" else 1.0
        ax.set_title(title or objective_title, fontsize=10)
        ax.grid(True, alpha=0.3)
        for n, (group, rows) in enumerate(groups.items()):
            pts = sorted(
                (where[r["edits"][axis.path]], _value(r, key) * scale if _value(r, key) is not None else math.nan)
                for r in rows
            )
            label = ", ".join(f"{field_label(report.axes[i].path, report.names)} = {v}" for i, v in zip(others, group))
            if legend:  # distinct, shrinking markers: series that coincide stay visible under each other
                style = {
                    "color": f"C{n % 10}",
                    "marker": MARKERS[n % len(MARKERS)],
                    "markersize": max(3.0, 8.0 - 1.5 * n),
                    "markerfacecolor": "none",
                }
            elif len(groups) == 1:
                style = {"color": "tab:blue", "marker": "o", "markersize": 3}
            else:
                style = {"color": "tab:blue", "alpha": 0.35, "marker": "o", "markersize": 2}
            if len(pts) >= 60:
                style["markersize"] = 0
            ax.plot([p[0] for p in pts], [p[1] for p in pts], linewidth=1.0, label=label if legend else None, **style)
        if key == "objective_value":
            _mark_failures(ax, report.rows, axis.path, where)
        if key == "objective_value" and objective_money:
            from matplotlib.ticker import FuncFormatter

            ax.yaxis.set_major_formatter(FuncFormatter(money))
        if legend and key == "objective_value":
            ax.legend(fontsize=7, loc="best")
    for ax in panels[-columns:]:
        ax.set_xlabel(field_label(axis.path, report.names))
    for ax in panels:
        if not numeric:
            ax.set_xticks(xs, list(axis.texts), rotation=30 if len(xs) > 6 else 0)
    counts = report.counts
    failed = ", ".join(f"{counts[s]} {s}" for s in ("infeasible", "invalid", "error", "time_limit") if counts.get(s))
    fig.suptitle(
        f"{report.instance}: sweep over {field_label(axis.path, report.names)} ({len(report.rows)} points"
        + (f"; {failed}" if failed else "")
        + ")",
        fontsize=11,
    )
    return _png(fig)


def _mark_failures(ax, rows: Sequence[dict], path: str, where: dict) -> None:
    """Infeasible and invalid points as crosses along the bottom of the objective panel."""
    transform = ax.get_xaxis_transform()
    for status, color in (("infeasible", "tab:red"), ("invalid", "0.5"), ("error", "black")):
        xs = [where[r["edits"][path]] for r in rows if r["status"] == status]
        if xs:
            ax.plot(
                xs,
                [0.03] * len(xs),
                linestyle="none",
                marker="x",
                color=color,
                transform=transform,
                label=status,
                clip_on=False,
            )


def _heatmap_png(report: SweepReport, first: Axis, second: Axis) -> bytes:
    import matplotlib
    import numpy as np
    from matplotlib.ticker import FuncFormatter

    index = {(r["edits"][first.path], r["edits"][second.path]): r for r in report.rows}
    objective_title, objective_scale, objective_money = _objective_title(report)
    fig = _figure(HEATMAP_PX)
    chosen = sweep_panels(
        report,
        (
            ("objective_value", objective_title),
            ("cadence_s", "cadence (s)"),
            ("inference_gpus", "inference GPUs"),
            ("nodes", "sandbox nodes"),
        ),
    )
    panels, _ = _grid(fig, len(chosen), 2 if len(chosen) <= 4 else 3)
    for ax, (key, title) in zip(panels, chosen):
        scale = objective_scale if key == "objective_value" else 1.0
        grid = np.full((len(first.texts), len(second.texts)), np.nan)
        for i, a in enumerate(first.texts):
            for j, b in enumerate(second.texts):
                value = _value(index[(a, b)], key)
                if value is not None:
                    grid[i, j] = value * scale
        masked = np.ma.masked_invalid(grid)
        cmap = matplotlib.colormaps["viridis"].with_extremes(bad="0.85")
        image = ax.imshow(masked, origin="lower", aspect="auto", cmap=cmap, interpolation="nearest")
        in_money = key == "objective_value" and objective_money
        fig.colorbar(image, ax=ax, shrink=0.9, format=FuncFormatter(money) if in_money else None)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel(field_label(second.path, report.names), fontsize=8)
        ax.set_ylabel(field_label(first.path, report.names), fontsize=8)
        _ticks(ax.set_xticks, second.texts)
        _ticks(ax.set_yticks, first.texts)
        if grid.size <= 144:
            finite = grid[np.isfinite(grid)]
            middle = (finite.min() + finite.max()) / 2 if finite.size else 0.0
            for i, a in enumerate(first.texts):
                for j, b in enumerate(second.texts):
                    value = grid[i, j]
                    if math.isnan(value):
                        text, color = index[(a, b)]["status"], "black"
                    else:
                        text = _short(value, key)
                        color = "black" if value > middle else "white"
                    ax.text(j, i, text, ha="center", va="center", fontsize=8, color=color)
    fig.suptitle(
        f"{report.instance}: {field_label(first.path, report.names)} × "
        f"{field_label(second.path, report.names)} ({len(report.rows)} points)",
        fontsize=11,
    )
    return _png(fig)


def _ticks(setter, texts: Sequence[str]) -> None:
    step = max(1, math.ceil(len(texts) / 12))
    positions = list(range(0, len(texts), step))
    setter(positions, [texts[i] for i in positions], fontsize=8)


def _short(value: float, key: str) -> str:
    if key == "objective_value" and abs(value) >= 1e4:
        return money(value)
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.3g}" if abs(value) < 100 else f"{value:,.0f}"
