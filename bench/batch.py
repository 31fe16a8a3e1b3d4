"""Batch throughput: seed-variant files solved with 1 and 2 local workers.

    python bench/batch.py [--count 500] [--repeats 5] [--workers 1 2] [--json]

Writes ``count`` variants of instances/seed-week-75.yaml (token rate 76..100 tokens/s/GPU x
sandbox density 900, 910, ... environments per node) into a temporary folder, runs the batch
driver on them (discovery, hashing, worker start, solving, every result file and the
summaries) and prints per worker count the median over the repeats of:

- throughput: instances per second of batch wall time;
- speedup over one worker and parallel efficiency (speedup / workers);
- overhead: (wall time x workers - sum of per-instance solve seconds) / sum of solve seconds,
  where solve seconds are load + build + HiGHS + extract + verify as each worker measured them.

Wall-clock figures need an otherwise idle machine: the first line printed is how much of
n cores a pure-Python spin got just before the runs, and ``load`` is the load average."""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

from trainground.drivers.batch import run as driver
from trainground.models.edits import apply_edit
from trainground.models.load import read_document

SEED = Path(__file__).resolve().parents[1] / "instances" / "seed-week-75.yaml"


def write_variants(folder: Path, count: int) -> None:
    seed = read_document(SEED)
    seed.pop("name", None)
    for i in range(count):
        data = apply_edit(seed, "inference.shapes[0].tokens_per_gpu_s", 76 + i % 25)
        data = apply_edit(data, "environment.node_types[0].density.container", 900 + 10 * (i // 25))
        (folder / f"variant-{i:04d}.yaml").write_text(yaml.safe_dump(data, sort_keys=False))


def _spin(n: int) -> float:
    clock = time.perf_counter()
    total = 0
    for i in range(n):
        total += i * i
    return time.perf_counter() - clock


def cpu_ceiling(workers: int, n: int = 20_000_000) -> float:
    """How many times one busy process's work ``workers`` busy processes do now (other load included)."""
    import multiprocessing

    one = _spin(n)
    with multiprocessing.get_context("spawn").Pool(workers) as pool:
        pool.map(_spin, [1000] * workers)  # start the processes before timing
        clock = time.perf_counter()
        pool.map(_spin, [n] * workers)
        many = time.perf_counter() - clock
    return workers * one / many


def cpu_seconds(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def run_once(inputs: Path, out: Path, workers: int) -> dict:
    parent, children = cpu_seconds(resource.RUSAGE_SELF), cpu_seconds(resource.RUSAGE_CHILDREN)
    clock = time.perf_counter()
    arrivals: list[float] = []
    tasks = driver.plan_tasks(driver.discover([str(inputs)], exclude=out))
    report = driver.run_batch(
        tasks, out, workers=workers, on_progress=lambda tally: arrivals.append(time.perf_counter())
    )
    wall = time.perf_counter() - clock
    solve = sum(row["solve_seconds"] for row in report.rows)
    statuses = {row["status"] for row in report.rows}
    if statuses != {"optimal"} or len(report.rows) != len(tasks):
        raise SystemExit(f"bench inputs must all solve: got {statuses}, {len(report.rows)} of {len(tasks)} rows")
    return {
        "wall": wall,
        "solve": solve,
        "n": len(tasks),
        "load1": os.getloadavg()[0],
        "first": arrivals[1] - clock,
        "parent_cpu": cpu_seconds(resource.RUSAGE_SELF) - parent,
        "worker_cpu": cpu_seconds(resource.RUSAGE_CHILDREN) - children,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--json", action="store_true", help="Also print the raw runs as JSON.")
    args = parser.parse_args(argv)

    runs: dict[int, list[dict]] = {w: [] for w in args.workers}
    with tempfile.TemporaryDirectory(prefix="trainground-bench-") as tmp:
        inputs = Path(tmp) / "in"
        inputs.mkdir()
        write_variants(inputs, args.count)
        ceiling = {w: cpu_ceiling(w) for w in args.workers}
        for repeat in range(args.repeats):
            for workers in args.workers:
                runs[workers].append(run_once(inputs, Path(tmp) / f"out-{workers}-{repeat}", workers))
                last = runs[workers][-1]
                print(
                    f"  repeat {repeat + 1}, {workers} worker(s): {last['wall']:.2f} s wall, "
                    f"{last['solve']:.2f} s solving",
                    file=sys.stderr,
                )

    base = statistics.median(r["wall"] for r in runs[args.workers[0]]) * args.workers[0]
    print(f"{args.count} seed variants, median of {args.repeats} run(s), {os.cpu_count()} cores")
    print(
        f"{'workers':>7} {'wall s':>8} {'inst/s':>8} {'speedup':>8} {'efficiency':>10} {'solve s':>8} "
        f"{'overhead':>9} {'1st result s':>12} {'worker cpu s':>12} {'parent cpu s':>12} {'load':>5}"
    )
    for workers, group in runs.items():
        wall = statistics.median(r["wall"] for r in group)
        speedup = base / wall
        overhead = statistics.median((r["wall"] * workers - r["solve"]) / r["solve"] for r in group)
        median = {
            key: statistics.median(r[key] for r in group)
            for key in ("solve", "first", "worker_cpu", "parent_cpu", "load1")
        }
        print(
            f"{workers:>7} {wall:>8.2f} {args.count / wall:>8.2f} {speedup:>7.2f}x {speedup / workers:>10.1%} "
            f"{median['solve']:>8.2f} {overhead:>9.1%} {median['first']:>12.2f} {median['worker_cpu']:>12.2f} "
            f"{median['parent_cpu']:>12.2f} {median['load1']:>5.2f}"
        )
    print(
        "CPU ceiling before the runs (pure-Python spin, n processes vs one, ideal n): "
        + ", ".join(f"{w} -> {c:.2f}x" for w, c in ceiling.items())
    )
    print(
        "overhead = (wall x workers - solve) / solve; solve = the workers' own load+build+HiGHS+extract+verify"
        " seconds;\n1st result = batch start to first result (worker start-up); load = 1-minute load average"
        " after the run (other processes included)"
    )
    if args.json:
        print(json.dumps(runs, indent=2))


if __name__ == "__main__":
    main()
