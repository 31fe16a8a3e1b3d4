"""Test-only brute force for staged plans (MODEL.md §12 over §2–§4, §8 and §11), sharing nothing with solver/.

Instances are small and plain: one pool billed by use, one backend, one node type and at most one
VM type stating densities only, ``steady_state`` (with or without the start-up of §8) or ``hold`` (the
start-up, E^hold sandboxes of §11 item 2 and a given allowance Δ in the deadline row; no freshness
limits, so the consumed gap of item 3 plays no part). With the start-up counted the run's makespan is
fill_1 + Σ_p n_p·L_p - L_1 + U_P(m_P) + extra_time: the first stage's fill grows with its cadence, so
the shortest cadence is still each stage's best at a capacity. Every capacity (training groups, a replica count
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
from scipy import integrate, optimize, special

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


def min_of_two(law: Law) -> float:
    """E[min(W, W')] = ∫_0^inf S(t)² dt of a lognormal W, integrated over z = (ln t - mu)/sigma."""

    def integrand(z: float) -> float:
        return law.sigma * math.exp(law.mu + law.sigma * z) * special.ndtr(-z) ** 2

    cuts = [-40.0, -4.0, 0.0, 4.0, 40.0]  # past ±40 the integrand is below 1e-300 of the rest (or e^(mu-40σ))
    head = math.exp(law.mu + law.sigma * cuts[0])
    return head + sum(
        integrate.quad(integrand, a, b, epsabs=0, epsrel=1e-12, limit=200)[0] for a, b in zip(cuts, cuts[1:])
    )


def halfin_whitt(wait: float) -> float:
    """β with 1/(1 + β·Φ(β)/φ(β)) = wait."""

    def share(beta: float) -> float:
        return 1.0 / (1.0 + beta * special.ndtr(beta) / (math.exp(-beta * beta / 2) / math.sqrt(2 * math.pi)))

    return optimize.brentq(lambda b: share(b) - wait, 0.0, 10.0, xtol=1e-14)


def environments(si: Instance, law: Law, attempts: np.ndarray) -> np.ndarray:
    """Environments rows 5 size for: R·W_use (MODEL §2), or under hold R·mean(W) + β·sqrt(V) with one backend
    (share 1): V = R·(mean - E[min]) independent, g·R·(mean - E[min]) comonotone (§11 item 2)."""
    if si.planning.basis != "hold":
        w_use = law.mean if si.environment.littles_law_uses == "mean" else law.median
        return attempts * w_use
    spread = law.mean - min_of_two(law)
    if si.freshness.group_correlation == "comonotone":
        spread *= si.workload.group_size
    beta = halfin_whitt(si.planning.sandbox_wait)
    finite = np.where(np.isfinite(attempts), attempts, 0.0)
    loads = finite * law.mean + beta * np.sqrt(finite * spread)
    return np.where(np.isfinite(attempts), loads, np.inf)


def fills(si: Instance, law: Law, attempts: np.ndarray) -> np.ndarray:
    """MODEL §8's fill per cadence: the smallest t with p·R·∫_0^t F_grp >= B."""
    w = si.workload
    power = w.group_size if si.freshness.group_correlation == "independent" else 1
    return np.array(
        [law.fill(w.batch_trajectories / (w.intake_rate * r), power) if np.isfinite(r) else np.inf for r in attempts]
    )


def stage_tables(inst: Instance, K: int):
    """Per stage: grid, attempts R_raw(L, K), steady and peak environments, its instance, and with the
    start-up counted the first stage's fill per cadence."""
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
        steady = environments(si, law, attempts)
        counted = si.schedule.count_startup or si.planning.basis == "hold"
        fill = fills(si, law, attempts) if counted and not out else None
        out.append((si, L, attempts, steady, steady * si.environment.peak_to_mean, fill))
    return out


def stage_cadences(table, caps: dict[str, np.ndarray], K: int) -> np.ndarray:
    """Per capacity, the shortest grid cadence at which the stage's rows hold (inf: none), or with the
    first stage's fill its part fill + (n_1 - 1)·L (the shortest cadence has the shortest)."""
    si, L, attempts, steady, peak, _ = table
    env, shapes = si.environment, si.inference.shapes
    m, x, N, V = caps["m"], caps["x"], caps["N"], caps["V"]
    rate = np.array(
        [s.gpus_per_replica * s.tokens_per_gpu_s * max(0.0, 1 - s.version_slowdown * (K - 1)) for s in shapes]
    )
    supply = si.inference.availability * (x @ rate)
    demand = attempts * si.workload.tokens_per_attempt
    counts, at = np.unique(m, return_inverse=True)
    U = np.array([update_time(si.training.update_time, g * si.training.gpus_per_group) for g in counts.tolist()])[at]
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
    return np.where(ok.any(axis=1), L[first], np.inf), first


def hourly_of(inst: Instance, caps: dict[str, np.ndarray]) -> np.ndarray:
    pool = inst.gpu_pools[0]
    per_replica = np.array([s.gpus_per_replica for s in inst.inference.shapes], dtype=float)
    gpus = caps["m"] * inst.training.gpus_per_group + caps["x"] @ per_replica
    vms = inst.environment.cloud.vm_types
    vm = caps["V"] * vms[0].hour_cost * vms[0].billed_fraction if vms else 0.0
    return pool.gpu_hour_cost * gpus + caps["N"] * inst.environment.node_types[0].hour_cost + vm


def candidates(inst: Instance, host_top: int, vm_top: int, allowance: float = 0.0) -> list[dict]:
    """Every plan the order must choose among, as {total, makespan, hourly}; ``allowance``: Δ in the
    deadline row T + Δ <= deadline."""
    caps = capacities(inst, host_top, vm_top)
    hourly = hourly_of(inst, caps)
    n = [s.iterations for s in inst.stages.list]
    found = []
    for K in range(1, inst.freshness.max_versions_kept + 1):
        tables = stage_tables(inst, K)
        parts = np.stack([stage_part(inst, p, t, caps, K) for p, t in enumerate(tables)], axis=1)
        if inst.stages.capacity == "fixed":
            T = parts.sum(axis=1) + inst.schedule.extra_time
            ok = T + allowance <= inst.schedule.deadline * (1 + TOL)
            found += [
                {"total": h * span / 3600, "makespan": span, "hourly": h}
                for h, span in zip(hourly[ok].tolist(), T[ok].tolist())
            ]
        else:
            found += _replans(inst, parts, hourly, n, allowance)
    return found


def stage_part(inst: Instance, p: int, table, caps: dict[str, np.ndarray], K: int) -> np.ndarray:
    """Per capacity, stage p's part of the run at its shortest cadence: n_p·L_p, with the start-up counted
    the first stage's fill less one cadence and the last stage's final update U_P(m) added."""
    si, fill = table[0], table[-1]
    L, first = stage_cadences(table, caps, K)
    part = si.workload.iterations * L
    counted = inst.schedule.count_startup or inst.planning.basis == "hold"
    if counted and p == 0:
        part = part + np.where(np.isfinite(L), fill[first], np.inf) - np.where(np.isfinite(L), L, 0.0)
    if counted and p == len(inst.stages.list) - 1:
        t = si.training
        counts, at = np.unique(caps["m"], return_inverse=True)  # U_P(m) once per distinct group count
        part = part + np.array([update_time(t.update_time, m * t.gpus_per_group) for m in counts.tolist()])[at]
    return part


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


def _replans(inst: Instance, parts: np.ndarray, hourly: np.ndarray, n: list[int], allowance: float) -> list[dict]:
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
        fronts = [_pareto(hourly, sum(parts[:, p] for p in b)) for b in blocks]
        for choice in itertools.product(*fronts):
            span = sum(d for _, d in choice) + extra + switch * (len(blocks) - 1)
            if span + allowance > deadline * (1 + TOL):
                continue
            paid = sum(h * d for h, d in choice) + choice[-1][0] * extra
            paid += sum(h * switch for h, _ in choice[1:])
            out.append({"total": paid / 3600, "makespan": span, "hourly": max(h for h, _ in choice)})
    return out


def best(found: list[dict], objective: str) -> dict | None:
    """The optimum under MODEL §4's lexicographic order (relative tolerance 1e-9 per criterion)."""
    if not found:
        return None
    pool = np.arange(len(found))  # the candidates still tied, in the order they were found
    for key in ORDER[objective]:
        values = np.array([found[i][key] for i in pool], dtype=float)
        low = float(values.min())
        pool = pool[values <= low + TOL * max(1.0, abs(low))]
    return found[int(pool[0])]
