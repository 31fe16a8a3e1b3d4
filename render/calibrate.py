"""What a person reads after `calibrate`: each fitted figure with its interval, its rows and the keys it comes
from, the split of a framework step, the bottleneck sentence, and the plots (lifetime histogram with the fitted
density, Kaplan–Meier against the fitted survival, update time against training GPUs with the fitted law, and
a framework step's time by term)."""

from __future__ import annotations

import math

import numpy as np

from trainground.calibrate.figures import Figure
from trainground.calibrate.fit import Calibration
from trainground.calibrate.phases import REST
from trainground.render.plots import _figure, _png

HISTOGRAM_PX = (1000, 460)
SURVIVAL_PX = (1000, 460)
UPDATE_PX = (1000, 460)
SPLIT_PX = (1000, 460)


def _value(f: Figure) -> str:
    v = f.value
    if f.unit == "share":
        return f"{v:.4f}"
    return f"{v:,.4g}" if abs(v) < 1e4 else f"{v:,.0f}"


def _interval(f: Figure) -> str:
    if f.low is None or f.high is None:
        return "—"
    if f.unit == "share":
        return f"{f.low:.4f} – {f.high:.4f}"
    return f"{f.low:,.4g} – {f.high:,.4g}" if max(abs(f.low), abs(f.high)) < 1e4 else f"{f.low:,.0f} – {f.high:,.0f}"


def figure_rows(cal: Calibration) -> list[tuple[str, Figure]]:
    occ = cal.occupancy
    rows = [(f"occupancy {k} ({occ.law})", f) for k, f in occ.figures.items()] if occ is not None else []
    for name, fit in cal.per_backend.items():
        rows += [(f"  backend {name}: {k} ({fit.law})", fit.figures[k]) for k in ("median", "p99") if k in fit.figures]
    if cal.tokens_per_gpu_s is not None:
        rows.append(("tokens/s per GPU" + (" (all pools)" if cal.pool_throughput else ""), cal.tokens_per_gpu_s))
    rows += [(f"  pool {name}: tokens/s per GPU", fig) for name, fig in cal.pool_throughput.items()]
    for label, fig in (
        ("tokens per attempt", cal.tokens_per_attempt),
        ("intake rate", cal.intake),
        ("within-group correlation", cal.correlation),
    ):
        if fig is not None:
            rows.append((label, fig))
    if cal.update is not None:
        what = "trainer busy time" if cal.split is not None else "update time"
        rows.append((f"{what} at {cal.update.reference_gpus:,.0f} GPUs ({cal.update.law})", cal.update.reference))
    if cal.cadence is not None and cal.cadence.achieved is not None:
        rows.append(("cadence achieved", cal.cadence.achieved))
    labels = {
        "weight_sync_s": "weight sync per version",
        "checkpoint_s": "checkpoint per save",
        "validation_s": "validation per pass",
        "trainer_wait_share": "trainer waiting for rollouts",
        "version_gap_mean": "version gap (staleness)",
        "generation_tokens_per_gpu_s": "tokens/s per GPU (step log)",
        "agent_loop_median_s": "occupancy median (agent loop)",
        "agent_loop_p99_s": "occupancy p99 (agent loop)",
    }
    rows += [(labels.get(k, k), f) for k, f in cal.step_figures.items()]
    return rows


def render_calibration(console, cal: Calibration) -> None:
    from rich.table import Table

    title = "calibrated from " + " and ".join(f for f in (cal.trajectories, cal.steps) if f)
    table = Table(title=title, title_justify="left")
    for name, justify in (
        ("figure", "left"),
        ("value", "right"),
        ("90 % interval", "right"),
        ("unit", "left"),
        ("rows", "right"),
        ("from", "left"),
        ("how", "left"),
    ):
        table.add_column(name, justify=justify, overflow="fold")
    for label, fig in figure_rows(cal):
        keys = short_keys(fig.source.partition(": ")[2] or fig.source)
        table.add_row(label, _value(fig), _interval(fig), fig.unit, f"{fig.rows:,}", keys, fig.note)
    console.print(table)
    if cal.split is not None:
        console.print(split_table(cal))
    for line in summary_lines(cal):
        console.print(line)


def short_keys(keys: str) -> str:
    """``a/x + a/y + a/z at G`` as ``a/{x,y,z} at G``: the same keys, in less width."""
    head, at, tail = keys.partition(" at ")
    parts = head.split(" + ")
    prefix = parts[0].rpartition("/")[0] + "/"
    if len(parts) < 3 or prefix == "/" or not all(p.startswith(prefix) and "/" not in p[len(prefix) :] for p in parts):
        return keys
    return prefix + "{" + ",".join(p[len(prefix) :] for p in parts) + "}" + (at + tail if at else "")


