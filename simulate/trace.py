"""The trace of one replication, as a calibration from real logs reads it: one row per trajectory
attempt, one row per iteration, CSV or Parquet (Parquet, and fast CSV, through pyarrow).

Times are seconds from the run's start. An attempt's ``end`` is empty when it still runs at the
end of the run (``b_{n-1} + U + extra_time``), its ``start`` empty when it never got a sandbox by
then, ``version_consumed`` empty when its group was not consumed. ``output_tokens`` is the
instance's ``tokens_per_attempt`` for every attempt (the model has no spread of lengths).
Versions: ``version_start`` is the version current at launch, ``version_consumed`` the batch
``j`` that consumed the group (version ``j`` is current until ``b_j`` publishes ``j + 1``); the
consumer-side gap is their difference (+1 under ``post_publish``).
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np

from trainground.simulation.engine import UNCONSUMED, Run
from trainground.simulation.output import OutputError, make_folder
from trainground.simulation.setup import Setup

TRAJECTORY_COLUMNS = (
    "attempt",
    "group",
    "backend",
    "launch",
    "start",
    "end",
    "output_tokens",
    "version_start",
    "version_consumed",
    "effective",
    "dropped",
)
ITERATION_COLUMNS = (
    "iteration",
    "boundary",
    "update_start",
    "update_end",
    "update_s",
    "training_gpus",
    "inference_gpus",
    "groups_consumed",
    "groups_dropped",
)
FORMATS = ("csv", "parquet")
ROWS_PER_CHUNK = 1 << 18  # rows formatted at a time by the CSV writer without pyarrow


class TraceFormatError(Exception):
    """Parquet asked for without pyarrow installed."""


def have_pyarrow() -> bool:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return False
    return True


def trajectory_columns(setup: Setup, run: Run) -> dict[str, np.ndarray]:
    """The per-attempt columns; NaN marks an empty time, -1 an empty version."""
    g = setup.group_size
    n = run.start.size
    group = np.arange(n) // g
    ends_at = run.makespan if run.finished else float(run.launch[-1]) if run.launch.size else 0.0
    version = np.searchsorted(run.boundaries, run.launch, side="right")
    return {
        "attempt": np.arange(n),
        "group": group,
        "backend": np.asarray(setup.backends, dtype=object)[run.backend],
        "launch": run.launch[group],
        "start": np.where(run.start <= ends_at, run.start, math.nan),
        "end": np.where(run.end <= ends_at, run.end, math.nan),
        "output_tokens": np.full(n, setup.tokens_per_attempt),
        "version_start": version[group],
        "version_consumed": run.consumed[group],
        "effective": run.attempt_effective,
        "dropped": run.dropped[group],
    }


def iteration_columns(setup: Setup, run: Run) -> dict[str, np.ndarray]:
    b = run.boundaries
    j = np.arange(b.size)
    consumed = np.bincount(run.consumed[run.consumed != UNCONSUMED], minlength=b.size)[: b.size]
    dropped = np.bincount(run.drop_batch[run.dropped], minlength=b.size)[: b.size]
    return {
        "iteration": j,
        "boundary": b,
        "update_start": b,
        "update_end": b + setup.update_s,
        "update_s": np.full(b.size, setup.update_s),
        "training_gpus": np.full(b.size, setup.training_gpus),
        "inference_gpus": np.full(b.size, setup.inference_gpus),
        "groups_consumed": consumed,
        "groups_dropped": dropped,
    }


def write_trace(setup: Setup, run: Run, folder: str | Path, fmt: str = "csv") -> tuple[Path, Path]:
    """Write ``trajectories.<fmt>`` and ``iterations.<fmt>`` into ``folder``; return their paths."""
    if fmt == "parquet" and not have_pyarrow():
        raise TraceFormatError("--trace-format parquet needs pyarrow: pip install 'trainground[parquet]'")
    folder = make_folder(folder)
    paths = (folder / f"trajectories.{fmt}", folder / f"iterations.{fmt}")
    for path, cols, order in (
        (paths[0], trajectory_columns(setup, run), TRAJECTORY_COLUMNS),
        (paths[1], iteration_columns(setup, run), ITERATION_COLUMNS),
    ):
        try:
            if have_pyarrow():
                _write_arrow(path, cols, order, fmt)
            else:
                _write_csv(path, cols, order)
        except OSError as exc:
            raise OutputError(path, exc) from None
    return paths


def _arrow_table(cols: dict[str, np.ndarray], order: tuple[str, ...]):
    import pyarrow as pa

    arrays = []
    for name in order:
        values = cols[name]
        if values.dtype.kind == "f" and name not in ("output_tokens", "update_s"):
            arrays.append(pa.array(values, mask=np.isnan(values)))
        elif name == "version_consumed":
            arrays.append(pa.array(values, mask=values == UNCONSUMED))
        elif values.dtype == object:
            arrays.append(pa.array(values.tolist(), type=pa.string()))
        else:
            arrays.append(pa.array(values))
    return pa.table(arrays, names=list(order))


def _write_arrow(path: Path, cols, order, fmt: str) -> None:
    table = _arrow_table(cols, order)
    tmp = path.with_name(f".{path.name}.tmp")
    if fmt == "parquet":
        import pyarrow.parquet as pq

        pq.write_table(table, tmp)
    else:
        import pyarrow.csv as pcsv

        pcsv.write_csv(table, tmp)
    tmp.replace(path)


def _write_csv(path: Path, cols, order) -> None:
    """CSV without pyarrow: the same cells (empty for missing, true/false for flags), written in chunks."""
    tmp = path.with_name(f".{path.name}.tmp")
    n = len(cols[order[0]])
    with tmp.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(order)
        for lo in range(0, n, ROWS_PER_CHUNK):
            chunk = [_cells(name, cols[name][lo : lo + ROWS_PER_CHUNK]) for name in order]
            writer.writerows(zip(*chunk))
    tmp.replace(path)


def _cells(name: str, values: np.ndarray) -> list:
    if values.dtype == bool:
        return ["true" if v else "false" for v in values.tolist()]
    if name == "version_consumed":
        return ["" if v == UNCONSUMED else v for v in values.tolist()]
    if values.dtype.kind == "f":
        return ["" if v != v else v for v in values.tolist()]
    return values.tolist()
