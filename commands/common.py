"""What every command shares: exit codes, the error guard, the console, the --set option, progress bars, a
report's files and output."""

from __future__ import annotations

import functools
import json
import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from trainground.models.edits import load_edited_checked
from trainground.models.errors import RefusedInstance
from trainground.models.instance import OBJECTIVES
from trainground.models.load import InstanceError
from trainground.simulation.output import OutputError, check_writable

EXIT_OK, EXIT_INTERNAL, EXIT_INVALID, EXIT_INFEASIBLE, EXIT_TIME_LIMIT = 0, 1, 2, 3, 4


class ClosedPipeSafe:
    """Standard output that outlives its reader: once the pipe is closed (``trainground ... | head -1``),
    the rest of the output goes to /dev/null, so the command ends with its own exit code, silently."""

    def __init__(self, stream):
        self._stream = stream

    def _guard(self, operation, *args):
        try:
            return operation(*args)
        except BrokenPipeError:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())  # what is still buffered drains into /dev/null
            os.close(devnull)
            return operation(*args)

    def write(self, text):
        return self._guard(self._stream.write, text)

    def flush(self):
        return self._guard(self._stream.flush)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def protect_stdout() -> None:
    """Route standard output through :class:`ClosedPipeSafe` (once; only a real file descriptor can be
    redirected)."""
    try:
        sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return
    if not isinstance(sys.stdout, ClosedPipeSafe):
        sys.stdout = ClosedPipeSafe(sys.stdout)


def console():
    from rich.console import Console

    return Console(highlight=False, soft_wrap=False, width=max(100, Console().width))


class Finite(click.FloatRange):
    """A number option in a range that refuses NaN and the infinities: click's range check lets NaN through (it
    fails every comparison, the bound's included), and neither is a usable figure of seconds or a share."""

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


OUTPUT_OPTIONS = ("out", "output", "trace_dir")  # the parameters of the commands that name a file or folder to write


