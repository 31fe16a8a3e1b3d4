"""calibrate on a two-pool run: tokens/s per GPU fitted per pool, from a pool column or one file
per pool, written into each pool's shapes with its own uncertainty factor; a pooled figure is never written
into the shapes of several pools, and a pool without log rows keeps its own figure."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from tests.calibrate_logs import TwoPools, two_pool_columns, write_table
from trainground.cli import main
from trainground.models.load import load_instance

ROOT = Path(__file__).resolve().parent.parent
TWO_POOLS = ROOT / "instances/logs/two-pools.yaml"
TRUTH = TwoPools(log_end=20000.0)
GPUS = ",".join(f"{p.name}={p.gpus}" for p in TRUTH.pools)


def run(*args: str):
    out = CliRunner().invoke(main, ["calibrate", *args])
    assert out.exit_code == 0, out.output
    return out


@pytest.fixture(scope="module")
def two_pool_log(tmp_path_factory) -> tuple[dict, Path]:
    folder = tmp_path_factory.mktemp("pools")
    cols = two_pool_columns(TRUTH, 11)
    write_table(folder / "t.csv", cols)
    for pool in TRUTH.pools:
        mine = cols["pool"] == pool.name
        write_table(folder / f"{pool.name}.csv", {k: v[mine] for k, v in cols.items() if k != "pool"})
    return cols, folder


def test_each_pool_gets_its_own_tokens_per_gpu_s(two_pool_log):
    _, folder = two_pool_log
    got = json.loads(run("--trajectories", str(folder / "t.csv"), "--inference-gpus", GPUS, "--json").output)
    per_pool = got["tokens_per_gpu_s_per_pool"]
    assert set(per_pool) == {"h100", "a100"}
    for pool in TRUTH.pools:
        fig = per_pool[pool.name]
        assert abs(fig["value"] / pool.tokens_per_gpu_s - 1) < 0.06, (pool, fig)
        assert fig["interval"][0] <= pool.tokens_per_gpu_s <= fig["interval"][1], (pool, fig)
        assert fig["spread"] > 0
    pooled = sum(p.tokens_per_gpu_s * p.gpus for p in TRUTH.pools) / sum(p.gpus for p in TRUTH.pools)
    assert abs(got["tokens_per_gpu_s"]["value"] / pooled - 1) < 0.05  # the pooled 65: right for neither pool
    by_file = json.loads(
        run(
            *(a for p in TRUTH.pools for a in ("--pool", f"{p.name}={folder / (p.name + '.csv')}")),
            "--inference-gpus",
            GPUS,
            "--json",
        ).output
    )
    for name in ("h100", "a100"):
        assert by_file["tokens_per_gpu_s_per_pool"][name]["value"] == pytest.approx(per_pool[name]["value"], rel=1e-9)
    assert by_file["occupancy"]["median"]["value"] == pytest.approx(got["occupancy"]["median"]["value"], rel=1e-9)


def test_the_calibrated_two_pool_instance_has_one_figure_and_one_factor_per_pool(two_pool_log, tmp_path):
    _, folder = two_pool_log
    new = tmp_path / "calibrated.yaml"
    run("--trajectories", str(folder / "t.csv"), "--inference-gpus", GPUS, "--into", str(TWO_POOLS), "-o", str(new))
    inst = load_instance(new)
    rates = {s.pool: s.tokens_per_gpu_s for s in inst.inference.shapes}
    for pool in TRUTH.pools:
        assert abs(rates[pool.name] / pool.tokens_per_gpu_s - 1) < 0.06
    factors = {f.name: f for f in inst.uncertainty.factors}
    assert factors["throughput_h100"].paths == ["inference.shapes[0].tokens_per_gpu_s"]
    assert factors["throughput_a100"].paths == ["inference.shapes[1].tokens_per_gpu_s"]
    report = json.loads(run("--trajectories", str(folder / "t.csv"), "--inference-gpus", GPUS, "--json").output)[
        "tokens_per_gpu_s_per_pool"
    ]
    for pool in ("h100", "a100"):
        fig = report[pool]
        estimate = (fig["interval"][1] - fig["interval"][0]) / (2 * 1.6448536 * fig["value"])
        assert factors[f"throughput_{pool}"].sd == pytest.approx(max(estimate, fig["spread"]), rel=1e-4)
        assert factors[f"throughput_{pool}"].sd > 0.01  # the run's spread, not the 0.x % of the mean's interval
    text = new.read_text()
    assert "pool h100: output tokens / allocated GPU-s" in text and "pool a100: output tokens" in text


def test_a_pooled_figure_is_not_written_into_two_pools(two_pool_log, tmp_path):
    _, folder = two_pool_log
    new = tmp_path / "pooled.yaml"
    out = run(
        "--trajectories", str(folder / "t.csv"), "--inference-gpus", "128", "--into", str(TWO_POOLS), "-o", str(new)
    )
    assert "tokens/s per GPU not written: the log pools the instance's 2 pools" in " ".join(out.output.split())
    before = {s.name: s.tokens_per_gpu_s for s in load_instance(TWO_POOLS).inference.shapes}
    assert {s.name: s.tokens_per_gpu_s for s in load_instance(new).inference.shapes} == before
    assert not any(f.name.startswith("throughput") for f in load_instance(new).uncertainty.factors)


def test_a_pool_without_log_rows_keeps_its_figure(two_pool_log, tmp_path):
    cols, folder = two_pool_log
    new = tmp_path / "one.yaml"
    out = run(
        "--pool",
        f"h100={folder / 'h100.csv'}",
        "--inference-gpus",
        "h100=64",
        "--into",
        str(TWO_POOLS),
        "-o",
        str(new),
    )
    assert "shape a100-tp8 (pool a100) keeps its own tokens/s per GPU" in " ".join(out.output.split())
    shapes = {s.name: s.tokens_per_gpu_s for s in load_instance(new).inference.shapes}
    assert shapes["a100-tp8"] == 70
    assert abs(shapes["h100-tp8"] / 90 - 1) < 0.06
    assert np.sum(cols["pool"] == "h100") > 1000


def test_per_pool_intervals_cover_the_truth_in_most_repetitions():
    from trainground.calibrate.logs import Trajectories
    from trainground.calibrate.throughput import tokens_per_gpu_s

    truth, reps = TwoPools(log_end=8000.0), 40
    covered = {p.name: 0 for p in truth.pools}
    for seed in range(reps):
        cols = two_pool_columns(truth, 200 + seed)
        names, index = np.unique(cols["pool"], return_inverse=True)
        groups = np.unique(cols["group"], return_inverse=True)[1]
        log = Trajectories("m", cols["start"], cols["end"], cols["output_tokens"], truth.log_end)
        log.pools, log.pool, log.group = list(names), index, groups
        _, _, pools = tokens_per_gpu_s(log, None, {p.name: p.gpus for p in truth.pools})
        for p in truth.pools:
            covered[p.name] += pools[p.name].low <= p.tokens_per_gpu_s <= pools[p.name].high
    # a 90 % interval covers in fewer than 32 of 40 repetitions with probability about 1 % (binomial)
    assert min(covered.values()) >= 32, covered
