"""The `trainground` command line: parse options, load, call solver/, render. No model logic here."""

from __future__ import annotations

import functools
import json
import os
import signal
import sys
from pathlib import Path

import click

from models.edits import load_edited
from models.load import InstanceError
from models.instance import OBJECTIVES
from models.result import STATUSES

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


OBJECTIVE = click.Choice(OBJECTIVES)
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


BATCH_SEVERITY = (("error", EXIT_INTERNAL), ("invalid", EXIT_INVALID), ("infeasible", EXIT_INFEASIBLE),
                  ("time_limit", EXIT_INFEASIBLE))
EXIT_INTERRUPTED = 130


@main.command()
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option("--out", default="batch-out", show_default=True, type=click.Path(file_okay=False),
              help="Folder for one JSON per instance, summary.csv and summary.jsonl.")
@click.option("--workers", type=click.IntRange(min=1), help="Local worker processes [default: the core count].")
@click.option("--scheduler", metavar="ADDRESS", help="Run on a Dask cluster instead (e.g. tcp://host:8786).")
@click.option("--objective", type=OBJECTIVE, help="Override every instance's objective.")
@click.option("--time-limit", type=click.FloatRange(min=0, min_open=True), help="Seconds per instance.")
@click.option("--resume", is_flag=True, help="Skip instances whose result in --out is for the same file content and options.")
@click.option("--quiet", is_flag=True, help="Print nothing; the exit code tells.")
@click.option("--json", "as_json", is_flag=True, help="Print the counts and summary paths as JSON.")
@guarded
def batch(paths, out, workers, scheduler, objective, time_limit, resume, quiet, as_json) -> None:
    """Solve every instance file in PATH... (files, folders searched recursively, globs), in parallel.

    Each instance gets its own result, whatever happens to the others. Exit codes: 0 all
    optimal, 3 some infeasible or time-limited, 2 some invalid, 1 some internal error (the
    most severe wins), 130 interrupted (rerun with --resume to finish).
    """
    from solver import batch as driver

    if workers is not None and scheduler:
        raise click.UsageError("give --workers or --scheduler, not both (a Dask cluster sizes itself)")
    try:
        files = driver.discover(paths, exclude=out)
    except driver.BatchError as exc:
        raise click.BadParameter(str(exc), param_hint="PATH") from None
    tasks = driver.plan_tasks(files, objective, time_limit)
    show_bar = _show_bar(quiet or as_json)
    options = dict(objective=objective, time_limit=time_limit, workers=workers, scheduler=scheduler, resume=resume)
    previous = signal.signal(signal.SIGTERM, _terminate_as_interrupt)
    try:
        if show_bar:
            report = _batch_with_bar(driver, tasks, out, options)
        else:
            report = driver.run_batch(tasks, out, **options)
    except driver.SchedulerUnavailable as exc:
        click.echo(f"trainground: {exc}", err=True)
        sys.exit(EXIT_INTERNAL)
    finally:
        signal.signal(signal.SIGTERM, previous)
    tally = report.tally
    code = EXIT_INTERRUPTED if report.interrupted else batch_exit_code(tally.counts)
    if as_json:
        click.echo(json.dumps({
            "instances": tally.total, "done": tally.done, "reused": tally.reused, "interrupted": report.interrupted,
            "counts": {status: tally.counts[status] for status in STATUSES},
            "summary_csv": str(report.summary_csv), "summary_jsonl": str(report.summary_jsonl), "exit_code": code,
        }, indent=2))
    elif not quiet:
        render_batch(_console(), report, STATUSES)
    sys.exit(code)


def batch_exit_code(counts) -> int:
    """The most severe outcome of a batch: error 1 > invalid 2 > infeasible or time limit 3 > all optimal 0."""
    return next((code for status, code in BATCH_SEVERITY if counts.get(status)), EXIT_OK)


def _terminate_as_interrupt(signum, frame):
    """SIGTERM stops a batch like Ctrl-C: workers ended, finished results and summaries kept."""
    raise KeyboardInterrupt


