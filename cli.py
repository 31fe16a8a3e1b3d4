"""The `trainground` command line: parse options, load, call solver/, render. No model logic here."""

from __future__ import annotations

import functools
import json
import os
import sys
from pathlib import Path

import click

from models.load import InstanceError, load_instance

EXIT_OK, EXIT_INTERNAL, EXIT_INVALID, EXIT_INFEASIBLE, EXIT_TIME_LIMIT = 0, 1, 2, 3, 4


def _console():
    from rich.console import Console

    return Console(highlight=False, soft_wrap=False, width=max(100, Console().width))


def guarded(func):
    """Bad input: one message and exit 2; anything unexpected: one line and exit 1, never a traceback."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except InstanceError as exc:
            click.echo(exc.message, err=True)
            sys.exit(EXIT_INVALID)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException, SystemExit):
            raise
        except Exception as exc:  # the one place that turns bugs into a clear exit code
            if os.environ.get("TRAINGROUND_DEBUG"):
                raise
            click.echo(f"trainground: internal error: {type(exc).__name__}: {exc} (set TRAINGROUND_DEBUG=1 for details)", err=True)
            sys.exit(EXIT_INTERNAL)

    return wrapper


def _edits_option(func):
    return click.option(
        "--set", "edits", multiple=True, metavar="PATH=VALUE",
        help="Edit one field before use, by its MODEL.md path (e.g. environment.littles_law_uses=median).",
    )(func)


def load_with_edits(path: str, edits: tuple[str, ...] = ()):
    if not edits:
        return load_instance(path)
    from models.edits import load_edited

    return load_edited(Path(path), list(edits))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="trainground")
def main() -> None:
    """Size the training ground of an agentic-RL run: inference, training, sandboxes, cadence, as one MIP."""


@main.command()
@click.argument("instance", type=click.Path(dir_okay=True))
@click.option("--cadence", type=float, help="Seconds per outer iteration (default: the deadline pace).")
@click.option("--inference-gpus", type=int, help="Inference card count, for the per-card thresholds.")
@click.option("--json", "as_json", is_flag=True, help="Print MODEL.md §6 keys as JSON.")
@_edits_option
@guarded
def explain(instance: str, cadence: float | None, inference_gpus: int | None, as_json: bool, edits) -> None:
    """The seed article's arithmetic on INSTANCE, each figure with its formula (no optimisation)."""
    from solver.explain import explain as run_explain

    if cadence is not None and not cadence > 0:
        raise click.BadParameter(f"must be > 0, got {cadence}", param_hint="--cadence")
    if inference_gpus is not None and inference_gpus <= 0:
        raise click.BadParameter(f"must be > 0, got {inference_gpus}", param_hint="--inference-gpus")
    result = run_explain(load_with_edits(instance, edits), cadence, inference_gpus)
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2))
        return
    render_explanation(_console(), result)


OBJECTIVE = click.Choice(["total_cost", "hourly_cost", "makespan"])
STATUS_EXIT = {"optimal": EXIT_OK, "infeasible": EXIT_INFEASIBLE, "time_limit": EXIT_TIME_LIMIT,
               "invalid": EXIT_INVALID, "error": EXIT_INTERNAL}


@main.command()
@click.argument("instance", type=click.Path(dir_okay=True))
@click.option("--objective", type=OBJECTIVE, help="Override the instance's objective.")
@click.option("--time-limit", type=click.FloatRange(min=0, min_open=True), help="Seconds; returns the incumbent and its gap.")
@click.option("--json", "as_json", is_flag=True, help="Print the MODEL.md §6 result as JSON.")
@click.option("--out", type=click.Path(dir_okay=False), help="Also write the JSON result to this file.")
@_edits_option
@guarded
def solve(instance: str, objective: str | None, time_limit: float | None, as_json: bool, out: str | None, edits) -> None:
    """Cheapest (or fastest) plan for INSTANCE, solved exactly and verified.

    Exit codes: 0 optimal, 3 infeasible (diagnosis printed), 4 time limit, 2 invalid input, 1 internal error.
    """
    import time

    clock = time.perf_counter()
    inst = load_with_edits(instance, edits)
    load_seconds = time.perf_counter() - clock
    from solver.solve import solve_instance

    result = solve_instance(inst, objective, time_limit)
    result.timings.load = load_seconds
    payload = result.to_json()
    if out:
        from solver.output import write_json

        write_json(out, payload)
    if as_json:
        click.echo(json.dumps(payload, indent=2))
    else:
        render_result(_console(), result)
    sys.exit(STATUS_EXIT[result.status])


