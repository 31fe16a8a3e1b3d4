"""The plots of a sweep, drawn headless like render.plots's and returned as PNG bytes: one figure per swept
path (the objective and key decisions against it, a series per combination of the other paths' values) and,
over two dimensions, a heatmap; over three, heatmaps of the first two faceted by the third.

Over two other dimensions a series' colour is its value of the first and its marker and line style its value of
the second, each dimension with a legend of its own, so that any number of series up to 8 × 8 reads apart.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from trainground.drivers.tradeoffs.frontier import DAY_S
from trainground.drivers.tradeoffs.sweep import Axis, SweepReport
from trainground.drivers.tradeoffs.sweep_axes import dimensions
from trainground.render.labels import field_label
from trainground.render.plots import _cost_label, _figure, _png, money

SWEEP_PX = (1200, 760)
HEATMAP_PX = (1200, 900)
GROUPS_IN_LEGEND = 8  # more series than this over one other dimension are drawn alike, without a legend
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
LINESTYLES = ("-", "--", ":", "-.")
FACETS = 12  # the most values of a third dimension that the faceted heatmap draws a panel for

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


def _objective_title(report: SweepReport) -> tuple[str, float, bool]:
    """The objective's axis title, the scale of its values and whether they are money."""
    objective = report.objective or next((r["objective"] for r in report.rows if r["objective"]), "total_cost")
    if objective == "makespan":
        return "makespan (days)", 1.0 / DAY_S, False
    return _cost_label(objective), 1.0, True


def _positions(axis: Axis) -> tuple[list[float], bool]:
    return (axis.numbers(), True) if axis.numeric else (list(range(len(axis.texts))), False)


def sweep_pngs(report: SweepReport) -> dict[str, bytes]:
    """:func:`sweep_figures` as PNG bytes, by file name."""
    return {name: _png(fig) for name, fig in sweep_figures(report).items()}


def sweep_figures(report: SweepReport) -> dict:
    """One figure per swept path (objective and key decisions against it); for two dimensions a heatmap, for
    three the heatmaps of the first two, one panel per value of the third (``sweep-heatmap-by-PATH.png``).

    Paths given a single value are plain edits: they get no figure of their own. Zipped paths
    vary together: they are one factor of the product, so a heatmap takes one of them.
    """
    varying = [i for i, axis in enumerate(report.axes) if len(axis.texts) > 1]
    out = {f"sweep-{slug(report.axes[i].path)}.png": _axis_figure(report, i, varying) for i in varying}
    dims = dimensions(report.axes)
    first_of: dict[int, int] = {}
    for i in varying:
        first_of.setdefault(dims[i], i)
    firsts = [report.axes[i] for i in first_of.values()]
    if len(firsts) == 2:
        out["sweep-heatmap.png"] = _heatmap_figure(report, *firsts)
    elif len(firsts) == 3 and len(firsts[2].texts) <= FACETS:
        out[f"sweep-heatmap-by-{slug(firsts[2].path)}.png"] = _faceted_figure(report, *firsts)
    return out


