"""MODEL.md §13's terms in every scenario of §9: replica availability, weight sync and training goodput,
each from the scenario's values of the ``reliability`` fields and the pools' ``preemptions_per_hour`` (a
factor may reach any of them, e.g. ``reliability.gpu_mtbf``). Without §13's terms every function is the
identity of §9 (availability ``a``, no weight sync, goodput 1). No pyomo; arrays over scenarios.
"""

from __future__ import annotations

import numpy as np

from trainground.models.instance import Instance
from trainground.models.reliability import Reliability

SECONDS_PER_HOUR = 3600.0


def _field(inst: Instance, scen, name: str) -> np.ndarray:
    """(S,) ``reliability.<name>`` in every scenario (the section's default when it is absent)."""
    rel = inst.reliability or Reliability()
    return scen.value(f"reliability.{name}", getattr(rel, name))


def shape_availability(inst: Instance, scen, availability: np.ndarray, mean_lifetime: np.ndarray) -> np.ndarray:
    """(S, shapes) a_s = a·max(0, 1 - rate_s·(replica_restart_time + mean(W)/2)), rate_s = g_s/gpu_mtbf +
    preemptions_per_hour/3600 per replica (GPU failures only with a reliability section)."""
    shapes = inst.inference.shapes
    a = np.repeat(np.asarray(availability, dtype=float)[:, None], len(shapes), axis=1)
    if not inst.reliable:
        return a
    mtbf = _field(inst, scen, "gpu_mtbf") if inst.reliability is not None else np.full(scen.size, np.inf)
    restart = _field(inst, scen, "replica_restart_time")
    pools = {p.name: i for i, p in enumerate(inst.gpu_pools)}
    for j, s in enumerate(shapes):
        i = pools[s.pool]
        per_hour = inst.gpu_pools[i].preemptions_per_hour
        preempted = 0.0 if per_hour is None else scen.value(f"gpu_pools[{i}].preemptions_per_hour", per_hour)
        rate = s.gpus_per_replica / mtbf + preempted / SECONDS_PER_HOUR
        a[:, j] *= np.maximum(0.0, 1.0 - rate * (restart + mean_lifetime / 2.0))
    return a


def weight_sync(inst: Instance, scen) -> np.ndarray:
    """(S,) weight_sync_time, s: each cadence keeps (1 - weight_sync_time/L) of the supply (0 without §13)."""
    if inst.reliability is None:
        return np.zeros(scen.size)
    return _field(inst, scen, "weight_sync_time")


def training_goodput(inst: Instance, scen, gpus: int) -> np.ndarray:
    """(S,) γ = 1 - checkpoint_time/τ - (restart_time + τ/2)/M_train at ``gpus`` training GPUs, M_train =
    gpu_mtbf/gpus and τ the given interval or Young's sqrt(2·checkpoint_time·M_train); 1 without §13."""
    rel = inst.reliability
    if rel is None or gpus <= 0:
        return np.ones(scen.size)
    mtbf = _field(inst, scen, "gpu_mtbf") / gpus
    checkpoint = _field(inst, scen, "checkpoint_time")
    given = rel.checked_interval()
    if given is None:
        tau = np.sqrt(2.0 * checkpoint * mtbf)
    else:
        tau = scen.value("reliability.checkpoint_interval", given)
    return 1.0 - checkpoint / tau - (_field(inst, scen, "restart_time") + tau / 2.0) / mtbf
