"""MODEL.md §13 (goodput): the reliability section and preemptible pools are validated with clear errors,
explain reproduces §13's check figure, the plan reports the §13 metrics, and no progress is diagnosed."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from trainground.cli import main
from trainground.models.load import validate
from trainground.solver.explain import explain
from trainground.solver.solve import solve_instance
from trainground.solver.verify.plan import verify_plan

SEED = Path(__file__).resolve().parents[1] / "instances" / "seed-week-75.yaml"
SECTION = {"gpu_mtbf": "50000h", "restart_time": "15m", "checkpoint_time": "60s"}


def seed(**reliability) -> dict:
    data = yaml.safe_load(SEED.read_text())
    data["planning"] = {"basis": "steady_state"}
    if reliability:
        data["reliability"] = reliability
    return data


def test_explain_reproduces_the_check_figure():
    # G_t = 3,496 (437 groups of 8) are the fewest that keep up at L = 601 s.
    values = explain(validate(seed(**SECTION), "seed.yaml"), 601).values()
    assert round(values["mtbf_training_s"]) == 51_487
    assert round(values["checkpoint_interval_s"]) == 2_486
    assert round(values["training_goodput"], 4) == 0.9342
    assert values["makespan_with_goodput_s"] == pytest.approx(1000 * 601 / values["training_goodput"])


def test_the_plan_reports_the_metrics_and_pays_for_the_lost_time():
    inst = validate(seed(**SECTION, weight_sync_time="16s"), "seed.yaml")
    plain = solve_instance(validate(seed(), "seed.yaml"))
    result = solve_instance(inst)
    met, plan = result.metrics, result.plan
    gamma = met.training_goodput
    assert 0.9 < gamma < 1
    assert met.mtbf_training_s == pytest.approx(50000 * 3600 / plan.training_gpus)
    assert met.checkpoint_interval_s == pytest.approx(math.sqrt(2 * 60 * met.mtbf_training_s))
    assert plan.makespan_s == pytest.approx(1000 * plan.cadence_s / gamma)
    assert met.failures_expected["training"] == pytest.approx(plan.makespan_s / met.mtbf_training_s)
    assert met.weight_sync_share == pytest.approx(16 / plan.cadence_s)
    assert 0.999 < met.availability["tp8"] < 1
    # Failures cost time, so the plan runs at a shorter cadence and costs more than the failure-free one.
    assert plan.cadence_s < plain.plan.cadence_s and plan.total_cost > plain.plan.total_cost
    assert plain.metrics.training_goodput is None
    assert verify_plan(inst, plan).ok


def test_verifier_rejects_a_plan_that_ignores_goodput():
    inst = validate(seed(**SECTION), "seed.yaml")
    plain = solve_instance(validate(seed(), "seed.yaml")).plan
    violations = verify_plan(inst, plain).violations
    assert any(v.startswith("makespan_s") for v in violations), violations
    assert any(v.startswith("deadline") for v in violations), violations


def test_a_preemptible_pool_lowers_its_shapes_availability_only():
    data = seed()
    data["gpu_pools"].append({"name": "spot", "gpus": 4000, "gpu_hour_cost": 0.8, "preemptions_per_hour": 0.5})
    data["inference"]["shapes"].append(
        {"name": "tp8-spot", "pool": "spot", "gpus_per_replica": 8, "tokens_per_gpu_s": 75}
    )
    result = solve_instance(validate(data, "spot.yaml"))
    a = result.metrics.availability
    mean_w = result.metrics.occupancy_mean_s
    assert a["tp8"] == 1.0  # no reliability section: no GPU failures, only the pool's preemptions
    assert a["tp8-spot"] == pytest.approx(1 - 0.5 / 3600 * (300 + mean_w / 2))
    assert result.metrics.training_goodput == 1.0


def run(args, tmp_path, data) -> tuple[int, str]:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    out = CliRunner().invoke(main, [*args, str(path)])
    return out.exit_code, out.output


@pytest.mark.parametrize(
    "edit, where, rule",
    [
        (lambda d: d.update(reliability={"checkpoint_interval": 0}), "reliability.checkpoint_interval", "auto or"),
        (lambda d: d.update(reliability={"checkpoint_interval": "soon"}), "reliability.checkpoint_interval", "soon"),
        (lambda d: d.update(reliability={"gpu_mtbf": -1}), "reliability.gpu_mtbf", "negative"),
        (lambda d: d.update(reliability={"restart_time": "1000y"}), "reliability.restart_time", ""),
        (lambda d: d.update(reliability={"mtbf": "5h"}), "reliability.mtbf", ""),
        (lambda d: d.update(reliability={"weight_sync_time": "2000d"}), "reliability.weight_sync_time", "at most"),
        (lambda d: d["gpu_pools"][0].update(preemptions_per_hour=0.1), "training.pool", "preemptible"),
        (lambda d: d["gpu_pools"][0].update(preemptions_per_hour=-1), "gpu_pools[0].preemptions_per_hour", ""),
        (lambda d: d["gpu_pools"][0].update(preemptions_per_hour=1e5), "gpu_pools[0].preemptions_per_hour", "at most"),
    ],
)
def test_bad_reliability_fields_exit_2_naming_the_field(tmp_path, edit, where, rule):
    data = seed()
    edit(data)
    code, output = run(["solve"], tmp_path, data)
    assert code == 2, output
    assert where in output and rule in output, output
    assert "Traceback" not in output


def test_a_checkpoint_interval_shorter_than_a_checkpoint_is_diagnosed_as_the_interval(tmp_path):
    """With checkpoint_interval 1 s and 60 s checkpoints no gpu_mtbf gives progress: the diagnosis names the
    interval and the window of intervals that do (just inside it training progresses, just outside not)."""
    section = {**SECTION, "checkpoint_interval": "1s"}
    code, output = run(["solve", "--json"], tmp_path, seed(**section))
    conflict = json.loads(output)["diagnosis"]["conflict"]
    assert "checkpoint_interval between " in conflict and "inf" not in conflict, conflict
    assert "gpu_mtbf above" not in conflict, conflict
    low, high = (
        float(text.split(" s")[0].replace(",", ""))
        for text in conflict.split("checkpoint_interval between ")[1].split(" and ")[:2]
    )
    assert 60 < low < high
    for interval, progresses in ((low * 1.01, True), (high * 0.99, True), (low * 0.98, False), (high * 1.01, False)):
        changed = validate(seed(**{**section, "checkpoint_interval": interval}), "seed.yaml")
        assert (explain(changed, 604).values()["training_goodput"] > 0) is progresses, interval


def test_no_progress_is_diagnosed_with_the_smallest_fixes(tmp_path):
    code, output = run(["solve", "--json"], tmp_path, seed(**{**SECTION, "gpu_mtbf": "500h"}))
    result = json.loads(output)
    assert result["status"] == "infeasible"
    conflict = result["diagnosis"]["conflict"]
    assert "training cannot make progress" in conflict and "restart_time below" in conflict, conflict
    # The restart time it quotes is the threshold: just below it training progresses, just above it not
    # (at the fewest groups the grid admits, those of its longest cadence, 604 s).
    below = float(conflict.split("restart_time below ")[1].split(" s")[0].replace(",", ""))
    for factor, progresses in ((0.999, True), (1.001, False)):
        changed = validate(seed(**{**SECTION, "gpu_mtbf": "500h", "restart_time": below * factor}), "seed.yaml")
        assert (explain(changed, 604).values()["training_goodput"] > 0) is progresses


def test_weight_sync_longer_than_every_cadence_is_diagnosed(tmp_path):
    code, output = run(["solve", "--json"], tmp_path, seed(weight_sync_time="20m"))
    result = json.loads(output)
    assert result["status"] == "infeasible"
    assert "weight sync" in result["diagnosis"]["conflict"]


def test_a_confidence_solve_counts_reliability_as_risk_does(tmp_path):
    """MODEL §13 in a confidence solve: its plan, assessed by `risk` on the very scenarios it was solved for
    (the section's samples and seed), is on time in at least α of them with failures and checkpoints counted."""
    data = yaml.safe_load((SEED.parent / "seed-week-75-uncertain.yaml").read_text())
    data["planning"] = {"basis": "steady_state"}
    data["reliability"] = SECTION
    data["schedule"]["deadline"] = "8d"
    data["uncertainty"]["samples"] = 300
    code, output = run(["solve", "--confidence", "0.8", "--json", "--no-levers"], tmp_path, data)
    assert code == 0, output
    solved = json.loads(output)
    assert solved["metrics"]["training_goodput"] < 1 and solved["confidence"]["in_sample"] >= 0.8
    plan = tmp_path / "plan.json"
    plan.write_text(output)
    code, output = run(["risk", "--plan", str(plan), "--samples", "300", "--seed", "0", "--json"], tmp_path, data)
    assert code == 0, output
    assert json.loads(output)["on_time_probability"] == pytest.approx(solved["confidence"]["in_sample"], abs=1e-12)


def test_reliability_levers_save_money_and_buy_the_time_goodput_gives():
    from trainground.drivers.tradeoffs.levers import levers

    inst = validate(seed(**SECTION), "seed.yaml")
    result = solve_instance(inst)
    found = levers(inst, result)
    gamma, mtbf = result.metrics.training_goodput, result.metrics.mtbf_training_s
    restart = found.lever("reliability.restart_time")
    checkpoint = found.lever("reliability.checkpoint_time")
    assert (restart.after, checkpoint.after) == (450.0, 30.0)
    # Faster recovery never costs more, and the time it frees at this plan is the goodput's own arithmetic.
    assert restart.saving >= 0 and checkpoint.saving >= 0
    tau = result.metrics.checkpoint_interval_s
    faster = 1 - 60 / tau - (450 + tau / 2) / mtbf
    assert restart.buys_s == pytest.approx(result.plan.makespan_s * (1 - gamma / faster))
    assert checkpoint.buys_s > 0
    assert found.lever("schedule.deadline").buys_s is None


def test_more_reliable_gpus_and_faster_recovery_never_cost_more():
    costs = [
        solve_instance(validate(seed(**{**SECTION, "gpu_mtbf": f"{hours}h"}), "seed.yaml")).plan.total_cost
        for hours in (20_000, 50_000, 200_000)
    ]
    assert costs[0] >= costs[1] >= costs[2]
    plain = solve_instance(validate(seed(), "seed.yaml")).plan.total_cost
    assert costs[2] >= plain
    restarts = [
        solve_instance(validate(seed(**{**SECTION, "restart_time": r}), "seed.yaml")).plan.total_cost
        for r in ("1h", "15m", "0s")
    ]
    assert restarts[0] >= restarts[1] >= restarts[2] >= plain
