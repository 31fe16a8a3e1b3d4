"""What worker processes of the simulator, `batch` and `sweep` share: one BLAS thread each, failures told in
one line. Here, below the drivers, so that the simulator needs nothing above it."""

from __future__ import annotations

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, an ellipsis marking the cut."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def one_line(exc: BaseException, limit: int = 400) -> str:
    """An exception as ``Type: first line of its message``, clipped to ``limit`` characters."""
    lines = str(exc).strip().splitlines()
    return clip(f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__, limit)
