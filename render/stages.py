"""The per-stage table of a staged plan (MODEL.md §12): what a person reads beside the plan. No computation."""

from __future__ import annotations


def sizing_sentence(plan) -> str:
    """Which stage sizes the fleet, from the stage rows' ``sizes_fleet``."""
    sizing = [s.name for s in plan.stages if s.sizes_fleet]
    if not sizing:
        return "no stage's throughput binds: other rows size the fleet (a full pool, update time, sandboxes, budgets)"
    quoted = [f"'{name}'" for name in sizing]
    named = quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]
    if len(sizing) == 1:
        return f"stage {named} sizes the fleet (its throughput binds)"
    return f"stages {named} size the fleet (their throughput binds)"


def metrics_sentence(plan) -> str:
    """Whose figures the plan's metrics are (the stage rows' ``run_metrics``)."""
    names = [s.name for s in plan.stages if s.run_metrics]
    return "cadence above: the stages' mean" + (f"; metrics below: those of stage '{names[0]}'" if names else "")


def replan_sentence(plan) -> str:
    """Under replan: whose counts the plan's decisions are (the plan's hourly cost is the largest stage's, and
    its counts the first such stage's: solver/stages/plans.py)."""
    top = next(s for s in plan.stages if s.hourly_cost == plan.hourly_cost)
    return (
        f"capacity: replan: the decisions above are those of stage '{top.name}' (the largest hourly cost); "
        "each stage's own are under 'Capacity per stage'"
    )


def render_stages(console, result) -> None:
    """One row per stage: iterations, cadence, duration, demand vs supply, update time, mean version gap and
    binding rows; under replan a second table of each stage's own capacity and hourly cost."""
    from rich.table import Table

    plan = result.plan
    table = Table(title="Stages", title_justify="left", show_edge=False, pad_edge=False)
    columns = ["stage", "iters", "cadence", "duration", "demand/s", "supply/s", "update", "gap"]
    for name in [*columns, "binding"]:
        table.add_column(name, justify="left" if name in ("stage", "binding") else "right")
    for s in plan.stages:
        row = [
            s.name + (" *" if s.sizes_fleet else ""),
            f"{s.iterations:,}",
            f"{s.cadence_s:,.6g} s",
            f"{s.duration_s / 86400:.3f} d",
            f"{s.token_demand_per_s:,.0f}",
            f"{s.token_supply_per_s:,.0f}",
            f"{s.update_time_s:,.1f} s",
            f"{s.mean_version_gap:.2f}",
        ]
        table.add_row(*row, "\n".join(s.binding) or "-")
    console.print(table)
    console.print(f"* {sizing_sentence(plan)}", markup=False)
    console.print(metrics_sentence(plan), markup=False)
    if plan.stages[0].hourly_cost is not None:
        render_replan_capacity(console, plan)


def _listed(counts) -> str:
    """'501 tp8, 3 big' of (count, name) pairs, those of 0 left out ('0' when none is left)."""
    return ", ".join(f"{n:,} {name}" for n, name in counts if n) or "0"


def render_replan_capacity(console, plan) -> None:
    """Under replan, one row per stage: its replicas, training groups, nodes, VMs and hourly cost."""
    from rich.table import Table

    table = Table(title="Capacity per stage", title_justify="left", show_edge=False, pad_edge=False)
    for name in ("stage", "replicas", "groups", "nodes", "VMs", "$/hour"):
        table.add_column(name, justify="left" if name == "stage" else "right")
    for s in plan.stages:
        table.add_row(
            s.name,
            _listed((r.replicas, r.shape) for r in s.inference or []),
            f"{s.training_groups:,}",
            _listed((n.count, n.type) for n in s.local_nodes or []),
            _listed((v.count, v.type) for v in s.cloud_vms or []),
            f"${s.hourly_cost:,.2f}",
        )
    console.print(table)
    console.print(replan_sentence(plan), markup=False)


def render_stage_levers(console, levers) -> None:
    """One line per stage lever: "stage late: throughput binds: +1 tp8 replica (+$16/h) buys 400 s"."""
    if not levers:
        return
    console.print("[bold]Stage levers[/bold] (one unit more of what binds in a stage; that stage's n·ΔL)")
    for lv in levers:
        head = f"stage {lv.stage}: {lv.row} binds: {lv.change} (+${lv.hourly_cost:,.2f}/h)"
        if lv.buys_s is None:
            console.print(f"  {head}: does not fit (its pool, or a cap, is full)", markup=False)
        elif lv.buys_s <= 0:
            console.print(f"  {head}: buys nothing (another row binds at {lv.cadence_s:,.6g} s)", markup=False)
        else:
            console.print(
                f"  {head} buys {lv.buys_s:,.0f} s (cadence {lv.cadence_s:,.6g} → {lv.faster_cadence_s:,.6g} s)",
                markup=False,
            )
