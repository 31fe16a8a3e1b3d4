"""calibrate: round trips from known parameters (a generator and the simulator's trace), interval
coverage, censoring, the empirical law, bad logs, the readers, verl's metrics, the calibrated instance."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from tests.calibrate_logs import Truth, columns, logs, write_csv
from trainground.calibrate import lifetimes as lt
from trainground.calibrate.fit import calibrate
from trainground.cli import main

ROOT = Path(__file__).resolve().parent.parent
SEED_INSTANCE = ROOT / "instances/seed-week-75.yaml"


def rel(a: float, b: float) -> float:
    return abs(a / b - 1)


# ---------------------------------------------------------------- round trips


def test_round_trip_from_known_parameters():
    truth = Truth(serial_fraction=0.2)
    log, steps = logs(truth, seed=3)
    assert log.rows > 500_000
    cal = calibrate(log, steps)
    occ = cal.occupancy
    assert occ.law == "lognormal"
    assert rel(occ.figures["median"].value, truth.median) < 0.03
    assert rel(occ.figures["p99"].value, truth.p99) < 0.03
    assert rel(cal.tokens_per_gpu_s.value, truth.tokens_per_gpu_s) < 0.01
    assert abs(cal.intake.value - truth.intake) < 0.01
    assert cal.update.law == "amdahl"
    assert rel(float(cal.update.seconds(truth.reference_gpus)), truth.reference_time) < 0.03
    f = truth.serial_fraction
    for gpus in truth.training_gpus:  # the fitted law is the true law at every measured GPU count
        true = truth.reference_time * (f + (1 - f) * truth.reference_gpus / gpus)
        assert rel(float(cal.update.seconds(gpus)), true) < 0.03
    assert "independent" in cal.correlation.note


def test_inverse_law_and_comonotone_groups_are_recognised():
    truth = Truth(comonotone=True, attempts_per_s=4.0, serial_fraction=0.0)
    cal = calibrate(*logs(truth, seed=4))
    assert cal.update.law == "inverse"
    assert rel(float(cal.update.seconds(truth.reference_gpus)), truth.reference_time) < 0.03
    assert cal.correlation.value > 0.95 and "comonotone" in cal.correlation.note


def test_round_trip_from_the_simulator_trace(tmp_path):
    """simulate --trace on an edited seed instance, calibrated back: lifetimes and intake of the instance."""
    trace = tmp_path / "trace"
    out = CliRunner().invoke(
        main,
        [
            "simulate",
            str(ROOT / "instances/seed-intake-80.yaml"),
            "--iterations",
            "8",
            "--set",
            "workload.batch_trajectories=2048",
            "--trace",
            str(trace),
            "--json",
        ],
    )
    assert out.exit_code == 0, out.output
    result = CliRunner().invoke(
        main,
        [
            "calibrate",
            "--trajectories",
            str(trace / "trajectories.csv"),
            "--steps",
            str(trace / "iterations.csv"),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    cal = json.loads(result.output)
    rows = cal["occupancy"]["median"]["rows"]
    assert rows > 50_000 and cal["occupancy"]["censored_rows"] > 0
    assert rel(cal["occupancy"]["median"]["value"], 1044) < 0.03
    assert rel(cal["occupancy"]["p99"]["value"], 13900) < 0.03
    assert abs(cal["intake_rate"]["value"] - 0.8) < 0.01
    assert cal["update_time"]["law"] == "inverse"
    from trainground.models.edits import load_edited
    from trainground.solver.solve import solve_instance

    solved = solve_instance(load_edited(ROOT / "instances/seed-intake-80.yaml", ["workload.batch_trajectories=2048"]))
    launched = solved.metrics.attempts_per_s * 32768 / solved.plan.inference_gpus  # the rate the simulator ran
    assert rel(cal["tokens_per_gpu_s"]["value"], launched) < 0.01


# ---------------------------------------------------------------- intervals


def test_intervals_cover_the_truth_in_most_repetitions():
    truth = Truth(attempts_per_s=0.2, log_end=12000.0, cadence=300.0, serial_fraction=0.0, update_noise=0.05)
    names = ("median", "p99", "tokens_per_gpu_s", "intake", "update")
    covered = {k: 0 for k in names}
    reps = 50
    for seed in range(reps):
        log, steps = logs(truth, seed=seed)
        cal = calibrate(log, steps, replicates=200, seed=seed)
        figs = {
            "median": (cal.occupancy.figures["median"], truth.median),
            "p99": (cal.occupancy.figures["p99"], truth.p99),
            "tokens_per_gpu_s": (cal.tokens_per_gpu_s, truth.tokens_per_gpu_s),
            "intake": (cal.intake, truth.intake),
            "update": (cal.update.reference, truth.reference_time * truth.reference_gpus / cal.update.reference_gpus),
        }
        for k, (fig, true) in figs.items():
            covered[k] += fig.low <= true <= fig.high
    shares = {k: v / reps for k, v in covered.items()}
    # Each interval covers the truth in at least 85 % of 50 seeded repetitions.
    assert all(s >= 0.85 for s in shares.values()), shares


# ---------------------------------------------------------------- censoring and the empirical law


def test_censored_fit_keeps_the_tail_that_dropping_running_attempts_loses():
    truth = Truth(attempts_per_s=10.0)
    mean = truth.median * math.exp(truth.sigma**2 / 2)
    truth = replace(truth, log_end=5 * mean)  # in a steady run, mean/log_end of the attempts still run at the end
    log, _ = logs(truth, seed=5)
    running = log.running.sum() / log.rows
    assert 0.17 < running < 0.23
    data = lt.lifetimes_of(log.start, log.end, log.log_end)
    censored = lt.figures_of(*lt.fit_lognormal(data))
    dropped = lt.figures_of(*lt.fit_lognormal(lt.Lifetimes(data.x, data.c[:0])))
    assert rel(censored["median"], truth.median) < 0.03
    assert rel(censored["p99"], truth.p99) < 0.03
    assert rel(dropped["p99"], truth.p99) > 0.10
    cal = calibrate(log, None)
    assert cal.occupancy.dropped["p99"] == pytest.approx(dropped["p99"])


def test_a_mixture_is_flagged_and_gets_an_empirical_law(tmp_path):
    truth = Truth(mixture=True, attempts_per_s=2.0)
    cal = calibrate(*logs(truth, seed=6))
    assert cal.occupancy.law == "empirical"
    assert cal.occupancy.distance > cal.occupancy.threshold
    samples = cal.occupancy.samples
    assert samples.size == 500 and np.all(np.diff(samples) >= 0)
    assert 200 < np.median(samples) < 5000
    lognormal = calibrate(*logs(replace(truth, mixture=False), seed=6))
    assert lognormal.occupancy.law == "lognormal"
    traj, _ = columns(truth, seed=6)
    write_csv(tmp_path / "t.csv", traj)
    new = tmp_path / "empirical.yaml"
    out = CliRunner().invoke(
        main,
        [
            "calibrate",
            "--trajectories",
            str(tmp_path / "t.csv"),
            "--inference-gpus",
            "100",
            "--into",
            str(SEED_INSTANCE),
            "-o",
            str(new),
        ],
    )
    assert out.exit_code == 0, out.output
    from trainground.models.load import load_instance

    inst = load_instance(new)
    assert inst.environment.occupancy.distribution == "empirical"
    assert len(inst.environment.occupancy.samples) == 500
    lifetimes = next(f for f in inst.uncertainty.factors if f.name == "lifetimes")
    assert lifetimes.paths == ["environment.occupancy.samples[*]"] and lifetimes.sigma > 0
    assert CliRunner().invoke(main, ["explain", str(new), "--json"]).exit_code == 0


# ---------------------------------------------------------------- files, formats and bad logs


def _write(path: Path, cols: dict, kind: str) -> Path:
    import pyarrow as pa

    arrays = {k: pa.array(v, mask=np.isnan(v)) if v.dtype.kind == "f" else pa.array(v) for k, v in cols.items()}
    table = pa.table(arrays)
    if kind == "csv":
        write_csv(path, cols)
    elif kind == "parquet":
        import pyarrow.parquet as pq

        pq.write_table(table, path)
    else:
        with path.open("w") as handle:
            for row in table.to_pylist():
                handle.write(json.dumps(row) + "\n")
    return path


def _small(seed: int = 7):
    return columns(Truth(attempts_per_s=0.3, log_end=8000.0), seed)


@pytest.mark.parametrize("kind", ["csv", "jsonl", "parquet"])
def test_readers_agree(tmp_path, kind):
    traj, steps = _small()
    tfile = _write(tmp_path / f"t.{kind}", traj, kind)
    sfile = _write(tmp_path / f"s.{kind}", steps, kind)
    out = CliRunner().invoke(main, ["calibrate", "--trajectories", str(tfile), "--steps", str(sfile), "--json"])
    assert out.exit_code == 0, out.output
    got = json.loads(out.output)
    reference = calibrate(*logs(Truth(attempts_per_s=0.3, log_end=8000.0), seed=7)).to_json()
    for key in ("median", "p99"):
        assert got["occupancy"][key]["value"] == pytest.approx(reference["occupancy"][key]["value"], rel=1e-9)
    assert got["tokens_per_gpu_s"]["value"] == pytest.approx(reference["tokens_per_gpu_s"]["value"], rel=1e-9)


def test_iso_times_read_as_seconds(tmp_path):
    traj, _ = _small()
    origin = np.datetime64("2026-11-30T08:00:00", "ms")

    def iso(t):
        return ["" if math.isnan(x) else str(origin + np.timedelta64(int(round(x * 1000)), "ms")) + "Z" for x in t]

    lines = ["start,end,output_tokens"] + [
        f"{a},{b},{int(c)}" for a, b, c in zip(iso(traj["start"]), iso(traj["end"]), traj["output_tokens"])
    ]
    (tmp_path / "iso.csv").write_text("\n".join(lines) + "\n")
    secs = {k: traj[k] - np.nanmin(traj["start"]) for k in ("start", "end")} | {"output_tokens": traj["output_tokens"]}
    write_csv(tmp_path / "sec.csv", secs)
    a, b = (
        json.loads(
            CliRunner()
            .invoke(main, ["calibrate", "--trajectories", str(tmp_path / f), "--json", "--inference-gpus", "100"])
            .output
        )
        for f in ("iso.csv", "sec.csv")
    )
    assert a["occupancy"]["median"]["value"] == pytest.approx(b["occupancy"]["median"]["value"], rel=1e-6)
    assert a["occupancy"]["median"]["rows"] == b["occupancy"]["median"]["rows"]


BAD = {
    "missing column": ("start,output_tokens\n0,10\n", "column", "'end'"),
    "end before start": ("start,end,output_tokens\n0,5,10\n20,10,10\n", "row 2 (line 3), column 'end'", "before"),
    "negative tokens": ("start,end,output_tokens\n0,5,10\n1,6,-3\n", "row 2 (line 3), column 'output_tokens'", ">= 0"),
    "unparseable time": (
        "start,end,output_tokens\n2026-01-01T00:00:00,2026-01-01T00:10:00,10\n2026-01-01T00:01:00,yesterday,10\n",
        "row 2 (line 3), column 'end'",
        "yesterday",
    ),
    "empty file": ("", "bad.csv", "empty"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_logs_exit_2_naming_file_row_and_column(tmp_path, case):
    text, where, rule = BAD[case]
    path = tmp_path / "bad.csv"
    path.write_text(text)
    out = CliRunner().invoke(main, ["calibrate", "--trajectories", str(path)])
    assert out.exit_code == 2, out.output
    assert "Traceback" not in out.output and "internal error" not in out.output
    assert str(path) in out.output and where in out.output and rule in out.output


def test_bad_step_log_names_its_row(tmp_path):
    traj, steps = _small()
    write_csv(tmp_path / "t.csv", traj)
    (tmp_path / "s.csv").write_text("iteration,update_s,training_gpus\n0,10,8\n1,abc,8\n")
    out = CliRunner().invoke(
        main, ["calibrate", "--trajectories", str(tmp_path / "t.csv"), "--steps", str(tmp_path / "s.csv")]
    )
    assert out.exit_code == 2 and "s.csv: row 2 (line 3), column 'update_s'" in out.output, out.output


# ---------------------------------------------------------------- verl


def test_verl_step_metrics(tmp_path):
    """verl's file logger shape: {"step": N, "data": {metric: value}} per line (verl/utils/tracking.py)."""
    rng = np.random.default_rng(8)
    lines = []
    for step in range(1, 41):
        gen, update = 300 * math.exp(rng.normal(0, 0.05)), 120 * math.exp(rng.normal(0, 0.05))
        step_time = gen + update + 20
        tokens = 2_000_000
        lines.append(
            json.dumps(
                {
                    "step": step,
                    "data": {
                        "timing_s/gen": gen,
                        "timing_s/update_actor": update,
                        "timing_s/step": step_time,
                        "perf/total_num_tokens": tokens,
                        "perf/time_per_step": step_time,
                        "perf/throughput": tokens / (step_time * 64),
                        "response_length/mean": 1500.0,
                    },
                }
            )
        )
    (tmp_path / "verl.jsonl").write_text("\n".join(lines) + "\n")
    traj, _ = _small()
    write_csv(tmp_path / "t.csv", traj)
    out = CliRunner().invoke(
        main,
        ["calibrate", "--trajectories", str(tmp_path / "t.csv"), "--steps", str(tmp_path / "verl.jsonl"), "--json"],
    )
    assert out.exit_code == 0, out.output
    cal = json.loads(out.output)
    assert cal["update_time"]["law"] == "inverse" and cal["update_time"]["reference_gpus"] == 64
    assert rel(cal["update_time"]["reference_time_s"]["value"], 120) < 0.03
    assert cal["cadence"]["time_split"]["generation"] == pytest.approx(300 / 440, abs=0.02)
    assert cal["cadence"]["achieved_s"]["value"] == pytest.approx(440, rel=0.03)
    assert cal["bottleneck"].startswith("generation-bound")
    assert any("taken from perf/throughput's divisor (64)" in n for n in cal["notes"]), cal["notes"]
    broken = tmp_path / "broken.jsonl"
    record = json.loads(lines[1])
    record["data"]["timing_s/update_actor"] = "slow"
    broken.write_text(lines[0] + "\n" + json.dumps(record) + "\n")
    bad = CliRunner().invoke(
        main, ["calibrate", "--trajectories", str(tmp_path / "t.csv"), "--steps", str(broken), "--json"]
    )
    assert bad.exit_code == 0, bad.output  # a cell that is not a number is missing for its figures (issue 37)
    got = json.loads(bad.output)
    assert any("timing_s/update_actor 1 (first: row 2 (line 2))" in n for n in got["notes"]), got["notes"]
    assert got["update_time"]["reference_time_s"]["rows"] == 1 and got["cadence"]["achieved_s"]["rows"] == 2


