"""Benchmark of the staged solve (MODEL §12): instances/seed-week-stages.yaml split into 1..8 stages (iterations
split evenly, tokens per attempt from 16k to 48k, lifetimes and update times growing with them, deadline 8 days),
and the bundled file itself (3 stages, 7 days), each solved
in process under ``fixed`` (and ``replan`` with --replan) on the steady_state basis: median wall time of
``--repeats`` solves (validation, build, HiGHS runs of §4's order, extraction, verification), the pairs built,
the model's size, and the machine's load. Goal (issue 23): <= 2 s at 3 stages, growth no worse than linear in
stages × grid points.

    python bench/stages.py [--stages 1,2,3] [--repeats 1] [--replan] [--time-limit 600]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from trainground.models.load import validate  # noqa: E402
from trainground.solver.stages import StagedPlanner  # noqa: E402

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stages", default="1,2,3,4,5,6,7,8")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--replan", action="store_true")
    parser.add_argument("--time-limit", type=float, default=600.0)
    args = parser.parse_args()
    print(f"load before: {' '.join(os.getloadavg().__repr__()[1:-1].split(', '))}")
    print(
        f"{'capacity':<8} {'stages':>6} {'pairs':>6} {'vars':>7} {'rows':>7} {'status':>10} {'wall s':>8} {'highs s':>8}"
    )
    start = time.perf_counter()
    bundled = StagedPlanner(validate(yaml.safe_load(STAGED.read_text()), STAGED.name)).solve(time_limit=args.time_limit)
    print(f"bundled instance (fixed, 3 stages): {bundled.status}, {time.perf_counter() - start:.2f} s", flush=True)
    for capacity in ("fixed", "replan") if args.replan else ("fixed",):
        for count in (int(c) for c in args.stages.split(",")):
            walls, result = [], None
            for _ in range(args.repeats):
                start = time.perf_counter()
                result = StagedPlanner(validate(split(count, capacity), STAGED.name)).solve(time_limit=args.time_limit)
                walls.append(time.perf_counter() - start)
            assert result is not None
            size = result.model_size or {}
            print(
                f"{capacity:<8} {count:>6} {size.get('pairs', 0):>6} {size.get('variables', 0):>7} "
                f"{size.get('rows', 0):>7} {result.status:>10} {statistics.median(walls):>8.2f} "
                f"{result.timings.highs:>8.2f}",
                flush=True,
            )
    print(f"load after: {' '.join(os.getloadavg().__repr__()[1:-1].split(', '))}")


if __name__ == "__main__":
    main()
