"""What a person reads in a terminal: rich tables and phrases for explain, solve and batch."""

from __future__ import annotations


def fitted(console, table) -> None:
    """Print ``table``; off a terminal (a file, a pipe), as wide as its content instead of wrapped."""
    if not console.is_terminal:
        from rich.measure import Measurement

        console.width = max(
            console.width, Measurement.get(console, console.options.update(width=10_000), table).maximum
        )
    console.print(table)


def _fmt(value: object, unit: str = "") -> str:
    if value is None:
        return "—"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_fmt(v)}" for k, v in value.items())
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if unit == "share":
            return f"{value:.4f} ({value:.2%})"
        return f"{value:,.4f}" if abs(value) < 100 else f"{value:,.1f}"
    return str(value)


def render_explanation(console, result) -> None:
    from rich.markup import escape
    from rich.table import Table

    from trainground.solver.explain import OPTIONAL_SECTIONS, SECTIONS

    gpus = f", {result.inference_gpus:,} inference GPUs" if result.inference_gpus else ""
    console.print(f"[bold]{result.instance}[/bold]: the seed's arithmetic at cadence {result.cadence_s:.6g} s{gpus}")
    for section in SECTIONS:
        if section in OPTIONAL_SECTIONS and not any(ln.section == section for ln in result.lines):
            continue
        table = Table(title=section, title_justify="left", show_edge=False, pad_edge=False)
        table.add_column("figure", no_wrap=True)
        table.add_column("value", justify="right", no_wrap=True)
        table.add_column("unit", no_wrap=True)
        table.add_column("formula and inputs")
        for line in (ln for ln in result.lines if ln.section == section):
            table.add_row(line.key, _fmt(line.value, line.unit), line.unit, escape(line.formula))
        console.print(table)
    if result.stages and result.stage is None:
        console.print(
            f"stages: {', '.join(result.stages)}: these figures are the instance's own (one stage); "
            "explain --stage NAME gives each stage's",
            markup=False,
        )


def money(x: float) -> str:
    return f"${x:,.2f}"


def unused_text(plan) -> str:
    """The shapes, node types and VM types a plan gives nothing, by kind: the rows the table leaves out."""
    parts = [
        (what, [name for name, count in items if not count])
        for what, items in (
            ("replicas", [(i.shape, i.replicas) for i in plan.inference]),
            ("nodes", [(c.type, c.count) for c in plan.local_nodes]),
            ("VMs", [(c.type, c.count) for c in plan.cloud_vms]),
        )
    ]
    return "; ".join(f"{what} {', '.join(names)}" for what, names in parts if names)


