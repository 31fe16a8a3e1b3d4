"""Run regimes (MODEL.md §14): what the comparison of regimes costs, and whether each regime's plan holds.

    python bench/regimes.py [--sections timing acceptance] [--repeats 3] [--replications 20] [--seed 1000]

timing: the whole `trainground regimes FILE --basis B --json` command (the default list of regimes), for each
instance below on each basis, ``--repeats`` runs in fresh processes (imports, loading, every row's solve and,
under hold, its replays): the median wall-clock seconds, the rows with a plan, and the ratio hold / steady_state.

acceptance: for each batch regime (colocated, pipelined k = 0 on either basis, pipelined k = 1 on steady_state),
async drop on hold with in-flight updates and with a filtered one-hour timeout (the seed week), and admission on hold (k = 8 on the seed week with a one-hour timeout; AReaL's run at k = 8 and at k = 1, where the
slots bind), the plan `solve` prints for a bundled instance with that regime, replayed by `simulate --plan PLAN
--replications R --seed S` (seeds the allowance was not set on): the on-time count, the replays' mean makespan
beside the plan's, their mean iteration beside the plan's cadence (within 1 % when the plan's binding regime row
has little slack), the consumed gap (mean and p99) beside the model's, and the allowance loop's rounds.
The first line printed is the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIMED = [
    ("instances/seed-week-75.yaml", []),
    ("instances/regimes/seed-pipelined-60d.yaml", []),
    ("instances/regimes/areal-1.5b-128gpus.yaml", []),
]
LONG = ["--set", "schedule.deadline=60d", "--set", "schedule.cadence.step=10s"]
AREAL_ADMISSION = [
    "--set",
    "regime={mode: async, staleness: admission, steps_ahead: 8, in_flight_updates: true, rollout_timeout: 553s}",
]
ACCEPTANCE = [
    ("colocated, hold", "instances/regimes/seed-week-colocated.yaml", [*LONG, "--basis", "hold"]),
    (
        "pipelined k=0, hold",
        "instances/regimes/seed-pipelined-60d.yaml",
        ["--set", "regime.steps_ahead=0", "--basis", "hold"],
    ),
    ("pipelined k=1, steady_state", "instances/regimes/seed-pipelined-60d.yaml", ["--basis", "steady_state"]),
    (
        "colocated (AReaL 1.5B), hold",
        "instances/regimes/areal-1.5b-128gpus.yaml",
        ["--set", "regime.mode=colocated", "--set", "regime.steps_ahead=null", "--basis", "hold"],
    ),
    ("admission k=8 (seed week, 1 h timeout), hold", "instances/regimes/seed-week-admission-8-timeout.yaml", []),
    ("async drop, in-flight updates (seed week), hold", "instances/regimes/seed-week-inflight.yaml", []),
    ("async drop, 1 h timeout filtered (seed week), hold", "instances/regimes/seed-week-timeout-filter.yaml", []),
    (
        "admission k=8 (AReaL 1.5B), hold",
        "instances/regimes/areal-1.5b-128gpus.yaml",
        [*AREAL_ADMISSION, "--basis", "hold"],
    ),
    (
        "admission k=1 (AReaL 1.5B), hold",
        "instances/regimes/areal-1.5b-128gpus.yaml",
        [*AREAL_ADMISSION, "--set", "regime.steps_ahead=1", "--basis", "hold"],
    ),
]


def trainground(*args: str) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "trainground.cli", *args], cwd=ROOT, capture_output=True, text=True, check=False
    )
    return time.perf_counter() - start, done


def timing(repeats: int) -> None:
    print("regimes (default list): median wall s of", repeats, "runs; rows with a plan; hold / steady_state")
    for file, extra in TIMED:
        walls = {}
        for basis in ("steady_state", "hold"):
            seconds, rows = [], None
            for _ in range(repeats):
                wall, done = trainground("regimes", file, "--basis", basis, "--json", *extra)
                seconds.append(wall)
                found = json.loads(done.stdout)["rows"]
                rows = sum(r["status"] == "optimal" for r in found)
            walls[basis] = statistics.median(seconds)
            print(f"  {file} [{basis}]: {walls[basis]:.2f} s, {rows} rows with a plan")
        print(f"  {file}: hold / steady_state = {walls['hold'] / walls['steady_state']:.2f}")


def acceptance(replications: int, seed: int, only: str | None = None) -> None:
    print(f"acceptance: {replications} fresh replays (seed {seed}) of each regime's printed plan")
    for label, file, extra in ACCEPTANCE:
        if only is not None and only not in label:
            continue
        _, solved = trainground("solve", file, "--no-levers", "--json", *extra)
        result = json.loads(solved.stdout)
        if result.get("plan") is None:
            print(f"  {label}: {result['status']}, no plan")
            continue
        with tempfile.TemporaryDirectory() as folder:
            plan = Path(folder) / "plan.json"
            plan.write_text(solved.stdout)
            args = ["simulate", file, "--plan", str(plan), "--replications", str(replications), "--seed", str(seed)]
            _, replay = trainground(*args, "--json", *extra)
        report = json.loads(replay.stdout)
        if "figures" not in report:  # an async drop run: the §10 engine's report
            engine_line(label, result, report)
            continue
        figures = report["figures"]
        iteration = figures["iteration_mean_s"]
        cadence = result["plan"]["cadence_s"]
        slack = 1 - iteration["simulated"] / cadence
        hold = result.get("hold") or {}
        spans = report["makespans_s"]
        gap, p99 = figures["consumed_mean_gap"], figures["consumed_p99_gap"]
        print(
            f"  {label}: on time {report['on_time']} of {report['replications']}; makespan planned "
            f"{result['plan']['makespan_s']:,.0f} s, replayed {statistics.mean(spans):,.0f} s (max {max(spans):,.0f}, "
            f"deadline {report['deadline_s']:,.0f}); cadence {cadence:g} s, replayed iteration "
            f"{iteration['simulated']:.1f} s ({slack:+.2%} under it); allowance {hold.get('allowance_s', 0.0):g} s in "
            f"{hold.get('rounds', 0)} round(s); slowest model {figures['slowest_attempt_s']['model']:.1f} s, replayed "
            f"{figures['slowest_attempt_s']['simulated']:.1f} s; consumed gap model {gap['model']:.2f} / p99 "
            f"{p99['model']:g}, replayed {gap['simulated']:.2f} / {p99['simulated']:g}"
        )


def engine_line(label: str, result: dict, report: dict) -> None:
    """One acceptance line from `simulate`'s §10 report (an async drop run): on-time count, makespans, iteration,
    the sandbox waits against planning.sandbox_wait and the consumed gap beside the model's."""
    runs, sim, model = report["runs"], report["simulated"], report["predicted"]
    spans = [run["makespan_s"] for run in runs]
    on_time = sum(bool(run["on_time"]) for run in runs)
    cadence = result["plan"]["cadence_s"]
    hold = result.get("hold") or {}
    waits = sorted(run["sandbox_wait_share"] for run in runs)
    print(
        f"  {label}: on time {on_time} of {len(runs)}; makespan planned {result['plan']['makespan_s']:,.0f} s, "
        f"replayed {statistics.mean(spans):,.0f} s (max {max(spans):,.0f}, deadline {report['deadline_s']:,.0f}); "
        f"cadence {cadence:g} s, replayed iteration {sim['iteration_mean_s']:.1f} s "
        f"({1 - sim['iteration_mean_s'] / cadence:+.2%} under it); allowance {hold.get('allowance_s', 0.0):g} s in "
        f"{hold.get('rounds', 0)} round(s); sandbox waits median {statistics.median(waits):.2%}, max "
        f"{max(waits):.2%} (limit {report['sandbox_wait'] or 0.0:.2%}); consumed gap model "
        f"{result['metrics'].get('consumed_mean_gap') or model['mean_version_gap']:.2f}, replayed "
        f"{sim['mean_version_gap']:.2f} / p99 {sim['p99_version_gap']:g}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sections", nargs="+", default=["timing", "acceptance"], choices=["timing", "acceptance"])
    parser.add_argument("--only", help="acceptance: the entries whose label contains this text")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--replications", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1000)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    if "timing" in args.sections:
        timing(args.repeats)
    if "acceptance" in args.sections:
        acceptance(args.replications, args.seed, args.only)


if __name__ == "__main__":
    main()
