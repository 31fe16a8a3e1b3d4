"""Whole commands on a fine grid and on a re-planned staged run: wall time, peak memory and exit code of each.

    python bench/fine_and_replan.py [--trainground PATH] [--timeout 600] [--time-limit 300] [--only NAME,...]

The cases, each a fresh `trainground` process under `/usr/bin/time -v` (killed after ``--timeout`` seconds):

- ``frontier-0.01s``, ``frontier-0.001s``: `frontier` on instances/seed-week-75.yaml with `schedule.cadence.step`
  at 0.01 s and 0.001 s (its default basis, hold; the default resolution);
- ``solve-replan-600``: `solve` on the seed with 600 iterations in three stages of 200 (16k, 24k and 36k tokens per
  attempt) under `capacity: replan`, `switch_time: 30m` (its default basis, hold: about 38,900 stage pairs);
- ``frontier-replan-8d``, ``sweep-replan-8d``: `frontier` and a two-point `sweep` (`objective=total_cost,hourly_cost`)
  on instances/seed-week-stages.yaml re-planned in three stages (334, 333, 333 iterations at 16k, 24k and 36k tokens)
  with an 8-day deadline, each with ``--time-limit``.

Each line: the exit code, wall and CPU seconds, peak resident memory and the last line of standard error.
``--trainground``: the executable to time (another checkout's, for a before and after); the machine's load is
printed before and after.
"""

from __future__ import annotations

import argparse
import copy
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "instances" / "seed-week-75.yaml"
STAGED = ROOT / "instances" / "seed-week-stages.yaml"
GROWING = [16384, 24576, 36864]  # tokens per attempt of the three stages


def replan_600() -> dict:
    """The seed with 600 iterations in three re-planned stages of 200."""
    data = yaml.safe_load(SEED.read_text())
    data["name"] = "seed-replan-600"
    data["workload"]["iterations"] = 600
    stages = [{"name": n, "iterations": 200, "tokens_per_attempt": t} for n, t in zip("abc", GROWING)]
    data["stages"] = {"capacity": "replan", "switch_time": "30m", "list": stages}
    return data


def replan_8d() -> dict:
    """The bundled staged week re-planned in three stages, with an 8-day deadline."""
    data = copy.deepcopy(yaml.safe_load(STAGED.read_text()))
    data["name"] = "seed-stages-replan-8d"
    data["schedule"]["deadline"] = "8d"
    stages = [{"name": n, "iterations": i, "tokens_per_attempt": t} for n, i, t in zip("abc", (334, 333, 333), GROWING)]
    data["stages"] = {"capacity": "replan", "switch_time": "30m", "list": stages}
    return data


def cases(folder: Path, time_limit: float) -> dict[str, list[str]]:
    (folder / "replan-600.yaml").write_text(yaml.safe_dump(replan_600(), sort_keys=False))
    (folder / "replan-8d.yaml").write_text(yaml.safe_dump(replan_8d(), sort_keys=False))
    limit = ["--time-limit", str(time_limit)]
    return {
        "frontier-0.01s": ["frontier", str(SEED), "--set", "schedule.cadence.step=0.01s", *limit],
        "frontier-0.001s": ["frontier", str(SEED), "--set", "schedule.cadence.step=0.001s", *limit],
        "solve-replan-600": ["solve", str(folder / "replan-600.yaml")],
        "frontier-replan-8d": ["frontier", str(folder / "replan-8d.yaml"), *limit],
        "sweep-replan-8d": [
            "sweep",
            str(folder / "replan-8d.yaml"),
            "--set",
            "objective=total_cost,hourly_cost",
            *limit,
        ],
    }


def timed(command: list[str], out: Path, timeout: float) -> tuple[str, float, float, float, str]:
    """(exit code or 'killed', wall s, CPU s, peak MB, last line of stderr) of ``command`` run in ``out``."""
    start = time.perf_counter()
    run = subprocess.Popen(
        ["/usr/bin/time", "-v", *command],
        cwd=out,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, so that a timeout ends the command itself too
    )
    try:
        _, stderr = run.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(run.pid, signal.SIGKILL)
        run.communicate()
        return "killed", time.perf_counter() - start, float("nan"), float("nan"), ""
    wall = time.perf_counter() - start
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", stderr)
    mine = [line for line in stderr.splitlines() if line.strip() and not line.startswith("\t")]
    cpu = sum(float(x) for x in re.findall(r"(?:User|System) time \(seconds\): ([\d.]+)", stderr))
    mb = int(peak.group(1)) / 1024 if peak else float("nan")
    return str(run.returncode), wall, cpu, mb, mine[-1] if mine else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = Path(sys.executable).with_name("trainground")  # this interpreter's venv
    parser.add_argument("--trainground", default=str(here) if here.exists() else shutil.which("trainground"))
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--time-limit", type=float, default=300.0)
    parser.add_argument("--only", default="", help="comma-separated case names")
    args = parser.parse_args()
    print(f"load before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name, command in cases(folder, args.time_limit).items():
            if args.only and name not in args.only.split(","):
                continue
            out = folder / name
            out.mkdir()
            if command[0] != "solve":
                command = [*command, "--out", str(out)]
            code, wall, cpu, peak, last = timed([args.trainground, *command], out, args.timeout)
            print(
                f"{name:20} exit {code:>6}  {wall:7.1f} s wall  {cpu:7.1f} s CPU  {peak:7.0f} MB  {last[:80]}",
                flush=True,
            )
    print(f"load after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
