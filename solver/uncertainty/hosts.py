"""The sandbox room of a fixed plan in every scenario (MODEL §9 with §3.5-3.6): the largest steady
in-flight count ``θ`` (environments of every backend, split by the backends' shares) that the
plan's nodes and VMs hold, the splits free to change.

Steady (§3.5): ``θ·share_b`` placed on the nodes under the cap ``u``. Peak (§3.6): ``θ·peak_to_mean·share_b``
on the nodes under ``u`` plus VMs, at most ``eligible_share_b`` of it on VMs. Both are homogeneous in
``θ``, so each holds for ``θ`` up to a room, and the plan holds ``θ`` iff ``θ <= min(steady room,
peak room / peak_to_mean)``. One active backend has a closed form (hosts × environments per host);
more are a small LP per scenario (one in all when no factor reaches a host field).
"""

from __future__ import annotations

from collections.abc import Sequence

import highspy
import numpy as np

from trainground.models.instance import Instance, NodeType, VmType
from trainground.models.result import Plan
from trainground.solver.highs import new_highs, pass_lp

_HOST_FIELDS = ("environment.node_types", "environment.cloud", "environment.backends", "environment.utilisation_cap")


def _hosts(inst: Instance, plan: Plan, scen, active: list[int]) -> list[dict]:
    """Per host type the plan uses: kind, count, and per row (capacity per host, {backend: load}) as
    (S,) arrays, the rows of MODEL §3.5 (density always; cores, memory where the host states them)."""
    env, v = inst.environment, scen.value
    counts = {("node", c.type): c.count for c in plan.local_nodes} | {("vm", c.type): c.count for c in plan.cloud_vms}
    u = v("environment.utilisation_cap", env.utilisation_cap)
    out = []
    groups: tuple[tuple[str, Sequence[NodeType | VmType], str], ...] = (
        ("node", env.node_types, "environment.node_types"),
        ("vm", env.cloud.vm_types, "environment.cloud.vm_types"),
    )
    for kind, hosts, where in groups:
        for i, host in enumerate(hosts):
            count = counts.get((kind, host.name), 0)
            runs = [j for j in active if env.backends[j].name in host.density]
            if count == 0 or not runs:
                continue
            cap = u if kind == "node" else np.ones(scen.size)
            rows = [
                (
                    cap,
                    {
                        j: 1.0 / v(f"{where}[{i}].density.{env.backends[j].name}", host.density[env.backends[j].name])
                        for j in runs
                    },
                )
            ]
            for field, spec in (("cores", host.cores), ("memory_gb", host.memory_gb)):
                if spec is not None:
                    rows.append(
                        (
                            cap * v(f"{where}[{i}].{field}", spec),
                            {
                                j: v(f"environment.backends[{j}].{field}", getattr(env.backends[j], field) or 0.0)
                                for j in runs
                            },
                        )
                    )
            out.append({"kind": kind, "count": count, "rows": rows, "runs": runs})
    return out


def room(inst: Instance, plan: Plan, scen, peak_to_mean: np.ndarray) -> np.ndarray:
    """(S,) the largest steady in-flight count θ the plan's hosts hold in each scenario."""
    env = inst.environment
    active = [j for j, b in enumerate(env.backends) if b.share > 0]
    hosts = _hosts(inst, plan, scen, active)
    eligible = _eligible(inst, scen, active)
    if len(active) == 1:
        local, peak = _one_backend(hosts, active[0], eligible[active[0]], scen.size)
        return np.minimum(local, peak / peak_to_mean)
    shares = {j: env.backends[j].share for j in active}
    if not any(scen.scales(p) for p in _HOST_FIELDS):  # one LP serves every scenario
        return np.minimum(_lp(hosts, shares, eligible, 0, False), _lp(hosts, shares, eligible, 0, True) / peak_to_mean)
    return np.array(
        [
            min(_lp(hosts, shares, eligible, s, False), _lp(hosts, shares, eligible, s, True) / peak_to_mean[s])
            for s in range(scen.size)
        ]
    )


