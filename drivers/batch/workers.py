"""What the worker processes of `batch` and `sweep` share: their set-up, and failures told in one line."""

from __future__ import annotations

import multiprocessing
import os

from trainground.simulation.processes import THREAD_VARS, clip, one_line

__all__ = ["THREAD_VARS", "clip", "one_line", "prepare_worker"]


def prepare_worker() -> None:
    """Once per worker process: one BLAS/OpenMP thread (workers run side by side, HiGHS single-threaded),
    and pyomo and HiGHS imported now, once per worker rather than per task.

    pyomo creates a multiprocessing lock when it is imported. In a spawn-started worker that is a named
    semaphore registered with the parent's resource tracker, left behind when the worker is ended
    (an interrupted batch terminates its workers): the tracker then warns of a "leaked semaphore" on
    the batch's stderr. Imported under the fork context, the lock is an anonymous semaphore, unlinked
    as it is made, that the kernel frees with the process. Workers start no processes themselves.
    """
    for var in THREAD_VARS:
        os.environ.setdefault(var, "1")
    if "fork" not in multiprocessing.get_all_start_methods():
        import trainground.solver.solve  # noqa: F401

        return
    method = multiprocessing.get_start_method(allow_none=True)
    multiprocessing.set_start_method("fork", force=True)
    try:
        import trainground.solver.solve  # noqa: F401
    finally:
        multiprocessing.set_start_method(method, force=True)
