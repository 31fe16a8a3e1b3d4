"""batch: many instance files, each its own result, in parallel."""

from __future__ import annotations

import json
import signal
import sys

import click

from trainground.commands.common import (
    EXIT_INFEASIBLE,
    EXIT_INTERNAL,
    EXIT_INVALID,
    EXIT_OK,
    OBJECTIVE,
    Finite,
    basis_option,
    console,
    edits_option,
    guarded,
    require_dask,
    show_bar,
    with_basis,
)
from trainground.models.edits import parse_path, split_edit
from trainground.models.result import STATUSES
from trainground.render.tables import render_batch

BATCH_SEVERITY = (
    ("error", EXIT_INTERNAL),
    ("invalid", EXIT_INVALID),
    ("infeasible", EXIT_INFEASIBLE),
    ("time_limit", EXIT_INFEASIBLE),
)
EXIT_INTERRUPTED = 130


@click.command()
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option(
    "--out",
    default="batch-out",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Folder for one JSON per instance, summary.csv and summary.jsonl.",
)
@click.option("--workers", type=click.IntRange(min=1), help="Local worker processes [default: the core count].")
@click.option("--scheduler", metavar="ADDRESS", help="Run on a Dask cluster instead (e.g. tcp://host:8786).")
@click.option("--objective", type=OBJECTIVE, help="Override every instance's objective.")
@click.option("--time-limit", type=Finite(min=0, min_open=True), help="Seconds per instance.")
@click.option(
    "--resume", is_flag=True, help="Skip instances whose result in --out is for the same file content and options."
)
@click.option("--quiet", is_flag=True, help="Print nothing; the exit code tells.")
@click.option("--json", "as_json", is_flag=True, help="Print the counts and summary paths as JSON.")
@basis_option
@edits_option
@guarded
def batch(paths, out, workers, scheduler, objective, time_limit, resume, quiet, as_json, basis, edits) -> None:
    """Solve every instance file in PATH... (files, folders searched recursively, globs), in parallel.

    Each instance gets its own result, whatever happens to the others. Exit codes: 0 all
    optimal, 3 some infeasible or time-limited, 2 some invalid, 1 some internal error (the
    most severe wins), 130 interrupted (rerun with --resume to finish). --set PATH=VALUE edits every
    file before it is validated ([*] for every item of a list); --resume reuses only results solved
    with the same edits.
    """
    from trainground.drivers.batch import run as driver

    if workers is not None and scheduler:
        raise click.UsageError("give --workers or --scheduler, not both (a Dask cluster sizes itself)")
    require_dask(scheduler)
    edits = with_basis(edits, basis)
    try:
        files = driver.discover(paths, exclude=out)
    except driver.BatchError as exc:
        raise click.BadParameter(str(exc), param_hint="PATH") from None
    for edit in edits:
        try:
            parse_path(split_edit(edit)[0])
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--set") from None
    tasks = driver.plan_tasks(files, objective, time_limit, edits)
    with_bar = show_bar(quiet or as_json)
    options = dict(objective=objective, time_limit=time_limit, workers=workers, scheduler=scheduler, resume=resume)
    previous = signal.signal(signal.SIGTERM, _terminate_as_interrupt)
    try:
        if with_bar:
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
        click.echo(
            json.dumps(
                {
                    "instances": tally.total,
                    "done": tally.done,
                    "reused": tally.reused,
                    "interrupted": report.interrupted,
                    "counts": {status: tally.counts[status] for status in STATUSES},
                    "summary_csv": str(report.summary_csv),
                    "summary_jsonl": str(report.summary_jsonl),
                    "exit_code": code,
                },
                indent=2,
            )
        )
    elif not quiet:
        render_batch(console(), report, STATUSES)
    sys.exit(code)


def batch_exit_code(counts) -> int:
    """The most severe outcome of a batch: error 1 > invalid 2 > infeasible or time limit 3 > all optimal 0."""
    return next((code for status, code in BATCH_SEVERITY if counts.get(status)), EXIT_OK)


def _terminate_as_interrupt(signum, frame):
    """SIGTERM stops a batch like Ctrl-C: workers ended, finished results and summaries kept."""
    raise KeyboardInterrupt


def _batch_with_bar(driver, tasks, out, options):
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = (
        TextColumn("solving"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[tally]}"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console(), transient=False) as bar:
        job = bar.add_task("batch", total=len(tasks), tally="")

        def update(tally) -> None:
            text = f"failed {tally.failed:,}" + (f" · resumed {tally.reused:,}" if tally.reused else "")
            if tally.done == tally.reused:  # nothing solved yet: reused results are no speed for the ETA
                bar.reset(job, completed=tally.done, tally=text)
            else:
                bar.update(job, completed=tally.done, tally=text)

        return driver.run_batch(tasks, out, on_progress=update, **options)
