"""The two logs a calibration reads, checked row by row: the trajectory log and the step log.

Trajectory log, one row per attempt (the columns of ``simulate --trace``):
``start``, ``end`` (empty: still running when the log ends), ``output_tokens``; optional
``backend``, ``effective``, ``group``, ``version_start``, ``version_consumed``. An attempt whose
``start`` is empty never got a sandbox before the log ended (its ``end`` must be empty too).

Step log, one row per iteration: ``iteration``, ``update_s`` (or ``update_start`` and
``update_end``), ``training_gpus``; optional ``inference_gpus``, ``boundary``.

Times are seconds from the run's start, or ISO-8601 (then counted from the earliest start of the
trajectory log; a step log's times are of the same kind as the trajectory log's).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from calibrate.tables import Table, flags, labels, numbers, read_table, times

TRAJECTORY_REQUIRED = ("start", "end", "output_tokens")
STEP_REQUIRED = ("iteration", "training_gpus")


@dataclass
class Trajectories:
    file: str
    start: np.ndarray  # seconds; NaN: never started
    end: np.ndarray  # seconds; NaN: still running at log_end
    tokens: np.ndarray  # output tokens; NaN where unknown (a running attempt)
    log_end: float  # when the log ends: the latest time it holds (censoring time of running attempts)
    backends: list[str] | None = None
    backend: np.ndarray | None = None  # index into backends
    effective: np.ndarray | None = None  # 1, 0, NaN unknown
    group: np.ndarray | None = None
    version_start: np.ndarray | None = None
    version_consumed: np.ndarray | None = None  # NaN: not consumed

    @property
    def rows(self) -> int:
        return self.start.size

    @property
    def finished(self) -> np.ndarray:
        return ~np.isnan(self.end)

    @property
    def running(self) -> np.ndarray:
        return ~np.isnan(self.start) & np.isnan(self.end)


@dataclass
class Steps:
    file: str
    iteration: np.ndarray
    update_s: np.ndarray
    training_gpus: np.ndarray
    inference_gpus: np.ndarray | None = None
    boundary: np.ndarray | None = None  # seconds on the trajectory log's clock
    generation_s: np.ndarray | None = None  # time waiting for the batch (framework logs that time it)
    step_s: np.ndarray | None = None  # wall time of the whole step (framework logs)

    @property
    def rows(self) -> int:
        return self.iteration.size


def read_trajectories(path: str | Path) -> tuple[Trajectories, float | None]:
    """The trajectory log and, when its times are ISO-8601, the epoch second its clock starts at."""
    table = read_table(path)
    table.require(*TRAJECTORY_REQUIRED)
    start, iso_start = times(table, "start", allow_null=True)
    end, iso_end = times(table, "end", allow_null=True)
    if iso_start != iso_end and not (np.isnan(start).all() or np.isnan(end).all()):
        table.fail(None, "end", "times must all be seconds or all ISO-8601 (start and end differ)")
    origin = None
    if iso_start or iso_end:
        origin = float(np.nanmin(start)) if not np.isnan(start).all() else 0.0
        start, end = start - origin, end - origin
    tokens = numbers(table, "output_tokens", minimum=0.0)
    _check_attempts(table, start, end, tokens)
    log_end = float(np.nanmax(np.concatenate([end, start])))
    log = Trajectories(table.file, start, end, tokens, log_end)
    _optional_columns(table, log)
    return log, origin


def _check_attempts(table: Table, start, end, tokens) -> None:
    no_start = np.isnan(start) & ~np.isnan(end)
    if no_start.any():
        table.fail(int(np.argmax(no_start)), "start", "is empty but the attempt has an end")
    if np.isnan(start).all():
        table.fail(None, "start", "every start is empty: no attempt ever started")
    backwards = end < start
    if backwards.any():
        row = int(np.argmax(backwards))
        table.fail(row, "end", f"ends before it starts (end {end[row]:g} s < start {start[row]:g} s)")
    unknown = np.isnan(tokens) & ~np.isnan(end)
    if unknown.any():
        table.fail(int(np.argmax(unknown)), "output_tokens", "is empty for an attempt that ended")


def _optional_columns(table: Table, log: Trajectories) -> None:
    if table.has("backend"):
        log.backends, log.backend = labels(table, "backend")
    if table.has("effective"):
        log.effective = flags(table, "effective")
    if table.has("group"):
        group = numbers(table, "group", minimum=0, allow_null=False)
        log.group = group.astype(np.int64)
    for name in ("version_start", "version_consumed"):
        if table.has(name):
            setattr(log, name, numbers(table, name, minimum=0))
    if log.version_start is not None and log.version_consumed is not None:
        early = log.version_consumed < log.version_start
        if early.any():
            row = int(np.argmax(early))
            table.fail(
                row,
                "version_consumed",
                f"is before version_start ({log.version_consumed[row]:g} < {log.version_start[row]:g})",
            )


def read_steps(path: str | Path, origin: float | None) -> Steps:
    """The step log; ISO-8601 times are put on the trajectory log's clock (``origin``) when it has one."""
    table = read_table(path)
    table.require(*STEP_REQUIRED)
    if not table.has("update_s") and not (table.has("update_start") and table.has("update_end")):
        table.fail(None, None, "missing column 'update_s' (or both 'update_start' and 'update_end')")
    iteration = numbers(table, "iteration", minimum=0, allow_null=False)
    gpus = numbers(table, "training_gpus", minimum=0, allow_null=False)
    if (gpus == 0).any():
        table.fail(int(np.argmax(gpus == 0)), "training_gpus", "must be > 0")
    update = _update_seconds(table, origin)
    steps = Steps(table.file, iteration, update, gpus)
    if table.has("inference_gpus"):
        steps.inference_gpus = numbers(table, "inference_gpus", minimum=0, allow_null=False)
    if table.has("boundary"):
        steps.boundary = _clock(table, "boundary", origin)
        back = np.diff(steps.boundary) < 0
        if back.any():
            table.fail(int(np.argmax(back)) + 1, "boundary", "goes back in time (boundaries must not decrease)")
    return steps


def _update_seconds(table: Table, origin: float | None) -> np.ndarray:
    if table.has("update_s"):
        return numbers(table, "update_s", minimum=0, allow_null=False)
    begin = _clock(table, "update_start", origin)
    finish = _clock(table, "update_end", origin)
    backwards = finish < begin
    if backwards.any():
        row = int(np.argmax(backwards))
        table.fail(row, "update_end", f"ends before it starts ({finish[row]:g} < update_start {begin[row]:g})")
    return finish - begin


def _clock(table: Table, name: str, origin: float | None) -> np.ndarray:
    values, iso = times(table, name, allow_null=False)
    if iso != (origin is not None):
        kinds = ("ISO-8601", "seconds") if iso else ("seconds", "ISO-8601")
        table.fail(None, name, f"times are {kinds[0]} here but {kinds[1]} in the trajectory log: use one kind in both")
    return values - origin if iso else values
