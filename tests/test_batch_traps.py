"""`batch` stopped or killed: no warnings on stderr after SIGTERM (no leaked worker semaphores), a current
summary.csv even after SIGKILL, and infeasible rows that carry the diagnosis's first fix and unit warnings.

Kills are triggered by the results that have appeared, never by a clock."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from tests.test_known_optima import base
from trainground.drivers.batch import run as driver
from trainground.models.edits import apply_edit
from trainground.models.load import read_document

SEED = Path(__file__).resolve().parents[1] / "instances" / "seed-week-75.yaml"
TRAINGROUND = Path(sys.executable).with_name("trainground")


def variants(folder: Path, count: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        data = apply_edit(read_document(SEED), "inference.shapes[0].tokens_per_gpu_s", 76 + i)
        data.pop("name")
        (folder / f"v{i:02d}.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return folder


def results(out: Path) -> list[Path]:
    return sorted(p for p in out.glob("*.json") if not p.name.startswith("."))


def start(folder: Path, out: Path, workers: int) -> subprocess.Popen:
    argv = [str(TRAINGROUND), "batch", str(folder), "--out", str(out), "--quiet", "--workers", str(workers)]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(condition, proc: subprocess.Popen, timeout: float = 300) -> None:
    end = time.monotonic() + timeout
    while not condition():
        assert proc.poll() is None, "the batch ended before the condition held"
        assert time.monotonic() < end
        time.sleep(0.01)


def held(folder: Path, name: str) -> tuple[Path, threading.Thread]:
    """A named pipe holding the seed instance: the batch reads it once (for its input hash), and a worker
    that opens it after that waits for a writer that never comes, so the batch is certainly still running
    when it is stopped (a test that raced the batch's end failed whenever the batch finished first)."""
    path = folder / name
    os.mkfifo(path)
    text = SEED.read_text()

    def feed() -> None:
        with open(path, "w") as pipe:  # blocks until the batch opens it to hash it
            pipe.write(text)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    return path, writer


def test_sigterm_stops_the_pool_without_warnings(tmp_path):
    folder = variants(tmp_path / "in", 1)  # v00.yaml: solved, its result is the cue to stop
    pipe, writer = held(folder, "v01.yaml")  # its worker waits on the pipe until it is terminated
    out = tmp_path / "out"
    argv = [str(TRAINGROUND), "batch", str(folder / "v00.yaml"), str(pipe), "--out", str(out), "--quiet"]
    proc = subprocess.Popen([*argv, "--workers", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: len(results(out)) >= 1, proc)  # the worker has imported pyomo by now
        writer.join(timeout=60)
        assert not writer.is_alive()  # the batch hashed the pipe's file: its worker is the one waiting
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130
    assert stderr == ""  # e.g. no "resource_tracker: There appear to be 2 leaked semaphore objects"
    assert stdout == ""
    assert [p.name for p in results(out)] == ["v00.json"]


def test_an_interrupt_while_the_last_summaries_are_written_still_writes_them(tmp_path, monkeypatch):
    """A SIGTERM that lands once the results are in, while the summaries are written, is not an error: the
    summaries are written whole (it ended the command with "Aborted!", exit 1, when it landed there)."""
    real, calls = driver.write_summaries, []

    def interrupted_once(*args):
        calls.append(1)
        if len(calls) == 1:
            raise KeyboardInterrupt
        return real(*args)

    def nothing_solved(tasks, call, objective, time_limit, workers):
        yield from ()

    monkeypatch.setattr(driver, "write_summaries", interrupted_once)
    monkeypatch.setattr(driver, "run_local", nothing_solved)
    report = driver.run_batch(driver.plan_tasks([SEED]), tmp_path / "out")
    assert len(calls) == 2 and report.summary_csv.exists()
    assert report.interrupted  # the file was not solved: rerun with --resume to finish


def test_an_interrupt_after_a_result_file_is_written_lists_it_in_the_summary(tmp_path, monkeypatch):
    """A Ctrl-C that lands once a result's file is on disk but before its summary row is made: the summary of
    the interrupted batch lists that file's row too, so every result on disk has its row."""
    monkeypatch.setattr(
        driver,
        "run_local",
        lambda tasks, call, objective, time_limit, workers: (
            (task, call(*driver._arguments(task, objective, time_limit))) for task in tasks
        ),
    )
    real, calls = driver.summary_row, []

    def interrupted_on_the_second(task, payload):
        calls.append(task)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(task, payload)

    monkeypatch.setattr(driver, "summary_row", interrupted_on_the_second)
    out = tmp_path / "out"
    tasks = driver.plan_tasks(sorted(variants(tmp_path / "in", 3).glob("*.yaml")))
    report = driver.run_batch(tasks, out, workers=1, task_function=stand_in)
    assert report.interrupted
    assert [p.name for p in results(out)] == ["v00.json", "v01.json"]
    assert [row["result"] for row in report.rows] == ["v00.json", "v01.json"]
    assert report.tally.done == 2 and report.tally.counts["optimal"] == 2
    with open(out / driver.SUMMARY_CSV, newline="") as handle:
        assert [row["result"] for row in csv.DictReader(handle)] == ["v00.json", "v01.json"]


def test_summary_is_current_after_sigkill(tmp_path):
    out = tmp_path / "out"
    proc = start(variants(tmp_path / "in", 8), out, workers=1)
    try:
        wait_for(lambda: len(results(out)) >= 1 and (out / "summary.csv").exists(), proc)
        proc.kill()
        proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    with open(out / "summary.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    finished = {p.name for p in results(out)}
    assert 1 <= len(rows) < 8
    assert {row["result"] for row in rows} <= finished  # every row's result is on disk, whole
    for row in rows:
        assert row["status"] == "optimal"
        json.loads((out / row["result"]).read_text())


def test_summary_is_rewritten_after_every_result(tmp_path, monkeypatch):
    """When the n-th result is reported, summary.csv already holds the n-1 before it (files "solved" in
    this process by a stand-in: what is checked is how run_batch writes)."""
    monkeypatch.setattr(
        driver,
        "run_local",
        lambda tasks, call, objective, time_limit, workers: (
            (task, call(*driver._arguments(task, objective, time_limit))) for task in tasks
        ),
    )
    out = tmp_path / "out"
    seen: list[int] = []

    def progress(tally) -> None:
        if tally.done:
            with open(out / driver.SUMMARY_CSV, newline="") as handle:
                seen.append(len(list(csv.DictReader(handle))))

    tasks = driver.plan_tasks(sorted(variants(tmp_path / "in", 3).glob("*.yaml")))
    (out / driver.SUMMARY_CSV).parent.mkdir(parents=True)
    (out / driver.SUMMARY_CSV).write_text("file\n")
    driver.run_batch(tasks, out, workers=1, task_function=stand_in, on_progress=progress)
    assert seen == [0, 1, 2]


def stand_in(path, objective=None, time_limit=None, label=None, edits=()) -> dict:
    """What a worker returns for a file, without solving it."""
    return driver._failure(Path(path).stem, "optimal", None, objective, label or path, "hash")


@pytest.mark.parametrize(
    "deadline, expected",
    [
        ("2000s", "feasible with deadline ≥ 0.025 d (2,160 s)"),  # 144 iterations at the shortest cadence, 15 s
        (100, "schedule.deadline: 100 is read as 100 s (under an hour); did you mean 100d?"),
    ],
)
def test_infeasible_rows_carry_the_top_fix_and_unit_warnings(tmp_path, deadline, expected):
    data = apply_edit(base(), "schedule.deadline", deadline)
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "x.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    payload = driver.solve_file(str(folder / "x.yaml"))
    assert payload["status"] == "infeasible"
    row = driver.summary_row(driver.plan_tasks([folder / "x.yaml"])[0], payload)
    assert row["message"].startswith("no plan meets every constraint; ")
    assert expected in row["message"]


def test_an_interrupted_pool_leaves_no_manager_thread_running():
    # A manager thread still running when the interpreter exits races its own teardown and prints
    # "Exception ignored ... Bad file descriptor" after a SIGTERM: the pool's exit must join it.
    with pytest.raises(KeyboardInterrupt):
        with driver._LocalPool(1) as executor:
            future = executor.submit(time.sleep, 60)
            while not future.running():
                time.sleep(0.01)
            raise KeyboardInterrupt
    managers = [t for t in threading.enumerate() if type(t).__name__ == "_ExecutorManagerThread"]
    assert managers == []
