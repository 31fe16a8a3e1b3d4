"""The two logs a calibration reads, checked row by row: the trajectory log and the step log.

Trajectory log, one row per attempt (the columns of ``simulate --trace``):
``start``, ``end`` (empty: still running when the log ends), ``output_tokens``; optional
``backend``, ``pool``, ``effective``, ``group`` (numbers or names, e.g. UUIDs), ``censored_at`` (when a
timeout cut the attempt: its lifetime is only known to exceed ``censored_at - start``),
``version_start``, ``version_consumed``. An attempt whose ``start`` is empty never got a sandbox before
the log ended (its ``end`` must be empty too).

Step log, one row per iteration: ``iteration``, ``update_s`` (or ``update_start`` and
``update_end``), ``training_gpus``; optional ``inference_gpus``, ``boundary``.

Times are seconds from the run's start, or absolute: ISO-8601 or Unix seconds (numbers from
``EPOCH_AFTER``), then counted from the earliest start of the trajectory log. A step log in seconds from
the start beside an absolute trajectory log is read as counted from that earliest start (said in a note).
A row with a bad cell is set aside and counted; above ``max_bad`` of a log's rows the log is refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path

import numpy as np

from trainground.calibrate.tables import MAX_BAD_SHARE, Table, flags, labels, numbers, read_table, times

TRAJECTORY_REQUIRED = ("start", "end", "output_tokens")
STEP_REQUIRED = ("iteration", "training_gpus")
TRAJECTORY_COLUMNS = TRAJECTORY_REQUIRED + (
    "backend",
    "pool",
    "effective",
    "group",
    "censored_at",
    "version_start",
    "version_consumed",
)
STEP_COLUMNS = STEP_REQUIRED + ("update_s", "update_start", "update_end", "inference_gpus", "boundary")
TIMEOUT_SLACK = 1e-3  # with --timeout T, a lifetime of at least T (1 - this) was cut by the timeout
MAX_UPDATE_S = 86_400.0  # an update longer than a day is a unit mistake (milliseconds read as seconds)
MAX_TIME_S = 1e11  # a time beyond this many seconds (year 5138) is milliseconds or nanoseconds


@dataclass
class Trajectories:
    file: str
    start: np.ndarray  # seconds; NaN: never started
    end: np.ndarray  # seconds; NaN: still running at log_end
    tokens: np.ndarray  # output tokens; NaN where unknown (a running attempt)
    log_end: float  # when the log ends: the latest time it holds (censoring time of running attempts)
    backends: list[str] | None = None
    backend: np.ndarray | None = None  # index into backends
    pools: list[str] | None = None
    pool: np.ndarray | None = None  # index into pools: the inference pool that served the attempt
    effective: np.ndarray | None = None  # 1, 0, NaN unknown
    group: np.ndarray | None = None  # dense group index
    cut: np.ndarray | None = None  # lifetime at which a timeout cut the attempt (right-censored); NaN: not cut
    version_start: np.ndarray | None = None
    version_consumed: np.ndarray | None = None  # NaN: not consumed
    notes: list[str] = field(default_factory=list)

    @property
    def rows(self) -> int:
        return self.start.size

    @property
    def finished(self) -> np.ndarray:
        return ~np.isnan(self.end)

    @property
    def running(self) -> np.ndarray:
        return ~np.isnan(self.start) & np.isnan(self.end)

    def only(self, keep: np.ndarray, file: str | None = None) -> Trajectories:
        """The attempts where ``keep`` (a per-row array field is cut down; the rest is shared)."""
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.name] = value[keep] if isinstance(value, np.ndarray) and value.shape == (self.rows,) else value
        out["notes"] = list(self.notes)
        if file is not None:
            out["file"] = file
        return Trajectories(**out)


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
    notes: list[str] = field(default_factory=list)
    update_source: str | None = None  # framework logs: the keys the update time is the sum of
    step_source: str | None = None  # framework logs: how the step time was had

    @property
    def rows(self) -> int:
        return self.iteration.size


def read_trajectories(
    path: str | Path,
    mapping: dict[str, str] | None = None,
    timeout: float | None = None,
    max_bad: float = MAX_BAD_SHARE,
) -> tuple[Trajectories, float | None]:
    """The trajectory log and, when its times are absolute, the epoch second its clock starts at."""
    table = read_table(path, mapping)
    table.require(*TRAJECTORY_REQUIRED)
    start, iso_start = times(table, "start", allow_null=True)
    end, iso_end = times(table, "end", allow_null=True)
    if iso_start != iso_end and not (np.isnan(start).all() or np.isnan(end).all()):
        table.fail(None, "end", "times must all be seconds from the start or all absolute (start and end differ)")
    absolute = iso_start or iso_end
    tokens = numbers(table, "output_tokens", minimum=0.0)
    cut_at = times(table, "censored_at", allow_null=True)[0] if table.has("censored_at") else None
    _check_attempts(table, start, end, tokens, cut_at)
    log = Trajectories(table.file, start, end, tokens, 0.0)
    _optional_columns(table, log)
    keep = table.settle(max_bad)
    if cut_at is not None:
        log.end = np.where(np.isnan(end) & ~np.isnan(cut_at), cut_at, end)
        log.cut = cut_at - start
    if keep is not None:
        log = log.only(keep)
        log.notes.append(table.skipped_note())
    origin = None
    if absolute:
        origin = float(np.nanmin(log.start)) if not np.isnan(log.start).all() else 0.0
        log.start, log.end = log.start - origin, log.end - origin
    log.log_end = float(np.nanmax(np.concatenate([log.end, log.start])))
    if timeout is not None:
        _timeout(log, timeout)
    _check_lifetimes(table, log)
    return log, origin


def _check_attempts(table: Table, start, end, tokens, cut_at) -> None:
    table.skip(np.isnan(start) & ~np.isnan(end), "start", lambda row: "is empty but the attempt has an end")
    if np.isnan(start).all():
        table.fail(None, "start", "every start is empty: no attempt ever started")
    big = np.nanmax(np.abs(np.concatenate([start, end]))) if not np.isnan(start).all() else 0.0
    if big > MAX_TIME_S:
        table.fail(
            None,
            "start",
            f"a time of {big:.4g} s is beyond year 5000: milliseconds? declare the unit, e.g. --columns start=COL:ms",
        )
    table.skip(end < start, "end", lambda row: f"ends before it starts (end {end[row]:g} s < start {start[row]:g} s)")
    table.skip(np.isnan(tokens) & ~np.isnan(end), "output_tokens", lambda row: "is empty for an attempt that ended")
    if cut_at is not None:
        table.skip(cut_at < start, "censored_at", lambda row: f"is before the start ({cut_at[row]:g} < {start[row]:g})")
        table.skip(
            end > cut_at + 1e-9, "censored_at", lambda row: f"is before the end ({cut_at[row]:g} < {end[row]:g})"
        )


def _timeout(log: Trajectories, timeout: float) -> None:
    """--timeout T: an attempt that lived at least T (less TIMEOUT_SLACK) was cut by it: censored at T."""
    life = log.end - log.start
    cut = np.where(life >= timeout * (1 - TIMEOUT_SLACK), timeout, np.nan)
    log.cut = cut if log.cut is None else np.where(np.isnan(log.cut), cut, log.cut)


def _check_lifetimes(table: Table, log: Trajectories) -> None:
    """Ended attempts whose end equals their start measure no lifetime: refused when every one does."""
    ended = log.finished & ~np.isnan(log.start)
    if log.cut is not None:
        ended &= np.isnan(log.cut)
    zero = ended & (log.end <= log.start)
    if ended.any() and zero.sum() == ended.sum():
        table.fail(
            None,
            "end",
            f"every one of the {int(ended.sum()):,} ended attempts ends at its start (end = start): "
            "no lifetime is measured (are the end times copies of the start times?)",
        )
    if zero.any():
        log.notes.append(f"{int(zero.sum()):,} attempts end at their start (lifetime 0, read as 1 microsecond)")


def _optional_columns(table: Table, log: Trajectories) -> None:
    if table.has("backend"):
        log.backends, log.backend = labels(table, "backend")
    if table.has("pool"):
        log.pools, log.pool = labels(table, "pool")
    if table.has("effective"):
        log.effective = flags(table, "effective")
    if table.has("group"):
        log.group = _group_ids(table)
    for name in ("version_start", "version_consumed"):
        if table.has(name):
            setattr(log, name, numbers(table, name, minimum=0))
    if log.version_start is not None and log.version_consumed is not None:
        vs, vc = log.version_start, log.version_consumed
        table.skip(vc < vs, "version_consumed", lambda row: f"is before version_start ({vc[row]:g} < {vs[row]:g})")


def _group_ids(table: Table) -> np.ndarray:
    """Group ids, numbers or names (UUIDs), as a dense index 0..k-1 in the ids' sorted order."""
    import pyarrow as pa

    col = table.column("group")
    if pa.types.is_integer(col.type) or pa.types.is_floating(col.type):
        ids = numbers(table, "group", allow_null=False)
        return np.unique(np.nan_to_num(ids, nan=-1.0), return_inverse=True)[1].astype(np.int64)
    names, index = labels(table, "group")
    rank = np.argsort(
        np.argsort(np.array(names, dtype=object))
    )  # sorted like numbers: the same ids, the same resamples
    return np.where(index >= 0, rank[np.maximum(index, 0)], -1)


