"""MODEL.md §13's terms in every scenario of §9: replica availability, weight sync and training goodput.

The formulas are :mod:`solver.laws.goodput`'s, given one value per scenario of each ``reliability`` field and
pool's ``preemptions_per_hour`` (a factor may reach any of them, e.g. ``reliability.gpu_mtbf``). Without
§13's terms every function is the identity of §9 (availability ``a``, no weight sync, goodput 1). No pyomo;
arrays over scenarios.
"""

from __future__ import annotations

import numpy as np

from trainground.models.instance import Instance
from trainground.models.reliability import Reliability
from trainground.solver.laws import goodput as law


def _field(inst: Instance, scen, name: str) -> np.ndarray:
    """(S,) ``reliability.<name>`` in every scenario (the section's default when it is absent)."""
    rel = inst.reliability or Reliability()
    return scen.value(f"reliability.{name}", getattr(rel, name))


def shape_availability(inst: Instance, scen, availability: np.ndarray, mean_lifetime: np.ndarray) -> np.ndarray:
    """(S, shapes) a_s = a·max(0, 1 - rate_s·(replica_restart_time + mean(W)/2)), rate_s = g_s/gpu_mtbf +
    preemptions_per_hour/3600 per replica (GPU failures only with a reliability section)."""
    shapes = inst.inference.shapes
    a = np.asarray(availability, dtype=float)[:, None]
    if not inst.reliable:
        return np.repeat(a, len(shapes), axis=1)
    mtbf = _field(inst, scen, "gpu_mtbf") if inst.reliability is not None else np.full(scen.size, np.inf)
    pools = {p.name: i for i, p in enumerate(inst.gpu_pools)}
    rates = []
    for s in shapes:
        i = pools[s.pool]
        per_hour = inst.gpu_pools[i].preemptions_per_hour
        preempted = 0.0 if per_hour is None else scen.value(f"gpu_pools[{i}].preemptions_per_hour", per_hour)
        rates.append(law.replica_rate(s.gpus_per_replica, mtbf, preempted))
    restart = _field(inst, scen, "replica_restart_time")[:, None]
    return law.replica_availability(a, np.stack(rates, 1), restart, np.asarray(mean_lifetime)[:, None])


def weight_sync(inst: Instance, scen) -> np.ndarray:
    """(S,) weight_sync_time, s: each cadence keeps (1 - weight_sync_time/L) of the supply (0 without §13)."""
    if inst.reliability is None:
        return np.zeros(scen.size)
    return _field(inst, scen, "weight_sync_time")


def training_goodput(inst: Instance, scen, gpus: int) -> np.ndarray:
    """(S,) γ at ``gpus`` training GPUs (:func:`solver.laws.goodput.training_of` at the scenario's values:
    gpu_mtbf, checkpoint and restart times, the given checkpoint interval or Young's); 1 without §13."""
    rel = inst.reliability
    if rel is None or gpus <= 0:
        return np.ones(scen.size)
    given = rel.checked_interval()
    interval = None if given is None else scen.value("reliability.checkpoint_interval", given)
    checkpoint, restart = _field(inst, scen, "checkpoint_time"), _field(inst, scen, "restart_time")
    return law.training_of(_field(inst, scen, "gpu_mtbf"), checkpoint, restart, interval, gpus).goodput
