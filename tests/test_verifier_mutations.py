"""Over-packed and altered plans fail the verifier on the row they break, and on no other.

Each case is the seed baseline at one cadence (L = 600 s) with one resource made to bind on the
node type or on the VM type: density (the seed's own figures), cores (0.3 cores per container:
626 per node, 53 per VM, below the densities 1,048 and 64), memory (2 GB: 780 per node, 32 per
VM), and a mixed case (containers at 3 GB beside a backend that states no memory_gb).
The MIP's plan passes; the same plan with one host fewer, more than the cap u, the eligible share
or max_nodes / max_vms allow, a coverage short by 1e-6, or a reported cost or makespan altered
fails with exactly the row (or reported figure) that the change breaks.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tests.plans import recosted
from trainground.models.edits import edited, load_edited
from trainground.models.result import Count, Placement
from trainground.solver.solve import solve_instance
from trainground.solver.verify.plan import verify_plan

SEED = Path(__file__).resolve().parents[1] / "instances" / "seed-week-75.yaml"
ONE_CADENCE = ["freshness.overrun_policy=downweight", "schedule.cadence.min=600", "schedule.cadence.max=600"]
PEAK = ["environment.peak_to_mean=1.5"]
MIXED = [
    "environment.backends=[{name: container, share: 0.9, cores: 0.05, memory_gb: 3},"
    " {name: light, share: 0.1, cores: 0.05}]",
    "environment.node_types[0].density={container: 1048, light: 1048}",
    "environment.cloud.eligible_share={container: 1.0, light: 1.0}",
    "environment.cloud.vm_types[0].density={container: 64, light: 64}",
]
CASES = {  # name: (edits, the row that binds on node type 'standard' and on VM type 'burst')
    "density": (ONE_CADENCE + PEAK, "density"),
    "cores": (ONE_CADENCE + PEAK + ["environment.backends[0].cores=0.3"], "cores"),
    "memory": (ONE_CADENCE + PEAK + ["environment.backends[0].memory_gb=2"], "memory"),
    "mixed": (ONE_CADENCE + PEAK + MIXED, "memory"),
}


@pytest.fixture(scope="module")
def plans() -> dict:
    """{case: (instance, plan)}, plus the bundled seed baseline as 'seed'."""
    out = {}
    for name, (edits, _) in CASES.items():
        inst = load_edited(SEED, edits)
        out[name] = (inst, solve_instance(inst).plan)
    inst = load_edited(SEED, [])
    out["seed"] = (inst, solve_instance(inst).plan)
    return out


def failing(inst, plan) -> set[str]:
    """The rows (or reported figures) a plan violates: each message up to its first ':'."""
    return {v.split(":")[0] for v in verify_plan(inst, plan).violations}


def with_count(plan, section: str, host: str, count: int) -> dict:
    return {section: [Count(type=c.type, count=count if c.type == host else c.count) for c in getattr(plan, section)]}


@pytest.mark.parametrize("case", [*CASES, "seed"])
def test_returned_plans_pass(plans, case):
    inst, plan = plans[case]
    assert failing(inst, plan) == set()
    assert failing(inst, recosted(inst, plan)) == set()  # the helper alone changes nothing


@pytest.mark.parametrize("case", CASES)
def test_one_node_fewer_overpacks_the_binding_node_row(plans, case):
    inst, plan = plans[case]
    row = CASES[case][1]
    nodes = plan.local_nodes[0].count
    rows = failing(inst, recosted(inst, plan, **with_count(plan, "local_nodes", "standard", nodes - 1)))
    assert rows and rows <= {f"steady_nodes[standard].{row}", f"peak_nodes[standard].{row}"}, rows


@pytest.mark.parametrize("case", CASES)
def test_one_vm_fewer_overpacks_the_binding_vm_row(plans, case):
    inst, plan = plans[case]
    row = CASES[case][1]
    vms = plan.cloud_vms[0].count
    assert vms > 0, "the case is built so that VMs absorb part of the peak"
    rows = failing(inst, recosted(inst, plan, **with_count(plan, "cloud_vms", "burst", vms - 1)))
    assert rows == {f"cloud_vms[burst].{row}"}


def test_nodes_full_but_over_the_utilisation_cap():
    """u = 0.8: the plan needs ceil(13,238/(0.8·1,048)) = 16 nodes; 13 hold every environment at full
    capacity, which the same plan shows by passing once u = 1."""
    inst = load_edited(SEED, ONE_CADENCE + ["environment.utilisation_cap=0.8", "environment.cloud.vm_types=[]"])
    plan = solve_instance(inst).plan
    full = math.ceil(sum(plan.placement.steady["standard"].values()) / 1048)
    assert (plan.local_nodes[0].count, full) == (16, 13)
    packed = recosted(inst, plan, **with_count(plan, "local_nodes", "standard", full))
    assert failing(inst, packed) == {"steady_nodes[standard].density", "peak_nodes[standard].density"}
    assert failing(edited(inst, {"environment.utilisation_cap": 1.0}), packed) == set()


def test_vms_over_the_eligible_share(plans):
    """Eligible share 0.5: move 1 % more than half the peak containers from the nodes to enough VMs."""
    inst, _ = plans["density"]
    inst = edited(inst, {"environment.cloud.eligible_share": {"container": 0.5}})
    plan = solve_instance(inst).plan
    peak = sum(plan.placement.peak["standard"].values()) + sum(plan.placement.cloud["burst"].values())
    cloud = 0.5 * peak * 1.01
    placement = Placement(
        steady=plan.placement.steady,
        peak={"standard": {"container": peak - cloud}},
        cloud={"burst": {"container": cloud}},
    )
    packed = recosted(inst, plan, placement=placement, **with_count(plan, "cloud_vms", "burst", math.ceil(cloud / 64)))
    assert failing(inst, packed) == {"cloud_eligible[container]"}


@pytest.mark.parametrize("case", ["density", "mixed"])
def test_counts_over_max_nodes_and_max_vms(plans, case):
    inst, plan = plans[case]
    nodes = plan.local_nodes[0].count
    capped = edited(inst, {"environment.node_types[0].max_nodes": nodes})
    assert failing(capped, recosted(capped, plan)) == set()
    more = recosted(capped, plan, **with_count(plan, "local_nodes", "standard", nodes + 1))
    assert failing(capped, more) == {"max_nodes[standard]"}
    limit = inst.environment.cloud.vm_types[0].max_vms
    assert plan.cloud_vms[0].count <= limit
    more = recosted(inst, plan, **with_count(plan, "cloud_vms", "burst", limit + 1))
    assert failing(inst, more) == {"max_vms[burst]"}


def scaled(split: dict, backend: str, factor: float) -> dict:
    return {host: {b: e * factor if b == backend else e for b, e in load.items()} for host, load in split.items()}


@pytest.mark.parametrize("case", [*CASES, "seed"])
def test_coverage_short_by_one_in_a_million(plans, case):
    inst, plan = plans[case]
    for backend in (b.name for b in inst.environment.backends):
        p = plan.placement
        short = Placement(steady=scaled(p.steady, backend, 1 - 1e-6), peak=p.peak, cloud=p.cloud)
        assert failing(inst, recosted(inst, plan, placement=short)) == {f"steady_cover[{backend}]"}
        short = Placement(
            steady=p.steady, peak=scaled(p.peak, backend, 1 - 1e-6), cloud=scaled(p.cloud, backend, 1 - 1e-6)
        )
        assert failing(inst, recosted(inst, plan, placement=short)) == {f"peak_cover[{backend}]"}


@pytest.mark.parametrize("case", ["mixed", "seed"])
def test_reported_costs_and_makespan_altered(plans, case):
    inst, plan = plans[case]
    terms = plan.cost_terms
    for term in ("gpu", "node", "vm"):
        value = getattr(terms, term) * (1 + 1e-5) + 1e-3
        altered = plan.model_copy(update={"cost_terms": terms.model_copy(update={term: value})})
        assert failing(inst, altered) == {f"cost_terms.{term}"}
    for name in ("hourly_cost", "total_cost"):
        assert failing(inst, plan.model_copy(update={name: getattr(plan, name) * (1 + 1e-5)})) == {name}
    # One more iteration's worth of makespan, with a total cost that agrees with it.
    later = recosted(inst, plan, span=plan.makespan_s + plan.cadence_s)
    assert failing(inst, later) == {"makespan_s"}
