"""The regime section of MODEL §14 as input: its rules (each broken one names its field), the bundled regime
instances, `explain`'s Regime section, and the one refusal every planning or replaying command gives a regime
the model does not plan yet (exit 2, naming regime.mode), while the default regime plans as no regime does."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

import trainground
from trainground.cli import main
from trainground.models.load import InstanceError, load_instance, validate
from trainground.models.regime import Regime
from trainground.solver.explain import explain
from trainground.solver.laws import calculus as calc
from trainground.solver.laws import regimes as rg

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "instances" / "seed-week-75.yaml"
UNCERTAIN = ROOT / "instances" / "seed-week-75-uncertain.yaml"
REGIMES = ROOT / "instances" / "regimes"
COLOCATED = REGIMES / "seed-week-colocated.yaml"
ADMISSION = REGIMES / "seed-week-admission-8.yaml"
REFUSAL = "not yet"  # "is planned, but not yet with ...", "... no replay of it exists yet"


def seed_with(regime: dict | None, **sections) -> dict:
    doc = yaml.safe_load(SEED.read_text())
    if regime is not None:
        doc["regime"] = regime
    doc.update(sections)
    return doc


def problems_of(doc: dict) -> list[str]:
    with pytest.raises(InstanceError) as caught:
        validate(doc, "x.yaml")
    return [f"{p.path}: {p.rule}" for p in caught.value.problems]


@pytest.mark.parametrize(
    "regime, where, fragment",
    [
        ({"mode": "pipelined"}, "regime.steps_ahead", "is required with mode: pipelined"),
        ({"mode": "pipelined", "steps_ahead": 2}, "regime.steps_ahead", "must be 0 or 1 with mode: pipelined, got 2"),
        ({"mode": "pipelined", "steps_ahead": 0.5}, "regime.steps_ahead", "must be 0 or 1"),
        ({"staleness": "admission", "in_flight_updates": True}, "regime.steps_ahead", "is required with staleness"),
        (
            {"staleness": "admission", "steps_ahead": 0.5, "in_flight_updates": True},
            "regime.steps_ahead",
            "must be >= 1 with staleness: admission, got 0.5",
        ),
        ({"staleness": "admission", "steps_ahead": 4}, "regime.in_flight_updates", "must be true with staleness"),
        ({"steps_ahead": 4}, "regime.steps_ahead", "applies to mode: pipelined and staleness: admission only"),
        ({"mode": "colocated", "steps_ahead": 1}, "regime.steps_ahead", "applies to mode: pipelined"),
        ({"mode": "colocated", "staleness": "admission"}, "regime.staleness", "applies to mode: async only"),
        ({"mode": "pipelined", "steps_ahead": 1, "in_flight_updates": True}, "regime.in_flight_updates", "async"),
        ({"recompute": "prefix"}, "regime.recompute", "prefix applies with in_flight_updates: true only"),
        ({"context_tokens": 4096}, "regime.context_tokens", "applies to recompute: prefix only"),
        ({"prefill_cost": 0.1}, "regime.prefill_cost", "applies to recompute: prefix only"),
        ({"truncated": "filter"}, "regime.truncated", "applies with a rollout_timeout only"),
        ({"switch_time": "30s"}, "regime.switch_time", "applies to mode: colocated only"),
        ({"mode": "batch"}, "regime.mode", "must be 'async', 'pipelined' or 'colocated'"),
        ({"rollout_timeout": 0}, "regime.rollout_timeout", "must be > 0"),
        ({"max_concurrent_attempts": 0}, "regime.max_concurrent_attempts", "must be > 0"),
        ({"stalenes": "drop"}, "regime.stalenes", "did you mean 'staleness'?"),
    ],
)
def test_each_broken_regime_rule_names_its_field(regime, where, fragment):
    found = problems_of(seed_with(regime))
    assert any(p.startswith(f"{where}: ") and fragment in p for p in found), found


def test_colocated_inference_must_run_on_the_training_pool():
    doc = yaml.safe_load((ROOT / "instances" / "seed-week-spot.yaml").read_text())
    doc["regime"] = {"mode": "colocated"}
    found = problems_of(doc)
    assert any(p.startswith("inference.shapes[1].pool: 'spot' is not the training pool 'main'") for p in found)
    assert not any(p.startswith("inference.shapes[0]") for p in found)  # tp8 is on the training pool


def test_a_colocated_shape_on_a_preemptible_training_pool_is_refused_by_name():
    doc = seed_with({"mode": "colocated"})
    doc["gpu_pools"][0]["preemptions_per_hour"] = 0.05
    found = problems_of(doc)
    assert any(p.startswith("inference.shapes[0].pool: 'main' has preemptions_per_hour") for p in found), found


def test_the_bundled_regime_instances_load_as_written():
    colocated, admission = load_instance(COLOCATED), load_instance(ADMISSION)
    assert (colocated.regime.mode, colocated.regime.rollout_timeout) == ("colocated", 3600.0)
    assert admission.regime == Regime(staleness="admission", steps_ahead=8, in_flight_updates=True)
    pipelined = load_instance(REGIMES / "seed-week-pipelined-1.yaml")
    assert (pipelined.regime.mode, pipelined.regime.steps_ahead) == ("pipelined", 1)
    assert not any(i.regime.is_default for i in (colocated, admission, pipelined))


def test_the_default_regime_written_out_is_no_regime():
    plain = validate(seed_with(None), "seed.yaml")
    written = validate(seed_with({"mode": "async", "staleness": "drop", "switch_time": "0s"}), "seed.yaml")
    assert written.regime is not None and written.regime.is_default
    steady = ["--basis", "steady_state", "--json"]
    runs = []
    for doc in (seed_with(None), seed_with({"mode": "async", "staleness": "drop"})):
        path = ROOT / "out" / "regime-default.yaml"
        path.parent.mkdir(exist_ok=True)
        path.write_text(yaml.safe_dump(doc))
        result = CliRunner().invoke(main, ["solve", str(path), *steady])
        assert result.exit_code == 0, result.output
        payload = {k: v for k, v in json.loads(result.stdout).items() if k not in ("timings", "instance")}
        payload["levers"].pop("seconds", None)
        runs.append(payload)
    assert runs[0] == runs[1] and runs[0]["status"] == "optimal"
    assert explain(plain).to_json() == explain(written).to_json()  # no Regime section for the seed's regime


def test_explain_without_a_regime_has_no_regime_section():
    result = CliRunner().invoke(main, ["explain", str(SEED)])
    assert result.exit_code == 0 and "Regime" not in result.stdout and "Goodput" in result.stdout


def test_explain_gives_the_colocated_seed_iteration():
    result = CliRunner().invoke(main, ["explain", str(COLOCATED), "--json"])
    assert result.exit_code == 0, result.output
    got = json.loads(result.stdout)
    assert round(got["timeout_occupancy_mean_s"]) == 1448 and round(got["token_scale"], 4) == 0.7467
    assert got["attempts_per_batch"] == 4096 and got["launch_peak"] == {"container": 4096}
    assert round(got["generation_throughput_s"], 1) == 133.6
    assert got["slowest_attempt_s"] == pytest.approx(3600.0, abs=0.1)
    assert got["generation_phase_s"] == pytest.approx(3600.0, abs=0.1)
    assert got["regime_update_time_s"] == 210.0
    assert got["regime_cadence_s"] == pytest.approx(3810.0, abs=0.1)
    assert round(got["regime_makespan_s"] / 86400, 1) == 44.1
    assert got["regime_time_margin"] < 0
    text = CliRunner().invoke(main, ["explain", str(COLOCATED)]).stdout
    assert text.index("Regime") > text.index("Freshness") and "E[min(W, τ)]" in text


def test_explain_gives_the_admission_bound():
    result = CliRunner().invoke(main, ["explain", str(ADMISSION), "--json", "--cadence", "700"])
    got = json.loads(result.stdout)
    assert round(got["slowest_attempt_s"]) == 6558
    assert got["admission_slots"] == 9 * 4096 // 8
    inst = load_instance(ADMISSION)
    groups = int(calc.min_groups_for(inst, 700.0)[0])
    update = float(calc.update_time(inst.training.update_time, groups * 8))
    assert got["admission_cadence_s"] == pytest.approx((got["slowest_attempt_s"] + update) / 8.5, rel=1e-12)
    assert got["consumed_mean_gap"] == pytest.approx(got["slowest_attempt_s"] / 700.0)  # E[M_g]/L, no cap at K
    assert got["consumed_p99_gap"] > inst.freshness.max_versions_kept  # nothing is dropped for age
    assert got["publish_peak"]["container"] > got["inflight_mean"]  # a burst per publish tops the mean load


def test_explain_pipelined_needs_the_inference_gpus_for_its_phase():
    path = str(REGIMES / "seed-week-pipelined-1.yaml")
    bare = json.loads(CliRunner().invoke(main, ["explain", path, "--json"]).stdout)
    assert bare["generation_phase_s"] is None and bare["slowest_attempt_s"] == pytest.approx(3600.0, abs=0.1)
    sized = json.loads(CliRunner().invoke(main, ["explain", path, "--json", "--inference-gpus", "6000"]).stdout)
    assert sized["regime_update_time_s"] == pytest.approx(300.0 * 7000 / 4000)  # the 4,000 GPUs left
    assert sized["regime_cadence_s"] == pytest.approx(3600.0, abs=0.1)  # k = 1: max(D, U) + t_s


def test_the_mode_sync_time_and_filtered_intake():
    inst = validate(seed_with({"rollout_timeout": "1h", "truncated": "filter", "weight_sync_time": "20s"}), "x.yaml")
    occ = calc.occupancy_of(inst.environment.occupancy)
    assert rg.sync_time(inst) == 20.0
    assert rg.intake(inst, occ) == pytest.approx(rg.timeout_cdf(occ, 3600.0))
    relied = validate(seed_with(None, reliability={"weight_sync_time": "16s"}), "x.yaml")
    assert rg.sync_time(relied) == 16.0 and rg.sync_time(validate(seed_with(None), "x.yaml")) == 0.0


def refused(result) -> bool:
    return (
        result.exit_code == 2
        and "regime.mode" in result.stderr
        and ("not yet" in result.stderr or "no replay" in result.stderr)
    )


HOLD_REFUSAL = "is planned, but not yet with planning.basis hold"


UNPLANNED = "{unplanned}"  # the seed week with in-flight updates under drop and a reliability section: not planned yet


@pytest.fixture(scope="module")
def unplanned(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("regime") / "seed-week-inflight.yaml"
    doc = seed_with({"mode": "async", "in_flight_updates": True})
    doc["reliability"] = {"gpu_mtbf": "50000h"}
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.parametrize(
    "args",
    [
        ["solve", UNPLANNED],
        ["solve", UNPLANNED, "--basis", "steady_state"],
        ["simulate", UNPLANNED, "--iterations", "5"],
        ["frontier", UNPLANNED],
        ["compare", UNPLANNED],
        ["sweep", UNPLANNED, "--set", "schedule.deadline=7d,8d", "--out", "out/regime-sweep"],
        ["batch", str(COLOCATED), UNPLANNED, "--out", "out/regime-batch"],
        ["risk", str(UNCERTAIN), "--set", "regime.in_flight_updates=true", "--set", "reliability.gpu_mtbf=50000h"],
        ["report", UNPLANNED, "--out", "out/regime-report"],
    ],
)
def test_every_planning_command_refuses_a_regime_it_does_not_plan(args, unplanned):
    args = [str(unplanned) if a == UNPLANNED else a for a in args]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    if args[0] == "batch":  # a row per file, each invalid with the refusal
        rows = (ROOT / "out" / "regime-batch" / "summary.csv").read_text()
        # in-flight updates under drop with a reliability section are refused; colocated is planned (the suite's
        # basis is steady_state) and has no plan in a week
        assert rows.count(REFUSAL) == 1 and rows.count(",invalid,") == 1 and rows.count(",infeasible,") == 1
    elif args[0] == "sweep":  # no point is valid: the first point's message
        assert "regime.mode" in result.stderr and REFUSAL in result.stderr
    else:
        assert refused(result), result.output
        assert "Traceback" not in result.output


def test_a_plan_from_a_file_is_not_replayed_under_another_regime(tmp_path):
    solved = CliRunner().invoke(main, ["solve", str(SEED), "--basis", "steady_state", "--json"])
    assert solved.exit_code == 0
    plan = tmp_path / "plan.json"
    plan.write_text(solved.stdout)
    args = ["simulate", str(SEED), "--plan", str(plan), "--iterations", "5", "--set", "regime.rollout_timeout=1h"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert (
        "regime: the plan was solved without a regime section, and the instance's regime is async drop "
        "(with rollout_timeout)" in result.stderr
    )
    assert CliRunner().invoke(main, args[:-2]).exit_code == 0  # the same plan replays without the regime


def test_a_sweep_over_the_mode_plans_each_batch_mode_and_refuses_the_rest():
    modes = "regime.mode=async,colocated,pipelined"
    args = ["sweep", str(SEED), "--basis", "steady_state", "--set", modes, "--set", "regime.steps_ahead=null", "--json"]
    result = CliRunner().invoke(main, [*args, "--out", "out/regime-mode-sweep"])
    assert result.exit_code == 0, result.output
    points = json.loads(result.stdout)["points"]
    # the seed's long tail: a colocated batch waits 63,370 s for its slowest attempt; pipelined needs steps_ahead
    assert [p["status"] for p in points] == ["optimal", "infeasible", "invalid"]
    assert "regime.steps_ahead" in points[2]["message"]


def test_a_batch_plan_read_from_a_file_is_replayed_by_its_regime_and_risk_evaluates_it(tmp_path):
    steady = ["--basis", "steady_state", "--set", "schedule.deadline=60d", "--set", "schedule.cadence.step=10s"]
    solved = CliRunner().invoke(main, ["solve", str(COLOCATED), *steady, "--json"])
    assert solved.exit_code == 0, solved.output
    result = json.loads(solved.stdout)
    assert result["regime"]["mode"] == "colocated" and result["metrics"]["slowest_attempt_s"] == pytest.approx(3600)
    plan = tmp_path / "plan.json"
    plan.write_text(solved.stdout)
    args = ["simulate", str(COLOCATED), "--plan", str(plan), *steady, "--iterations", "50", "--json"]
    again = CliRunner().invoke(main, [*args, "--replications", "3"])
    assert again.exit_code == 0, again.output
    replay = json.loads(again.stdout)
    # every batch is cut at the one-hour timeout: the slowest attempt is the timeout in every replication
    assert replay["figures"]["slowest_attempt_s"]["simulated"] == pytest.approx(3600)
    assert replay["on_time"] == 3 and replay["regime"]["mode"] == "colocated"
    traced = CliRunner().invoke(main, [*args, "--trace", str(tmp_path / "trace")])
    assert traced.exit_code == 2 and "--trace does not apply to a batch regime" in traced.stderr
    from trainground.drivers.risk import assess
    from trainground.models.result import Plan

    doc = yaml.safe_load(COLOCATED.read_text())
    doc["planning"] = {"basis": "steady_state"}
    doc["schedule"] = dict(doc["schedule"], deadline="60d", cadence={"min": "60s", "step": "10s"})
    doc["uncertainty"] = {"factors": [{"name": "none", "paths": ["inference.shapes[*].tokens_per_gpu_s"],
                                       "dist": "uniform", "low": 1.0, "high": 1.0}]}  # fmt: skip
    out = assess(validate(doc, COLOCATED.name), Plan.model_validate(result["plan"]), samples=4).outcome
    assert np.all(out.cadence == result["plan"]["cadence_s"])  # risk evaluates the batch plan read from the file


@pytest.mark.parametrize("call", ["solve", "frontier", "simulate", "report"])
def test_the_python_api_refuses_it_too(call, unplanned):
    with pytest.raises(InstanceError, match=f"regime.mode: async.*{REFUSAL}"):
        getattr(trainground, call)(str(unplanned))


def test_the_json_schema_describes_the_regime_section():
    import jsonschema

    from trainground.models.fields import instance_schema

    schema = instance_schema()
    check = jsonschema.Draft202012Validator(schema)
    for path in sorted(REGIMES.glob("*.yaml")):
        assert not list(check.iter_errors(yaml.safe_load(path.read_text()))), path
    bad = seed_with({"mode": "colocated", "switch_time": -1, "steps_ahead": -2})
    where: set[str] = set()

    def paths(error) -> None:  # the errors under the regime's anyOf (the section or null) too
        where.add("/".join(map(str, error.absolute_path)))
        for sub in error.context or ():
            paths(sub)

    for error in check.iter_errors(bad):
        paths(error)
    assert {"regime/switch_time", "regime/steps_ahead"} <= where


def test_explain_of_a_stage_gives_that_stage_its_regime_arithmetic():
    staged = str(ROOT / "instances" / "seed-week-stages.yaml")
    args = ["explain", staged, "--stage", "late", "--json", "--set", "regime.mode=colocated"]
    late = json.loads(CliRunner().invoke(main, [*args, "--set", "regime.rollout_timeout=2h"]).stdout)
    early = json.loads(
        CliRunner().invoke(main, [*args[:3], "early", *args[4:], "--set", "regime.rollout_timeout=2h"]).stdout
    )
    assert late["slowest_attempt_s"] == pytest.approx(7200.0, abs=0.1)  # both stages' batches reach the timeout
    ratio = 3 * late["token_scale"] / early["token_scale"]  # 49,152 over 16,384 tokens, each cut by its own timeout
    assert late["generation_throughput_s"] == pytest.approx(ratio * early["generation_throughput_s"], rel=1e-12)
    assert late["regime_makespan_s"] == pytest.approx(300 * late["regime_cadence_s"])  # the late stage's 300


def test_colocated_goodput_divides_the_whole_run_on_the_gpus_used():
    """Every GPU failure stops a colocated job: γ of MODEL §13 on the 10,000 shared GPUs divides n·L."""
    from trainground.solver.laws import goodput

    args = ["explain", str(COLOCATED), "--json", "--set", "reliability.gpu_mtbf=50000h"]
    got = json.loads(CliRunner().invoke(main, args).stdout)
    inst = load_instance(COLOCATED)
    gamma = float(
        goodput.training_terms(validate(seed_with(None, reliability={}), "x.yaml").reliability, 10000).goodput
    )
    assert 0.8 < gamma < 0.9
    assert got["regime_makespan_s"] == pytest.approx(inst.workload.iterations * got["regime_cadence_s"] / gamma)


def test_the_starters_regime_block_uncommented_is_admission_at_k_8(tmp_path):
    from tests.test_init import init, uncommented

    text = init()
    assert "regime" not in yaml.safe_load(text)  # off unless the user uncomments it
    path = tmp_path / "starter.yaml"
    path.write_text(uncommented(text, "regime"))
    inst = load_instance(path)
    assert inst.regime == Regime(staleness="admission", steps_ahead=8, in_flight_updates=True)
    explained = json.loads(CliRunner().invoke(main, ["explain", str(path), "--json"]).stdout)
    assert explained["admission_slots"] == math.ceil(9 * inst.workload.batch_trajectories / inst.workload.group_size)
    held = CliRunner().invoke(main, ["solve", str(path)])  # the starter plans on hold, the seed week's figures
    assert held.exit_code == 3 and "infeasible" in held.stdout  # k = 8 of the seed's long tail needs 796 s a cadence
    assert "(k + 1) batches of slots allow at best a cadence of 796.3 s" in " ".join(held.stdout.split())


@pytest.mark.parametrize(
    "fields, own, overlapped",
    [
        ({}, False, True),  # the seed's regime: async drop, the §10 engine
        ({"mode": "colocated"}, True, False),
        ({"mode": "pipelined", "steps_ahead": 0}, True, False),
        ({"mode": "pipelined", "steps_ahead": 1}, True, True),
        ({"staleness": "admission", "steps_ahead": 4, "in_flight_updates": True}, True, True),
    ],
)
def test_which_regimes_have_their_own_replay_and_overlap_generation_with_training(fields, own, overlapped):
    regime = Regime(**fields)
    assert (regime.own_replay, regime.overlaps_training) == (own, overlapped)
