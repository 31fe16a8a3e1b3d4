"""Benchmark of MODEL §13's cost in the solve: the in-process solve of instances/seed-week-75.yaml under
``--basis steady_state`` with the reliability section `init` writes (commented out) against without it (medians of
``--repeats`` runs, load, build, solve, extract, verify; imports excluded), CPU and wall time, and the
machine's load. Target: reliability on ≤ 1.2× off.

``--replays``: one replay (``record=False``, as the hold loop runs it) of the cheapest steady_state plan of
instances/seed-week-spot.yaml with MODEL §13's injection against the same replay without it (medians).
``--hold``: the default (hold) solve of instances/seed-week-spot.yaml against the same file without its
``reliability`` section and preemptions, once each (minutes: the hold loop's replays dominate).

    python bench/goodput.py [--repeats 5] [--replays] [--hold]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from trainground.drivers.hold import solve_planned  # noqa: E402
from trainground.models.load import validate  # noqa: E402
from trainground.models.starter import optional_sections  # noqa: E402
from trainground.simulation.engine import replicate  # noqa: E402
from trainground.simulation.runner import checked_metrics, seed_for  # noqa: E402
from trainground.simulation.setup import setup_of  # noqa: E402
from trainground.solver.solve import solve_instance  # noqa: E402

SEED = ROOT / "instances" / "seed-week-75.yaml"
SPOT = ROOT / "instances" / "seed-week-spot.yaml"


def _spot(with_failures: bool) -> dict:
    data = yaml.safe_load(SPOT.read_text())
    if not with_failures:
        data.pop("reliability")
        for pool in data["gpu_pools"]:
            pool.pop("preemptions_per_hour", None)
    return data


def replay_times(repeats: int) -> None:
    data = {**_spot(True), "planning": {"basis": "steady_state"}}
    inst = validate(data, SPOT.name)
    plan = solve_instance(inst).plan
    on = setup_of(inst, plan, checked_metrics(inst, plan, SPOT.name))
    off = dataclasses.replace(on, failures=None)
    medians = {}
    for name, setup in (("off", off), ("on", on)):
        walls = []
        for r in range(repeats):
            wall = time.perf_counter()
            replicate(setup, seed_for(0, r), record=False)
            walls.append(time.perf_counter() - wall)
        medians[name] = statistics.median(walls)
    print(
        f"one replay of {SPOT.name}'s steady_state plan: injection off {medians['off']:.2f} s, on {medians['on']:.2f} s"
    )
    print(f"ratio on/off: {medians['on'] / medians['off']:.2f}× wall (median of {repeats})")


def hold_times() -> None:
    for name, data in (("off", _spot(False)), ("on", _spot(True))):
        wall = time.perf_counter()
        result = solve_planned(validate(data, SPOT.name))
        print(f"hold solve, reliability {name}: {time.perf_counter() - wall:.1f} s wall, status {result.status}")


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
    parser.add_argument("--replays", action="store_true")
    parser.add_argument("--hold", action="store_true")
    args = parser.parse_args()
    if args.replays or args.hold:
        print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        if args.replays:
            replay_times(args.repeats)
        if args.hold:
            hold_times()
        return
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
