"""From a HiGHS solution to a verified result: the selected pair's decisions in the instance's
vocabulary, the costs the model's named cost terms give at those decisions, and the check that
HiGHS's objective is that cost (a mismatch is a bug in the model or the adapter, never a result).
"""

from __future__ import annotations

import pyomo.core as pyo

from trainground.models.instance import Instance
from trainground.models.result import CostTerms, Count, Placement, Plan, PoolUse, Result, ShapeReplicas, Status, Timings
from trainground.solver.mip.formulation import BuiltModel, Formulation
from trainground.solver.mip.metrics import plan_metrics
from trainground.solver.mip.search import Search
from trainground.solver.regimes.table import age_limited
from trainground.solver.stopwatch import Stopwatch
from trainground.solver.tolerances import COST_CHECK_TOL
from trainground.solver.verify.laws import Memo
from trainground.solver.verify.plan import verify_plan


class PlanRejected(Exception):
    """The verifier found a violated constraint in a plan the MIP returned: a bug, never a result."""


class ObjectiveMismatch(Exception):
    """HiGHS's objective differs from the cost the plan reports: a bug, never a result."""


def extract_plan(live: BuiltModel, values) -> Plan:
    """The selected pair's decisions (integer counts rounded from HiGHS's values) and the costs its
    named cost terms give at those counts."""
    blk = live.selected(values)
    row = live.block_rows[blk.key]
    inst, pairs, ix = live.inst, live.pairs, live.model.ix

    def val(var) -> float:
        return float(values.get(var, 0.0) or 0.0)

    shapes = inst.inference.shapes
    replicas = {s.name: int(round(val(blk.x[s.name]))) for s in shapes}
    nodes = {k: int(round(val(blk.N[k]))) for k in ix.nodes}
    vms = {v: int(round(val(blk.V[v]))) for v in ix.vms}
    extra = (
        int(round(val(blk.extra_groups))) if hasattr(blk, "extra_groups") else 0
    )  # a confidence solve's (docs/model.md §9)
    groups = int(pairs.groups[row]) + extra
    train_gpus = groups * inst.training.gpus_per_group
    used = {pool.name: 0 for pool in inst.gpu_pools}
    for s in shapes:
        used[s.pool] += replicas[s.name] * s.gpus_per_replica
    shared = hasattr(blk, "spare_gpus")  # colocated: generation and training take turns on the training pool
    spare = max(0, train_gpus - used[inst.training.pool]) if shared else 0
    terms = _cost_terms(blk, replicas, nodes, vms, extra, spare)
    used[inst.training.pool] += spare if shared else train_gpus
    span = float(pairs.makespan[row])
    hourly = terms.gpu + terms.node + terms.vm
    return Plan(
        cadence_s=float(pairs.cadence[row]),
        makespan_s=span,
        startup_s=float(pairs.startup[row]) if inst.counts_startup else None,
        versions_kept=int((pairs.kept if pairs.resident is None else pairs.resident)[row]),
        inference=[
            ShapeReplicas(
                shape=s.name, pool=s.pool, replicas=replicas[s.name], gpus=replicas[s.name] * s.gpus_per_replica
            )
            for s in shapes
        ],
        inference_gpus=sum(replicas[s.name] * s.gpus_per_replica for s in shapes),
        training_groups=groups,
        training_gpus=train_gpus,
        local_nodes=[Count(type=k, count=nodes[k]) for k in ix.nodes],
        cloud_vms=[Count(type=v, count=vms[v]) for v in ix.vms],
        hourly_cost=hourly,
        total_cost=float(pyo.value(blk.k["hours"][None])) * hourly,
        cost_terms=terms,
        pools=PoolUse.rows(inst.gpu_pools, used),
        billed_gpus=billed_gpus(inst, used),
        age_limit=int(pairs.kept[row]) if age_limited(inst) else None,
        placement=placement(inst, ix, lambda name, host, b: val(getattr(blk, name)[host, b]), nodes, vms),
    )


def _cost_terms(blk, replicas: dict, nodes: dict, vms: dict, extra_groups: int, spare: int) -> CostTerms:
    """The block's named cost expressions evaluated at the rounded counts (z = 1); ``spare``: a colocated
    block's training GPUs beyond its replicas'."""
    if hasattr(blk, "extra_groups"):
        blk.extra_groups.set_value(extra_groups, skip_validation=True)
    if hasattr(blk, "spare_gpus"):
        blk.spare_gpus.set_value(spare, skip_validation=True)
    for name, count in replicas.items():
        blk.x[name].set_value(count, skip_validation=True)
    for name, count in nodes.items():
        blk.N[name].set_value(count, skip_validation=True)
    for name, count in vms.items():
        blk.V[name].set_value(count, skip_validation=True)
    blk.z.set_value(1, skip_validation=True)
    return CostTerms(
        gpu=float(pyo.value(blk.gpu_cost)), node=float(pyo.value(blk.node_cost)), vm=float(pyo.value(blk.vm_cost))
    )


