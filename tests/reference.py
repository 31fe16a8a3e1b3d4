"""Test-only brute-force reference for the planning MIP (MODEL.md §1–§4, §8, §13).

It shares nothing with solver/ but the instance schema: the cadence grid, exceedance (by
numerical integration of the survival function), update laws, the start-up fill of §8 and
costs (with §4's reserved billing) are recomputed here. The optimum is found by enumerating
cadence × K × training groups × replica vectors; for each (cadence, K) the cheapest
node/VM count vector whose sandbox capacity (a small LP, scipy.optimize.linprog, with
MODEL §3.5's rows) holds its attempt rate is found by enumeration too: every count vector of
all host types but the last within that pair's own bounds (each type alone holding every
environment it can run), the last type's count by bisection (capacity grows with it), and
vectors already dearer than the cheapest found skipped. Fine for instances with pools of a
few dozen GPUs and a few dozen hosts of each type.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
from scipy import integrate, optimize, special, stats

from trainground.models.instance import AmdahlLaw, Instance, InverseLaw, Lognormal

TOL = 1e-9
MAX_VECTORS = 200_000  # count vectors one pair may enumerate; beyond it the instance is not small


class TooLarge(Exception):
    """The instance needs more host-count vectors than brute force should enumerate."""


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
            self.mu, self.sigma = mu, sig
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

    def cdf_power_integral(self, t: float, power: int) -> float:
        """∫_0^t F(s)^power ds. Lognormal: in log time x = ln s, ∫_{-inf}^{ln t} Φ((x-mu)/sigma)^power e^x dx."""
        if t <= 0:
            return 0.0
        if self.dist is not None:

            def integrand(x: float) -> float:
                return special.ndtr((x - self.mu) / self.sigma) ** power * math.exp(x)

            top = math.log(t)
            low = min(top, self.mu) - 12 * self.sigma  # Φ^power·e^x is below 1e-30 of the rest past here
            head, _ = integrate.quad(integrand, low, min(top, self.mu), epsabs=0, epsrel=1e-12, limit=200)
            tail, _ = (
                integrate.quad(integrand, self.mu, top, epsabs=0, epsrel=1e-12, limit=200)
                if top > self.mu
                else (0.0, 0.0)
            )
            return head + tail
        w = np.sort(self.samples)
        edges = np.concatenate(([0.0], np.minimum(w, t), [t]))
        levels = (np.arange(w.size + 1) / w.size) ** power
        return float(np.sum(np.diff(edges) * levels))

    def fill(self, need: float, power: int) -> float:
        """MODEL §8: the smallest t >= 0 with ∫_0^t F(s)^power ds >= need."""
        high = need + self.p99
        while self.cdf_power_integral(high, power) < need:
            high *= 2
        return optimize.brentq(lambda t: self.cdf_power_integral(t, power) - need, 0.0, high, xtol=1e-10, rtol=1e-14)


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


def sandbox_capacity(inst: Instance, nodes: dict[str, int], vms: dict[str, int], w_use: float | None = None) -> float:
    """Largest attempt rate R whose steady and peak environments the given nodes and VMs can hold
    (``w_use``: the occupancy Little's law uses, when the caller has it).

    MODEL §3.5: a host that states cores (memory_gb) has that row; a backend without the figure adds 0."""
    env = inst.environment
    if w_use is None:
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
    for kind, hosts, counts, cap in (
        ("y", env.node_types, nodes, u),
        ("yp", env.node_types, nodes, u),
        ("c", env.cloud.vm_types, vms, 1.0),
    ):
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
    res = optimize.linprog(
        objective, A_ub=np.array(A), b_ub=np.array(rhs), bounds=[(0, None)] * (n - 1) + [(0, 1e9)], method="highs"
    )
    return float(res.x[-1]) if res.status == 0 else 0.0


class Sandboxes:
    """The cheapest node/VM count vector holding a given attempt rate, with capacities remembered."""

    def __init__(self, inst: Instance):
        env = inst.environment
        self.inst = inst
        law = Law(env.occupancy)
        self.w_use = w_use = law.mean if env.littles_law_uses == "mean" else law.median
        self.hosts = [("node", k, k.hour_cost, k.max_nodes, env.utilisation_cap) for k in env.node_types] + [
            ("vm", v, v.hour_cost * v.billed_fraction, v.max_vms, 1.0) for v in env.cloud.vm_types
        ]
        # Per host type: hosts per attempt/s holding, alone, every peak environment it can run.
        self.per_attempt = []
        for _, h, _, _, cap in self.hosts:
            need = 0.0
            for b in env.backends:
                if b.name in h.density:
                    per = 1.0 / h.density[b.name]
                    if h.cores and b.cores:
                        per = max(per, b.cores / h.cores)
                    if h.memory_gb and b.memory_gb:
                        per = max(per, b.memory_gb / h.memory_gb)
                    need += b.share * w_use * env.peak_to_mean * per / cap
            self.per_attempt.append(need)
        self.capacity: dict[tuple[int, ...], float] = {}

    def holds(self, counts: tuple[int, ...], attempts: float) -> bool:
        if counts not in self.capacity:
            split = len(self.inst.environment.node_types)
            names = [h.name for _, h, _, _, _ in self.hosts]
            self.capacity[counts] = sandbox_capacity(
                self.inst,
                dict(zip(names[:split], counts[:split])),
                dict(zip(names[split:], counts[split:])),
                self.w_use,
            )
        return self.capacity[counts] >= attempts * (1 - TOL)

    def cheapest(self, attempts: float) -> float:
        """Cheapest $/h of hosts holding ``attempts`` per second, inf when no count vector can."""
        bounds = []
        for (_, _, _, limit, _), need in zip(self.hosts, self.per_attempt):
            bound = math.ceil(attempts * need * (1 + 1e-9)) + 1
            bounds.append(bound if limit is None else min(bound, limit))
        if math.prod(b + 1 for b in bounds[:-1]) > MAX_VECTORS:
            raise TooLarge(f"{math.prod(b + 1 for b in bounds[:-1])} count vectors at {attempts:g} attempts/s")
        prices = [price for _, _, price, _, _ in self.hosts]
        best = math.inf
        for prefix in itertools.product(*[range(b + 1) for b in bounds[:-1]]):
            cost = sum(p * c for p, c in zip(prices, prefix))
            if cost >= best or not self.holds((*prefix, bounds[-1]), attempts):
                continue
            low, high = -1, bounds[-1]  # holds at high, not known at low
            while high - low > 1:
                mid = (low + high) // 2
                low, high = (low, mid) if self.holds((*prefix, mid), attempts) else (mid, high)
            best = min(best, cost + prices[-1] * high)
        return best


def feasible_points(inst: Instance) -> list[Point]:
    """Every (cadence, K) on the grid with its cheapest hourly cost (per training group count when the
    start-up is counted, since U(m) then enters the makespan), or nothing when no plan exists there."""
    law = Law(inst.environment.occupancy)
    t, lim = inst.training, inst.limits
    fit = inst.pool(t.pool).gpus // t.gpus_per_group
    groups = range(t.min_groups, (fit if t.max_groups is None else min(t.max_groups, fit)) + 1)
    replicas = _replica_vectors(inst)
    sandboxes = Sandboxes(inst)
    points = []
    for L, K, attempts in _admissible(inst, law):
        spans = _spans(inst, law, L, attempts, groups)
        # (makespan, GPU $/h) per group count; hosts cost at least 0, so GPUs alone may break a budget.
        gpu = [
            (span, replicas.reserved + cost)
            for span, cost in _gpu_costs(inst, law, L, K, attempts, groups, replicas, spans)
            if _within(lim, replicas.reserved + cost, span)
        ]
        if not gpu:
            continue
        sandbox = sandboxes.cheapest(attempts)
        for span, gpu_cost in gpu:
            hourly = gpu_cost + sandbox
            if math.isfinite(hourly) and _within(lim, hourly, span):
                points.append(Point(L, K, span, hourly, hourly * span / 3600))
    return points


def _within(limits, hourly: float, span: float) -> bool:
    """MODEL §3.8 budgets, each only if set."""
    return (limits.max_hourly_cost is None or hourly <= limits.max_hourly_cost * (1 + TOL)) and (
        limits.max_total_cost is None or hourly * span / 3600 <= limits.max_total_cost * (1 + TOL)
    )


def _admissible(inst: Instance, law: Law):
    """(L, K, R_raw) of every grid point and K that passes MODEL §3.7's freshness limits with p_eff > 0."""
    w, fr = inst.workload, inst.freshness
    w_use = law.mean if inst.environment.littles_law_uses == "mean" else law.median
    for L in grid(inst):
        gap = w_use / L + (1 if fr.gap_convention == "post_publish" else 0)
        if fr.max_mean_gap is not None and gap > fr.max_mean_gap * (1 + TOL):
            continue
        for K in range(1, fr.max_versions_kept + 1):
            q = min(max(law.exceedance(L, K), 0.0), 1.0)
            if fr.overrun_policy == "downweight":
                drop = 0.0
            elif fr.group_correlation == "comonotone":
                drop = q
            else:
                drop = 1 - (1 - q) ** w.group_size
            p_eff = w.intake_rate * (1 - drop)
            if p_eff <= 0:
                continue
            if fr.max_exceedance is not None and q > fr.max_exceedance * (1 + TOL) + 1e-15:
                continue
            if fr.max_group_drop is not None and drop > fr.max_group_drop * (1 + TOL) + 1e-15:
                continue
            yield L, K, w.batch_trajectories / (L * p_eff)


@dataclass(frozen=True)
class Replicas:
    """Every replica vector (rows of ``combos``), its GPUs per pool, the $/h of the GPUs billed as used,
    and the $/h of the reserved pools, billed whatever the plan uses (MODEL §4)."""

    combos: np.ndarray
    use: dict[str, np.ndarray]
    cost: np.ndarray
    reserved: float


def _replica_vectors(inst: Instance) -> Replicas:
    pools = {p.name: p for p in inst.gpu_pools}
    shapes = inst.inference.shapes
    ranges = [range(pools[s.pool].gpus // s.gpus_per_replica + 1) for s in shapes]
    combos = np.array(list(itertools.product(*ranges)), dtype=float).reshape(-1, len(shapes))
    use = {p: np.zeros(len(combos)) for p in pools}
    cost = np.zeros(len(combos))
    for i, s in enumerate(shapes):
        use[s.pool] += combos[:, i] * s.gpus_per_replica
        if pools[s.pool].billing == "used":
            cost += pools[s.pool].gpu_hour_cost * s.gpus_per_replica * combos[:, i]
    reserved = sum(p.gpu_hour_cost * p.gpus for p in inst.gpu_pools if p.billing == "reserved")
    return Replicas(combos, use, cost, reserved)


def goodput(inst: Instance, gpus: int) -> float:
    """MODEL §13's training goodput at G_t training GPUs (1 without a reliability section)."""
    rel = inst.reliability
    if rel is None:
        return 1.0
    between = rel.gpu_mtbf / gpus
    tau = math.sqrt(2 * rel.checkpoint_time * between) if rel.checkpoint_interval == "auto" else rel.checkpoint_interval
    return 1 - rel.checkpoint_time / tau - (rel.restart_time + tau / 2) / between


def _spans(inst: Instance, law: Law, L: float, attempts: float, groups) -> dict[int, float]:
    """Makespan per training group count: n·L + extra_time, or by MODEL §8 fill + (n-1)·L + U(m) + extra_time,
    the trainer-paced part divided by MODEL §13's goodput (inf when it is not positive)."""
    w, sched, t = inst.workload, inst.schedule, inst.training

    def paced(m: int, seconds: float) -> float:
        gamma = goodput(inst, m * t.gpus_per_group)
        return seconds / gamma if gamma > 0 else math.inf

    if not sched.count_startup:
        return {m: paced(m, w.iterations * L) + sched.extra_time for m in groups}
    power = w.group_size if inst.freshness.group_correlation == "independent" else 1
    fill = law.fill(w.batch_trajectories / (w.intake_rate * attempts), power)
    return {
        m: fill + paced(m, (w.iterations - 1) * L + update_time(t.update_time, m * t.gpus_per_group)) + sched.extra_time
        for m in groups
    }


def availability(inst: Instance, shape, law: Law) -> float:
    """MODEL §13's a_s: failures (g_s/gpu_mtbf) and the pool's preemptions each cost the replica its restart
    time and half a mean lifetime; ``a`` without a reliability section or a preemptible pool."""
    rel, per_hour = inst.reliability, inst.pool(shape.pool).preemptions_per_hour
    if rel is None and per_hour is None:
        return inst.inference.availability
    rate = (0.0 if rel is None else shape.gpus_per_replica / rel.gpu_mtbf) + (per_hour or 0.0) / 3600
    restart = 300.0 if rel is None else rel.replica_restart_time
    return inst.inference.availability * max(0.0, 1 - rate * (restart + law.mean / 2))


def _gpu_costs(
    inst: Instance, law: Law, L, K, attempts, groups, replicas: Replicas, spans
) -> list[tuple[float, float]]:
    """(makespan, cheapest used-billed GPU $/h) of every training group count that keeps up, meets the
    deadline and leaves room for replicas meeting the token demand; only the cheapest when the
    makespan does not depend on the group count."""
    w, t, pools = inst.workload, inst.training, {p.name: p for p in inst.gpu_pools}
    shapes, combos, use = inst.inference.shapes, replicas.combos, replicas.use
    sync = 1.0 if inst.reliability is None else max(0.0, 1 - inst.reliability.weight_sync_time / L)
    supply = sum(
        availability(inst, s, law)
        * sync
        * s.gpus_per_replica
        * s.tokens_per_gpu_s
        * max(0.0, 1 - s.version_slowdown * (K - 1))
        * combos[:, i]
        for i, s in enumerate(shapes)
    )
    ok_supply = supply >= attempts * w.tokens_per_attempt * (1 - TOL)
    out = []
    for m in groups:
        if update_time(t.update_time, m * t.gpus_per_group) > L * (1 + TOL):
            continue
        if spans[m] > inst.schedule.deadline * (1 + TOL):
            continue
        ok = ok_supply.copy()
        for name, pool in pools.items():
            train = m * t.gpus_per_group if name == t.pool else 0
            ok &= use[name] + train <= pool.gpus
        if ok.any():
            pool = pools[t.pool]
            train_cost = pool.gpu_hour_cost * m * t.gpus_per_group if pool.billing == "used" else 0.0
            out.append((spans[m], float(np.min(replicas.cost[ok])) + train_cost))
    if out and not inst.schedule.count_startup and inst.reliability is None:
        return [min(out, key=lambda pair: pair[1])]
    return out


def best(points: list[Point], objective: str) -> Point | None:
    """The lexicographic optimum of MODEL.md §4 with relative tolerance 1e-9."""
    if not points:
        return None
    order = {
        "total_cost": ("total", "makespan", "hourly"),
        "hourly_cost": ("hourly", "makespan"),
        "makespan": ("makespan", "total"),
    }[objective]
    pool = points
    for key in order:
        low = min(getattr(p, key) for p in pool)
        pool = [p for p in pool if getattr(p, key) <= low + 1e-9 * max(1.0, abs(low))]
    return pool[0]
