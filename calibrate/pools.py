"""Logs of several inference pools: one trajectory log per pool (``--pool NAME=FILE``) merged into one with a
``pool`` column, and which shapes of an instance a pool's figure belongs to.

A pool of the log names a shape of the instance by the shape's name or by its ``pool`` (a ``gpu_pools``
name); a shape named by no pool of the log keeps its own figure.
"""

from __future__ import annotations

import numpy as np

from trainground.calibrate.logs import Trajectories


def merge(parts: list[tuple[str, Trajectories, float | None]]) -> tuple[Trajectories, float | None]:
    """One log of the pools' logs (each labelled with its pool), on one clock: absolute logs are put on the
    earliest one's origin; logs in seconds from the start are taken to share that start."""
    origins = [o for _, _, o in parts if o is not None]
    origin = min(origins) if origins else None
    shifted = []
    for _, log, own in parts:
        lag = (own - origin) if own is not None and origin is not None else 0.0
        shifted.append((log.start + lag, log.end + lag))
    start = np.concatenate([s for s, _ in shifted])
    end = np.concatenate([e for _, e in shifted])
    names = [name for name, _, _ in parts]
    pool = np.concatenate([np.full(log.rows, i) for i, (_, log, _) in enumerate(parts)])
    logs = [log for _, log, _ in parts]
    merged = Trajectories(
        " + ".join(log.file for log in logs),
        start,
        end,
        np.concatenate([log.tokens for log in logs]),
        float(np.nanmax(np.concatenate([end, start]))),
        pools=names,
        pool=pool,
        notes=[n for log in logs for n in log.notes],
    )
    for name in ("effective", "version_start", "version_consumed", "cut"):
        if all(getattr(log, name) is not None for log in logs):
            setattr(merged, name, np.concatenate([getattr(log, name) for log in logs]))
    if all(log.group is not None for log in logs):
        offsets = np.cumsum([0] + [int(log.group.max()) + 1 for log in logs[:-1]])
        merged.group = np.concatenate([log.group + off for log, off in zip(logs, offsets)])
    return merged, origin


def shapes_of(pool: str, shapes: list[dict]) -> list[int]:
    """Indices of the instance's shapes a log pool names: the shape of that name, else the shapes on the
    ``gpu_pools`` pool of that name."""
    named = [i for i, s in enumerate(shapes) if s.get("name") == pool]
    return named or [i for i, s in enumerate(shapes) if s.get("pool") == pool]
