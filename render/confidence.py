"""A confidence solve in words (MODEL.md §9): the on-time shares, and what the plan holds beyond the
deterministic optimum and why. No computation: :func:`solver.confidence.report.what_drove` gives the figures."""

from __future__ import annotations

from trainground.render.tables import money


def render_confidence(console, result, deterministic, drove: dict) -> None:
    c = result.confidence
    lo, hi = c.out_of_sample_interval
    held = f", each with the {c.allowance_s:,.0f} s allowance" if c.allowance_s > 0 else ""
    console.print(
        f"confidence: planned for {c.target:.0%} of {c.scenarios:,} scenarios (on time in "
        f"≥ {c.needed:,}{held}); on time in {c.in_sample:.1%} of them and in {c.out_of_sample:.1%} of "
        f"{c.check_samples:,} fresh ones (95 % interval {lo:.1%}–{hi:.1%}, seed {c.check_seed})"
    )
    if deterministic is not None:
        console.print(bought(drove["deltas"], deterministic.total_cost), markup=False)
    console.print(binding_phrase(drove), markup=False)


def bought(deltas: dict, base_cost: float) -> str:
    """'+107 replicas tp8, +122 training groups and +8 nodes standard over the deterministic plan (+$335,000, +12.2 %)'."""
    parts = [
        f"{value:+,} {name}"
        for name, value in deltas.items()
        if name not in ("total_cost", "cadence_s") and isinstance(value, int)
    ]
    if "cadence_s" in deltas:
        parts.append(f"cadence {deltas['cadence_s']:+,.0f} s")
    extra = deltas.get("total_cost", 0.0)
    if not parts:
        return "the deterministic optimum is already on time that often: nothing added"
    share = extra / base_cost if base_cost else 0.0
    return f"{', '.join(parts)} over the deterministic plan ({'+' if extra >= 0 else '-'}{money(abs(extra))}, {share:+.1%})"


def binding_phrase(drove: dict) -> str:
    """'in the 100 worst of its scenarios the tightest need is token supply in 71 (throughput, lifetimes), ...'."""
    ranked = sorted(((n, k) for n, k in drove["binding"].items() if k), key=lambda item: -item[1])
    parts = []
    for need, count in ranked:
        factors = drove["factors"].get(need) or []
        parts.append(f"{need} in {count}" + (f" ({', '.join(factors)})" if factors else ""))
    return (
        f"in the {drove['worst']:,} worst of its scenarios the tightest need is "
        + "; ".join(parts)
        + f"; short of a need in {drove['late']:,} of {drove['scenarios']:,}"
    )


def render_curve(console, found, files) -> None:
    """The price of certainty as a table: each confidence's plan, its cost over the deterministic one; under
    hold (MODEL §11) each plan's allowance and its replays' expected cost beside."""
    from rich.table import Table

    base = found.deterministic.plan
    rows = found.rows()
    held = any(row["allowance_s"] is not None for row in rows)
    table = Table(
        title=f"{found.instance}: price of certainty ({found.objective})",
        title_justify="left",
        show_edge=False,
        pad_edge=False,
    )
    for col in (
        "confidence",
        "total cost",
        "extra",
        "inference GPUs",
        "training GPUs",
        "nodes",
        "in sample",
        "out of sample (95 % interval)",
        *(("allowance", "expected (replays)") if held else ()),
    ):
        table.add_column(col, justify="left" if col == "confidence" else "right")
    for row in rows:
        alpha = "deterministic" if row["confidence"] is None else f"{row['confidence']:.0%}"
        if row["total_cost"] is None:
            table.add_row(alpha, row["status"], *[""] * (len(table.columns) - 2))
            continue
        extra = "" if base is None or row["confidence"] is None else f"{row['total_cost'] / base.total_cost - 1:+.1%}"
        shares = (
            ("", "")
            if row["in_sample"] is None
            else (
                f"{row['in_sample']:.1%}",
                f"{row['out_of_sample']:.1%} ({row['out_of_sample_low']:.1%}–{row['out_of_sample_high']:.1%})",
            )
        )
        replayed = ()
        if held:
            expected = row["expected_total_cost"]
            replayed = (
                "" if row["allowance_s"] is None else f"{row['allowance_s']:,.0f} s",
                "" if expected is None else f"${expected:,.0f}",
            )
        table.add_row(
            alpha,
            f"${row['total_cost']:,.0f}",
            extra,
            f"{row['inference_gpus']:,}",
            f"{row['training_gpus']:,}",
            f"{row['nodes']:,}",
            *shares,
            *replayed,
        )
    console.print(table)
    if held:
        console.print(allowance_note(found), markup=False)
    console.print("wrote " + ", ".join(str(f) for f in files))


def allowance_note(found) -> str:
    """What the allowance column is and why it need not grow with the confidence (MODEL §11 with §9): each plan's
    Δ is the k-th smallest of its replays' lateness, a confidence plan's replay against the planned makespan of the
    scenario it drew, and replays drift late where the update time leaves little slack in their cadence."""
    from trainground.drivers.hold import TOO_SAFE

    orders = []
    for alpha, r in [(None, found.deterministic), *found.points]:
        if r.hold is not None:
            name = "deterministic" if alpha is None else f"{alpha:.0%}"
            orders.append(f"{name} {r.hold.order} of {r.hold.replays}")
    return (
        "allowance: each plan's run-variance allowance Δ (docs/model.md §11), the k-th smallest of its R replays' "
        "lateness beyond the planned makespan, k = ceil(α·(R + 1)) with α the row's confidence (planning.on_time "
        f"for the deterministic plan): {'; '.join(orders)}. A confidence plan's replays each draw a scenario and are "
        "measured against that scenario's planned makespan. Δ depends on the plan, not on α alone: replays run "
        "latest where the update time leaves little slack in the cadence their scenario runs at (a batch ready late "
        "is never made up), and a scenario short of throughput runs at a longer cadence, which gives the update "
        "slack and ends near its planned makespan. So a low α whose k-th replay is in such a scenario, or a plan "
        "whose update leaves slack in every scenario, needs little or none (0 s: replays that end early ask no "
        f"negative allowance). Each point's loop starts from the Δ of the point before it and keeps a start that "
        f"passes within {TOO_SAFE:.1%} of the deadline."
    )


def curve_png(found) -> bytes:
    """Total cost against the confidence planned for, the deterministic optimum as a dashed line."""
    from matplotlib.ticker import FuncFormatter, PercentFormatter

    from trainground.render.plots import FRONTIER_PX, _figure, _png
    from trainground.render.plots import money as short_money

    fig = _figure(FRONTIER_PX)
    ax = fig.add_subplot()
    points = [(a, r.plan.total_cost, r.confidence.out_of_sample) for a, r in found.points if r.plan is not None]
    if points:
        ax.plot([p[0] for p in points], [p[1] for p in points], "o-", label="best plan for the confidence")
        ax.plot([p[2] for p in points], [p[1] for p in points], "x", color="grey", label="its out-of-sample share")
    if found.deterministic.plan is not None:
        ax.axhline(found.deterministic.plan.total_cost, linestyle="--", color="black", label="deterministic optimum")
    ax.xaxis.set_major_formatter(PercentFormatter(1.0))
    ax.yaxis.set_major_formatter(FuncFormatter(short_money))
    ax.set_xlabel("on-time probability planned for")
    ax.set_ylabel("total cost")
    ax.set_title(f"{found.instance}: the price of certainty")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left")
    return _png(fig)
