"""Sweep cost with and without model reuse: a 1,000-point sweep of the seed baseline.

    python bench/sweep.py [--points 1000] [--rounds 3] [--low 76] [--high 200] [--skip-fresh]

Sweeps ``inference.shapes[0].tokens_per_gpu_s`` of instances/seed-week-75.yaml over
``points`` evenly spaced values from ``low`` to ``high`` tokens/s/GPU, two ways: reusing one
built model across points (``Planner.retarget``) and building a fresh model per point. The two
sweeps alternate for ``rounds`` rounds (reuse first in odd rounds, fresh first in even ones), so
that a slow spell of a shared machine falls on both. Prints, per round and sweep: the median
time per point (validation + build or retarget + solve + extract + verify, as the sweep measures
it), the median share of a point's time spent inside HiGHS (``Result.timings.highs`` / point
time), the sweep's wall time and the number of models built; then, over all rounds, the median
time per point of each sweep, their ratio (fresh / reuse) and each round's ratio.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from trainground.drivers.tradeoffs.sweep import Axis, run_sweep  # noqa: E402

SEED = ROOT / "instances" / "seed-week-75.yaml"
PATH = "inference.shapes[0].tokens_per_gpu_s"


def measure(axis: Axis, reuse: bool) -> dict:
    clock = time.perf_counter()
    report = run_sweep(SEED, [axis], reuse=reuse)
    wall = time.perf_counter() - clock
    rows = report.rows
    per_point = [row["seconds"] for row in rows]
    shares = [row["highs_seconds"] / row["seconds"] for row in rows if row["highs_seconds"] is not None]
    return {
        "points": len(rows),
        "statuses": dict(report.counts),
        "builds": report.builds,
        "median_s": statistics.median(per_point),
        "p90_s": statistics.quantiles(per_point, n=10)[-1] if len(per_point) > 1 else per_point[0],
        "highs_share_median": statistics.median(shares) if shares else float("nan"),
        "highs_share_total": sum(r["highs_seconds"] or 0.0 for r in rows) / sum(per_point),
        "wall_s": wall,
        "values": [row["objective_value"] for row in rows],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--low", type=float, default=76.0)
    parser.add_argument("--high", type=float, default=200.0)
    parser.add_argument("--skip-fresh", action="store_true", help="measure the reusing sweep only")
    args = parser.parse_args()
    step = (args.high - args.low) / max(1, args.points - 1)
    axis = Axis(PATH, tuple(repr(round(args.low + i * step, 9)) for i in range(args.points)))
    print(
        f"{args.points:,}-point sweep of {SEED.name}: {PATH} from {args.low:g} to {args.high:g}, {args.rounds} round(s)"
    )
    modes = ["reuse"] if args.skip_fresh else ["reuse", "fresh"]
    rounds: list[dict[str, dict]] = []
    for number in range(1, args.rounds + 1):
        runs = {}
        for name in modes if number % 2 else modes[::-1]:
            run = runs[name] = measure(axis, reuse=name == "reuse")
            print(
                f"  round {number} {name:5}: median {run['median_s'] * 1e3:6.2f} ms/point (p90 {run['p90_s'] * 1e3:.2f} ms), "
                f"HiGHS share median {run['highs_share_median']:.1%} (of all point time {run['highs_share_total']:.1%}), "
                f"wall {run['wall_s']:.1f} s, model builds {run['builds']:,}, statuses {run['statuses']}"
            )
        rounds.append(runs)
    medians = {name: statistics.median(r[name]["median_s"] for r in rounds) for name in modes}
    walls = {name: statistics.median(r[name]["wall_s"] for r in rounds) for name in modes}
    for name in modes:
        print(f"  {name:5}: median over rounds {medians[name] * 1e3:.2f} ms/point, sweep wall {walls[name]:.1f} s")
    if "fresh" in medians:
        ratios = [r["fresh"]["median_s"] / r["reuse"]["median_s"] for r in rounds]
        agree = all(
            (a is None and b is None) or (a is not None and b is not None and abs(a - b) <= 1e-9 * abs(b))
            for r in rounds
            for a, b in zip(r["reuse"]["values"], r["fresh"]["values"])
        )
        print(
            f"  ratio: a fresh model per point takes {medians['fresh'] / medians['reuse']:.1f}x the median time of a "
            f"reused one (rounds: {', '.join(f'{x:.1f}x' for x in ratios)}); objective values "
            f"{'agree' if agree else 'DIFFER'} point by point"
        )


if __name__ == "__main__":
    main()
