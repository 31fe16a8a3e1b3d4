"""Batch solving: many instance files, each solved in its own worker, each result kept as soon as it is known.

The driver takes the input files (found by :mod:`drivers.batch.inputs`), solves each with :func:`solve_file` in a local process
pool or on a Dask cluster, and writes into the output folder one MODEL.md §6 JSON per
input (plus ``file`` and ``input_hash``), ``summary.csv`` and ``summary.jsonl``. Every file
is written atomically by this (the parent) process, so workers need no access to the
output folder and a killed batch never leaves a truncated result. It prints nothing:
progress goes to a callback, the outcome comes back as a :class:`BatchReport`.
"""

from __future__ import annotations

import atexit
import multiprocessing
import os
import signal
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path

from trainground.drivers.batch.inputs import BatchError, Task, discover, input_hash, plan_tasks  # noqa: F401 (the batch's API)
from trainground.drivers.batch.summary import (  # noqa: F401 (the batch's API)
    SUMMARY_COLUMNS,
    SUMMARY_CSV,
    SUMMARY_JSONL,
    read_result,
    summary_row,
    top_fix,
    write_summaries,
)
from trainground.drivers.batch.workers import one_line, prepare_worker
from trainground.simulation.output import make_folder, remove_temporaries, write_json

# The summaries are rewritten (whole, atomically) after every result while they hold fewer than 2·SUMMARY_ROWS
# rows; a longer summary is rewritten every len(rows) // SUMMARY_ROWS results, so a batch of n files writes
# about n·SUMMARY_ROWS summary rows in all rather than n²/2.
SUMMARY_ROWS = 1000
PARENT_CHECK_S = 0.5  # how often a local worker checks that the batch that started it still runs


class SchedulerUnavailable(Exception):
    """The Dask scheduler given with ``--scheduler`` could not be reached."""


@dataclass
class Tally:
    """Progress so far: ``done`` counts results reused by --resume and results of this run."""

    total: int
    reused: int = 0
    done: int = 0
    counts: Counter = field(default_factory=Counter)

    @property
    def failed(self) -> int:
        return self.done - self.counts["optimal"]


@dataclass
class BatchReport:
    tally: Tally
    rows: list[dict]
    summary_csv: Path
    summary_jsonl: Path
    interrupted: bool = False


# ---------------------------------------------------------------- one file, in a worker


def solve_file(
    path: str,
    objective: str | None = None,
    time_limit: float | None = None,
    label: str | None = None,
    edits: Sequence[str] = (),
) -> dict:
    """Load and solve one file, with ``edits`` (``--set PATH=VALUE``, ``[*]`` for every item) applied; return
    its §6 result with ``file`` and ``input_hash``. Never raises.

    An unusable file becomes status ``invalid`` with the loader's message; an infeasible or
    time-limited instance keeps the solver's status; any other failure becomes ``error`` with
    a one-line message. HiGHS runs single-threaded: parallelism comes from the workers.
    """
    label = label or str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        return _failure(
            Path(label).stem,
            "invalid",
            f"{label}: cannot read file: {exc.strerror or exc}",
            objective,
            label,
            input_hash(b"", objective, time_limit, edits),
        )
    digest = input_hash(data, objective, time_limit, edits)
    try:
        from trainground.drivers.diagnosis.diagnose import diagnosed
        from trainground.drivers.hold import solve_planned
        from trainground.drivers.replays import ReplayCache
        from trainground.models.edits import load_edited_checked
        from trainground.models.load import InstanceError

        clock = time.perf_counter()
        try:
            inst, warnings = load_edited_checked(Path(path), list(edits))
        except InstanceError as exc:
            message = InstanceError(label, exc.problems).message
            return _failure(Path(label).stem, "invalid", message, objective or _declared_objective(path), label, digest)
        load_seconds = time.perf_counter() - clock
        try:
            result = diagnosed(
                inst,
                solve_planned(inst, objective, time_limit, threads=1, replays=ReplayCache(threads=1)),
                notes=warnings,
            )
        except InstanceError as exc:  # a rule the planner checks (an unplanned regime): invalid, by the file
            message = InstanceError(label, exc.problems).message
            return _failure(inst.name, "invalid", message, objective or inst.objective, label, digest)
        except Exception as exc:  # one file's crash becomes that file's row, never the batch's
            return _failure(inst.name, "error", one_line(exc), objective or inst.objective, label, digest)
        result.timings.load = load_seconds
        payload = result.to_json()
    except Exception as exc:  # a failure outside the solve (import, loader bug): still this file's row
        return _failure(Path(label).stem, "error", one_line(exc), objective, label, digest)
    payload["file"] = label
    payload["input_hash"] = digest
    return payload


