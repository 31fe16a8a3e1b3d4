"""`trainground batch`: one result per file whatever the others do, resumable after a kill, same on Dask.

The inputs are variants of the bundled seed baseline (edits on its raw document, written
as YAML or JSON), invalid files of five kinds and three infeasible instances. Nothing here
asserts on timing: kills are triggered by the results that have appeared, not by a clock.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from trainground.cli import main
from trainground.commands.batch import batch_exit_code
from trainground.drivers.batch import run as driver
from trainground.models.edits import apply_edit
from trainground.models.load import read_document

SEED = Path(__file__).resolve().parents[1] / "instances" / "seed-week-75.yaml"
TRAINGROUND = Path(sys.executable).with_name("trainground")
TIMING_COLUMNS = {"solve_seconds"}


def variant(**edits) -> dict:
    data = read_document(SEED)
    data.pop("name", None)  # each file is named after itself
    for path, value in edits.items():
        data = apply_edit(data, path.replace("__", "."), value)
    return data


def write(path: Path, data: dict | str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_text(data)
    elif path.suffix == ".json":
        path.write_text(json.dumps(data, indent=1))
    else:
        path.write_text(yaml.safe_dump(data, sort_keys=False))


TOKENS = "inference__shapes[0]__tokens_per_gpu_s"
DENSITY = "environment__node_types[0]__density__container"


def build_mixed(root: Path) -> dict[str, str]:
    """20 valid, 5 invalid, 3 infeasible files under ``root``; returns {relative path: expected status}."""
    expect: dict[str, str] = {}
    for i, tokens in enumerate(range(76, 95)):
        edits = {TOKENS: tokens}
        if i % 3 == 1:
            edits["schedule__deadline"] = f"{8 + i % 4}d"
        if i % 4 == 2:
            edits[DENSITY] = 900 + 10 * i
        folder = "valid/a" if i < 10 else "valid/b"
        name = f"v{i % 10:02d}.yaml"  # valid/a/v03.yaml and valid/b/v03.yaml: same name, two folders
        write(root / folder / name, variant(**edits))
        expect[f"{folder}/{name}"] = "optimal"
    write(root / "valid/a/v00.json", variant(**{TOKENS: 96}))  # same stem as valid/a/v00.yaml
    expect["valid/a/v00.json"] = "optimal"

    seed = variant()
    broken = {
        "bad/syntax.yaml": "workload: [iterations: 1000\nschedule: {",
        "bad/empty.yaml": "",
        "bad/no-training.yaml": {k: v for k, v in seed.items() if k != "training"},
        "bad/unknown-pool.yaml": apply_edit(seed, "training.pool", "h100"),
        "bad/negative-rate.json": apply_edit(seed, "inference.shapes[0].tokens_per_gpu_s", -75),
    }
    for rel, data in broken.items():
        write(root / rel, data)
        expect[rel] = "invalid"
    impossible = {
        "infeasible/tiny-pool-one-hour.yaml": {"gpu_pools[0].gpus": 64, "schedule.deadline": "1h"},
        "infeasible/tiny-pool.yaml": {"gpu_pools[0].gpus": 2000},
        "infeasible/two-days.yaml": {"schedule.deadline": "2d"},
    }
    for rel, edits in impossible.items():
        data = seed
        for path, value in edits.items():
            data = apply_edit(data, path, value)
        write(root / rel, data)
        expect[rel] = "infeasible"
    (root / "notes.txt").write_text("not an instance: ignored by the folder walk")
    return expect


def read_summary(out: Path) -> list[dict]:
    with open(out / "summary.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def comparable(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in row.items() if k not in TIMING_COLUMNS} for row in rows]


def result_files(out: Path) -> list[Path]:
    return sorted(p for p in out.rglob("*.json") if not p.name.startswith("."))


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    root = tmp_path_factory.mktemp("mixed")
    expect = build_mixed(root / "in")
    return root, expect


@pytest.fixture(scope="module")
def reference(mixed):
    """An uninterrupted local-pool run over the mixed folder: (exit code, out folder)."""
    root, _ = mixed
    out = root / "reference"
    result = CliRunner().invoke(main, ["batch", str(root / "in"), "--out", str(out), "--workers", "2", "--quiet"])
    return result, out


def test_mixed_folder_gives_one_result_per_file_with_its_status(mixed, reference):
    root, expect = mixed
    result, out = reference
    assert result.exit_code == 2, result.output  # some invalid, no internal error
    rows = read_summary(out)
    files = [str(Path(row["file"]).relative_to(root / "in").as_posix()) for row in rows]
    assert len(files) == len(set(files)) == len(expect) == 28
    assert {f: row["status"] for f, row in zip(files, rows)} == expect
    assert files == sorted(files)  # deterministic input order
    assert len(result_files(out)) == len(expect)
    for row in rows:
        payload = json.loads((out / row["result"]).read_text())
        assert payload["file"] == row["file"] and payload["status"] == row["status"]
        assert set(payload) >= {
            "instance",
            "status",
            "objective",
            "objective_value",
            "plan",
            "metrics",
            "binding",
            "diagnosis",
            "message",
            "input_hash",
        }
        if row["status"] == "optimal":
            assert float(row["objective_value"]) == payload["objective_value"] == payload["plan"]["total_cost"]
            assert int(row["inference_gpus"]) == payload["plan"]["inference_gpus"]
        else:
            assert payload["plan"] is None and row["message"]
    jsonl = [json.loads(line) for line in (out / "summary.jsonl").read_text().splitlines()]
    assert [(r["file"], r["status"]) for r in jsonl] == [(r["file"], r["status"]) for r in rows]


def test_messages_name_the_file_and_the_rule(mixed, reference):
    root, _ = mixed
    rows = {Path(r["file"]).name: r for r in read_summary(reference[1])}
    assert "not valid YAML" in rows["syntax.yaml"]["message"]
    assert "got empty" in rows["empty.yaml"]["message"]
    assert "training: required field is missing" in rows["no-training.yaml"]["message"]
    assert "'h100' is not a gpu_pools name" in rows["unknown-pool.yaml"]["message"]
    assert "tokens_per_gpu_s" in rows["negative-rate.json"]["message"]
    assert rows["unknown-pool.yaml"]["message"].startswith(str(root / "in" / "bad" / "unknown-pool.yaml"))
    diagnosis = json.loads((reference[1] / rows["tiny-pool.yaml"]["result"]).read_text())["diagnosis"]
    first = next(c["change"] for c in diagnosis["changes"] if c["value"] is not None)
    assert rows["tiny-pool.yaml"]["message"] == f"no plan meets every constraint; feasible with {first}"


def test_result_names_mirror_folders_and_keep_colliding_extensions(mixed, reference):
    names = {row["result"] for row in read_summary(reference[1])}
    assert {
        "valid/a/v03.json",
        "valid/b/v03.json",
        "valid/a/v00.yaml.json",
        "valid/a/v00.json.json",
        "bad/syntax.json",
        "infeasible/two-days.json",
    } <= names


def test_exit_code_is_the_most_severe_outcome(tmp_path):
    assert batch_exit_code(Counter(optimal=5)) == 0
    assert batch_exit_code(Counter(optimal=5, time_limit=1)) == 3
    assert batch_exit_code(Counter(infeasible=1, time_limit=1)) == 3
    assert batch_exit_code(Counter(infeasible=1, invalid=1)) == 2
    assert batch_exit_code(Counter(invalid=1, error=1, optimal=3)) == 1
    write(tmp_path / "in" / "ok.yaml", variant(**{TOKENS: 80}))
    write(tmp_path / "in" / "late.yaml", variant(**{"schedule__deadline": "2d"}))
    runner = CliRunner()
    ok = runner.invoke(
        main, ["batch", str(tmp_path / "in" / "ok.yaml"), "--out", str(tmp_path / "o1"), "--workers", "1"]
    )
    assert ok.exit_code == 0, ok.output
    assert "optimal" in ok.output and "summary:" in ok.output
    both = runner.invoke(
        main, ["batch", str(tmp_path / "in"), "--out", str(tmp_path / "o2"), "--workers", "1", "--json"]
    )
    assert both.exit_code == 3, both.output
    report = json.loads(both.output)
    assert report["counts"]["optimal"] == 1 and report["counts"]["infeasible"] == 1 and report["exit_code"] == 3


def test_basis_option_plans_every_file_on_that_basis(tmp_path):
    """--basis is one more edit (planning.basis), as on solve, frontier, compare and sweep (MODEL §11)."""
    out = tmp_path / "out"
    done = CliRunner().invoke(
        main, ["batch", str(SEED), "--out", str(out), "--workers", "1", "--quiet", "--basis", "steady_state"]
    )
    assert done.exit_code == 0, done.output
    result = json.loads((out / "seed-week-75.json").read_text())
    assert result["basis"] == "steady_state" and result.get("hold") is None
    assert result["plan"]["makespan_s"] == 604000.0  # the seed's n·L at its optimal cadence of 604 s


def test_discover_walks_folders_globs_and_files_once(tmp_path):
    for rel in ("a/x.yaml", "a/deep/y.yml", "b/x.toml", "b/z.json", "a/.hidden/h.yaml", "a/skip.txt", "out/r.json"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    found = driver.discover(
        [
            str(tmp_path / "a"),
            str(tmp_path / "b" / "*"),
            str(tmp_path / "a" / "x.yaml"),
            str(tmp_path / "a" / "skip.txt"),
            str(tmp_path),
        ],
        exclude=tmp_path / "out",
    )
    rel = [p.resolve().relative_to(tmp_path.resolve()).as_posix() for p in found]
    assert rel == ["a/deep/y.yml", "a/skip.txt", "a/x.yaml", "b/x.toml", "b/z.json"]
    with pytest.raises(driver.BatchError, match="no instance files match"):
        driver.discover([str(tmp_path / "nothing-*.yaml")])
    with pytest.raises(driver.BatchError, match="inside the output folder"):
        driver.discover([str(tmp_path / "out" / "r.json")], exclude=tmp_path / "out")


def test_input_hash_covers_content_and_options():
    base = driver.input_hash(b"x", None, None)
    assert base == driver.input_hash(b"x", None, None)
    assert (
        len(
            {
                base,
                driver.input_hash(b"y", None, None),
                driver.input_hash(b"x", "makespan", None),
                driver.input_hash(b"x", None, 5.0),
            }
        )
        == 4
    )


def test_solve_file_turns_a_crash_into_an_error_row(tmp_path, monkeypatch):
    import trainground.drivers.hold

    def explode(*args, **kwargs):
        raise RuntimeError("boom\nsecond line")

    write(tmp_path / "x.yaml", variant())
    monkeypatch.setattr(trainground.drivers.hold, "solve_planned", explode)
    payload = driver.solve_file(str(tmp_path / "x.yaml"), None, None, "x.yaml")
    assert payload["status"] == "error" and payload["message"] == "RuntimeError: boom"
    assert payload["instance"] == "x" and payload["file"] == "x.yaml" and payload["plan"] is None
    missing = driver.solve_file(str(tmp_path / "gone.yaml"))
    assert missing["status"] == "invalid" and "cannot read file" in missing["message"]


def die_on_crash_marker(path, objective=None, time_limit=None, label=None, edits=()):
    """A task function whose worker process dies on files named crash*: stands in for a segfault."""
    if Path(path).name.startswith("crash"):
        os._exit(7)
    return driver.solve_file(path, objective, time_limit, label)


def test_a_dying_worker_is_retried_once_then_recorded_and_spares_the_others(tmp_path):
    for i in range(4):
        write(tmp_path / "in" / f"ok{i}.yaml", variant(**{TOKENS: 80 + i}))
    write(tmp_path / "in" / "crash.yaml", variant())
    tasks = driver.plan_tasks(driver.discover([str(tmp_path / "in")]))
    report = driver.run_batch(tasks, tmp_path / "out", workers=2, task_function=die_on_crash_marker)
    statuses = {Path(row["file"]).name: row["status"] for row in report.rows}
    assert statuses == {
        "crash.yaml": "error",
        "ok0.yaml": "optimal",
        "ok1.yaml": "optimal",
        "ok2.yaml": "optimal",
        "ok3.yaml": "optimal",
    }
    crash = next(row for row in report.rows if row["status"] == "error")
    assert "died" in crash["message"]


def test_resume_solves_only_what_changed(tmp_path):
    for i in range(3):
        write(tmp_path / "in" / f"v{i}.yaml", variant(**{TOKENS: 80 + i}))
    out = tmp_path / "out"

    def run(**options):
        tasks = driver.plan_tasks(driver.discover([str(tmp_path / "in")]), options.get("objective"))
        return driver.run_batch(tasks, out, workers=1, **options)

    first = run()
    assert first.tally.reused == 0 and first.tally.done == 3
    again = run(resume=True)
    assert again.tally.reused == 3 and comparable(again.rows) == comparable(first.rows)
    write(tmp_path / "in" / "v1.yaml", variant(**{TOKENS: 90}))
    changed = run(resume=True)
    assert changed.tally.reused == 2 and len(changed.rows) == 3
    other = run(resume=True, objective="hourly_cost")
    assert other.tally.reused == 0 and {row["objective"] for row in other.rows} == {"hourly_cost"}


def test_resume_removes_the_temporary_files_a_killed_run_left(tmp_path):
    """A writer killed by SIGKILL leaves its hidden temporary file (.NAME.XXXXXXXX.tmp) beside the result it
    was writing; --resume removes those, and nothing else that is hidden or ends in .tmp."""
    write(tmp_path / "in" / "v0.yaml", variant(**{TOKENS: 80}))
    out = tmp_path / "out"
    tasks = driver.plan_tasks(driver.discover([str(tmp_path / "in")]))
    driver.run_batch(tasks, out, workers=1)
    result = next(out.rglob("*.json"))
    stale = [result.parent / f".{result.name}.k2x_9QzA.tmp", out / ".summary.csv.a1b2c3d4.tmp"]
    kept = [out / ".keep", out / "notes.tmp", out / ".notes.tmp"]
    for path in stale + kept:
        path.write_text("{")
    driver.run_batch(tasks, out, workers=1, resume=True)
    assert [p for p in stale if p.exists()] == []
    assert all(p.exists() for p in kept)


@pytest.mark.parametrize("kill", [signal.SIGINT, signal.SIGKILL], ids=["SIGINT", "SIGKILL"])
def test_killed_batch_resumes_to_the_uninterrupted_summary(mixed, reference, tmp_path, kill):
    root, expect = mixed
    out = tmp_path / "out"
    argv = [str(TRAINGROUND), "batch", str(root / "in"), "--out", str(out), "--quiet"]
    proc = subprocess.Popen(
        argv + ["--workers", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # even if we ignore it
    try:
        while proc.poll() is None and len(result_files(out)) < 3:
            time.sleep(0.01)
        proc.send_signal(kill)
        proc.communicate(timeout=60)  # returns once every holder of its stdout, workers included, has ended
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == (130 if kill == signal.SIGINT else -signal.SIGKILL)
    partial = result_files(out)
    for path in partial:
        json.loads(path.read_text())  # whole, never truncated
    if kill == signal.SIGINT:  # an interrupted batch still writes the summary of what it finished
        assert 3 <= len(read_summary(out)) < len(expect)
    resumed = CliRunner().invoke(main, [*argv[1:], "--workers", "2", "--resume", "--json"])  # the kill needed a process
    assert resumed.exit_code == 2, resumed.output
    report = json.loads(resumed.stdout)
    assert report["reused"] == len(partial) and report["done"] == len(expect)
    rows = read_summary(out)
    assert comparable(rows) == comparable(read_summary(reference[1]))
    assert len({row["file"] for row in rows}) == len(rows) == len(expect)
    assert len(result_files(out)) == len(expect)
    for path in result_files(out):
        json.loads(path.read_text())
    assert not list(out.rglob(".*.tmp"))  # no half-written file of the killed run is left behind


def test_dask_cluster_gives_the_local_pool_results(mixed, reference, tmp_path):
    distributed = pytest.importorskip("distributed")
    root, _ = mixed
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        result = CliRunner().invoke(
            main,
            [
                "batch",
                str(root / "in"),
                "--out",
                str(tmp_path / "out"),
                "--scheduler",
                cluster.scheduler_address,
                "--quiet",
            ],
        )
    assert result.exit_code == 2, result.output
    local = read_summary(reference[1])
    dask = read_summary(tmp_path / "out")
    assert [(r["file"], r["status"]) for r in dask] == [(r["file"], r["status"]) for r in local]
    for d, loc in zip(dask, local):
        if loc["objective_value"]:
            assert float(d["objective_value"]) == pytest.approx(float(loc["objective_value"]), rel=1e-9)
    assert comparable(dask) == comparable(local)
