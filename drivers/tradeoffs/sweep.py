"""Scenario sweeps: the cartesian product of field edits, each point validated and solved.

A sweep is a list of axes (:mod:`drivers.tradeoffs.sweep_axes`), each a MODEL.md field path with the values
to try (``inference.shapes[0].tokens_per_gpu_s=60,75,200``; zipped axes vary together). Every point of their product is
the base document with one value per axis applied, validated like a file (an invalid
point becomes a row with the loader's message) and solved (an infeasible point becomes
a row with its diagnosis). One built model is reused from point to point whenever the
planner can take the new instance's coefficients (``Planner.retarget``); otherwise the
point gets a fresh one. With several workers the points are cut into contiguous chunks,
one per process, and each process keeps its own model.

Nothing here prints: progress goes to a callback, the rows come back in a :class:`SweepReport`.
"""

from __future__ import annotations

import multiprocessing
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from trainground.drivers.batch.workers import clip, one_line, prepare_worker
from trainground.drivers.tradeoffs.sweep_axes import (
    Axis,
    SweepError,
    grid_points,
    item_names,
    parse_axes,
    parse_axis,
    split_values,
)
from trainground.models.edits import apply_edit, blamed_on_edits, parse_value, refuse_replaced
from trainground.models.load import InstanceError, Problem, read_document, validate
from trainground.models.result import STATUSES, key_columns

ROW_COLUMNS = (
    "status",
    "objective",
    "objective_value",
    "cadence_s",
    "versions_kept",
    "inference_gpus",
    "training_gpus",
    "nodes",
    "vms",
    "hourly_cost",
    "total_cost",
    "makespan_s",
    "time_margin",
    "exceedance",
    "group_drop_rate",
    "allowance_s",
    "seconds",
    "highs_seconds",
    "message",
)

Progress = Callable[[int, int], None]  # (points done, points in all)

# Re-exported from drivers.tradeoffs.sweep_axes: a sweep's callers find the axes beside run_sweep.
__all__ = ["Axis", "SweepError", "parse_axes", "parse_axis", "split_values"]


@dataclass
class SweepReport:
    instance: str
    file: str
    objective: str | None
    axes: list[Axis]
    rows: list[dict]
    builds: int = 0  # models built; the other points re-solved a model already built
    workers: int = 1
    seconds: float = 0.0
    names: dict[str, str] = field(default_factory=dict)  # list item path -> its name (item_names)

    @property
    def counts(self) -> Counter:
        return Counter(row["status"] for row in self.rows)

    @property
    def pools(self) -> list[str]:
        """Every GPU pool a plan of the sweep reports, in order of first appearance."""
        return list(dict.fromkeys(p for row in self.rows for p in row.get("pool_gpus") or {}))

    def csv_columns(self) -> list[str]:
        return ["index", *(axis.path for axis in self.axes), *ROW_COLUMNS, *(f"gpus[{p}]" for p in self.pools)]

    def csv_rows(self) -> list[dict]:
        return [
            {
                "index": row["index"],
                **row["edits"],
                **{k: row.get(k) for k in ROW_COLUMNS},
                **{f"gpus[{p}]": (row.get("pool_gpus") or {}).get(p) for p in self.pools},
            }
            for row in self.rows
        ]

    def to_json(self) -> dict:
        counts = self.counts
        return {
            "instance": self.instance,
            "file": self.file,
            "objective": self.objective,
            "axes": [{"path": a.path, "values": list(a.texts), "zipped": a.zipped} for a in self.axes],
            "names": dict(self.names),
            "counts": {status: counts.get(status, 0) for status in STATUSES},
            "builds": self.builds,
            "workers": self.workers,
            "points": self.rows,
        }


def run_sweep(
    file: str | Path,
    axes: Sequence[Axis],
    objective: str | None = None,
    *,
    workers: int = 1,
    on_progress: Progress | None = None,
    reuse: bool = True,
    time_limit: float | None = None,
) -> SweepReport:
    """Solve every point of the axes' product on ``file``; one row per point, in product order.

    ``reuse=False`` builds a fresh model for every point (the baseline the benchmark compares with).
    ``time_limit``: seconds for the whole sweep; each solve is given what is left, and a point reached
    once none is left is a ``time_limit`` row, not solved.
    """
    until = None if time_limit is None else time.time() + time_limit  # wall clock: workers share it
    file = str(file)
    document = read_document(Path(file))
    refuse_replaced(document, [f"{axis.path}={','.join(axis.texts)}" for axis in axes], file, Path(file).parent)
    points = grid_points(axes)
    clock = time.perf_counter()
    workers = max(1, min(workers, len(points)))
    if workers == 1:
        rows, builds = solve_points(
            file, document, axes, list(enumerate(points)), objective, on_progress, reuse, until=until
        )
    else:
        rows, builds = _solve_in_pool(file, document, axes, points, objective, workers, on_progress, reuse, until)
    name = document.get("name") if isinstance(document.get("name"), str) else Path(file).stem
    return SweepReport(
        instance=name,
        file=file,
        objective=objective,
        axes=list(axes),
        rows=rows,
        builds=builds,
        workers=workers,
        seconds=time.perf_counter() - clock,
        names=item_names(document, [axis.path for axis in axes]),
    )