def render_result(console, result) -> None:
    from rich.table import Table

    head = f"[bold]{result.instance}[/bold]: {result.status}"
    if result.objective_value is not None:
        value = money(result.objective_value) if result.objective != "makespan" else f"{result.objective_value:,.0f} s"
        head += f", {result.objective} = {value}"
    if result.mip_gap:
        head += f" (gap {result.mip_gap:.3%})"
    console.print(head)
    if result.message and result.plan is None:
        console.print(result.message, markup=False)
    if result.diagnosis:
        render_diagnosis(console, result.diagnosis)
    plan, met = result.plan, result.metrics
    held = result.basis == "hold"
    if plan is None:
        return
    decisions = Table(title="Decisions", title_justify="left", show_edge=False, pad_edge=False)
    for col in ("decision", "value", "detail"):
        decisions.add_column(col, justify="right" if col == "value" else "left")
    decisions.add_row(
        "cadence", f"{plan.cadence_s:,.6g} s", f"makespan {plan.makespan_s:,.0f} s = {plan.makespan_s / 86400:.3f} d"
    )
    if plan.age_limit is None or plan.age_limit == plan.versions_kept:
        decisions.add_row("versions kept", str(plan.versions_kept), "")
    else:  # MODEL §14: in-flight updates keep one version resident; K only bounds the age of what is consumed
        decisions.add_row("versions kept", str(plan.versions_kept), "resident: running attempts move to each version")
        decisions.add_row("age limit K", str(plan.age_limit), "staler groups are dropped; costs no memory")
    for item in plan.inference:
        if item.replicas:
            decisions.add_row(f"replicas {item.shape}", f"{item.replicas:,}", f"{item.gpus:,} GPUs in pool {item.pool}")
    decisions.add_row("training groups", f"{plan.training_groups:,}", f"{plan.training_gpus:,} GPUs")
    for node in plan.local_nodes:
        if node.count:
            decisions.add_row(f"nodes {node.type}", f"{node.count:,}", "local sandbox nodes")
    for vm in plan.cloud_vms:
        if vm.count:
            decisions.add_row(f"VMs {vm.type}", f"{vm.count:,}", "cloud spillover")
    unused = unused_text(plan)
    if unused:
        decisions.add_row("not used", "0", unused)
    for pool in plan.pools:
        detail = f"of {pool.gpus:,} GPUs used"
        if pool.billing == "reserved":
            detail += f"; reserved: all {pool.gpus:,} billed, {pool.gpus - pool.gpus_used:,} idle"
        decisions.add_row(f"pool {pool.pool}", f"{pool.gpus_used:,}", detail)
    console.print(decisions)
    costs = Table(title="Costs", title_justify="left", show_edge=False, pad_edge=False)
    costs.add_column("term")
    costs.add_column("$/hour", justify="right")
    costs.add_column("over the run", justify="right")
    hours = plan.makespan_s / 3600
    per_stage = bool(plan.stages) and plan.stages[0].hourly_cost is not None  # replan: each stage its own rate
    for term, value in (("GPU", plan.cost_terms.gpu), ("node", plan.cost_terms.node), ("VM", plan.cost_terms.vm)):
        costs.add_row(term, money(value), "per stage" if per_stage else money(value * hours))
    costs.add_row("[bold]total[/bold]", money(plan.hourly_cost), money(plan.total_cost))
    console.print(costs)
    if plan.stages:
        from trainground.render.stages import render_stages

        render_stages(console, result)
    metrics = Table(title="Throughput, sandboxes, freshness", title_justify="left", show_edge=False, pad_edge=False)
    metrics.add_column("metric")
    metrics.add_column("value", justify="right")
    metrics.add_column("note")
    rows = [
        (
            "effective trajectories/s",
            f"{met.effective_trajectories_per_s:.4f}",
            f"B/L; intake {met.effective_intake:.4f}",
        ),
        ("attempts/s", f"{met.attempts_per_s:.4f}", "R_eff / (p·(1 - drop))"),
        ("token demand/s", f"{met.token_demand_per_s:,.0f}", ""),
        ("token supply/s", f"{met.token_supply_per_s:,.0f}", f"margin {met.throughput_margin:+.2%}"),
        ("update time", f"{met.update_time_s:,.1f} s", f"margin {met.update_margin:+.2%} of the cadence"),
        (
            "time margin",
            f"{met.time_margin:.2%}",
            "(deadline - makespan - allowance)/deadline" if held else "(deadline - makespan)/deadline",
        ),
        (
            "in flight (mean / sized peak)" if held else "in flight (mean / peak)",
            f"{met.inflight_mean:,.0f} / {met.inflight_peak:,.0f}",
            f"occupancy mean {met.occupancy_mean_s:,.0f} s"
            + (f"; sized for E + β·sqrt(V) = {met.inflight_sized:,.0f}" if held and met.inflight_sized else ""),
        ),
        (
            "consumed gap (mean / p99)" if held else "version gap (mean / p99)",
            f"{met.mean_version_gap:.3f} / {met.p99_version_gap:.2f}",
            "whole groups, as batches take them" if held else "",
        ),
        (
            "exceedance / group drop",
            f"{met.exceedance:.4f} / {met.group_drop_rate:.4f}",
            f"at K = {plan.age_limit or plan.versions_kept}",
        ),
    ]
    rows += goodput_rows(plan, met)
    if result.regime is not None and met.generation_phase_s is not None:
        rows = batch_rows(result.regime, met) + [
            r for r in rows if r[0] not in ("attempts/s", "exceedance / group drop")
        ]
    elif result.regime is not None and met.slowest_attempt_s is not None:
        rows = admission_rows(result.regime, met) + [r for r in rows if r[0] != "exceedance / group drop"]
    elif met.consumed_mean_gap is not None:  # async drop with regime fields set (MODEL §14)
        rows += drop_rows(met, shown=held)
    for row in rows:
        metrics.add_row(*row)
    console.print(metrics)
    console.print("binding: " + (", ".join(result.binding) if result.binding else "none"), markup=False)
    if result.ties:
        console.print(f"ties: {result.ties['sentence']}", markup=False)


