"""Benchmark of MODEL §13's cost in the solve: the in-process solve of instances/seed-week-75.yaml under
``--basis steady_state`` with the reliability section `init` writes (commented out) against without it (medians of
``--repeats`` runs, load, build, solve, extract, verify; imports excluded), CPU and wall time, and the
machine's load. Target: reliability on ≤ 1.2× off.

    python bench/goodput.py [--repeats 5]
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
from trainground.models.starter import optional_sections  # noqa: E402
from trainground.solver.solve import solve_instance  # noqa: E402

SEED = ROOT / "instances" / "seed-week-75.yaml"


def timed(data: dict, repeats: int) -> tuple[float, float]:
    """Median wall and CPU seconds of validating and solving ``data`` (a fresh load each run)."""
    walls, cpus = [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        result = solve_instance(validate(data, SEED.name))
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
        assert result.status == "optimal", result.status
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    off = yaml.safe_load(SEED.read_text())
    off["planning"] = {"basis": "steady_state"}
    on = {**off, "reliability": optional_sections()["reliability"]}
    timed(off, 1)  # warm the imports and caches of both paths
    timed(on, 1)
    wall_off, cpu_off = timed(off, args.repeats)
    wall_on, cpu_on = timed(on, args.repeats)
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"reliability off: {wall_off:.3f} s wall, {cpu_off:.3f} s CPU (median of {args.repeats})")
    print(f"reliability on:  {wall_on:.3f} s wall, {cpu_on:.3f} s CPU (median of {args.repeats})")
    print(f"ratio on/off: {wall_on / wall_off:.2f}× wall, {cpu_on / cpu_off:.2f}× CPU")


if __name__ == "__main__":
    main()
