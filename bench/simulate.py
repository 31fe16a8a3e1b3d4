"""Simulation cost: one replication of the seed week, how it scales with iterations, and 10
replications on 2 local workers (MODEL.md §10; target: the seed week in ≤ 5 s, ≤ 1.5 GB).

    python bench/simulate.py [--repeats 3] [--iterations 125 250 500 1000] [--replications 10]
                             [--workers 2] [--json]

The seed baseline's optimal plan (instances/seed-week-75.yaml) is solved once; every measurement
then runs in a fresh Python process, so that its peak resident memory is its own. A measurement
times ``simulate_plan`` alone (setup, replications, figures; not imports, loading or solving) and
prints per case the median over the repeats of:

- wall: seconds of wall-clock time;
- cpu: user + system seconds of that process and of its worker processes (what the load of
  other programs does not inflate);
- peak MB: the largest resident set of the measuring process, and of one of its workers.

The first line printed is the load average: on a shared machine wall-clock figures are
pessimistic, CPU seconds less so."""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "instances" / "seed-week-75.yaml"


def cpu_seconds(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def peak_mb(who: int) -> float:
    return resource.getrusage(who).ru_maxrss / 1024  # kilobytes on Linux


def child(plan_file: str, iterations: int | None, replications: int, workers: int | None) -> dict:
    """One measurement, in this (fresh) process."""
    from trainground.models.load import load_instance
    from trainground.simulation.runner import checked_metrics, read_plan, simulate_plan

    inst = load_instance(SEED)
    plan = read_plan(plan_file)
    metrics = checked_metrics(inst, plan, plan_file)
    cpu0, clock = cpu_seconds(resource.RUSAGE_SELF), time.perf_counter()
    report = simulate_plan(
        inst, plan, metrics=metrics, replications=replications, iterations=iterations, workers=workers
    )
    wall = time.perf_counter() - clock
    cpu = cpu_seconds(resource.RUSAGE_SELF) - cpu0 + cpu_seconds(resource.RUSAGE_CHILDREN)
    attempts = sum(r["attempts_launched"] for r in report.runs)
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "peak_mb": peak_mb(resource.RUSAGE_SELF),
        "worker_peak_mb": peak_mb(resource.RUSAGE_CHILDREN) if workers else None,
        "attempts": attempts,
        "iterations": report.iterations,
        "replications": replications,
        "makespan_s": report.simulated["makespan_s"],
    }


def measure(plan_file: Path, iterations: int | None, replications: int, workers: int | None) -> dict:
    command = [sys.executable, __file__, "--child", str(plan_file), "--replications", str(replications)]
    if iterations is not None:
        command += ["--iterations", str(iterations)]
    if workers:
        command += ["--workers", str(workers)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
    return json.loads(done.stdout)


def median_of(samples: list[dict]) -> dict:
    out = dict(samples[0])
    for key in ("wall_s", "cpu_s", "peak_mb", "worker_peak_mb"):
        values = [s[key] for s in samples if s[key] is not None]
        out[key] = statistics.median(values) if values else None
    out["repeats"] = len(samples)
    return out


def solve_seed(folder: Path) -> Path:
    from trainground.models.load import load_instance
    from trainground.solver.solve import solve_instance

    result = solve_instance(load_instance(SEED))
    path = folder / "seed-plan.json"
    path.write_text(json.dumps(result.to_json()), encoding="utf-8")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--iterations", type=int, nargs="*", default=[125, 250, 500, 1000])
    parser.add_argument("--replications", type=int, default=10)
    parser.add_argument("--workers", type=int, help="workers for the replications (default 2)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        one = args.iterations[0] if len(args.iterations) == 1 else None
        print(json.dumps(child(args.child, one, args.replications, args.workers)))
        return
    args.workers = args.workers or 2
    cases = [(f"seed week, {n:,} iterations, 1 replication", n, 1, None) for n in args.iterations]
    cases.append(
        (
            f"seed week, {args.replications} replications on {args.workers} workers",
            None,
            args.replications,
            args.workers,
        )
    )
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        plan_file = solve_seed(Path(tmp))
        load = os.getloadavg()
        for label, iterations, replications, workers in cases:
            samples = [measure(plan_file, iterations, replications, workers) for _ in range(args.repeats)]
            rows.append({"case": label, **median_of(samples)})
    if args.json:
        print(json.dumps({"load_average": load, "rows": rows}, indent=2))
        return
    print(
        f"load average before the runs: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores; "
        f"medians of {args.repeats} runs"
    )
    print(f"{'case':<48} {'attempts':>11} {'wall s':>7} {'cpu s':>7} {'peak MB':>8} {'worker MB':>9}")
    for row in rows:
        worker = "" if row["worker_peak_mb"] is None else f"{row['worker_peak_mb']:.0f}"
        print(
            f"{row['case']:<48} {row['attempts']:>11,} {row['wall_s']:>7.2f} {row['cpu_s']:>7.2f} "
            f"{row['peak_mb']:>8.0f} {worker:>9}"
        )


if __name__ == "__main__":
    main()