def batch_rows(regime: dict, met) -> list[tuple[str, str, str]]:
    """A batch regime's figures (MODEL §14): the generation phase, its slowest attempt and busy share, the
    launch; its rows replace the seed regime's attempt rate and drops (nothing is dropped for age)."""
    k = regime.get("steps_ahead")
    row = "D + U + t_s (+ switch_time) <= L" if k in (None, 0) else "max(D, U) + t_s <= L"
    return [
        ("regime", str(regime["mode"]) + ("" if k is None else f" k={k:g}"), row),
        ("generation phase D", f"{met.generation_phase_s:,.1f} s", "max(N·tokens/S, M_N)"),
        ("slowest attempt M_N", f"{met.slowest_attempt_s:,.1f} s", "the mean max of a batch's lifetimes"),
        ("generation busy", f"{met.generation_busy_share:.1%}", "N·tokens/(S·D)"),
        ("launch peak", f"{met.launch_peak:,.0f}", "environments asked at once when a batch launches"),
    ]


def admission_rows(regime: dict, met) -> list[tuple[str, str, str]]:
    """An admission run's figures (MODEL §14): its row, a group's slowest member, the publish peak; nothing is
    dropped for age, so they replace the exceedance and the drops."""
    k = regime.get("steps_ahead") or 0
    return [
        ("regime", f"admission k={k:g}", "(E[M_g]/p + U + t_s)/(k + 1/2) <= L; one version resident"),
        ("slowest of a group E[M_g]", f"{met.slowest_attempt_s:,.1f} s", "a group waits for its slowest member"),
        ("publish peak", f"{met.launch_peak:,.0f}", "environments asked when groups launch at a publish"),
    ]


def drop_rows(met, shown: bool = False) -> list[tuple[str, str, str]]:
    """An async drop run's §14 figures beside §2's: the gap of what batches consume (whole groups, within the age
    limit; ``shown``: the version-gap row already is that gap, on the hold basis) and, with in-flight updates, the
    re-prefills' share of the token demand."""
    rows = []
    if not shown:
        rows.append(
            (
                "consumed gap (mean / p99)",
                f"{met.consumed_mean_gap:.3f} / {met.consumed_p99_gap:.2f}",
                "whole groups within the age limit (§11 item 3)",
            )
        )
    if met.recompute_share is not None:
        rows.append(("recompute share", f"{met.recompute_share:.2%}", "re-prefills at each publish, of the demand"))
    return rows


def goodput_rows(plan, met) -> list[tuple[str, str, str]]:
    """MODEL §13's "goodput" line (none without reliability): expected training failures over the run, the
    checkpoint interval, the time the goodput loses, and each shape's availability."""
    if met.training_goodput is None:
        return []
    failures = met.failures_expected or {}
    lost = plan.makespan_s * (1 - met.training_goodput) if met.training_goodput < 1 else 0.0
    interval = f"every {met.checkpoint_interval_s:,.0f} s" if met.checkpoint_interval_s else "no training failures"
    shares = ", ".join(f"{name} {a:.4f}" for name, a in (met.availability or {}).items())
    rows = [
        (
            "goodput",
            f"{met.training_goodput:.4f}",
            f"{failures.get('training', 0.0):,.1f} training failures expected, checkpoints {interval}, "
            f"~{lost / 3600:,.1f} h lost",
        ),
        ("availability", shares, "per shape: failures and preemptions"),
    ]
    if met.weight_sync_share:
        rows.append(("weight sync", f"{met.weight_sync_share:.2%}", "of each cadence generation pauses"))
    return rows


def render_diagnosis(console, diagnosis: dict) -> None:
    conflict = diagnosis.get("conflict")
    if conflict:
        console.print("conflict: " + conflict, markup=False)
    for change in diagnosis.get("changes", []):
        approx = "" if change.get("exact", True) else " (within 0.1 %)"
        console.print(f"  feasible with {change['change']}{approx}", markup=False)
    for pair in diagnosis.get("pairs_of_changes") or []:
        console.print(f"  feasible with two changes: {pair['change']}", markup=False)
    for text in diagnosis.get("notes", []):
        console.print(f"  {text}", markup=False)


def render_batch(console, report, statuses) -> None:
    from rich.table import Table

    tally = report.tally
    table = Table(show_edge=False, pad_edge=False, box=None)
    table.add_column("status")
    table.add_column("instances", justify="right")
    for status in statuses:
        if tally.counts[status]:
            table.add_row(status, f"{tally.counts[status]:,}")
    table.add_row("[bold]total[/bold]", f"[bold]{tally.done:,}[/bold] of {tally.total:,}")
    console.print(table)
    if tally.reused:
        console.print(f"{tally.reused:,} reused from an earlier run (--resume)")
    if report.interrupted:
        console.print(f"interrupted: {tally.done:,} of {tally.total:,} results kept; rerun with --resume to finish")
    console.print(f"summary: {report.summary_csv}", markup=False)
