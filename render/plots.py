"""Plots of the trade-off drivers, drawn headless with matplotlib's Agg canvas and returned as PNG bytes (the
sweep's are render.sweep_plots's).

matplotlib is imported inside each function, so commands that draw nothing never load
it. Figures have a fixed size in pixels (``*_PX``), so a caller can check what it got.
"""

from __future__ import annotations

import io

from trainground.drivers.tradeoffs.frontier import DAY_S, Frontiers

DPI = 100
FRONTIER_PX = (1200, 500)

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


def _cost_label(name: str) -> str:
    return _LABELS.get(name, name) + (" ($/h)" if name == "hourly_cost" else " ($)")
