"""MODEL.md §13 on the model's side: training goodput, per-shape availability and weight sync.

Each of §13's formulas is written once here, over numbers or numpy arrays that broadcast (:func:`training_of`,
:func:`inverse_goodput`, :func:`replica_rate`, :func:`replica_availability`, :func:`weight_sync_kept`): the
nominal instance passes its fields as numbers (per training-group count, per shape, per cadence), the scenarios
of §9 (:mod:`solver.uncertainty.goodput`) pass one value per scenario.

Without a ``reliability`` section and without a preemptible pool every function here is the identity
of §2–§11 (goodput 1, availability ``a``, weight-sync factor 1), and the callers skip it altogether, so
those figures are unchanged bit for bit. A preemptible pool without the section counts its preemptions
alone (no GPU failures, no weight sync), with the section's default replica restart time. No pyomo.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trainground.models.instance import Instance
from trainground.models.reliability import Reliability
from trainground.solver.laws import calculus as calc
from trainground.solver.tolerances import REL_TOL

SECONDS_PER_HOUR = 3600.0


@dataclass(frozen=True)
class Training:
    """§13's training terms (arrays of one shape: per count of training GPUs, or per scenario)."""

    mtbf: np.ndarray  # M_train = gpu_mtbf / G_t, s
    interval: np.ndarray  # τ, s: the given checkpoint_interval, or Young's sqrt(2·checkpoint_time·M_train)
    goodput: np.ndarray  # γ = 1 - checkpoint_time/τ - (restart_time + τ/2)/M_train (<= 0: no progress)


# ---------------------------------------------------------------- §13's formulas, over arrays that broadcast


def training_of(gpu_mtbf, checkpoint_time, restart_time, interval, gpus) -> Training:
    """M_train = gpu_mtbf/G_t, τ (``interval``, or Young's sqrt(2·checkpoint_time·M_train) when it is None) and
    γ = 1 - checkpoint_time/τ - (restart_time + τ/2)/M_train at ``gpus`` training GPUs, every argument a
    number or an array (broadcast together)."""
    g = np.asarray(gpus, dtype=float)
    with np.errstate(divide="ignore"):
        mtbf = gpu_mtbf / g
    if interval is None:
        tau = np.sqrt(2.0 * checkpoint_time * mtbf)
    else:
        tau = np.asarray(interval, dtype=float) + np.zeros(np.shape(mtbf))
    with np.errstate(divide="ignore", invalid="ignore"):
        gamma = 1.0 - checkpoint_time / tau - (restart_time + tau / 2.0) / mtbf
    return Training(mtbf=mtbf, interval=tau, goodput=gamma)


def inverse_goodput(gamma) -> np.ndarray:
    """1/γ, inf where γ <= 0: the factor on the trainer-paced time."""
    gamma = np.asarray(gamma, dtype=float)
    with np.errstate(divide="ignore"):
        return np.where(gamma > 0, 1.0 / np.where(gamma > 0, gamma, 1.0), np.inf)


def replica_rate(gpus_per_replica, gpu_mtbf, preemptions_per_hour) -> np.ndarray:
    """Failures and preemptions per replica per second: g_s/gpu_mtbf + preemptions_per_hour/3600."""
    return np.asarray(gpus_per_replica / gpu_mtbf + preemptions_per_hour / SECONDS_PER_HOUR)


def replica_availability(availability, rate, replica_restart_time, mean_lifetime) -> np.ndarray:
    """a_s = a·max(0, 1 - rate_s·(replica_restart_time + mean(W)/2))."""
    return availability * np.maximum(0.0, 1.0 - rate * (replica_restart_time + mean_lifetime / 2.0))


def weight_sync_kept(weight_sync_time, cadence) -> np.ndarray:
    """The supply a cadence keeps beside the weight sync: max(0, 1 - weight_sync_time/L)."""
    return np.maximum(0.0, 1.0 - weight_sync_time / np.asarray(cadence, dtype=float))


# ---------------------------------------------------------------- the nominal instance's terms


def training_terms(rel: Reliability, gpus) -> Training:
    """γ, τ and M_train at ``gpus`` training GPUs (vectorised) at the section's values."""
    return training_of(rel.gpu_mtbf, rel.checkpoint_time, rel.restart_time, rel.checked_interval(), gpus)


