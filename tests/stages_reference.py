"""Test-only brute force for staged plans (MODEL.md §12 over §2–§4), sharing nothing with solver/.

Instances are small and plain: one pool billed by use, one backend, one node type and at most one
VM type stating densities only, ``steady_state``. Every capacity (training groups, a replica count
per shape, nodes, VMs) within the pool and the host bounds is enumerated for each K; a stage at a
capacity takes its shortest grid cadence that meets its rows (throughput, update time, steady and
peak sandboxes): with the capacity fixed, a longer cadence only lengthens the run. ``fixed`` then
sums the stages at one capacity; ``replan`` splits the stages into consecutive blocks, each block at
one capacity from its (hourly, duration) Pareto front, paying a switch between blocks (two blocks at
equal capacities are the merged block's plan charged one switch too many, so the minimum over
splits is exact). The lexicographic order of MODEL §4 picks the optimum.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy import special

from tests.reference import Law, grid, update_time
from trainground.models.instance import Instance
from trainground.models.stage_rules import stage_instance

TOL = 1e-9
ORDER = {
    "total_cost": ("total", "makespan", "hourly"),
    "hourly_cost": ("hourly", "makespan"),
    "makespan": ("makespan", "total"),
}


def capacities(inst: Instance, host_top: int, vm_top: int) -> dict[str, np.ndarray]:
    """Columns of every capacity within the pool, the group range and the host bounds: groups m, replicas
    per shape x (caps, shapes), nodes N, VMs V."""
    pool = inst.gpu_pools[0].gpus
    t = inst.training
    top = pool // t.gpus_per_group if t.max_groups is None else min(t.max_groups, pool // t.gpus_per_group)
    shapes = inst.inference.shapes
    rows = []
    for m in range(t.min_groups, top + 1):
        free = pool - m * t.gpus_per_group
        for x in itertools.product(*[range(free // s.gpus_per_replica + 1) for s in shapes]):
            if sum(n * s.gpus_per_replica for n, s in zip(x, shapes)) <= free:
                rows.append((m, *x))
    base = np.array(rows, dtype=float).reshape(len(rows), 1 + len(shapes))
    hosts = np.array([(N, V) for N in range(host_top + 1) for V in range(vm_top + 1)], dtype=float)
    full = np.repeat(base, len(hosts), axis=0)
    tiled = np.tile(hosts, (len(base), 1))
    return {"m": full[:, 0], "x": full[:, 1:], "N": tiled[:, 0], "V": tiled[:, 1]}


def limited_mean(law: Law, c: np.ndarray) -> np.ndarray:
    """E[min(W, c)] of a lognormal W: e^(mu + sigma²/2)·Φ((ln c - mu - sigma²)/sigma) + c·(1 - Φ((ln c - mu)/sigma))."""
    mu, sig = law.mu, law.sigma
    z = (np.log(c) - mu) / sig
    return math.exp(mu + sig * sig / 2) * special.ndtr(z - sig) + c * special.ndtr(-z)


def exceedance(law: Law, L: np.ndarray, K: int) -> np.ndarray:
    """q(L, K) = ∫_K^{K+1} S(vL) dv = (E[min(W, (K+1)L)] - E[min(W, KL)]) / L (MODEL §2)."""
    return (limited_mean(law, (K + 1) * L) - limited_mean(law, K * L)) / L


def stage_tables(inst: Instance, K: int):
    """Per stage: grid, attempts R_raw(L, K), steady and peak environments, and its instance."""
    out = []
    for stage in inst.stages.list:
        si = stage_instance(inst, stage)
        law = Law(si.environment.occupancy)
        L = np.array(grid(si))
        w, fr = si.workload, si.freshness
        q = exceedance(law, L, K)
        if fr.overrun_policy == "downweight":
            drop = np.zeros_like(q)
        elif fr.group_correlation == "independent":
            drop = 1 - (1 - q) ** w.group_size
        else:
            drop = q
        intake = w.intake_rate * (1 - drop)
        attempts = np.where(intake > 0, w.batch_trajectories / (L * np.maximum(intake, 1e-300)), np.inf)
        w_use = law.mean if si.environment.littles_law_uses == "mean" else law.median
        steady = attempts * w_use
        out.append((si, L, attempts, steady, steady * si.environment.peak_to_mean))
    return out


def stage_cadences(table, caps: dict[str, np.ndarray], K: int) -> np.ndarray:
    """Per capacity, the shortest grid cadence at which the stage's rows hold (inf: none)."""
    si, L, attempts, steady, peak = table
    env, shapes = si.environment, si.inference.shapes
    m, x, N, V = caps["m"], caps["x"], caps["N"], caps["V"]
    rate = np.array(
        [s.gpus_per_replica * s.tokens_per_gpu_s * max(0.0, 1 - s.version_slowdown * (K - 1)) for s in shapes]
    )
    supply = si.inference.availability * (x @ rate)
    demand = attempts * si.workload.tokens_per_attempt
    counts = np.unique(m)
    per = {g: update_time(si.training.update_time, g * si.training.gpus_per_group) for g in counts.tolist()}
    U = np.array([per[g] for g in m.tolist()])
    backend = env.backends[0].name
    local = env.utilisation_cap * N * env.node_types[0].density[backend]
    vms = env.cloud.vm_types
    cloud = V * vms[0].density[backend] if vms else np.zeros_like(V)
    share = env.cloud.eligible_share.get(backend, 0.0)
    ok = (
        (supply[:, None] >= demand[None, :] * (1 - TOL))
        & (U[:, None] <= L[None, :] * (1 + TOL))
        & (steady[None, :] * (1 - TOL) <= local[:, None] + 1e-9)
        & (peak[None, :] * (1 - TOL) <= local[:, None] + np.minimum(cloud[:, None], share * peak[None, :]) + 1e-9)
    )
    first = np.argmax(ok, axis=1)
    return np.where(ok.any(axis=1), L[first], np.inf)