def launch_room(inst: Instance, plan: Plan, scen, launch: np.ndarray) -> np.ndarray:
    """(S,) the largest multiple of ``launch`` ((S, backends) environments started at once) that the plan's nodes
    under the cap ``u`` and its VMs hold, at most eligible_share_b of each backend's on VMs (MODEL §3.6): the launch
    fits in a scenario iff this is at least 1."""
    env = inst.environment
    active = [j for j, b in enumerate(env.backends) if b.share > 0]
    hosts = _hosts(inst, plan, scen, active)
    eligible = _eligible(inst, scen, active)
    with np.errstate(divide="ignore", invalid="ignore"):
        if len(active) == 1:
            j = active[0]
            return _one_backend(hosts, j, eligible[j], scen.size)[1] / launch[:, j]
        return np.array(
            [_lp(hosts, {j: float(launch[s, j]) for j in active}, eligible, s, True) for s in range(scen.size)]
        )


def _eligible(inst: Instance, scen, active: list[int]) -> dict[int, np.ndarray]:
    """Per active backend the share of its environments VMs may hold, per scenario."""
    env = inst.environment
    return {
        j: scen.value(
            f"environment.cloud.eligible_share.{env.backends[j].name}",
            env.cloud.eligible_share.get(env.backends[j].name, 0.0),
        )
        for j in active
    }


def _one_backend(hosts: list[dict], j: int, eligible: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """(steady room, peak room) in environments of backend ``j``, the only active one: the nodes alone, and the
    nodes with the VMs, at most ``eligible`` of it on VMs."""
    local = sum(h["count"] * _per_host(h, j) for h in hosts if h["kind"] == "node") + np.zeros(size)
    cloud = sum(h["count"] * _per_host(h, j) for h in hosts if h["kind"] == "vm") + np.zeros(size)
    with np.errstate(divide="ignore", invalid="ignore"):
        peak = np.minimum(local + cloud, np.where(eligible < 1, local / (1 - eligible), np.inf))
    return local, peak


def _per_host(host: dict, j: int) -> np.ndarray:
    """Environments of backend j one host holds alone: its tightest row."""
    with np.errstate(divide="ignore"):
        return np.min(
            [
                np.where(load[j] > 0, capacity / np.where(load[j] > 0, load[j], 1.0), np.inf)
                for capacity, load in host["rows"]
            ],
            axis=0,
        )


def _lp(hosts: list[dict], shares: dict[int, float], eligible: dict[int, np.ndarray], s: int, with_vms: bool) -> float:
    """max θ such that θ·share_b fits the plan's nodes (and, ``with_vms``, its VMs, at most eligible_share_b
    of each backend's) in scenario ``s``: variables (host, backend) placements, then θ."""
    used = [h for h in hosts if h["kind"] == "node" or with_vms]
    cells = [(n, j) for n, h in enumerate(used) for j in h["runs"]]
    theta = len(cells)
    A, b = [], []
    for j, share in shares.items():  # cover: θ·share_b - Σ placed_b <= 0
        row = np.zeros(theta + 1)
        row[[c for c, (n, jj) in enumerate(cells) if jj == j]] = -1.0
        row[theta] = share
        A.append(row)
        b.append(0.0)
        vm_cells = [c for c, (n, jj) in enumerate(cells) if jj == j and used[n]["kind"] == "vm"]
        if vm_cells:  # eligible: Σ_v c_vb - eligible_b·share_b·θ <= 0
            row = np.zeros(theta + 1)
            row[vm_cells] = 1.0
            row[theta] = -float(eligible[j][s]) * share
            A.append(row)
            b.append(0.0)
    for n, h in enumerate(used):  # host rows: Σ_b load·placed <= count·capacity
        for capacity, load in h["rows"]:
            row = np.zeros(theta + 1)
            for c, (nn, j) in enumerate(cells):
                if nn == n:
                    row[c] = float(load[j][s])
            A.append(row)
            b.append(h["count"] * float(capacity[s]))
    objective = np.zeros(theta + 1)
    objective[theta] = -1.0
    highs = new_highs()
    pass_lp(highs, objective, np.array(A), np.array(b), [(0.0, None)] * (theta + 1))
    highs.run()
    if highs.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return 0.0
    return float(highs.getSolution().col_value[theta])