def goodput(inst: Instance, groups) -> np.ndarray:
    """γ(m) per training-group count (1 without a reliability section; NaN-free, <= 0 where no progress)."""
    m = np.asarray(groups)
    if inst.reliability is None:
        return np.ones(m.shape)
    return training_terms(inst.reliability, m * inst.training.gpus_per_group).goodput


def progress(inst: Instance, groups) -> np.ndarray:
    """1/γ(m), inf where γ <= 0: the factor on the trainer-paced time (1 without a reliability section)."""
    return inverse_goodput(goodput(inst, groups))


def _events(inst: Instance) -> tuple[float, float]:
    """(gpu_mtbf, replica_restart_time) the replica terms read: the section's, or with preemptions alone
    no GPU failures (an infinite MTBF) and the default restart time."""
    rel = inst.reliability
    if rel is None:
        return np.inf, Reliability().replica_restart_time
    return rel.gpu_mtbf, rel.replica_restart_time


def replica_event_rates(inst: Instance) -> np.ndarray:
    """(shapes,) failures and preemptions per replica per second: g_s/gpu_mtbf + preemptions_per_hour/3600."""
    mtbf, _ = _events(inst)
    gpus = np.array([s.gpus_per_replica for s in inst.inference.shapes], dtype=float)
    per_hour = np.array([inst.pool(s.pool).preemptions_per_hour or 0.0 for s in inst.inference.shapes])
    return replica_rate(gpus, mtbf, per_hour)


def availabilities(inst: Instance, mean_lifetime: float) -> np.ndarray:
    """(shapes,) a_s = a·max(0, 1 - rate_s·(replica_restart_time + mean(W)/2)); ``a`` without §13."""
    a = inst.inference.availability
    if not inst.reliable:
        return np.full(len(inst.inference.shapes), a)
    _, restart = _events(inst)
    return replica_availability(a, replica_event_rates(inst), restart, mean_lifetime)


def weight_sync_factor(inst: Instance, cadence) -> np.ndarray:
    """Supply kept per cadence: 1 - weight_sync_time/L, and 0 where L <= weight_sync_time (1 without §13)."""
    L = np.asarray(cadence, dtype=float)
    rel = inst.reliability
    if rel is None or rel.weight_sync_time == 0:
        return np.ones(L.shape)
    return weight_sync_kept(rel.weight_sync_time, L)


# ---------------------------------------------------------------- the pair table's §13 terms


def pair_spans(inst: Instance, grid: np.ndarray, groups: np.ndarray, keep: np.ndarray, cut) -> np.ndarray:
    """MODEL §13: cut the cadences where the weight sync takes the whole cadence (L <= weight_sync_time) and
    those whose fewest groups make no progress (γ <= 0: more groups only fail more often); the makespan
    n·L/γ(m) + extra_time at the fewest groups m, with its deadline cut (without start-up: see
    :func:`solver.table.group_counts.steady_spans` for T with it)."""
    w, sched = inst.workload, inst.schedule
    cut(weight_sync_factor(inst, grid) > 0, "weight_sync")
    factor = progress(inst, np.maximum(groups, 1))
    cut(np.isfinite(factor) | (groups == 0), "goodput")
    if inst.counts_startup:
        return np.broadcast_to(calc.makespan(inst, grid)[:, None], keep.shape)
    with np.errstate(invalid="ignore"):
        span = w.iterations * grid * factor + sched.extra_time
    span = np.broadcast_to(span[:, None], keep.shape)
    cut(span <= sched.deadline * (1 + REL_TOL), "deadline")
    return span


def shortest_trainer_time(inst: Instance, grid: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Per cadence, the shortest trainer-paced time ((n-1)·L + U(m))/γ(m) (MODEL §8 with §13) of any
    admissible group count from the fewest that keep up (``groups``; 0: none) up; inf where none."""
    lo, top = calc.group_range(inst)
    counts = np.arange(lo, top + 1) if top >= lo else np.zeros(0, dtype=int)
    u = calc.update_time(inst.training.update_time, counts * inst.training.gpus_per_group)
    factor = progress(inst, counts)
    out = np.full(grid.shape, np.inf)
    for i, (L, fewest) in enumerate(zip(grid.tolist(), np.asarray(groups).tolist())):
        if fewest <= 0:
            continue
        at = counts >= fewest
        with np.errstate(invalid="ignore"):
            times = ((inst.workload.iterations - 1) * L + u[at]) * factor[at]
        times = times[np.isfinite(times)]
        out[i] = times.min() if times.size else np.inf
    return out