# ---------------------------------------------------------------- the calibrated instance


def test_calibrated_instance_loads_solves_and_explains(tmp_path):
    from trainground.models.load import load_instance

    traj, steps = columns(Truth(attempts_per_s=0.25, inference_gpus=100), seed=9)
    write_csv(tmp_path / "t.csv", traj)
    write_csv(tmp_path / "s.csv", steps)
    new = tmp_path / "calibrated.yaml"
    out = CliRunner().invoke(
        main,
        [
            "calibrate",
            "--trajectories",
            str(tmp_path / "t.csv"),
            "--steps",
            str(tmp_path / "s.csv"),
            "--into",
            str(SEED_INSTANCE),
            "-o",
            str(new),
            "--out",
            str(tmp_path / "report"),
        ],
    )
    assert out.exit_code == 0, out.output
    assert "against --into's figure (not measured)" in out.output and "inference GPUs idled" in out.output
    text = new.read_text()
    for field in ("median:", "p99:", "tokens_per_gpu_s:", "intake_rate:", "reference_time:", "sd:", "sigma:"):
        line = next(ln for ln in text.splitlines() if ln.strip().startswith(field))
        assert "# calibrated" in line and "rows" in line, line
    inst = load_instance(new)
    assert inst.uncertainty is not None
    assert {f.name for f in inst.uncertainty.factors} == {"lifetimes", "throughput", "intake", "updates"}
    assert inst.environment.occupancy.median == pytest.approx(1044, rel=0.05)
    assert sorted(p.name for p in (tmp_path / "report").iterdir()) == [
        "calibrate-lifetimes.png",
        "calibrate-survival.png",
        "calibrate-update.png",
        "calibrate.json",
    ]
    for command in (["solve", str(new)], ["explain", str(new), "--json"]):
        result = CliRunner().invoke(main, command)
        assert result.exit_code == 0, result.output
    # risk reads the fitted uncertainty: one sensitivity row per fitted factor.
    risk = CliRunner().invoke(main, ["risk", str(new), "--samples", "500", "--json"])
    assert risk.exit_code == 0, risk.output
    report = json.loads(risk.output)
    assert report["samples"] == 500
    assert {row["name"] for row in report["factors"]} == {"lifetimes", "throughput", "intake", "updates"}