def read_steps(
    path: str | Path, origin: float | None, mapping: dict[str, str] | None = None, max_bad: float = MAX_BAD_SHARE
) -> Steps:
    """The step log on the trajectory log's clock (``origin``: its epoch second when absolute). A restart
    re-runs iterations: when an iteration number repeats, its last row is kept (counted in a note)."""
    table = read_table(path, mapping)
    table.require(*STEP_REQUIRED)
    if not table.has("update_s") and not (table.has("update_start") and table.has("update_end")):
        table.fail(None, None, "missing column 'update_s' (or both 'update_start' and 'update_end')")
    iteration = numbers(table, "iteration", minimum=0, allow_null=False)
    gpus = numbers(table, "training_gpus", minimum=0, allow_null=False)
    table.skip(gpus == 0, "training_gpus", lambda row: "must be > 0")
    notes: list[str] = []
    update = _update_seconds(table, origin, notes)
    steps = Steps(table.file, iteration, update, gpus, notes=notes)
    if table.has("inference_gpus"):
        steps.inference_gpus = numbers(table, "inference_gpus", minimum=0, allow_null=False)
    if table.has("boundary"):
        steps.boundary = _clock(table, "boundary", origin, notes)
    keep = table.settle(max_bad)
    if keep is not None:
        notes.append(table.skipped_note())
    kept = steps.rows if keep is None else int(keep.sum())
    steps, _ = take(steps, keep)
    check_repeats(table, kept, steps.rows, "iteration")
    if steps.boundary is not None:
        back = np.diff(steps.boundary) < 0
        if back.any():
            row = int(np.argmax(back)) + 1
            table.fail(None, "boundary", f"goes back in time at iteration {steps.iteration[row]:g} (must not decrease)")
    slow = steps.update_s > MAX_UPDATE_S
    if slow.any():
        column = "update_s" if table.has("update_s") else "update_end"
        table.fail(
            None,
            column,
            f"an update of {steps.update_s[np.argmax(slow)]:,.0f} s (iteration {steps.iteration[np.argmax(slow)]:g}) is "
            f"longer than a day: milliseconds? declare the unit, e.g. --columns {column}=COLUMN:ms",
        )
    return steps


