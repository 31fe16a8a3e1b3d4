"""Test-only brute-force reference for the planning MIP (MODEL.md §1–§4).

It shares nothing with solver/ but the instance schema: the cadence grid, exceedance
(by numerical integration of the survival function), update laws and costs are
recomputed here, and the optimum is found by enumerating cadence × K × training
groups × replica vectors, and node/VM count vectors whose sandbox capacity is
checked by a small LP (scipy.optimize.linprog). Fine for instances with pools of a
few dozen GPUs and a handful of nodes.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
from scipy import integrate, optimize, stats

from models.instance import AmdahlLaw, Instance, InverseLaw, Lognormal

TOL = 1e-9


@dataclass(frozen=True)
class Point:
    cadence: float
    kept: int
    makespan: float
    hourly: float
    total: float


def grid(inst: Instance) -> list[float]:
    s = inst.schedule
    top = s.cadence.max if s.cadence.max is not None else (s.deadline - s.extra_time) / inst.workload.iterations
    out, j = [], 0
    while True:
        L = s.cadence.min + j * s.cadence.step
        if L > top * (1 + 1e-12) + 1e-9:
            return out
        out.append(L)
        j += 1


class Law:
    def __init__(self, spec):
        self.spec = spec
        if isinstance(spec, Lognormal):
            z = stats.norm.ppf(0.99)
            med, p99, mean, sig = spec.median, spec.p99, spec.mean, spec.sigma
            if med is not None and p99 is not None:
                mu, sig = math.log(med), math.log(p99 / med) / z
            elif med is not None and mean is not None:
                mu, sig = math.log(med), math.sqrt(2 * math.log(mean / med))
            elif med is not None:
                mu = math.log(med)
            elif p99 is not None and sig is not None:
                mu = math.log(p99) - z * sig
            elif mean is not None and sig is not None:
                mu = math.log(mean) - sig * sig / 2
            else:
                roots = np.roots([0.5, -z, math.log(p99 / mean)])
                sig = float(min(r.real for r in roots if r.real > 0))
                mu = math.log(mean) - sig * sig / 2
            self.dist = stats.lognorm(s=sig, scale=math.exp(mu))
            self.mean, self.median, self.p99 = self.dist.mean(), self.dist.median(), self.dist.ppf(0.99)
        else:
            self.samples = np.array(spec.samples, dtype=float)
            self.dist = None
            self.mean = float(self.samples.mean())
            self.median = float(np.median(self.samples))
            self.p99 = float(np.quantile(self.samples, 0.99))

    def exceedance(self, L: float, K: int) -> float:
        """P(floor(u + W/L) > K) = ∫_K^{K+1} P(W > vL) dv."""
        if self.dist is not None:
            value, _ = integrate.quad(lambda v: self.dist.sf(v * L), K, K + 1, epsabs=1e-13, epsrel=1e-11)
            return value
        return float(np.mean(np.clip(self.samples / L, K, K + 1) - K))


def update_time(law, gpus: float) -> float:
    if isinstance(law, InverseLaw):
        return law.reference_time * law.reference_gpus / gpus
    if isinstance(law, AmdahlLaw):
        f = law.serial_fraction
        return law.reference_time * (f + (1 - f) * law.reference_gpus / gpus)
    xs = [p.gpus for p in law.points]
    if gpus < xs[0] * (1 - TOL) or gpus > xs[-1] * (1 + TOL):
        return math.inf
    return float(np.interp(gpus, xs, [p.seconds for p in law.points]))


def sandbox_capacity(inst: Instance, nodes: dict[str, int], vms: dict[str, int]) -> float:
    """Largest attempt rate R whose steady and peak environments the given nodes and VMs can hold."""
    env = inst.environment
    law = Law(env.occupancy)
    w_use = law.mean if env.littles_law_uses == "mean" else law.median
    backends = env.backends
    cols: list[tuple] = []
    for k in env.node_types:
        for b in backends:
            if b.name in k.density:
                cols.append(("y", k, b))
                cols.append(("yp", k, b))
    for v in env.cloud.vm_types:
        for b in backends:
            if b.name in v.density:
                cols.append(("c", v, b))
    n = len(cols) + 1  # last column: R
    A, rhs = [], []

    def row(coeffs: dict[int, float], bound: float) -> None:
        line = np.zeros(n)
        for i, c in coeffs.items():
            line[i] += c
        A.append(line)
        rhs.append(bound)

    u = env.utilisation_cap
    for b in backends:
        demand = b.share * w_use
        row({**{i: -1.0 for i, c in enumerate(cols) if c[0] == "y" and c[2] is b}, n - 1: demand}, 0.0)
        peak = demand * env.peak_to_mean
        row({**{i: -1.0 for i, c in enumerate(cols) if c[0] in ("yp", "c") and c[2] is b}, n - 1: peak}, 0.0)
        share = env.cloud.eligible_share.get(b.name, 0.0)
        row({**{i: 1.0 for i, c in enumerate(cols) if c[0] == "c" and c[2] is b}, n - 1: -share * peak}, 0.0)
    for kind, hosts, counts, cap in (("y", env.node_types, nodes, u), ("yp", env.node_types, nodes, u),
                                     ("c", env.cloud.vm_types, vms, 1.0)):
        for h in hosts:
            idx = [i for i, c in enumerate(cols) if c[0] == kind and c[1] is h]
            if not idx:
                continue
            count = counts.get(h.name, 0)
            row({i: 1.0 / h.density[cols[i][2].name] for i in idx}, cap * count)
            if h.cores:
                row({i: cols[i][2].cores or 0.0 for i in idx}, cap * count * h.cores)
            if h.memory_gb:
                row({i: cols[i][2].memory_gb or 0.0 for i in idx}, cap * count * h.memory_gb)
    objective = np.zeros(n)
    objective[-1] = -1.0
    res = optimize.linprog(objective, A_ub=np.array(A), b_ub=np.array(rhs), bounds=[(0, None)] * (n - 1) + [(0, 1e9)],
                           method="highs")
    return float(res.x[-1]) if res.status == 0 else 0.0


def node_bound(inst: Instance, max_attempts: float) -> tuple[dict[str, int], dict[str, int]]:
    """Counts beyond which more nodes/VMs of a type cannot help: each type alone holding every environment."""
    env = inst.environment
    law = Law(env.occupancy)
    w_use = law.mean if env.littles_law_uses == "mean" else law.median
    nodes, vms = {}, {}
    for hosts, out, cap_attr, cap in ((env.node_types, nodes, "max_nodes", env.utilisation_cap),
                                      (env.cloud.vm_types, vms, "max_vms", 1.0)):
        for h in hosts:
            need = 0.0
            for b in env.backends:
                if b.name not in h.density:
                    continue
                per = 1.0 / h.density[b.name]
                if h.cores and b.cores:
                    per = max(per, b.cores / h.cores)
                if h.memory_gb and b.memory_gb:
                    per = max(per, b.memory_gb / h.memory_gb)
                need += max_attempts * b.share * w_use * env.peak_to_mean * per / cap
            bound = math.ceil(need) + 1
            limit = getattr(h, cap_attr)
            out[h.name] = bound if limit is None else min(bound, limit)
    return nodes, vms


def feasible_points(inst: Instance) -> list[Point]:
    """Every (cadence, K) on the grid with its cheapest hourly cost, or nothing when no plan exists there."""
    w, env, fr, sched = inst.workload, inst.environment, inst.freshness, inst.schedule
    law = Law(env.occupancy)
    w_use = law.mean if env.littles_law_uses == "mean" else law.median
    pools = {p.name: p for p in inst.gpu_pools}
    shapes = inst.inference.shapes
    t = inst.training
    fit = pools[t.pool].gpus // t.gpus_per_group
    groups = range(t.min_groups, (fit if t.max_groups is None else min(t.max_groups, fit)) + 1)

    # Every replica vector and group count, with its GPUs per pool and cost.
    ranges = [range(pools[s.pool].gpus // s.gpus_per_replica + 1) for s in shapes]
    combos = np.array(list(itertools.product(*ranges)), dtype=float).reshape(-1, len(shapes))
    use = {p: np.zeros(len(combos)) for p in pools}
    for i, s in enumerate(shapes):
        use[s.pool] += combos[:, i] * s.gpus_per_replica
    inference_cost = sum(pools[s.pool].gpu_hour_cost * s.gpus_per_replica * combos[:, i] for i, s in enumerate(shapes))

    def rates(L: float, K: int) -> tuple[float, float, float]:
        q = min(max(law.exceedance(L, K), 0.0), 1.0)
        if fr.overrun_policy == "downweight":
            drop = 0.0
        elif fr.group_correlation == "comonotone":
            drop = q
        else:
            drop = 1 - (1 - q) ** w.group_size
        return q, drop, w.intake_rate * (1 - drop)

    candidates = []
    for L in grid(inst):
        span = w.iterations * L + sched.extra_time
        if span > sched.deadline * (1 + TOL):
            continue
        if fr.max_mean_gap is not None:
            gap = w_use / L + (1 if fr.gap_convention == "post_publish" else 0)
            if gap > fr.max_mean_gap * (1 + TOL):
                continue
        for K in range(1, fr.max_versions_kept + 1):
            q, drop, p_eff = rates(L, K)
            if p_eff <= 0:
                continue
            if fr.max_exceedance is not None and q > fr.max_exceedance * (1 + TOL) + 1e-15:
                continue
            if fr.max_group_drop is not None and drop > fr.max_group_drop * (1 + TOL) + 1e-15:
                continue
            candidates.append((L, K, span, w.batch_trajectories / (L * p_eff)))
    if not candidates:
        return []

    max_attempts = max(c[3] for c in candidates)
    node_caps, vm_caps = node_bound(inst, max_attempts)
    sandbox = []  # (cost per hour, capacity in attempts/s)
    names_n, names_v = list(node_caps), list(vm_caps)
    for counts in itertools.product(*[range(node_caps[k] + 1) for k in names_n],
                                    *[range(vm_caps[v] + 1) for v in names_v]):
        nodes = dict(zip(names_n, counts[: len(names_n)]))
        vms = dict(zip(names_v, counts[len(names_n):]))
        cost = sum(k.hour_cost * nodes[k.name] for k in env.node_types) + sum(
            v.hour_cost * v.billed_fraction * vms[v.name] for v in env.cloud.vm_types)
        sandbox.append((cost, sandbox_capacity(inst, nodes, vms)))

    points = []
    for L, K, span, attempts in candidates:
        demand = attempts * w.tokens_per_attempt
        supply = sum(
            inst.inference.availability * s.gpus_per_replica * s.tokens_per_gpu_s
            * max(0.0, 1 - s.version_slowdown * (K - 1)) * combos[:, i]
            for i, s in enumerate(shapes)
        )
        best_gpu = math.inf
        for m in groups:
            if update_time(t.update_time, m * t.gpus_per_group) > L * (1 + TOL):
                continue
            ok = supply >= demand * (1 - TOL)
            for name, pool in pools.items():
                train = m * t.gpus_per_group if name == t.pool else 0
                ok &= use[name] + train <= pool.gpus
            if ok.any():
                train_cost = pools[t.pool].gpu_hour_cost * m * t.gpus_per_group
                best_gpu = min(best_gpu, float(inference_cost[ok].min()) + train_cost)
        if not math.isfinite(best_gpu):
            continue
        fits = [cost for cost, cap in sandbox if cap >= attempts * (1 - TOL)]
        if not fits:
            continue
        hourly = best_gpu + min(fits)
        total = hourly * span / 3600
        lim = inst.limits
        if lim.max_hourly_cost is not None and hourly > lim.max_hourly_cost * (1 + TOL):
            continue
        if lim.max_total_cost is not None and total > lim.max_total_cost * (1 + TOL):
            continue
        points.append(Point(L, K, span, hourly, total))
    return points


def best(points: list[Point], objective: str) -> Point | None:
    """The lexicographic optimum of MODEL.md §4 with relative tolerance 1e-9."""
    if not points:
        return None
    order = {"total_cost": ("total", "makespan", "hourly"), "hourly_cost": ("hourly", "makespan"),
             "makespan": ("makespan", "total")}[objective]
    pool = points
    for key in order:
        low = min(getattr(p, key) for p in pool)
        pool = [p for p in pool if getattr(p, key) <= low + 1e-9 * max(1.0, abs(low))]
    return pool[0]