def _batch_with_bar(driver, tasks, out, options):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    columns = (TextColumn("solving"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[tally]}"),
               TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn())
    with Progress(*columns, console=_console(), transient=False) as bar:
        job = bar.add_task("batch", total=len(tasks), tally="")

        def update(tally) -> None:
            text = f"failed {tally.failed:,}" + (f" · resumed {tally.reused:,}" if tally.reused else "")
            if tally.done == tally.reused:  # nothing solved yet: reused results are no speed for the ETA
                bar.reset(job, completed=tally.done, tally=text)
            else:
                bar.update(job, completed=tally.done, tally=text)

        return driver.run_batch(tasks, out, on_progress=update, **options)


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


# ---------------------------------------------------------------- trade-offs: frontier, compare, sweep

HANDFUL = 5  # commands solving more models than this show a progress bar (on a terminal, without --json)


class _SolvingBar:
    """A rich progress bar that appears on the first update promising more than a handful of models."""

    def __init__(self, label: str, enabled: bool):
        self.label, self.enabled = label, enabled
        self.progress = None
        self.task = None

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or (self.progress is None and total <= HANDFUL):
            return
        if self.progress is None:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.progress = Progress(TextColumn(self.label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                     console=_console(), transient=True)
            self.progress.start()
            self.task = self.progress.add_task(self.label, total=total)
        self.progress.update(self.task, completed=done, total=total)

    def __enter__(self) -> "_SolvingBar":
        return self

    def __exit__(self, *exc) -> None:
        if self.progress is not None:
            self.progress.stop()


def _show_bar(as_json: bool) -> bool:
    return sys.stdout.isatty() and not as_json


def _fitted(console, table) -> None:
    """Print ``table``; off a terminal (a file, a pipe), as wide as its content instead of wrapped."""
    if not console.is_terminal:
        from rich.measure import Measurement

        console.width = max(console.width, Measurement.get(console, console.options.update(width=10_000), table).maximum)
    console.print(table)


@main.command()
@click.argument("instance", type=click.Path(dir_okay=True))
@click.option("--out", default="frontier-out", show_default=True, type=click.Path(file_okay=False),
              help="Folder for frontier.csv, frontier.json and frontier.png.")
@click.option("--json", "as_json", is_flag=True, help="Print frontier.json (every point a MODEL.md §6 result).")
@_edits_option
@guarded
def frontier(instance: str, out: str, as_json: bool, edits) -> None:
    """Every plan no other beats on both makespan and cost: makespan vs total cost, and vs hourly cost.

    Exact over the instance's cadence grid: one model, re-solved with the makespan capped just
    below the last plan found until no faster plan exists. The tables list the frontier's
    corners: the plans where its slope changes (the vertices of its lower convex hull, each
    the cheapest plan for some price put on a day of schedule), plus both ends; "$ per day
    saved" is the slope to the next slower corner. Budgets are the instance's limits (--set
    limits.max_total_cost=...). Exit codes: 0, 3 no feasible plan, 2 invalid input.
    """
    from solver.frontier import CSV_COLUMNS, csv_rows, frontiers
    from solver.output import write_atomic_bytes, write_csv, write_json
    from solver.plots import frontier_png

    inst = load_with_edits(instance, edits)
    with _SolvingBar("frontier", _show_bar(as_json)) as bar:
        found = frontiers(inst, on_progress=bar)
    folder = Path(out)
    payload = found.to_json()
    write_csv(folder / "frontier.csv", CSV_COLUMNS, csv_rows(found))
    write_json(folder / "frontier.json", payload)
    write_atomic_bytes(folder / "frontier.png", frontier_png(found))
    if as_json:
        click.echo(json.dumps(payload, indent=2))
    else:
        render_frontier(_console(), found, folder)
    sys.exit(EXIT_OK if found.feasible else EXIT_INFEASIBLE)


def render_frontier(console, found, folder: Path) -> None:
    from rich.table import Table

    from solver.frontier import DAY_S, cost_of

    for name, front in found.frontiers.items():
        what = "total cost" if name == "total_cost" else "hourly cost"
        if not front.points:
            console.print(f"[bold]{found.instance}[/bold]: makespan vs {what}: no feasible plan")
            if front.end is not None and front.end.diagnosis:
                render_diagnosis(console, front.end.diagnosis)
            continue
        fast, cheap = front.fastest.plan, front.cheapest.plan
        console.print(
            f"[bold]{found.instance}[/bold]: makespan vs {what}: {len(front.points):,} non-dominated plans, "
            f"{len(front.corners):,} corners (# 1 the fastest, # {len(front.points)} the cheapest): "
            f"from {_money(cost_of(front.cheapest, name))} at {cheap.makespan_s / DAY_S:.3f} d "
            f"to {_money(cost_of(front.fastest, name))} at {fast.makespan_s / DAY_S:.3f} d")
        table = Table(box=None, show_edge=False, pad_edge=False, header_style="bold")
        per_day = "$/day saved" if name == "total_cost" else "$/h per day"
        for col in ("#", "makespan", "cadence", "K", "inference", "training", "nodes", "VMs", "$/hour", "total",
                    "margin", per_day):
            table.add_column(col, justify="right", no_wrap=True)
        for i, price in zip(front.corners, front.price_of_time()):
            plan, met = front.points[i].plan, front.points[i].metrics
            table.add_row(
                str(i + 1), f"{plan.makespan_s / DAY_S:.3f} d", f"{plan.cadence_s:g} s", str(plan.versions_kept),
                f"{plan.inference_gpus:,}", f"{plan.training_gpus:,}", f"{plan.node_count:,}",
                f"{plan.vm_count:,}", f"${plan.hourly_cost:,.0f}", f"${plan.total_cost:,.0f}",
                f"{met.time_margin:.2%}", "—" if price is None else f"${price:,.0f}")
        _fitted(console, table)
    console.print(f"{found.solves:,} solves; wrote {folder / 'frontier.csv'}, {folder / 'frontier.json'}, "
                  f"{folder / 'frontier.png'}", markup=False)


@main.command()
@click.argument("instance", type=click.Path(dir_okay=True))
@click.option("--baseline-inference-gpus", type=click.IntRange(min=1), metavar="N",
              help="The baseline's inference cards [default: the fewer-cards plan's].")
@click.option("--cadence", type=click.FloatRange(min=0, min_open=True),
              help="Pin the plans and the shorter-schedule arithmetic to this cadence (s); the baseline "
                   "stays at the deadline pace.")
@click.option("--json", "as_json", is_flag=True, help="Print the columns, figures and deltas as JSON.")
@_edits_option
@guarded
def compare(instance: str, baseline_inference_gpus: int | None, cadence: float | None, as_json: bool, edits) -> None:
    """Spend inference slack on fewer cards or a shorter schedule? The article's §4 as a report.

    Side by side: the baseline (the seed's arithmetic at the deadline pace on N inference
    cards), the cheapest plan meeting the deadline ("fewer cards"), the fastest plan keeping
    the baseline's card count and the fastest keeping the cheapest plan's hourly cost
    ("shorter schedule"), and the seed's arithmetic at the shorter schedule's cadence; then
    each against the baseline ("time margin 17.3 %, supply +21 %").
    """
    from solver.compare import compare as run_compare

    result = run_compare(load_with_edits(instance, edits), baseline_inference_gpus, cadence=cadence)
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2))
    else:
        render_comparison(_console(), result)


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

    from solver.compare import ROWS

    console.print(f"[bold]{result.instance}[/bold]: fewer cards, or a shorter schedule? "
                  f"(baseline {result.baseline_gpus:,} inference GPUs: {result.baseline_source}"
                  + (f"; cadence pinned to {result.pinned_cadence:g} s" if result.pinned_cadence else "") + ")")
    table = Table(box=None, show_edge=False, pad_edge=False, header_style="bold")
    table.add_column("figure", no_wrap=True)
    for n, col in enumerate(result.columns, start=1):
        table.add_column(f"({n}) {col.heading}", justify="right")
    table.add_row("status", *(col.status for col in result.columns))
    for key, label, kind in ROWS:
        table.add_row(label, *(_figure(col.figures.get(key), kind) if col.ok else "" for col in result.columns))
    console.print(table)
    for n, col in enumerate(result.columns, start=1):
        console.print(f"({n}) {col.title}: {col.note}", markup=False)
    console.print("[bold]Against the baseline[/bold]")
    for key, phrases in result.deltas().items():
        n = next(i for i, col in enumerate(result.columns, start=1) if col.key == key)
        console.print(f"({n}) {result.column(key).heading}:", markup=False)
        for phrase in phrases:
            console.print(f"    {phrase}", markup=False)


