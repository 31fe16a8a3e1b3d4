"""Risk with MODEL §13's terms: a scenario's realised cadence and makespan count its own
failures, checkpoints, weight sync and preemptions, and factors may reach the reliability fields.

The per-scenario outcome is checked against the verifier's reading of §13 (solver.verify.laws and
solver.verify.goodput, written apart from solver.uncertainty.goodput): in each scenario, as its own instance,
the realised cadence meets the throughput row (with a_s and weight sync) and 0.1 % less does not, and T_s
is the verifier's T at that cadence (n·L/γ + extra_time, or §8's with start-up)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from trainground.models.load import validate
from trainground.models.result import Plan
from trainground.solver.solve import solve_instance
from trainground.solver.uncertainty import scenarios as sc
from trainground.solver.verify import goodput as vg
from trainground.solver.verify import laws as laws

INSTANCES = Path(__file__).resolve().parents[1] / "instances"
UNCERTAIN = INSTANCES / "seed-week-75-uncertain.yaml"
FACTORS = [
    {"name": "mtbf", "paths": ["reliability.gpu_mtbf"], "dist": "lognormal", "median": 1.0, "sigma": 0.5},
    {"name": "sync", "paths": ["reliability.weight_sync_time"], "dist": "uniform", "low": 0.5, "high": 3.0},
    {"name": "spot", "paths": ["gpu_pools[*].preemptions_per_hour"], "dist": "uniform", "low": 0.5, "high": 2.0},
]


def instance(startup: bool = False):
    """The spot walk-through's instance (an on-demand and a preemptible pool, §13's sourced figures) with the
    seed's uncertainty section and factors on the reliability fields."""
    data = yaml.safe_load((INSTANCES / "seed-week-spot.yaml").read_text())
    data["planning"] = {"basis": "steady_state"}
    data["uncertainty"] = yaml.safe_load(UNCERTAIN.read_text())["uncertainty"]
    data["uncertainty"]["factors"] += FACTORS
    if startup:
        data["schedule"]["count_startup"] = True
    return validate(data, "risk-goodput.yaml")


def throughput_met(inst, plan: Plan, cadence: float) -> bool:
    """The verifier's MODEL §3.2 with §13 at ``cadence``: Σ x·a_s·g·r·(1-slowdown(K-1))·(1 - sync/L) >= R_raw·tokens."""
    law = laws.law_of(inst.environment.occupancy)
    run = laws.run_at(inst, law, cadence, plan.versions_kept, plan.training_groups, startup=False)
    a = vg.availability(inst, law.mean)
    shapes = {s.name: s for s in inst.inference.shapes}
    supply = sum(
        r.replicas
        * a[r.shape]
        * shapes[r.shape].gpus_per_replica
        * shapes[r.shape].tokens_per_gpu_s
        * max(0.0, 1 - shapes[r.shape].version_slowdown * (plan.versions_kept - 1))
        for r in plan.inference
    ) * max(0.0, 1 - vg.sync_share(inst, cadence))
    return supply >= run.attempts * inst.workload.tokens_per_attempt * (1 - 1e-6)


@pytest.mark.parametrize("startup", [False, True])
def test_each_scenario_is_the_verifiers_reading_of_its_own_instance(startup):
    inst = instance(startup)
    plan = solve_instance(inst).plan
    scen = sc.draw(inst, 24, seed=3)
    out = sc.evaluate(inst, plan, scen)
    checked = 0
    for s in range(scen.size):
        here = sc.instance_of(inst, scen, s)
        L = float(out.cadence[s])
        assert np.isfinite(L)
        law = laws.law_of(here.environment.occupancy)
        run = laws.run_at(here, law, L, plan.versions_kept, plan.training_groups, startup=startup)
        assert out.makespan[s] == pytest.approx(run.makespan, rel=1e-6), s
        assert throughput_met(here, plan, L)
        if L > plan.cadence_s * (1 + 1e-3):  # the throughput (or a sandbox) row sets L_s: just below it fails
            checked += not throughput_met(here, plan, L * (1 - 1e-3))
    assert checked >= 5  # scenarios whose cadence the §13 supply sets


def test_fewer_hours_between_failures_never_finish_sooner():
    inst = instance()
    plan = solve_instance(inst).plan
    base = np.ones((200, len(inst.uncertainty.factors)))
    names = [f.name for f in inst.uncertainty.factors]
    base[:, names.index("mtbf")] = np.linspace(0.1, 3.0, 200)
    out = sc.evaluate(inst, plan, sc.from_draws(inst, base))
    assert np.all(np.diff(out.makespan) <= 1e-9 * out.makespan[1:])
    assert out.makespan[0] > out.makespan[-1] * 1.05  # MTBF at a tenth: clearly later
    assert out.on_time[-1] and not out.on_time[0]


def test_no_progress_is_late_without_end_and_the_factors_report_sensitivity():
    inst = instance()
    plan = solve_instance(inst).plan
    names = [f.name for f in inst.uncertainty.factors]
    draws = np.ones((2, len(names)))
    draws[0, names.index("mtbf")] = 1e-4  # failures every few minutes: goodput <= 0
    out = sc.evaluate(inst, plan, sc.from_draws(inst, draws))
    assert np.isinf(out.makespan[0]) and not out.on_time[0] and np.isfinite(out.makespan[1])
    from trainground.drivers.risk import assess

    report = assess(inst, plan, samples=300, seed=0).to_json()
    sens = {f["name"]: f for f in report["factors"]}
    assert sens["mtbf"]["makespan_s_low"] > sens["mtbf"]["makespan_s_high"]  # the 10th percentile fails more
    assert sens["sync"]["makespan_s_low"] <= sens["sync"]["makespan_s_high"]
