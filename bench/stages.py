"""Benchmark of the staged solve (MODEL §12): the bundled instances/seed-week-stages.yaml (3 stages, 7 days) as a
whole command (`trainground solve`, a fresh process: imports, load, solve, verification, output; median wall
and CPU time of ``--repeats``), on its steady_state basis and with ``--basis hold`` (the allowance loop's
replays included, ``--hold``); then the instance split into 1..8 stages (iterations split evenly, tokens per
attempt from 16k to 48k, lifetimes and update times growing with them, deadline 8 days), each solved in
process under ``fixed`` (and ``replan`` for the counts --replan lists) on the steady_state basis: median wall time of
``--repeats`` solves (validation, build, HiGHS runs, extraction, verification), the pairs built, the model's
size and HiGHS runs, and the machine's load. Goal: <= 2 s whole command at 3 stages, growth no
worse than linear in stages × grid points.

    python bench/stages.py [--stages 1,2,3] [--repeats 1] [--replan 1,2] [--hold] [--time-limit 600]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from trainground.models.load import validate  # noqa: E402
from trainground.solver.stages.solve import StagedPlanner  # noqa: E402

STAGED = ROOT / "instances" / "seed-week-stages.yaml"


def split(count: int, capacity: str) -> dict:
    """The staged seed with ``count`` stages between the bundled instance's first and last."""
    data = yaml.safe_load(STAGED.read_text())
    n = data["workload"]["iterations"]
    sizes = [n // count] * count
    sizes[-1] += n - sum(sizes)
    stages = []
    for i, size in enumerate(sizes):
        f = i / (count - 1) if count > 1 else 0.5
        stages.append(
            {
                "name": f"s{i + 1}",
                "iterations": size,
                "tokens_per_attempt": round(16384 + f * (49152 - 16384)),
                "update_time_scale": 1 + 0.5 * f,
                "occupancy": {"distribution": "lognormal", "median": 700 + 800 * f, "p99": 9000 + 11000 * f},
            }
        )
    data["schedule"]["deadline"] = "8d"  # an even split puts more iterations on the longest responses than the file
    data["stages"] = {"capacity": capacity, "switch_time": 1800 if capacity == "replan" else 0, "list": stages}
    return data


def whole_command(basis: str, repeats: int) -> tuple[float, float]:
    """Median wall and CPU seconds of `trainground solve` on the bundled staged instance in a fresh process."""
    walls, cpus = [], []
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, str(ROOT / "cli.py"), "solve", str(STAGED), "--basis", basis, "--json"],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stages", default="1,2,3,4,5,6,7,8")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--replan", default="", metavar="1,2,3", help="stage counts also solved under replan")
    parser.add_argument("--hold", action="store_true", help="also the whole command on the hold basis")
    parser.add_argument("--time-limit", type=float, default=600.0)
    args = parser.parse_args()
    print(f"load before: {' '.join(os.getloadavg().__repr__()[1:-1].split(', '))}")
    for basis in ("steady_state", "hold") if args.hold else ("steady_state",):
        wall, cpu = whole_command(basis, args.repeats)
        print(
            f"whole command, bundled instance (fixed, 3 stages, {basis}): {wall:.2f} s wall, {cpu:.2f} s CPU",
            flush=True,
        )
    print(
        f"{'capacity':<8} {'stages':>6} {'pairs':>6} {'vars':>7} {'rows':>7} {'runs':>5} {'status':>10} "
        f"{'wall s':>8} {'highs s':>8}"
    )
    series = [("fixed", args.stages)] + ([("replan", args.replan)] if args.replan else [])
    for capacity, counts in series:
        for count in (int(c) for c in counts.split(",")):
            walls, result = [], None
            for _ in range(args.repeats):
                start = time.perf_counter()
                result = StagedPlanner(validate(split(count, capacity), STAGED.name)).solve(time_limit=args.time_limit)
                walls.append(time.perf_counter() - start)
            assert result is not None
            size = result.model_size or {}
            print(
                f"{capacity:<8} {count:>6} {size.get('pairs', 0):>6} {size.get('variables', 0):>7} "
                f"{size.get('rows', 0):>7} {size.get('compact_runs', 0) or '-':>5} {result.status:>10} "
                f"{statistics.median(walls):>8.2f} "
                f"{result.timings.highs:>8.2f}",
                flush=True,
            )
    print(f"load after: {' '.join(os.getloadavg().__repr__()[1:-1].split(', '))}")


if __name__ == "__main__":
    main()