def solve_points(
    file: str,
    document: dict,
    axes: Sequence[Axis],
    points: Sequence[tuple[int, tuple[str, ...]]],
    objective: str | None,
    on_point: Callable[[int, int], None] | None = None,
    reuse: bool = True,
    until: float | None = None,
) -> tuple[list[dict], int]:
    """Solve ``points`` in order, re-solving one model across them where it can be retargeted.

    Returns the rows and the number of models built. Never raises for a point: an
    unusable edit is ``invalid``, a failure inside the solver ``error``. ``until``: the wall-clock time
    (time.time()) the sweep must end by; a point reached after it is a ``time_limit`` row, not solved.
    """
    from trainground.drivers.diagnosis.diagnose import diagnosed
    from trainground.drivers.hold import neighbour_start, planner_for
    from trainground.drivers.replays import ReplayCache
    from trainground.solver.table.pairs import TableCache

    planner = None
    cache = TableCache()  # the run's quantities, shared by points that edit only shapes, pools or prices
    replays = ReplayCache()  # under hold, points whose plans were already replayed are not replayed again
    builds = 0
    rows = []
    base_dir = Path(file).parent
    read: dict[str, Any] = {}  # each value text read once: validation and later edits never change it in place
    before = None  # the result of the point before, in input order: under hold its Δ starts the next point's loop
    for done, (index, values) in enumerate(points, start=1):
        edits = {axis.path: text for axis, text in zip(axes, values)}
        clock = time.perf_counter()
        try:
            inst = validate(edited(document, edits, file, read), file, base_dir)
        except InstanceError as exc:
            exc = blamed_on_edits(exc, [f"{path}={text}" for path, text in edits.items()])
            rows.append(
                _row(index, edits, "invalid", objective, message=exc.message, seconds=time.perf_counter() - clock)
            )
        else:
            left = None if until is None else until - time.time()
            if left is not None and left <= 0:
                message = "not solved: the sweep's --time-limit ran out before this point"
                rows.append(_row(index, edits, "time_limit", objective or inst.objective, message=message, seconds=0.0))
                if on_point is not None:
                    on_point(done, len(points))
                continue
            try:
                if planner is None or not planner.retarget(inst):  # a planner built with reuse off never retargets
                    planner = planner_for(inst, replays, reusable=reuse, cache=cache if reuse else None)
                    builds += 1
                # Per point, say which families conflict (a few re-solves), not the full bisection.
                result = diagnosed(
                    inst, planner.solve(objective, time_limit=left, **neighbour_start(planner, before)), "conflict"
                )
                before = result
            except (
                InstanceError
            ) as exc:  # the planner refuses the point (a staged model too large, an unplanned regime)
                planner = before = None
                exc = blamed_on_edits(InstanceError(file, exc.problems), [f"{p}={t}" for p, t in edits.items()])
                rows.append(
                    _row(index, edits, "invalid", objective, message=exc.message, seconds=time.perf_counter() - clock)
                )
            except Exception as exc:  # one point's failure is that point's row, never the sweep's
                planner = before = None
                rows.append(
                    _row(
                        index,
                        edits,
                        "error",
                        objective or inst.objective,
                        message=one_line(exc, 300),
                        seconds=time.perf_counter() - clock,
                    )
                )
            else:
                rows.append(_result_row(index, edits, result, time.perf_counter() - clock))
        if on_point is not None:
            on_point(done, len(points))
    return rows, builds


def edited(document: dict, edits: dict[str, str], file: str, read: dict[str, Any] | None = None) -> dict:
    """The base document with each edit applied; a bad value or path becomes an InstanceError.
    ``read``: value texts already read, by text (filled as it goes)."""
    read = {} if read is None else read
    data = document
    for path, text in edits.items():
        try:
            if text not in read:
                read[text] = parse_value(text)
            data = apply_edit(data, path, read[text])
        except (ValueError, yaml.YAMLError) as exc:
            raise InstanceError(file, [Problem("", str(exc).splitlines()[0], source=f"--set {path}={text}")]) from None
    return data