def guarded(func):
    """Bad input (an instance file, an option, an output path that cannot be written): one message and exit 2;
    anything unexpected: one line and exit 1, never a traceback. The output paths (OUTPUT_OPTIONS) are checked
    before the command runs, so that a folder that cannot be written costs no solve."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            for name in OUTPUT_OPTIONS:
                if isinstance(kwargs.get(name), str):
                    check_writable(kwargs[name])
            return func(*args, **kwargs)
        except RefusedInstance as exc:  # refused once loaded: blamed on the file the command read it from
            file = kwargs.get("instance")
            click.echo(InstanceError(file, exc.problems).message if file else exc.message, err=True)
            sys.exit(EXIT_INVALID)
        except InstanceError as exc:
            click.echo(exc.message, err=True)
            sys.exit(EXIT_INVALID)
        except OutputError as exc:
            click.echo(str(exc), err=True)
            sys.exit(EXIT_INVALID)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException, SystemExit):
            raise
        except Exception as exc:  # the one place that turns bugs into a clear exit code
            if os.environ.get("TRAINGROUND_DEBUG"):
                raise
            click.echo(
                f"trainground: internal error: {type(exc).__name__}: {exc} (set TRAINGROUND_DEBUG=1 for details)",
                err=True,
            )
            sys.exit(EXIT_INTERNAL)

    return wrapper


def edits_option(func):
    return click.option(
        "--set",
        "edits",
        multiple=True,
        metavar="PATH=VALUE",
        help="Edit one field before use, by its path as docs/fields.md names it (e.g. environment.littles_law_uses=median).",
    )(func)


def basis_option(func):
    return click.option(
        "--basis",
        type=click.Choice(["hold", "steady_state"]),
        default=None,
        help="Plan on this basis (planning.basis; default the file's, else hold): hold sizes plans that finish "
        "when replayed, steady_state is the seed's arithmetic (docs/model.md §11).",
    )(func)


def with_basis(edits: tuple[str, ...], basis: str | None) -> tuple[str, ...]:
    """The --set edits, with --basis as one more (it wins over a --set of the same field)."""
    return tuple(edits) + ((f"planning.basis={basis}",) if basis else ())


def load_with_edits(path: str, edits: tuple[str, ...] = ()):
    """The instance, its load warnings (bare-number durations, uncertainty factors that miss stages) shown on
    standard error."""
    return load_with_warnings(path, edits)[0]


def confidence_input(file: str, inst, flag: str) -> None:
    """Refuse (InstanceError) a confidence option ``flag`` on ``inst``: it needs an uncertainty section, and a
    staged instance does not take it (models.stage_rules.refuse_confidence)."""
    from trainground.models.load import InstanceError, Problem
    from trainground.models.stage_rules import refuse_confidence

    if inst.uncertainty is None:
        raise InstanceError(file, [Problem("uncertainty", f"{flag} needs an uncertainty section (docs/model.md §9)")])
    refused = refuse_confidence(inst, flag)
    if refused:
        raise InstanceError(file, refused)


def load_with_warnings(path: str, edits: tuple[str, ...] = ()):
    """(instance, warnings): the load warnings (implausible bare-number durations, uncertainty factors that miss
    stages), also shown on standard error."""
    inst, warnings = load_edited_checked(Path(path), list(edits))
    refuse_oversized_stages(path, inst)
    for text in warnings:
        click.echo(f"{path}: warning: {text}", err=True)
    return inst, warnings


def refuse_oversized_stages(path: str, inst) -> None:
    """Refuse (InstanceError) a staged instance whose model is estimated above its pair cap from a sample of its
    stages' grids (:func:`solver.stages.tables.refuse_estimated`): at the cost of the sample, before the command
    imports its solver or tabulates the whole grids."""
    if inst.stages is None:
        return
    from trainground.models.load import Problem
    from trainground.solver.stages.tables import StagedUnsupported, refuse_estimated

    try:
        refuse_estimated(inst)
    except StagedUnsupported as exc:
        raise InstanceError(path, [Problem(exc.where, exc.rule)]) from None


def require_dask(scheduler: str | None) -> None:
    """``--scheduler`` runs on Dask, an optional extra: without it, say how to install it (exit 2)."""
    if not scheduler:
        return
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise click.UsageError(
            "--scheduler runs on a Dask cluster, which needs the optional Dask extra: "
            "pip install 'trainground[dask]' (or: pip install -e '.[dask]')"
        ) from None


def write_and_show(
    report: Any,
    payload: dict,
    *,
    report_file: str,
    out: str | None,
    as_json: bool,
    plots: Callable[[Any], dict[str, bytes]],
    printer: Callable[[Any, Any], None],
    notes: Sequence[str] = (),
) -> None:
    """A report command's end: with ``out``, ``payload`` written as ``out/report_file`` and the report's
    ``plots(report)`` (PNG bytes by file name) beside it; then ``payload`` printed as JSON, or
    ``printer(console, report)`` followed by the ``notes`` and where the files went.

    ``plots`` and ``printer`` import their renderer when called, so that what is not drawn or printed
    is never loaded (the plotting modules load the solver)."""
    if out:
        from trainground.simulation.output import write_atomic_bytes, write_json

        write_json(Path(out) / report_file, payload)
        for name, data in plots(report).items():
            write_atomic_bytes(Path(out) / name, data)
    if as_json:
        click.echo(json.dumps(payload, indent=2))
        return
    printer(console(), report)
    for line in notes:
        click.echo(line)
    if out:
        click.echo(f"report and plots: {out}")


OBJECTIVE = click.Choice(OBJECTIVES)
STATUS_EXIT = {
    "optimal": EXIT_OK,
    "infeasible": EXIT_INFEASIBLE,
    "time_limit": EXIT_TIME_LIMIT,
    "invalid": EXIT_INVALID,
    "error": EXIT_INTERNAL,
}


HANDFUL = 5  # commands solving more models than this show a progress bar (on a terminal, without --json)
PROGRESS_AFTER_S = 2.0  # a replay that takes longer than this shows a progress bar (on a terminal, without --json)


class SolvingBar:
    """A transient rich progress bar on standard error that appears once the work looks long: on the first update
    promising more than a handful of models, or, with ``after_s``, once the work has taken that many seconds."""

    def __init__(self, label: str, enabled: bool, after_s: float | None = None):
        self.label, self.enabled, self.after_s = label, enabled, after_s
        self.began = time.monotonic()
        self.progress = None
        self.task = None

    def _due(self, total: int) -> bool:
        if self.after_s is None:
            return total > HANDFUL
        return time.monotonic() - self.began >= self.after_s

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or (self.progress is None and not self._due(total)):
            return
        if self.progress is None:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.progress = Progress(
                TextColumn(self.label),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=Console(stderr=True),
                transient=True,
            )
            self.progress.start()
            self.task = self.progress.add_task(self.label, total=total)
        self.progress.update(self.task, completed=done, total=total)

    def __enter__(self) -> SolvingBar:
        return self

    def __exit__(self, *exc) -> None:
        if self.progress is not None:
            self.progress.stop()


def show_bar(as_json: bool) -> bool:
    """Whether a progress bar is shown: on standard error, when it is a terminal (and the command prints no JSON)."""
    return sys.stderr.isatty() and not as_json


class ProgressLine:
    """A one-line status on standard error, shown only on a terminal and only once the work has taken
    more than ``delay`` seconds: what the solve is doing now and how long it has run. Use as a context
    manager; call it with the latest text."""

    def __init__(self, delay: float = 2.0, enabled: bool | None = None):
        self.delay = delay
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.text = "working"
        self._live = None
        self._timer = None
        self._started = 0.0

    def __call__(self, text: str) -> None:
        self.text = text
        if self._live is not None:
            self._live.update(self._render())

    def _render(self):
        import time

        from rich.text import Text

        return Text(f"… {self.text} ({time.perf_counter() - self._started:,.0f} s)", style="dim")

    def _show(self) -> None:
        from rich.console import Console
        from rich.live import Live

        self._live = Live(
            self._render(),
            console=Console(stderr=True),
            transient=True,
            refresh_per_second=2,
            get_renderable=self._render,
        )
        self._live.start()

    def __enter__(self) -> ProgressLine:
        import threading
        import time

        self._started = time.perf_counter()
        if self.enabled:
            self._timer = threading.Timer(self.delay, self._show)
            self._timer.daemon = True
            self._timer.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._timer is not None:
            self._timer.cancel()
        if self._live is not None:
            self._live.stop()
            self._live = None
