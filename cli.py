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


if __name__ == "__main__":
    main()