def split_table(cal: Calibration):
    """Where a step's wall time went, term by term, with the keys each comes from."""
    from rich.table import Table

    s = cal.split
    table = Table(
        title=f"a step's time: mean of {s.rows:,} steps, {s.wall_s:,.4g} s each (saves and validations averaged "
        "over every step)",
        title_justify="left",
    )
    for name, justify in (("term", "left"), ("from", "left"), ("s per step", "right"), ("share", "right")):
        table.add_column(name, justify=justify, overflow="fold")
    for term, keys, seconds, share in s.terms:
        table.add_row(term, keys, f"{seconds:,.4g}", f"{share:.1%}")
    table.caption = "; ".join(x for x in (s.overlap, s.unlogged) if x) or None
    table.caption_justify = "left"
    return table


def _lifetime_lines(cal: Calibration) -> list[str]:
    occ = cal.occupancy
    if occ is None:
        if "agent_loop_median_s" not in cal.step_figures:
            return []
        return [
            "lifetimes: lognormal from the agent loop's per-step min/mean/max (no trajectory log): the occupancy "
            "(agent loop) rows, with their wider intervals"
        ]
    lines = [
        f"lifetimes: {occ.law} (KS distance to Kaplan–Meier {occ.distance:.4f}, rejected above "
        f"{occ.threshold:.4f}); dropping the {occ.censored - occ.cut:,} running attempts"
        + (f" and the {occ.cut:,} cut" if occ.cut else "")
        + " would give median "
        f"{occ.dropped['median']:,.0f} s, p99 {occ.dropped['p99']:,.0f} s"
    ]
    if occ.naive is not None:
        n = occ.naive
        lines.append(
            f"timeout: {occ.cut:,} attempts cut, fitted as right-censored (p99 {occ.figures['p99'].value:,.0f} s); "
            f"read as ended at the cut they would give a lognormal p99 of {n['p99']:,.0f} s and a Kaplan–Meier "
            f"p99 of {n['kaplan_meier_p99']:,.0f} s"
        )
    return lines


def summary_lines(cal: Calibration) -> list[str]:
    lines = _lifetime_lines(cal)
    if cal.tokens_per_gpu_s is None and "missing" in cal.window:
        lines.append(f"tokens/s per GPU: not measured ({cal.window['missing']})")
    if cal.update is not None and cal.update.miss:
        misses = ", ".join(f"{k} {v:.1%}" for k, v in cal.update.miss.items())
        lines.append(f"update law: {cal.update.law} (largest miss on the per-GPU medians: {misses})")
    if cal.gaps:
        g = cal.gaps
        model = (
            f"; the model's at the achieved cadence: mean {g['model_mean']:.2f}, p99 {g['model_p99']:.2f}"
            if "model_mean" in g
            else ""
        )
        lines.append(f"version gaps (consumed attempts): mean {g['mean']:.2f}, p99 {g['p99']:.2f}{model}")
    if cal.cadence is not None and cal.cadence.time_split and cal.split is None:
        split = ", ".join(f"{k} {v:.0%}" for k, v in cal.cadence.time_split.items())
        lines.append(f"step time: {split}")
    if cal.bottleneck:
        lines.append(f"bottleneck: {cal.bottleneck}")
    lines += [f"note: {n}" for n in cal.notes]
    return lines


def calibration_pngs(cal: Calibration) -> dict[str, bytes]:
    out = {}
    if cal.occupancy is not None:
        out = {"calibrate-lifetimes.png": histogram_png(cal), "calibrate-survival.png": survival_png(cal)}
    if cal.update is not None and cal.update.observed is not None:
        out["calibrate-update.png"] = update_png(cal)
    if cal.split is not None:
        out["calibrate-step-split.png"] = split_png(cal)
    return out


SPLIT_COLOURS = {
    "generation": "tab:blue",
    "wait for rollouts": "tab:cyan",
    "trainer": "tab:red",
    "weight sync": "tab:purple",
    "checkpoint": "tab:brown",
    "validation": "tab:olive",
    "other": "tab:gray",
}


def split_png(cal: Calibration) -> bytes:
    return _png(split_figure(cal))