class Series:
    """How the series of one figure are told apart: a style and a legend label per series (keyed by the other
    paths' values), and the figure's own legends (title, [(text, style)]) when the label is not per series."""

    def __init__(self, report: SweepReport, others: list[int], keys: list[tuple[str, ...]]):
        dims = dimensions(report.axes)
        by_dim: dict[int, list[int]] = {}  # dimension -> positions in a key (zipped paths share one)
        for n, i in enumerate(others):
            by_dim.setdefault(dims[i], []).append(n)
        parts = list(by_dim.values())
        values = [list(dict.fromkeys(tuple(key[n] for n in part) for key in keys)) for part in parts]
        self.style: dict[tuple[str, ...], dict] = {}
        self.label: dict[tuple[str, ...], str | None] = {}
        self.legends: list[tuple[str, list[tuple[str, dict]]]] = []
        if len(parts) == 2 and all(len(v) <= len(MARKERS) for v in values):
            self._two_ways(report, others, keys, parts, values)
            return
        per_series = 1 < len(keys) <= GROUPS_IN_LEGEND
        for n, key in enumerate(keys):
            if per_series:  # distinct, shrinking markers: series that coincide stay visible under each other
                style = {
                    "color": f"C{n % 10}",
                    "marker": MARKERS[n % len(MARKERS)],
                    "markersize": max(3.0, 8.0 - 1.5 * n),
                    "markerfacecolor": "none",
                }
            elif len(keys) == 1:
                style = {"color": "tab:blue", "marker": "o", "markersize": 3}
            else:
                style = {"color": "tab:blue", "alpha": 0.35, "marker": "o", "markersize": 2}
            self.style[key] = style
            names = ", ".join(f"{field_label(report.axes[i].path, report.names)} = {v}" for i, v in zip(others, key))
            self.label[key] = names if per_series else None

    def _two_ways(self, report: SweepReport, others: list[int], keys, parts, values) -> None:
        """Colour by the first other dimension, marker and line style by the second, a legend for each."""
        first, second = values
        for key in keys:
            a = first.index(tuple(key[n] for n in parts[0]))
            b = second.index(tuple(key[n] for n in parts[1]))
            self.style[key] = {
                "color": f"C{a}",
                "marker": MARKERS[b],
                "linestyle": LINESTYLES[b % len(LINESTYLES)],
                "markersize": 6,
                "markerfacecolor": "none",
            }
            self.label[key] = None
        for part, found, look in (
            (parts[0], first, lambda n: {"color": f"C{n}", "linestyle": "-"}),
            (parts[1], second, lambda n: {"color": "0.3", "marker": MARKERS[n], "linestyle": LINESTYLES[n % 4]}),
        ):
            title = " & ".join(field_label(report.axes[others[n]].path, report.names) for n in part)
            self.legends.append(
                (title, [(", ".join(v), {"markerfacecolor": "none", **look(j)}) for j, v in enumerate(found)])
            )


def _axis_figure(report: SweepReport, k: int, varying: list[int]):
    axis = report.axes[k]
    xs, numeric = _positions(axis)
    where = {text: x for text, x in zip(axis.texts, xs)}
    dims = dimensions(report.axes)
    others = [i for i in varying if dims[i] != dims[k]]  # a zipped partner moves with this axis
    groups: dict[tuple[str, ...], list[dict]] = {}
    for row in report.rows:
        key = tuple(row["edits"][report.axes[i].path] for i in others)
        groups.setdefault(key, []).append(row)
    series = Series(report, others, list(groups))
    objective_title, objective_scale, objective_money = _objective_title(report)
    fig = _figure(SWEEP_PX)
    shown = sweep_panels(report)
    panels, columns = _grid(fig, len(shown), 3)
    for ax, (key, title) in zip(panels, shown):
        scale = objective_scale if key == "objective_value" else 1.0
        ax.set_title(title or objective_title, fontsize=10)
        ax.grid(True, alpha=0.3)
        for group, rows in groups.items():
            pts = sorted(
                (where[r["edits"][axis.path]], _value(r, key) * scale if _value(r, key) is not None else math.nan)
                for r in rows
            )
            style = dict(series.style[group])
            if len(pts) >= 60:
                style["markersize"] = 0
            ax.plot([p[0] for p in pts], [p[1] for p in pts], linewidth=1.0, label=series.label[group], **style)
        if key == "objective_value":
            _mark_failures(ax, report.rows, axis.path, where)
        if key == "objective_value" and objective_money:
            from matplotlib.ticker import FuncFormatter

            ax.yaxis.set_major_formatter(FuncFormatter(money))
        if key == "objective_value" and any(series.label.values()):
            ax.legend(fontsize=7, loc="best")
    _figure_legends(fig, series.legends)
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
    return fig


def _figure_legends(fig, legends: list[tuple[str, list[tuple[str, dict]]]]) -> None:
    """Each legend right of the panels, titled with the path it explains, one entry per value."""
    from matplotlib.lines import Line2D

    for (title, entries), where in zip(legends, ("outside right upper", "outside right lower")):
        handles = [Line2D([], [], linewidth=1.0, **style) for _, style in entries]
        fig.legend(handles, [text for text, _ in entries], title=title, loc=where, fontsize=8, title_fontsize=8)


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