def placement(inst: Instance, ix, value, nodes: dict[str, int], vms: dict[str, int]) -> Placement:
    """The sandbox splits of a solution: steady and peak on nodes, peak on VMs; ``value(name, host, backend)`` reads
    the solution's ``y``, ``y_peak`` or ``c`` at one (host, backend) (a stage's, in the staged model). A host type
    of which the plan has none (``nodes``, ``vms``: its counts) holds nothing: HiGHS meets its rows, split <= 0,
    to FEASIBILITY_TOL in their scaled form, which can leave a split of a few 1e-8 environments there."""

    def split(name: str, keys, counts: dict[str, int]) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for host, b in keys:
            out.setdefault(host, {})[b] = max(0.0, value(name, host, b)) if counts.get(host, 0) > 0 else 0.0
        return out

    peak = split("y_peak", ix.node_backends, nodes)
    if ix.steady_split:
        steady = split("y", ix.node_backends, nodes)
    else:  # peak coverage (E^pk >= E, no cloud) scaled down is a steady split on the same nodes
        ratio = 1.0 / inst.environment.peak_to_mean
        steady = {k: {b: e * ratio for b, e in load.items()} for k, load in peak.items()}
    return Placement(steady=steady, peak=peak, cloud=split("c", ix.vm_backends, vms))


def objective_of(plan: Plan, objective: str) -> float:
    return {"total_cost": plan.total_cost, "hourly_cost": plan.hourly_cost, "makespan": plan.makespan_s}[objective]


def assemble(
    live: Formulation,
    objective: str,
    search: Search,
    clock: Stopwatch,
    highs_before: float,
    allowance: float = 0.0,
    memo: Memo | None = None,
) -> Result:
    """The result of a search that found a plan: extracted, checked against HiGHS's objective, verified
    (with the run-variance allowance ``allowance`` of MODEL §11 in the deadline row; ``memo``: the verifier's
    integrals kept by a caller that verifies many plans)."""
    inst = live.inst
    with clock.phase("extract"):
        plan = extract_plan(live, search.values)
        value = objective_of(plan, objective)
        if search.value is not None and abs(search.value - value) > COST_CHECK_TOL * max(1.0, abs(value)):
            raise ObjectiveMismatch(
                f"{inst.name}: HiGHS's {objective} is {search.value:.10g} but the plan's is {value:.10g}"
            )
    with clock.phase("verify"):
        metrics = plan_metrics(inst, plan, allowance)
        check = verify_plan(inst, plan, allowance, metrics, memo)
    if not check.ok:
        raise PlanRejected(f"{inst.name}: the verifier rejected the MIP's plan: " + "; ".join(check.violations))
    message = None
    if search.status == Status.ERROR:
        message = (
            "HiGHS failed while breaking ties (docs/model.md §4); the plan is verified and optimal on the objective"
        )
    gap = 0.0
    if search.status == Status.TIME_LIMIT:
        gap = None if search.bound is None or not value else max(0.0, (value - search.bound) / abs(value))
    return Result(
        instance=inst.name,
        status=search.status,
        objective=objective,
        objective_value=value,
        plan=plan,
        metrics=metrics,
        binding=check.binding,
        mip_gap=gap,
        message=message,
        timings=timings_of(clock, search, highs_before),
        model_size={**live.size(), "highs_runs": search.runs},
        ties=search.ties.to_json() if search.ties is not None and search.ties.plans > 1 else None,
        basis=inst.planning.basis,
        regime=regime_json(inst),
    )


def billed_gpus(inst: Instance, used: dict[str, int]) -> int | None:
    """MODEL §14's ``plan.billed_gpus`` of a run with a regime section: each pool's GPUs used, or all of a reserved
    pool (None without a regime: the key is §14's)."""
    if inst.regime is None or inst.regime.is_default:
        return None
    return sum(p.gpus if p.billing == "reserved" else used[p.name] for p in inst.gpu_pools)


def regime_json(inst: Instance) -> dict | None:
    """MODEL §14's ``regime`` object of a result (None without a regime section, or with the seed's written out)."""
    r = inst.regime
    if r is None or r.is_default:
        return None
    return {
        "mode": r.mode,
        "staleness": r.staleness,
        "steps_ahead": r.steps_ahead,
        "in_flight_updates": r.in_flight_updates,
    }


def timings_of(clock: Stopwatch, search: Search | None, highs_before: float) -> Timings:
    seconds = clock.seconds
    highs = 0.0 if search is None else max(0.0, search.highs_seconds - highs_before)
    return Timings(
        build=seconds.get("build", 0.0),
        solve=seconds.get("solve", 0.0),
        extract=seconds.get("extract", 0.0),
        verify=seconds.get("verify", 0.0),
        highs=highs,
    )