def split_figure(cal: Calibration):
    """The split table as bars, one part per row of the table, each labelled with its key and seconds: one
    stacked bar when the terms follow one another (it reaches the step's wall time). When generation overlaps
    the trainer, the generation and the trainer's passes are two bars side by side in time, the other terms and
    the unlogged rest stacked after the longer of the two (a step is that longer phase plus them), and the wall
    time is a dashed line. A negative term (a phase timed less than the one it is part of) is not drawn, and the
    title names it."""
    s = cal.split
    fig = _figure(SPLIT_PX)
    ax = fig.subplots()
    parts = [(term, keys, seconds, share) for term, keys, seconds, share in s.terms if seconds >= 0]
    rows = {"generation": 1, "trainer": 0} if s.overlap else {}
    lengths = {y: sum(x[2] for x in parts if rows.get(x[0]) == y) for y in (0, 1)}
    longer = 1 if lengths[1] >= lengths[0] else 0
    ends = {0: 0.0, 1: 0.0}
    for term, keys, seconds, share in parts:
        y = rows.get(term, longer) if s.overlap else 0
        ax.barh([y], [seconds], left=ends[y], color=SPLIT_COLOURS.get(term, "tab:gray"), edgecolor="white")
        if share >= 0.04:
            label = "not logged" if keys == REST else keys.split("/")[-1]
            ax.text(
                ends[y] + seconds / 2,
                y,
                f"{label}\n{seconds:,.3g} s",
                ha="center",
                va="center",
                fontsize=8,
                color="white",
            )
        ends[y] += seconds
    from matplotlib.patches import Patch

    handles = [Patch(color=colour, label=term) for term, colour in SPLIT_COLOURS.items()]
    dropped = [keys for _, keys, seconds, _ in s.terms if seconds < 0]
    title = "where a step's time went (saves and validations averaged over every step)"
    if s.overlap:
        ax.axvline(s.wall_s, color="black", linestyle="--", linewidth=1)
        ax.set_yticks([0, 1], ["trainer", "generation"])
        title = "where a step's time went: generation and the trainer overlap (dashed: the step)"
    else:
        ax.set_yticks([])
    if dropped:
        title += f"; negative, not drawn: {', '.join(dropped)}"
    ax.set_xlabel(f"seconds per step (mean of {s.rows:,} steps)")
    ax.set_title(title, fontsize=9)
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=len(SPLIT_COLOURS))
    return fig


def histogram_png(cal: Calibration) -> bytes:
    """Ended lifetimes on a log axis (density per log-second) with the fitted lognormal density."""
    occ = cal.occupancy
    x = occ.data.x
    fig = _figure(HISTOGRAM_PX)
    ax = fig.subplots()
    edges = np.linspace(x.min(), x.max(), 81) / math.log(10)
    weights = np.full(x.size, 1.0 / (occ.data.rows * (edges[1] - edges[0])))  # area = the share that ended
    ax.hist(
        x / math.log(10),
        bins=edges,
        weights=weights,
        color="tab:blue",
        alpha=0.6,
        label=f"ended attempts ({x.size:,}; area = their share of {occ.data.rows:,})",
    )
    grid = np.linspace(x.min(), max(x.max(), math.log(occ.figures["p99"].value)), 400)
    density = np.exp(-0.5 * ((grid - occ.mu) / occ.sigma) ** 2) / (occ.sigma * math.sqrt(2 * math.pi))
    ax.plot(
        grid / math.log(10),
        density * math.log(10),
        color="tab:red",
        label=f"censored lognormal fit (median {math.exp(occ.mu):,.0f} s, sigma {occ.sigma:.3f})",
    )
    ax.set_xlabel("lifetime, log10 seconds")
    ax.set_ylabel("density")
    ax.set_title(f"sandbox lifetimes ({occ.law} law chosen; {occ.censored:,} running attempts censored)")
    ax.legend()
    return _png(fig)


def survival_png(cal: Calibration) -> bytes:
    from scipy import special

    occ = cal.occupancy
    fig = _figure(SURVIVAL_PX)
    ax = fig.subplots()
    ax.step(occ.km.t, occ.km.survival, where="post", color="tab:blue", label="Kaplan–Meier")
    fitted = special.ndtr(-(np.log(occ.km.t) - occ.mu) / occ.sigma)
    ax.plot(occ.km.t, fitted, color="tab:red", linestyle="--", label=f"lognormal fit (KS {occ.distance:.4f})")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(max(1e-4, 0.5 / max(occ.km.events, 1)), 1.05)
    ax.set_xlabel("lifetime (s)")
    ax.set_ylabel("survival P(W > t)")
    ax.legend()
    return _png(fig)


def update_png(cal: Calibration) -> bytes:
    fit = cal.update
    gpus, seconds = fit.observed
    fig = _figure(UPDATE_PX)
    ax = fig.subplots()
    ax.scatter(gpus, seconds, s=8, alpha=0.5, color="tab:blue", label=f"iterations ({gpus.size:,})")
    grid = np.linspace(gpus.min(), gpus.max(), 200) if gpus.max() > gpus.min() else np.array([gpus.min()])
    ax.plot(grid, fit.seconds(grid), color="tab:red", label=f"{fit.law} law")
    ax.set_xlabel("training GPUs")
    ax.set_ylabel("update time (s)")
    ax.legend()
    return _png(fig)