def _heatmap_figure(report: SweepReport, first: Axis, second: Axis):
    import matplotlib
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
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad="0.85")
    for ax, (key, title) in zip(panels, chosen):
        scale = objective_scale if key == "objective_value" else 1.0
        image = _cells(ax, report, first, second, lambda a, b: index[(a, b)], key, scale, cmap)
        in_money = key == "objective_value" and objective_money
        fig.colorbar(image, ax=ax, shrink=0.9, format=FuncFormatter(money) if in_money else None)
        ax.set_title(title, fontsize=10)
    fig.suptitle(
        f"{report.instance}: {field_label(first.path, report.names)} × "
        f"{field_label(second.path, report.names)} ({len(report.rows)} points)",
        fontsize=11,
    )
    return fig


def _faceted_figure(report: SweepReport, first: Axis, second: Axis, third: Axis):
    """The objective over the first two dimensions, one panel per value of the third, on one colour scale."""
    import matplotlib
    from matplotlib.colors import Normalize
    from matplotlib.ticker import FuncFormatter

    paths = (first.path, second.path, third.path)
    index = {tuple(r["edits"][p] for p in paths): r for r in report.rows}
    objective_title, scale, objective_money = _objective_title(report)
    values = [r["objective_value"] * scale for r in report.rows if r.get("objective_value") is not None]
    norm = Normalize(min(values), max(values)) if values else None
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad="0.85")
    fig = _figure(HEATMAP_PX)
    panels, _ = _grid(fig, len(third.texts), 2 if len(third.texts) <= 4 else 3)
    label = field_label(third.path, report.names)
    image = None
    for ax, c in zip(panels, third.texts):
        image = _cells(
            ax, report, first, second, lambda a, b, c=c: index[(a, b, c)], "objective_value", scale, cmap, norm
        )
        ax.set_title(f"{label} = {c}", fontsize=10)
    if image is not None and norm is not None:
        fig.colorbar(image, ax=panels, shrink=0.9, format=FuncFormatter(money) if objective_money else None)
    fig.suptitle(
        f"{report.instance}: {objective_title} over {field_label(first.path, report.names)} × "
        f"{field_label(second.path, report.names)}, a panel per {label} ({len(report.rows)} points)",
        fontsize=11,
    )
    return fig


def _cells(ax, report: SweepReport, first: Axis, second: Axis, row_at, key: str, scale: float, cmap, norm=None):
    """A heatmap of ``key`` (times ``scale``) over ``first`` (rows) × ``second`` (columns), ``row_at(a, b)`` the
    sweep row at those values; a cell without a value is grey and says its status. Returns the image."""
    import numpy as np

    grid = np.full((len(first.texts), len(second.texts)), np.nan)
    for i, a in enumerate(first.texts):
        for j, b in enumerate(second.texts):
            value = _value(row_at(a, b), key)
            if value is not None:
                grid[i, j] = value * scale
    image = ax.imshow(
        np.ma.masked_invalid(grid), origin="lower", aspect="auto", cmap=cmap, norm=norm, interpolation="nearest"
    )
    ax.set_xlabel(field_label(second.path, report.names), fontsize=8)
    ax.set_ylabel(field_label(first.path, report.names), fontsize=8)
    _ticks(ax.set_xticks, second.texts)
    _ticks(ax.set_yticks, first.texts)
    if grid.size <= 144:
        finite = grid[np.isfinite(grid)]
        lo, hi = (norm.vmin, norm.vmax) if norm is not None else (finite.min(), finite.max()) if finite.size else (0, 0)
        middle = (lo + hi) / 2
        for i, a in enumerate(first.texts):
            for j, b in enumerate(second.texts):
                value = grid[i, j]
                if math.isnan(value):
                    text, color = row_at(a, b)["status"], "black"
                else:
                    text = _short(value, key)
                    color = "black" if value > middle else "white"
                ax.text(j, i, text, ha="center", va="center", fontsize=8, color=color)
    return image


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
