"""calibrate: run logs -> fitted instance fields with bootstrap intervals, and a new instance file."""

from __future__ import annotations

import click

from commands.common import guarded, write_and_show


def _steps(path: str | None, origin: float | None):
    if path is None:
        return None, None
    from calibrate.logs import read_steps
    from calibrate.verl import looks_like_verl, read_verl_steps

    if looks_like_verl(path):
        return read_verl_steps(path)
    return read_steps(path, origin), None


@click.command()
@click.option(
    "--trajectories",
    "trajectories",
    required=True,
    type=click.Path(dir_okay=False),
    help="Trajectory log (CSV, JSONL or Parquet): start, end, output_tokens [backend, effective, group, ...].",
)
@click.option(
    "--steps",
    "steps_file",
    type=click.Path(dir_okay=False),
    help="Step log: iteration, update_s (or update_start/update_end), training_gpus [inference_gpus, "
    "boundary]; or verl's per-step metrics JSONL.",
)
@click.option(
    "--into",
    "into",
    type=click.Path(dir_okay=False),
    help="Instance giving what logs cannot know (pools, prices, deadline); the fitted fields replace its own.",
)
@click.option(
    "-o",
    "--output",
    "output",
    type=click.Path(dir_okay=False),
    help="Write the calibrated instance (YAML) here; needs --into.",
)
@click.option("--inference-gpus", type=click.IntRange(min=1), help="Inference GPUs allocated during the log.")
@click.option("--json", "as_json", is_flag=True, help="Print the calibration as JSON.")
@click.option("--out", type=click.Path(file_okay=False), help="Folder for calibrate.json and the plots (PNG).")
@guarded
def calibrate(trajectories, steps_file, into, output, inference_gpus, as_json, out) -> None:
    """Fit instance fields to run logs: lifetimes (censored lognormal or Kaplan–Meier), tokens/s per GPU,
    intake, group correlation, the update law, the cadence achieved and the bottleneck.

    Exit codes: 0 calibrated, 2 a bad log, instance or option, 1 internal error.
    """
    from calibrate.fit import calibrate as run
    from calibrate.logs import read_trajectories
    from models.load import load_instance

    if output and not into:
        raise click.UsageError("-o needs --into: pools, prices and the deadline are not in the logs")
    inst = load_instance(into) if into else None
    log, origin = read_trajectories(trajectories)
    steps, framework = _steps(steps_file, origin)
    cal = run(log, steps, inst, inference_gpus)
    if framework and framework.get("response_length_mean") is not None:
        cal.notes.append(
            f"verl: mean response length {framework['response_length_mean']:,.0f} tokens, "
            f"{framework['training_gpus']:,.0f} GPUs"
        )
    if output:
        _write_instance(cal, into, output)
    notes = [f"calibrated instance: {output}"] if output else []
    write_and_show(
        cal,
        cal.to_json(),
        report_file="calibrate.json",
        out=out,
        as_json=as_json,
        plots=_plots,
        printer=_printer,
        notes=notes,
    )


def _plots(cal) -> dict[str, bytes]:
    from render.calibrate import calibration_pngs

    return calibration_pngs(cal)


def _printer(console, cal) -> None:
    from render.calibrate import render_calibration

    render_calibration(console, cal)


def _write_instance(cal, into: str, output: str) -> None:
    """Write the calibrated instance and load it back: a file this command writes must be valid."""
    from calibrate.writer import calibrated_document
    from drivers.output import write_atomic
    from models.load import InstanceError, load_instance

    write_atomic(output, calibrated_document(cal, into))
    try:
        load_instance(output)
    except InstanceError as exc:
        raise RuntimeError(f"the calibrated instance does not load: {exc.message}") from None