@main.command()
@guarded
def schema() -> None:
    """Print the JSON Schema of instance files (for editor autocompletion)."""
    from models.instance import Instance

    click.echo(json.dumps(Instance.model_json_schema(mode="validation"), indent=2))


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
    from rich.table import Table

    from solver.explain import SECTIONS

    gpus = f", {result.inference_gpus:,} inference GPUs" if result.inference_gpus else ""
    console.print(f"[bold]{result.instance}[/bold]: the seed's arithmetic at cadence {result.cadence_s:.6g} s{gpus}")
    for section in SECTIONS:
        table = Table(title=section, title_justify="left", show_edge=False, pad_edge=False)
        table.add_column("figure", no_wrap=True)
        table.add_column("value", justify="right", no_wrap=True)
        table.add_column("unit", no_wrap=True)
        table.add_column("formula and inputs")
        for line in (ln for ln in result.lines if ln.section == section):
            table.add_row(line.key, _fmt(line.value, line.unit), line.unit, line.formula)
        console.print(table)


def _money(x: float) -> str:
    return f"${x:,.2f}"


def render_result(console, result) -> None:
    from rich.table import Table

    head = f"[bold]{result.instance}[/bold]: {result.status}"
    if result.objective_value is not None:
        value = _money(result.objective_value) if result.objective != "makespan" else f"{result.objective_value:,.0f} s"
        head += f", {result.objective} = {value}"
    if result.mip_gap:
        head += f" (gap {result.mip_gap:.3%})"
    console.print(head)
    if result.message and result.plan is None:
        console.print(result.message, markup=False)
    if result.diagnosis:
        render_diagnosis(console, result.diagnosis)
    plan, met = result.plan, result.metrics
    if plan is None:
        return
    decisions = Table(title="Decisions", title_justify="left", show_edge=False, pad_edge=False)
    for col in ("decision", "value", "detail"):
        decisions.add_column(col, justify="right" if col == "value" else "left")
    decisions.add_row("cadence", f"{plan.cadence_s:,.6g} s", f"makespan {plan.makespan_s:,.0f} s = {plan.makespan_s / 86400:.3f} d")
    decisions.add_row("versions kept", str(plan.versions_kept), "")
    for item in plan.inference:
        decisions.add_row(f"replicas {item.shape}", f"{item.replicas:,}", f"{item.gpus:,} GPUs in pool {item.pool}")
    decisions.add_row("training groups", f"{plan.training_groups:,}", f"{plan.training_gpus:,} GPUs")
    for node in plan.local_nodes:
        decisions.add_row(f"nodes {node.type}", f"{node.count:,}", "local sandbox nodes")
    for vm in plan.cloud_vms:
        decisions.add_row(f"VMs {vm.type}", f"{vm.count:,}", "cloud spillover")
    for pool in plan.pools:
        decisions.add_row(f"pool {pool.pool}", f"{pool.gpus_used:,}", f"of {pool.gpus:,} GPUs used")
    console.print(decisions)
    costs = Table(title="Costs", title_justify="left", show_edge=False, pad_edge=False)
    costs.add_column("term")
    costs.add_column("$/hour", justify="right")
    costs.add_column("over the run", justify="right")
    hours = plan.makespan_s / 3600
    for term, value in (("GPU", plan.cost_terms.gpu), ("node", plan.cost_terms.node), ("VM", plan.cost_terms.vm)):
        costs.add_row(term, _money(value), _money(value * hours))
    costs.add_row("[bold]total[/bold]", _money(plan.hourly_cost), _money(plan.total_cost))
    console.print(costs)
    metrics = Table(title="Throughput, sandboxes, freshness", title_justify="left", show_edge=False, pad_edge=False)
    metrics.add_column("metric")
    metrics.add_column("value", justify="right")
    metrics.add_column("note")
    rows = [
        ("effective trajectories/s", f"{met.effective_trajectories_per_s:.4f}", f"B/L; intake {met.effective_intake:.4f}"),
        ("attempts/s", f"{met.attempts_per_s:.4f}", "R_eff / (p·(1 - drop))"),
        ("token demand/s", f"{met.token_demand_per_s:,.0f}", ""),
        ("token supply/s", f"{met.token_supply_per_s:,.0f}", f"margin {met.throughput_margin:+.2%}"),
        ("update time", f"{met.update_time_s:,.1f} s", f"margin {met.update_margin:+.2%} of the cadence"),
        ("time margin", f"{met.time_margin:.2%}", "(deadline - makespan)/deadline"),
        ("in flight (mean / peak)", f"{met.inflight_mean:,.0f} / {met.inflight_peak:,.0f}", f"occupancy mean {met.occupancy_mean_s:,.0f} s"),
        ("version gap (mean / p99)", f"{met.mean_version_gap:.3f} / {met.p99_version_gap:.2f}", ""),
        ("exceedance / group drop", f"{met.exceedance:.4f} / {met.group_drop_rate:.4f}", f"at K = {plan.versions_kept}"),
    ]
    for row in rows:
        metrics.add_row(*row)
    console.print(metrics)
    console.print("binding: " + (", ".join(result.binding) if result.binding else "none"), markup=False)


def render_diagnosis(console, diagnosis: dict) -> None:
    conflict = diagnosis.get("conflict")
    if conflict:
        console.print("conflict: " + conflict, markup=False)
    for change in diagnosis.get("changes", []):
        console.print(f"  feasible with {change['change']}", markup=False)
    for text in diagnosis.get("notes", []):
        console.print(f"  {text}", markup=False)


if __name__ == "__main__":
    main()