def check_repeats(table: Table, rows: int, distinct: int, column: str) -> None:
    """A restart re-runs the few iterations since its last checkpoint, so a log repeats some iteration
    numbers; one in which more rows repeat an earlier number than there are distinct numbers does not count
    iterations in ``column`` (a constant, an epoch or a mis-mapped column): refused, naming the column."""
    repeated = rows - distinct
    if repeated > distinct:
        table.fail(
            None,
            column,
            f"{repeated:,} of {rows:,} rows repeat an earlier iteration number ({distinct:,} distinct): a restart "
            "re-runs the iterations since its checkpoint, not most of the log; is this the iteration number? "
            f"(name the column with --columns iteration=COLUMN)",
        )


def last_rows(iteration: np.ndarray, keep: np.ndarray | None) -> np.ndarray:
    """The rows to keep, in iteration order: of the rows in ``keep``, the last of each iteration number (a
    restart re-runs iterations from a checkpoint; its rows are the ones that count)."""
    rows = np.arange(iteration.size) if keep is None else np.flatnonzero(keep)
    it = iteration[rows]
    last = np.sort(rows[rows.size - 1 - np.unique(it[::-1], return_index=True)[1]])
    return last[np.argsort(iteration[last], kind="stable")]


def take(steps: Steps, keep: np.ndarray | None) -> tuple[Steps, np.ndarray]:
    """The step log cut down to :func:`last_rows` (every per-row array), a note counting the rows of repeated
    iterations left out, and the rows kept."""
    rows = last_rows(steps.iteration, keep)
    kept = {}
    for f in fields(steps):
        value = getattr(steps, f.name)
        kept[f.name] = value[rows] if isinstance(value, np.ndarray) and value.shape == (steps.rows,) else value
    out = Steps(**kept)
    repeated = (steps.rows if keep is None else int(keep.sum())) - rows.size
    copies = _copies(steps, keep, rows)
    notes = []
    if repeated - copies:
        notes.append(
            f"{Path(steps.file).name}: {repeated - copies:,} rows repeat an earlier iteration number (a restart "
            "re-ran them): the last row of each iteration is kept"
        )
    if copies:
        notes.append(
            f"{Path(steps.file).name}: {copies:,} rows are exact copies of another row of their iteration (every "
            "column the same), which no restart explains (a re-run takes its own time): is the log written "
            "twice? each iteration is counted once"
        )
    out.notes = list(steps.notes) + notes
    return out, rows


