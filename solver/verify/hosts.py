"""MODEL.md §3.5–3.6 as the verifier reads them: the steady and peak sandbox splits a plan reports, against its
node and VM counts and the loads the caller computed, and which host types bind."""

from __future__ import annotations

import math

from trainground.models.instance import Instance
from trainground.models.result import Plan
from trainground.solver.verify.check import BINDING_TOL, COUNT_TOL, ROW_TOL, Check


def _check_split(
    inst: Instance, rows, kind: str, family: str, split: dict[str, dict[str, float]], counts: dict[str, int], out: Check
) -> None:
    """One split against its hosts, per existing row (MODEL §3.5): Σ_b split[h][b]·load_{h,r,b} <=
    capacity_{h,r}·count_h, and only the backends a host runs (in its density map), none negative."""
    bad = out.violations.append
    backends = {b.name for b in inst.environment.backends}
    known = {h for (k, h, _) in rows if k == kind}
    for host, load in split.items():
        if host not in known:
            bad(f"{family}: unknown {kind} type {host}")
            continue
        runs = rows[kind, host, "density"].load
        for b, envs in load.items():
            if b not in backends:
                bad(f"{family}[{host}]: unknown backend {b}")
            elif not envs >= -ROW_TOL:
                bad(f"{family}[{host}][{b}]: negative placement {envs}")
            elif envs > ROW_TOL and b not in runs:
                bad(f"{family}[{host}]: places backend {b}, which it cannot run (no density)")
    for (k, host, resource), row in rows.items():
        if k != kind:
            continue
        lhs = math.fsum(envs * row.load.get(b, 0.0) for b, envs in split.get(host, {}).items())
        rhs = row.capacity * counts.get(host, 0)
        if not out.leq(lhs, rhs):
            bad(f"{family}[{host}].{resource}: {lhs:.10g} > {counts.get(host, 0)} × {row.capacity:.10g} = {rhs:.10g}")


def _placed(split: dict[str, dict[str, float]], backend: str) -> float:
    return math.fsum(load.get(backend, 0.0) for load in split.values())


def _counts(plan: Plan) -> tuple[dict[str, int], dict[str, int]]:
    return {c.type: c.count for c in plan.local_nodes}, {c.type: c.count for c in plan.cloud_vms}


def check_steady_sandbox(inst: Instance, plan: Plan, rows, inflight: dict[str, float], out: Check) -> None:
    """MODEL §3.5: Σ_k y_kb >= E_b per backend, and the node rows of the steady split y under the cap u:
    density Σ_b y_kb/density_kb <= u·N_k, cores Σ_b y_kb·cores_b <= u·N_k·cores_k, memory likewise."""
    nodes, _ = _counts(plan)
    _check_split(inst, rows, "node", "steady_nodes", plan.placement.steady, nodes, out)
    for b, need in inflight.items():
        placed = _placed(plan.placement.steady, b)
        if not out.geq(placed, need):
            out.violations.append(f"steady_cover[{b}]: {placed:.10g} placed on nodes < {need:.10g} in flight")


def check_peak_sandbox(inst: Instance, plan: Plan, rows, peak: dict[str, float], out: Check) -> None:
    """MODEL §3.6: Σ_k y'_kb + Σ_v c_vb >= E^pk_b, the node rows of y' under u (as §3.5, same N_k), the VM
    rows of c at full capacity against V_v, and Σ_v c_vb <= eligible_share_b·E^pk_b."""
    nodes, vms = _counts(plan)
    placement = plan.placement
    _check_split(inst, rows, "node", "peak_nodes", placement.peak, nodes, out)
    _check_split(inst, rows, "vm", "cloud_vms", placement.cloud, vms, out)
    eligible = inst.environment.cloud.eligible_share
    for b, need in peak.items():
        cloud = _placed(placement.cloud, b)
        if not out.geq(_placed(placement.peak, b) + cloud, need):
            out.violations.append(
                f"peak_cover[{b}]: {_placed(placement.peak, b) + cloud:.10g} placed on nodes "
                f"and VMs < {need:.10g} at peak"
            )
        share = eligible.get(b, 0.0)
        if not out.leq(cloud, share * need):
            out.violations.append(f"cloud_eligible[{b}]: {cloud:.10g} on VMs > {share:g} · {need:.10g}")
        if share > 0 and cloud > 0 and cloud >= share * need * (1 - BINDING_TOL):
            out.binding.append(f"cloud_eligible[{b}]")


def check_host_binding(inst: Instance, plan: Plan, rows, out: Check) -> None:
    """Binding host counts: a node type whose placed load would not fit one node fewer (its fullest row,
    steady or peak), and node or VM counts at their max_nodes / max_vms."""
    nodes, vms = _counts(plan)
    placement = plan.placement
    for k in inst.environment.node_types:
        count = nodes.get(k.name, 0)
        if count <= 0:
            continue
        fullest = max(
            (
                math.fsum(e * row.load.get(b, 0.0) for b, e in split.get(k.name, {}).items()) / row.capacity
                for (kind, host, _), row in rows.items()
                if kind == "node" and host == k.name
                for split in (placement.steady, placement.peak)
            ),
            default=0.0,
        )
        if fullest > count - 1 + COUNT_TOL:
            out.binding.append(f"sandbox_nodes[{k.name}]")
        if k.max_nodes is not None and count == k.max_nodes:
            out.binding.append(f"max_nodes[{k.name}]")
    for v in inst.environment.cloud.vm_types:
        if v.max_vms is not None and v.max_vms > 0 and vms.get(v.name, 0) == v.max_vms:
            out.binding.append(f"max_vms[{v.name}]")