@main.command()
@click.argument("instance", type=click.Path(dir_okay=True))
@click.option("--set", "axes", multiple=True, required=True, metavar="PATH=V1,V2,...",
              help="A swept field and its values (split on top-level commas: {a: 1, b: 2} and [1,2] stay whole); "
                   "repeat for a cartesian product.")
@click.option("--objective", type=OBJECTIVE, help="Override every point's objective.")
@click.option("--out", default="sweep-out", show_default=True, type=click.Path(file_okay=False),
              help="Folder for sweep.csv, sweep.json and the plots.")
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
              help="Processes; the points are cut into this many contiguous chunks, each reusing one model.")
@click.option("--json", "as_json", is_flag=True, help="Print the rows and counts as JSON.")
@guarded
def sweep(instance: str, axes, objective: str | None, out: str, workers: int, as_json: bool) -> None:
    """Solve every point of the product of --set PATH=V1,V2,... edits to INSTANCE; one row per point.

    An invalid point is a row with the loader's message, an infeasible one a row with its
    diagnosis. Writes sweep.csv, sweep.json (every point's MODEL.md §6 result) and plots:
    the objective and key decisions against each swept field, and a heatmap for two fields.
    Exit codes: 0 the sweep ran (whatever each point's status), 1 some point hit an
    internal error, 2 invalid options or base file.
    """
    from solver import sweep as driver
    from solver.output import write_atomic_bytes, write_csv, write_json
    from solver.plots import sweep_pngs

    try:
        parsed = [driver.parse_axis(option) for option in axes]
    except driver.SweepError as exc:
        raise click.BadParameter(str(exc), param_hint="--set") from None
    with _SolvingBar("sweep", _show_bar(as_json)) as bar:
        report = driver.run_sweep(instance, parsed, objective, workers=workers, on_progress=bar)
    folder = Path(out)
    files = [folder / "sweep.csv", folder / "sweep.json"]
    write_csv(files[0], report.csv_columns(), report.csv_rows())
    document = report.to_json()
    write_json(files[1], document)
    for name, png in sweep_pngs(report).items():
        write_atomic_bytes(folder / name, png)
        files.append(folder / name)
    if as_json:
        payload = {**document, "points": [{k: v for k, v in row.items() if k != "result"} for row in report.rows],
                   "files": [str(f) for f in files]}
        click.echo(json.dumps(payload, indent=2))
    else:
        render_sweep(_console(), report, files)
    sys.exit(EXIT_INTERNAL if report.counts.get("error") else EXIT_OK)