def _copies(steps: Steps, keep: np.ndarray | None, rows: np.ndarray) -> int:
    """The rows left out by :func:`last_rows` whose every per-row figure equals the kept row of their iteration."""
    dropped = np.setdiff1d(np.arange(steps.rows) if keep is None else np.flatnonzero(keep), rows)
    if dropped.size == 0:
        return 0
    kept_of = dict(zip(steps.iteration[rows].tolist(), rows.tolist()))
    twin = np.array([kept_of[it] for it in steps.iteration[dropped].tolist()])
    same = np.ones(dropped.size, dtype=bool)
    for f in fields(steps):
        value = getattr(steps, f.name)
        if isinstance(value, np.ndarray) and value.shape == (steps.rows,):
            same &= (value[dropped] == value[twin]) | (np.isnan(value[dropped]) & np.isnan(value[twin]))
    return int(same.sum())


def _update_seconds(table: Table, origin: float | None, notes: list[str]) -> np.ndarray:
    if table.has("update_s"):
        return numbers(table, "update_s", minimum=0, allow_null=False)
    begin = _clock(table, "update_start", origin, notes)
    finish = _clock(table, "update_end", origin, notes)
    table.skip(
        finish < begin,
        "update_end",
        lambda row: f"ends before it starts ({finish[row]:g} < update_start {begin[row]:g})",
    )
    return finish - begin


def _clock(table: Table, name: str, origin: float | None, notes: list[str]) -> np.ndarray:
    values, absolute = times(table, name, allow_null=False)
    if absolute and origin is None:
        table.fail(
            None,
            name,
            "times are absolute (ISO-8601 or Unix seconds) here but seconds from the start in the trajectory log: "
            "the two logs have no common clock",
        )
    if not absolute and origin is not None:
        note = (
            f"{Path(table.file).name}: times in seconds from the start, read as counted from the trajectory "
            "log's earliest start"
        )
        if note not in notes:
            notes.append(note)
    return values - origin if absolute else values
