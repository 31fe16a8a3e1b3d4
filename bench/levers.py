"""Time the levers under the seed baseline's plan (target ≤ 1 s): every limit moved one step and
re-solved on one reused model, as `solve` does after the plan. Median of ROUNDS runs, each a fresh
call (its own reusable model), after the plan itself is solved; the import of pyomo is not counted.

    python bench/levers.py [INSTANCE] [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from trainground.drivers.tradeoffs.levers import levers  # noqa: E402
from trainground.models.load import load_instance  # noqa: E402
from trainground.solver.solve import solve_instance  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("instance", nargs="?", default=str(ROOT / "instances" / "seed-week-75.yaml"))
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    inst = load_instance(Path(args.instance))
    result = solve_instance(inst)
    seconds, found = [], None
    for _ in range(args.rounds):
        start = time.perf_counter()
        found = levers(inst, result)
        seconds.append(time.perf_counter() - start)
    print(f"levers of {inst.name}: {len(found.items)} levers, {found.solves} re-solves per call, {args.rounds} rounds")
    print(
        f"  median {statistics.median(seconds):.3f} s (min {min(seconds):.3f}, max {max(seconds):.3f}); "
        f"target ≤ 1 s on the seed baseline"
    )
    print(
        f"  per re-solve: median {statistics.median(seconds) / found.solves * 1000:.1f} ms; "
        f"1-minute load average after the runs {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )


if __name__ == "__main__":
    main()