def _declared_objective(path: str) -> str | None:
    from trainground.models.load import InstanceError, read_document

    try:
        declared = read_document(Path(path)).get("objective")
    except InstanceError:
        return None
    return declared if isinstance(declared, str) else None


def _failure(instance: str, status: str, message: str, objective: str | None, file: str, digest: str) -> dict:
    """A §6-shaped object for a file without a solver result (invalid input, crash, dead worker)."""
    from trainground.models.instance import Instance
    from trainground.models.result import Result

    objective = objective or Instance.model_fields["objective"].default
    payload = Result(instance=instance, status=status, objective=objective, message=message).to_json()
    payload["file"] = file
    payload["input_hash"] = digest
    return payload


def _worker_init() -> None:
    """Once per worker process: leave Ctrl-C to the parent, one thread per worker, import pyomo now.

    A worker also ends itself when its parent is gone (killed with SIGKILL, say): a pool
    worker otherwise waits for work forever. At its normal end it skips the interpreter's
    teardown of pyomo (measured ~0.3 s a batch): results travel synchronously, nothing is
    left to flush.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True).start()
    atexit.register(os._exit, 0)
    prepare_worker()


def _exit_with_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK_S)
    os._exit(1)


# ---------------------------------------------------------------- executors

TaskFunction = Callable[[str, str | None, float | None, str | None, tuple[str, ...]], dict]


def _arguments(task: Task, objective: str | None, time_limit: float | None) -> tuple:
    return (task.path, objective, time_limit, task.file, task.edits)


def _died(task: Task, objective: str | None, why: str) -> dict:
    return _failure(Path(task.file).stem, "error", why, objective, task.file, task.input_hash)


class _LocalPool:
    """A spawn-started process pool whose workers are ended (by pid) if the batch is interrupted."""

    def __init__(self, workers: int):
        self._before = set(multiprocessing.active_children())
        # spawn, not forkserver: a forkserver child outlives a killed batch (each holds the server's
        # alive-pipe open), while a spawned worker sees its parent go and ends (see _worker_init)
        self.executor = ProcessPoolExecutor(
            workers, mp_context=multiprocessing.get_context("spawn"), initializer=_worker_init
        )

    def __enter__(self) -> ProcessPoolExecutor:
        return self.executor

    def __exit__(self, exc_type, exc, tb) -> None:
        # On an interrupt the workers are ended first: the pool's manager thread then finds the
        # pool broken, fails what is pending and ends, and the shutdown joins it. A manager left
        # running past the interpreter's exit races its own teardown ("Bad file descriptor").
        if exc_type is not None:
            for process in multiprocessing.active_children():
                if process not in self._before:
                    process.terminate()
        self.executor.shutdown(wait=True, cancel_futures=exc_type is not None)


def run_local(
    tasks: Iterable[Task], call: TaskFunction, objective: str | None, time_limit: float | None, workers: int
) -> Iterator[tuple[Task, dict]]:
    """Yield (task, result) as files finish on a local process pool of ``workers`` processes.

    When a worker process dies, the files that were in flight are each retried once alone
    in a fresh one-worker pool (so a neighbour is never blamed); dying again is an ``error``.
    """
    pending = deque(tasks)
    while pending:
        with _LocalPool(workers) as executor:
            suspects = yield from _drain(executor, pending, call, objective, time_limit, window=2 * workers)
        for task in suspects:
            with _LocalPool(1) as executor:
                future = executor.submit(call, *_arguments(task, objective, time_limit))
                wait([future])
                yield task, _outcome(task, future, objective)


def _drain(executor, pending: deque, call, objective, time_limit, window: int):
    """Run ``pending`` on ``executor`` until it is empty or the pool breaks; return the files in flight then."""
    running: dict = {}
    suspects: list[Task] = []
    while (pending and not suspects) or running:
        while pending and not suspects and len(running) < window:
            task = pending.popleft()
            running[executor.submit(call, *_arguments(task, objective, time_limit))] = task
        done, _ = wait(running, return_when=FIRST_COMPLETED)
        for future in sorted(done, key=lambda f: running[f].result):
            task = running.pop(future)
            if isinstance(future.exception(), BrokenProcessPool):
                suspects.append(task)
            else:
                yield task, _outcome(task, future, objective)
    return suspects


def _outcome(task: Task, future, objective: str | None) -> dict:
    exc = future.exception()
    if exc is None:
        return future.result()
    if isinstance(exc, BrokenProcessPool):
        return _died(task, objective, "the worker process died while solving this file, twice")
    return _died(task, objective, f"worker failed: {one_line(exc)}")


def run_dask(
    tasks: Sequence[Task], call: TaskFunction, objective: str | None, time_limit: float | None, address: str
) -> Iterator[tuple[Task, dict]]:
    """Yield (task, result) as files finish on the Dask cluster at ``address``.

    Workers must import trainground (same install as here) and read the input paths (a
    shared file system); results come back to this process, which writes them. A file whose
    future fails (a killed worker, a lost future) is submitted once more, then is an ``error``.
    """
    if not tasks:
        return
    from distributed import Client, as_completed

    try:
        client = Client(address)
    except (OSError, TimeoutError) as exc:
        raise SchedulerUnavailable(f"cannot reach the Dask scheduler at {address}: {one_line(exc)}") from None
    owner: dict = {}
    try:
        columns = list(zip(*(_arguments(t, objective, time_limit) for t in tasks)))
        futures = client.map(call, *columns, pure=False)
        owner.update(zip(futures, tasks))
        tries: Counter = Counter()
        stream = as_completed(futures)
        del futures
        for future in stream:
            task = owner.pop(future)
            if future.status == "finished":
                payload = future.result()
            else:
                tries[task] += 1
                if tries[task] == 1:
                    retry = client.submit(call, *_arguments(task, objective, time_limit), pure=False)
                    owner[retry] = task
                    stream.add(retry)
                    continue
                payload = _died(task, objective, f"failed twice on the Dask cluster: {_dask_failure(future)}")
            future.release()
            yield task, payload
    finally:
        if owner:
            client.cancel(list(owner))
        client.close()


def _dask_failure(future) -> str:
    """Why a future did not finish: its exception (KilledWorker...), or its state (cancelled, lost)."""
    exc = future.exception() if future.status == "error" else None
    return one_line(exc) if exc is not None else f"future {future.status}"


# ---------------------------------------------------------------- the batch


def run_batch(
    tasks: Sequence[Task],
    out: str | Path,
    *,
    objective: str | None = None,
    time_limit: float | None = None,
    workers: int | None = None,
    scheduler: str | None = None,
    resume: bool = False,
    on_progress: Callable[[Tally], None] | None = None,
    task_function: TaskFunction = solve_file,
) -> BatchReport:
    """Solve every task, writing each result into ``out`` as it arrives, then the summaries (atomically, after
    every result while they are short, see ``SUMMARY_ROWS``, and at the end).

    With ``resume``, a task whose result file already holds the same ``input_hash`` is not
    solved again. An interrupt (Ctrl-C, SIGTERM turned into KeyboardInterrupt) stops the
    workers, writes the summaries of what is finished and returns with ``interrupted`` set.
    ``task_function`` is what each worker runs (tests pass a stand-in).
    """
    out = make_folder(out)
    if resume:  # a killed run's half-written files: its results are either whole or absent
        remove_temporaries(out)
    tally = Tally(total=len(tasks))
    rows: dict[Task, dict] = {}  # summary rows only: whole results live in their files
    todo: list[Task] = []
    for task in tasks:
        prior = read_result(out / task.result) if resume else None
        if prior is not None and prior.get("input_hash") == task.input_hash:
            rows[task] = summary_row(task, prior)
            tally.counts[rows[task]["status"]] += 1
        else:
            todo.append(task)
    tally.reused = tally.done = len(rows)
    if on_progress:
        on_progress(tally)

    if scheduler:
        stream = run_dask(todo, task_function, objective, time_limit, scheduler)
    else:
        stream = run_local(todo, task_function, objective, time_limit, workers or os.cpu_count() or 1)
    interrupted = False
    unsummarised = 0
    in_hand: tuple[Task, dict] | None = None  # a result between its file and its summary row
    try:
        for task, payload in stream:
            in_hand = task, payload
            write_json(out / task.result, payload)
            rows[task] = summary_row(task, payload)
            in_hand = None
            tally.done += 1
            tally.counts[payload["status"]] += 1
            if on_progress:
                on_progress(tally)
            unsummarised += 1
            if unsummarised >= len(rows) // SUMMARY_ROWS:
                write_summaries(out, tasks, rows)
                unsummarised = 0
    except KeyboardInterrupt:
        interrupted = True
        if in_hand is not None:  # interrupted between its file and its row: the summary lists what the file holds
            written = read_result(out / in_hand[0].result)
            if written is not None and written.get("input_hash") == in_hand[1].get("input_hash"):
                rows[in_hand[0]] = summary_row(in_hand[0], written)
        tally.done = len(rows)
        tally.counts = Counter(row["status"] for row in rows.values())
    finally:
        stream.close()
    while True:  # an interrupt that lands while the last summaries are written stops nothing more: write them whole
        try:
            summary = write_summaries(out, tasks, rows)
            break
        except KeyboardInterrupt:
            interrupted = interrupted or tally.done < tally.total
    return BatchReport(
        tally=tally,
        rows=summary,
        summary_csv=out / SUMMARY_CSV,
        summary_jsonl=out / SUMMARY_JSONL,
        interrupted=interrupted,
    )