def render_sweep(console, report, files) -> None:
    from rich.table import Table

    table = Table(box=None, show_edge=False, pad_edge=False, header_style="bold")
    table.add_column("#", justify="right", no_wrap=True)
    short = [a.path.split(".")[-1] for a in report.axes]
    for axis, name in zip(report.axes, short):
        table.add_column(name if short.count(name) == 1 else axis.path, no_wrap=True)
    for col in ("status", "objective", "cadence", "K", "inference", "training", "nodes", "VMs", "margin",
                "exceed.", "drop"):
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
            str(row["index"]), *(row["edits"][a.path] for a in report.axes), row["status"], shown,
            show(row["cadence_s"], ",.6g"), show(row["versions_kept"], "d"), show(row["inference_gpus"], ",d"),
            show(row["training_gpus"], ",d"), show(row["nodes"], ",d"), show(row["vms"], ",d"),
            show(row["time_margin"], ".2%"), show(row["exceedance"], ".2%"), show(row["group_drop_rate"], ".2%"),
            (row["message"] or "").replace(prefix, ""))
    _fitted(console, table)
    counts = report.counts
    tally = ", ".join(f"{counts[s]:,} {s}" for s in STATUSES if counts.get(s))
    solved = sum(counts[s] for s in ("optimal", "infeasible", "time_limit"))
    console.print(f"{len(report.rows):,} points: {tally}; {report.builds:,} model{'s' if report.builds != 1 else ''} "
                  f"built for {solved:,} solved points ({report.workers} worker{'s' if report.workers > 1 else ''}); "
                  f"{report.seconds:.1f} s", markup=False)
    console.print("wrote " + ", ".join(str(f) for f in files), markup=False)


if __name__ == "__main__":
    main()
