"""The numbers the model's rows read, per instance and per (cadence, K) pair (MODEL.md §3, §4). No pyomo.

:class:`Index` names what the model is built over (shapes, pools, backends, host types,
the (host, resource) rows that exist); :func:`global_values` holds the numbers shared by
every pair (prices, pool sizes, per-environment loads and host capacities, budgets);
:class:`PairValues` reads one pair's numbers from a row of :class:`solver.table.pairs.Pairs`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from trainground.models.instance import Instance
from trainground.solver.laws.calculus import free_gpus, host_footprint
from trainground.solver.table.pairs import Pairs
from trainground.solver.tolerances import NO_LIMIT, REL_TOL


@dataclass(frozen=True)
class Index:
    """Names and combinations the model is built over, in instance order; equal Index = same structure."""

    shapes: tuple[str, ...]
    pools: tuple[str, ...]
    backends: tuple[str, ...]  # backends with a positive share
    nodes: tuple[str, ...]
    vms: tuple[str, ...]
    node_backends: tuple[tuple[str, str], ...]  # (node type, backend) the node can run
    vm_backends: tuple[tuple[str, str], ...]  # (vm type, backend) the VM can run, eligible share > 0
    steady_split: bool  # False without cloud capacity: peak coverage then implies steady coverage
    rows: tuple[tuple[str, str, str], ...]  # (host kind, host, resource) rows that exist: density, cores, memory
    shape_pools: tuple[str, ...]
    training_pool: str


def index_of(inst: Instance) -> Index:
    env = inst.environment
    active = tuple(b.name for b in env.backends if b.share > 0)
    eligible = {b for b, share in env.cloud.eligible_share.items() if share > 0}
    vm_backends = tuple((v.name, b) for v in env.cloud.vm_types for b in active if b in v.density and b in eligible)
    node_backends = tuple((k.name, b) for k in env.node_types for b in active if b in k.density)
    backends = {b.name: b for b in env.backends}
    rows = []
    for kind, hosts, hosted_pairs in (("node", env.node_types, node_backends), ("vm", env.cloud.vm_types, vm_backends)):
        for host in hosts:
            hosted = [b for (h, b) in hosted_pairs if h == host.name]
            if not hosted:
                continue
            # MODEL §3.5: a host that states cores (memory) has that row; a backend without the figure adds 0 to it.
            rows.append((kind, host.name, "density"))
            if host.cores and any(backends[b].cores for b in hosted):
                rows.append((kind, host.name, "cores"))
            if host.memory_gb and any(backends[b].memory_gb for b in hosted):
                rows.append((kind, host.name, "memory"))
    return Index(
        shapes=tuple(s.name for s in inst.inference.shapes),
        pools=tuple(p.name for p in inst.gpu_pools),
        backends=active,
        nodes=tuple(k.name for k in env.node_types),
        vms=tuple(v.name for v in env.cloud.vm_types),
        node_backends=node_backends,
        vm_backends=vm_backends,
        steady_split=bool(vm_backends),
        rows=tuple(rows),
        shape_pools=tuple(s.pool for s in inst.inference.shapes),
        training_pool=inst.training.pool,
    )


# ---------------------------------------------------------------- coefficients


def global_values(inst: Instance, ix: Index) -> dict[str, dict]:
    """Numbers shared by every pair: prices, pool sizes, per-environment loads and host capacities."""
    env = inst.environment
    backends = {b.name: b for b in env.backends}
    hosts = {("node", k.name): k for k in env.node_types} | {("vm", v.name): v for v in env.cloud.vm_types}
    row_load, row_cap = {}, {}
    for kind, host, resource in ix.rows:
        spec = hosts[kind, host]
        hosted = [b for (h, b) in (ix.node_backends if kind == "node" else ix.vm_backends) if h == host]
        for b in hosted:
            row_load[kind, host, resource, b] = {
                "density": 1.0 / spec.density[b],
                "cores": backends[b].cores or 0.0,
                "memory": backends[b].memory_gb or 0.0,
            }[resource]
        cap = env.utilisation_cap if kind == "node" else 1.0
        row_cap[kind, host, resource] = cap * {"density": 1.0, "cores": spec.cores, "memory": spec.memory_gb}[resource]
    limits = inst.limits
    return {
        "pool_gpus": {p.name: p.gpus for p in inst.gpu_pools},
        "gpu_price": gpu_prices(inst),
        "reserved_cost": {None: reserved_cost(inst)},
        "node_price": {k.name: k.hour_cost for k in env.node_types},
        "vm_price": {v.name: v.hour_cost * v.billed_fraction for v in env.cloud.vm_types},
        "row_load": row_load,
        "row_cap": row_cap,
        "budget": {
            "hourly": limits.max_hourly_cost if limits.max_hourly_cost is not None else NO_LIMIT,
            "total": limits.max_total_cost if limits.max_total_cost is not None else NO_LIMIT,
        },
    }


def gpu_prices(inst: Instance) -> dict[str, float]:
    """$/h of each GPU a plan uses, per pool: the pool's price, or 0 in a reserved pool (MODEL §4),
    whose GPUs are billed whatever the plan uses (:func:`reserved_cost`)."""
    return {p.name: 0.0 if p.billing == "reserved" else p.gpu_hour_cost for p in inst.gpu_pools}


def reserved_cost(inst: Instance) -> float:
    """$/h of the reserved pools: every GPU of such a pool is billed (MODEL §4)."""
    return sum(p.gpus * p.gpu_hour_cost for p in inst.gpu_pools if p.billing == "reserved")


class PairValues:
    """The numbers of one pair (units in each row's docstring), read from a row of ``pairs``. The
    per-instance lookups (columns, hosts, footprints) are made once."""

    def __init__(self, inst: Instance, ix: Index):
        env = inst.environment
        self.inst, self.ix = inst, ix
        self.col = {b.name: i for i, b in enumerate(env.backends)}
        self.tok = inst.workload.tokens_per_attempt
        self.pools = {s.pool: inst.pool(s.pool) for s in inst.inference.shapes}
        backends = {b.name: b for b in env.backends}
        # Per host type: (backend column, eligible share it may take, its footprint) of each backend it runs,
        # its utilisation cap and its count limit.
        self.hosts = {}
        for kind, hosts, hosted_pairs, cap in (
            ("node", env.node_types, ix.node_backends, env.utilisation_cap),
            ("vm", env.cloud.vm_types, ix.vm_backends, 1.0),
        ):
            for host in hosts:
                terms = [
                    (
                        self.col[b],
                        env.cloud.eligible_share.get(b, 0.0) if kind == "vm" else 1.0,
                        host_footprint(host, backends[b]),
                    )
                    for (h, b) in hosted_pairs
                    if h == host.name
                ]
                limit = getattr(host, "max_nodes" if kind == "node" else "max_vms")
                self.hosts[kind, host.name] = (terms, cap, limit)

    def __call__(self, pairs: Pairs, p: int) -> dict[str, dict]:
        inst, ix, col = self.inst, self.ix, self.col
        env = inst.environment
        groups = pairs.groups[p]
        free = {name: int(free_gpus(inst, pool, groups)) for name, pool in self.pools.items()}
        # Demands carry MODEL §4's relative tolerance, as the verifier does: a plan short by less than
        # 1e-9 of a demand meets it (HiGHS then cannot round such a plan either way by its own tolerance).
        slack = 1.0 - REL_TOL
        peak = {b: float(pairs.peak[p, col[b]]) * slack for b in ix.backends}
        return {
            "supply": {
                s.name: float(pairs.supply_per_replica[p, i]) / self.tok for i, s in enumerate(inst.inference.shapes)
            },
            "attempts": {None: float(pairs.attempts[p]) * slack},
            "replica_cap": {s.name: free[s.pool] // s.gpus_per_replica for s in inst.inference.shapes},
            "node_cap": {k: self._host_cap(pairs, p, "node", k) for k in ix.nodes},
            "vm_cap": {v: self._host_cap(pairs, p, "vm", v) for v in ix.vms},
            "train_gpus": {None: int(groups) * inst.training.gpus_per_group},
            "inflight": {b: float(pairs.inflight[p, col[b]]) * slack for b in ix.backends},
            "peak": peak,
            "cloud_cap": {b: env.cloud.eligible_share.get(b, 0.0) * peak[b] / slack for b in ix.backends},
            "hours": {None: float(pairs.makespan[p]) / 3600.0},
            "makespan": {None: float(pairs.makespan[p])},
        }

    def _host_cap(self, pairs: Pairs, p: int, kind: str, name: str) -> int:
        """Hosts of one type worth having at pair p: enough to hold, alone, every peak environment it can run."""
        terms, cap, limit = self.hosts[kind, name]
        need = 0.0
        for column, share, footprint in terms:
            need += pairs.peak[p, column] * share * footprint
        bound = math.ceil(need / cap * (1 + REL_TOL)) + 1
        return bound if limit is None else min(bound, limit)