def _row(index: int, edits: dict, status: str, objective: str | None, **extra: Any) -> dict:
    row = {"index": index, "edits": dict(edits), **{k: None for k in ROW_COLUMNS}, "result": None}
    row.update(status=status, objective=objective, **extra)
    return row


def _result_row(index: int, edits: dict, result, seconds: float) -> dict:
    row = _row(
        index,
        edits,
        result.status,
        result.objective,
        objective_value=result.objective_value,
        seconds=seconds,
        highs_seconds=result.timings.highs,
    )
    if result.plan is not None:
        row.update(key_columns(result.plan, result.metrics))
        row["allowance_s"] = None if result.hold is None else result.hold.allowance_s
        row["pool_gpus"] = {p.pool: p.gpus_used for p in result.plan.pools}
    if result.status != "optimal":
        row["message"] = diagnosis_summary(result.diagnosis, result.message)
    row["result"] = result.to_json()
    return row


def diagnosis_summary(diagnosis: dict | None, message: str | None = None) -> str:
    """One line from a diagnosis: what conflicts and the single-input changes that restore a plan."""
    if not diagnosis:
        return message or ""
    parts = []
    if diagnosis.get("relaxations"):
        parts.append("conflict: " + ", ".join(map(str, diagnosis["relaxations"])))
    elif diagnosis.get("conflict"):
        parts.append(str(diagnosis["conflict"]))
    repairs = [
        c.get("change")
        for c in diagnosis.get("changes") or []
        if isinstance(c, dict) and c.get("value") is not None and c.get("change")
    ]
    if repairs:
        parts.append("feasible with " + " | ".join(map(str, repairs)))
    cut = diagnosis.get("rejected_pairs") or diagnosis.get("rejected_by")
    if not parts and cut:
        parts.append("every (cadence, K) cut by: " + ", ".join(f"{name} {count:,}" for name, count in cut.items()))
    return clip("; ".join(parts) or (message or ""), 300)


# ---------------------------------------------------------------- several processes

_progress_queue = None


def _worker_init(progress) -> None:
    """Once per worker: one solver thread, pyomo imported now, progress reported through ``progress``."""
    global _progress_queue
    _progress_queue = progress
    prepare_worker()


def _solve_chunk(
    file: str,
    document: dict,
    axes: list[Axis],
    chunk: list[tuple[int, tuple[str, ...]]],
    objective: str | None,
    reuse: bool,
    until: float | None = None,
) -> tuple[list[dict], int]:
    def tick(done: int, total: int) -> None:
        if _progress_queue is not None:
            _progress_queue.put(1)

    return solve_points(file, document, axes, chunk, objective, tick, reuse, until=until)


def chunks(items: Sequence, count: int) -> list[list]:
    """``items`` cut into ``count`` contiguous runs of (nearly) equal length, in order."""
    size, extra = divmod(len(items), count)
    out, start = [], 0
    for k in range(count):
        end = start + size + (1 if k < extra else 0)
        out.append(list(items[start:end]))
        start = end
    return [c for c in out if c]


def _solve_in_pool(
    file, document, axes, points, objective, workers, on_progress, reuse, until=None
) -> tuple[list[dict], int]:
    context = multiprocessing.get_context("spawn")
    progress = context.Queue()
    parts = chunks(list(enumerate(points)), workers)
    done = 0
    stop = threading.Event()

    def relay() -> None:
        nonlocal done
        while not stop.is_set() or not progress.empty():
            try:
                progress.get(timeout=0.1)
            except queue.Empty:
                continue
            done += 1
            if on_progress is not None:
                on_progress(done, len(points))

    listener = threading.Thread(target=relay, daemon=True)
    listener.start()
    try:
        with ProcessPoolExecutor(
            len(parts), mp_context=context, initializer=_worker_init, initargs=(progress,)
        ) as pool:
            futures = [
                pool.submit(_solve_chunk, file, document, list(axes), part, objective, reuse, until) for part in parts
            ]
            results = [f.result() for f in futures]
    finally:
        stop.set()
        listener.join()
    rows = [row for part_rows, _ in results for row in part_rows]
    if on_progress is not None and done < len(points):
        on_progress(len(points), len(points))
    return rows, sum(builds for _, builds in results)