def hourly_of(inst: Instance, caps: dict[str, np.ndarray]) -> np.ndarray:
    pool = inst.gpu_pools[0]
    per_replica = np.array([s.gpus_per_replica for s in inst.inference.shapes], dtype=float)
    gpus = caps["m"] * inst.training.gpus_per_group + caps["x"] @ per_replica
    vms = inst.environment.cloud.vm_types
    vm = caps["V"] * vms[0].hour_cost * vms[0].billed_fraction if vms else 0.0
    return pool.gpu_hour_cost * gpus + caps["N"] * inst.environment.node_types[0].hour_cost + vm


def candidates(inst: Instance, host_top: int, vm_top: int) -> list[dict]:
    """Every plan the order must choose among, as {total, makespan, hourly}."""
    caps = capacities(inst, host_top, vm_top)
    hourly = hourly_of(inst, caps)
    n = [s.iterations for s in inst.stages.list]
    extra, deadline = inst.schedule.extra_time, inst.schedule.deadline
    found = []
    for K in range(1, inst.freshness.max_versions_kept + 1):
        tables = stage_tables(inst, K)
        L = np.stack([stage_cadences(t, caps, K) for t in tables], axis=1)  # (caps, stages)
        if inst.stages.capacity == "fixed":
            T = L @ np.array(n, dtype=float) + extra
            for h, span in zip(hourly, T):
                if span <= deadline * (1 + TOL):
                    found.append({"total": h * span / 3600, "makespan": float(span), "hourly": float(h)})
        else:
            found += _replans(inst, L, hourly, n)
    return found


def _pareto(h: np.ndarray, d: np.ndarray) -> list[tuple[float, float]]:
    """The (hourly, duration) options no other option beats in both."""
    ok = np.isfinite(d)
    pts = sorted(set(zip(h[ok].tolist(), d[ok].tolist())))
    front, best = [], math.inf
    for hh, dd in pts:
        if dd < best:
            front.append((hh, dd))
            best = dd
    return front


def _replans(inst: Instance, L: np.ndarray, hourly: np.ndarray, n: list[int]) -> list[dict]:
    P = len(n)
    extra, deadline, switch = inst.schedule.extra_time, inst.schedule.deadline, inst.stages.switch_time
    out = []
    for cuts in itertools.product((False, True), repeat=P - 1):
        blocks, start = [], 0
        for i, cut in enumerate(cuts, start=1):
            if cut:
                blocks.append(range(start, i))
                start = i
        blocks.append(range(start, P))
        fronts = [_pareto(hourly, sum(n[p] * L[:, p] for p in b)) for b in blocks]
        for choice in itertools.product(*fronts):
            span = sum(d for _, d in choice) + extra + switch * (len(blocks) - 1)
            if span > deadline * (1 + TOL):
                continue
            paid = sum(h * d for h, d in choice) + choice[-1][0] * extra
            paid += sum(h * switch for h, _ in choice[1:])
            out.append({"total": paid / 3600, "makespan": span, "hourly": max(h for h, _ in choice)})
    return out


def best(found: list[dict], objective: str) -> dict | None:
    """The optimum under MODEL §4's lexicographic order (relative tolerance 1e-9 per criterion)."""
    pool = list(found)
    for key in ORDER[objective]:
        if not pool:
            return None
        low = min(p[key] for p in pool)
        pool = [p for p in pool if p[key] <= low + TOL * max(1.0, abs(low))]
    return pool[0] if pool else None
