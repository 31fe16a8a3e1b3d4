"""`calibrate` proposes stages when the logged tokens per attempt trend by more than 20 % over the run (MODEL.md
§12), round-tripped from logs drawn with known stage parameters; `explain --stage NAME` is the seed's arithmetic
for one stage."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

from tests.calibrate_logs import write_csv
from trainground.calibrate.logs import Trajectories
from trainground.calibrate.stages import TREND, propose
from trainground.cli import main
from trainground.models.load import load_instance
from trainground.models.stage_rules import stage_instance
from trainground.solver.explain import explain, explain_stage

ROOT = Path(__file__).resolve().parents[1]
STAGED = ROOT / "instances" / "seed-week-stages.yaml"
Z_99 = 2.3263478740408408
CADENCE = 60.0
TRUTH = (  # (iterations, tokens per attempt, median lifetime s, p99 s)
    (300, 4000.0, 200.0, 2000.0),
    (400, 8000.0, 400.0, 4000.0),
    (300, 12000.0, 700.0, 7000.0),
)


def staged_columns(truth, seed: int, rate: float = 4.0) -> dict[str, np.ndarray]:
    """Attempts launched as a Poisson process at ``rate``/s over the run, each in the stage of the iteration
    current at its launch (a boundary every CADENCE s), with that stage's tokens (uniform ±20 %) and lognormal
    lifetime; the log ends with the last iteration (later ends empty: running)."""
    rng = np.random.default_rng(seed)
    n = sum(t[0] for t in truth)
    log_end = n * CADENCE
    start = np.sort(rng.uniform(0, log_end, rng.poisson(rate * log_end)))
    version = np.floor(start / CADENCE)
    firsts = np.cumsum([0] + [t[0] for t in truth])
    stage = np.searchsorted(firsts, version, side="right") - 1
    tokens = np.array([t[1] for t in truth])[stage] * rng.uniform(0.8, 1.2, start.size)
    median = np.array([t[2] for t in truth])[stage]
    sigma = np.log(np.array([t[3] for t in truth]) / np.array([t[2] for t in truth]))[stage] / Z_99
    end = start + median * np.exp(sigma * rng.standard_normal(start.size))
    running = end > log_end
    return {
        "start": start,
        "end": np.where(running, np.nan, end),
        "output_tokens": np.where(running, np.nan, np.round(tokens)),
        "version_start": version,
    }


def as_log(cols: dict[str, np.ndarray]) -> Trajectories:
    log_end = float(np.nanmax(np.concatenate([cols["end"], cols["start"]])))
    return Trajectories(
        "generated", cols["start"], cols["end"], cols["output_tokens"], log_end, version_start=cols["version_start"]
    )


@pytest.mark.parametrize("seed", [1, 2])
def test_stages_proposed_from_a_lengthening_run_recover_its_parameters(seed):
    found = propose(as_log(staged_columns(TRUTH, seed)), None, 1000)
    assert found is not None and found.proposed
    assert found.trend == pytest.approx(2.0, abs=0.15)  # 12,000 against 4,000 tokens
    assert [s["iterations"] for s in found.stages] == [300, 400, 300]
    for got, (_, tokens, median, p99) in zip(found.stages, TRUTH):
        assert got["tokens_per_attempt"] == pytest.approx(tokens, rel=0.03)
        assert got["occupancy"]["median"] == pytest.approx(median, rel=0.10)
        assert got["occupancy"]["p99"] == pytest.approx(p99, rel=0.30)
    assert found.explained > 0.9 and "3 stages are proposed" in found.sentence()


def test_a_flat_run_proposes_no_stages_and_says_so():
    flat = ((500, 8000.0, 400.0, 4000.0), (500, 8000.0 * (1 + TREND / 2), 400.0, 4000.0))
    found = propose(as_log(staged_columns(flat, 3)), None, 1000)
    assert found is not None and not found.proposed
    assert abs(found.trend) <= TREND and "no stages proposed" in found.sentence()


def test_calibrate_writes_the_proposed_stages_into_an_instance_that_solves(tmp_path):
    log = tmp_path / "trajectories.csv"
    write_csv(log, staged_columns(TRUTH, 4))
    into = ROOT / "instances" / "seed-week-75.yaml"
    out = tmp_path / "calibrated.yaml"
    ran = CliRunner().invoke(
        main, ["calibrate", "--trajectories", str(log), "--into", str(into), "-o", str(out), "--json"]
    )
    assert ran.exit_code == 0, ran.output
    proposal = json.loads(ran.output)["stages"]
    assert proposal["proposed"] and proposal["placed_by"] == "version_start"
    inst = load_instance(out)
    assert [s.iterations for s in inst.stages.list] == [300, 400, 300]
    assert [round(s.tokens_per_attempt, -2) for s in inst.stages.list] == pytest.approx([4000, 8000, 12000], rel=0.03)
    factors = {f.name: f.paths for f in inst.uncertainty.factors}
    assert "stages.list[*].occupancy.median" in factors["lifetimes"]


def test_explain_stage_is_the_arithmetic_of_that_stage_at_the_runs_pace():
    inst = load_instance(STAGED)
    late = explain_stage(inst, "late").values()
    stage = inst.stages.list[2]
    si = stage_instance(inst, stage)
    pace = (inst.schedule.deadline - inst.schedule.extra_time) / inst.workload.iterations
    assert late["cadence_s"] == pytest.approx(pace)
    assert late["time_margin"] == pytest.approx(0.0, abs=1e-12)  # the stage's share of the deadline at the pace
    whole = explain(si, pace).values()
    for key in ("attempts_per_s", "inference_gpus_needed", "inflight_mean", "occupancy_mean_s", "decode_tokens_per_s"):
        assert late[key] == pytest.approx(whole[key], rel=1e-12), key
    early = explain_stage(inst, "early").values()
    assert late["inference_gpus_needed"] / early["inference_gpus_needed"] == pytest.approx(3.0)  # 48k vs 16k tokens
    assert late["occupancy_mean_s"] > early["occupancy_mean_s"]


def test_explain_stage_names_the_stages_on_a_bad_name(tmp_path):
    ran = CliRunner().invoke(main, ["explain", str(STAGED), "--stage", "final"])
    assert ran.exit_code == 2 and "early, mid, late" in ran.output and "Traceback" not in ran.output
    plain = CliRunner().invoke(main, ["explain", str(ROOT / "instances" / "seed-week-75.yaml"), "--stage", "late"])
    assert plain.exit_code == 2 and "no stages" in plain.output
    whole = CliRunner().invoke(main, ["explain", str(STAGED), "--json"])
    assert json.loads(whole.output)["stages"] == ["early", "mid", "late"]
    one = json.loads(CliRunner().invoke(main, ["explain", str(STAGED), "--stage", "mid", "--json"]).output)
    assert one["stage"] == "mid" and math.isfinite(one["attempts_per_s"])
    assert yaml.safe_load(STAGED.read_text())["stages"]["list"][1]["name"] == "mid"


@pytest.mark.parametrize("split", [(1, 3, 4), (3, 3, 2), (2, 3, 3), (4, 4)])
def test_a_short_run_is_split_between_the_iterations_where_its_tokens_step(split):
    """Eight iterations whose tokens step up at known versions: the stages proposed have those iterations
    (each split falls between two iterations), onto the log's own count and onto an instance ten times longer."""
    levels = (4000.0, 8000.0, 12000.0)
    truth = tuple((n, tokens, 20.0, 200.0) for n, tokens in zip(split, levels))
    log = as_log(staged_columns(truth, 5, rate=8.0))
    for total, scale in ((None, 1), (80, 10)):
        found = propose(log, None, total)
        assert found is not None and found.proposed and found.iterations == 8 * scale
        assert [s["iterations"] for s in found.stages] == [n * scale for n in split]
        for got, tokens in zip(found.stages, levels):
            assert got["tokens_per_attempt"] == pytest.approx(tokens, rel=0.05)


@pytest.mark.parametrize(("shares", "total"), [((0.05, 0.45, 0.5), 8), ((0.01, 0.01, 0.98), 3), ((0.5, 0.5), 7)])
def test_stage_iterations_are_whole_at_least_one_and_sum_to_the_run(shares, total):
    from trainground.calibrate.stages import _whole

    sizes = _whole(np.array(shares), total)
    assert sum(sizes) == total and min(sizes) >= 1