def test_output_needs_into(tmp_path):
    traj, _ = _small()
    write_csv(tmp_path / "t.csv", traj)
    out = CliRunner().invoke(
        main, ["calibrate", "--trajectories", str(tmp_path / "t.csv"), "-o", str(tmp_path / "x.yaml")]
    )
    assert out.exit_code == 2 and "--into" in out.output


def test_backends_fitted_apart_and_their_shares_written(tmp_path):
    """Two backends with different lifetimes: each is fitted on its own rows; the shares go into an
    instance whose backends have the same names."""
    from trainground.models.load import load_instance

    traj, _ = columns(Truth(attempts_per_s=0.5, log_end=20000.0), seed=10)
    rng = np.random.default_rng(10)
    micro = rng.random(traj["start"].size) < 0.3
    life = traj["end"] - traj["start"]
    traj["end"] = np.where(micro & ~np.isnan(life), traj["start"] + 3 * life, traj["end"])  # 3x the median
    traj["end"][traj["end"] > 20000.0] = np.nan
    traj["backend"] = np.where(micro, "microvm", "container").astype(object)
    import pyarrow as pa
    import pyarrow.csv as pcsv

    table = pa.table(
        {k: pa.array(v, mask=np.isnan(v)) if v.dtype.kind == "f" else pa.array(v.tolist()) for k, v in traj.items()}
    )
    pcsv.write_csv(table, tmp_path / "t.csv")
    new = tmp_path / "c.yaml"
    out = CliRunner().invoke(
        main,
        [
            "calibrate",
            "--trajectories",
            str(tmp_path / "t.csv"),
            "--inference-gpus",
            "100",
            "--into",
            str(ROOT / "instances/two-backends-cloud.yaml"),
            "-o",
            str(new),
            "--json",
        ],
    )
    assert out.exit_code == 0, out.output
    cal = json.loads(out.output)
    assert rel(cal["per_backend"]["container"]["median"]["value"], 1044) < 0.06
    assert rel(cal["per_backend"]["microvm"]["median"]["value"], 3 * 1044) < 0.06
    assert cal["backend_shares"]["microvm"] == pytest.approx(0.3, abs=0.02)
    shares = {b.name: b.share for b in load_instance(new).environment.backends}
    assert shares["microvm"] == pytest.approx(cal["backend_shares"]["microvm"], abs=1e-6)
    assert sum(shares.values()) == pytest.approx(1.0, abs=1e-9)
