"""Sweep cost with and without model reuse: a 1,000-point sweep of the seed baseline.

    python bench/sweep.py [--points 1000] [--slices 10] [--low 76] [--high 200] [--skip-fresh]

Sweeps ``inference.shapes[0].tokens_per_gpu_s`` of instances/seed-week-75.yaml over
``points`` evenly spaced values from ``low`` to ``high`` tokens/s/GPU.

1. The whole sweep once, reusing one built model across points (``Planner.retarget``): its
   wall time, models built, median time per point (validation + retarget + solve + extract +
   verify, as the sweep measures it) and the share of a point's time spent inside HiGHS
   (``Result.timings.highs`` / point time).
2. Reuse against a fresh model per point, interleaved: the values are cut into ``slices``
   slices (every ``slices``-th value), and each slice is swept twice back to back, reusing one
   model and building a fresh model per point (which goes first alternates), so that a slow
   spell of a shared machine falls on both. Prints the median time per point of each over all
   points, their ratio (fresh / reuse), the range of the slices' ratios, and whether the
   objective values agree point by point.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from solver.sweep import Axis, run_sweep  # noqa: E402

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
        "times": per_point,
        "values": [row["objective_value"] for row in rows],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=1000)
    parser.add_argument("--slices", type=int, default=10)
    parser.add_argument("--low", type=float, default=76.0)
    parser.add_argument("--high", type=float, default=200.0)
    parser.add_argument("--skip-fresh", action="store_true", help="measure the whole reusing sweep only")
    args = parser.parse_args()
    step = (args.high - args.low) / max(1, args.points - 1)
    texts = tuple(repr(round(args.low + i * step, 9)) for i in range(args.points))
    print(f"{args.points:,}-point sweep of {SEED.name}: {PATH} from {args.low:g} to {args.high:g}")
    whole = measure(Axis(PATH, texts), reuse=True)
    print(f"  whole sweep, reuse: wall {whole['wall_s']:.1f} s, model builds {whole['builds']:,}, "
          f"median {whole['median_s'] * 1e3:.2f} ms/point (p90 {whole['p90_s'] * 1e3:.2f} ms), "
          f"HiGHS share median {whole['highs_share_median']:.1%} (of all point time {whole['highs_share_total']:.1%}), "
          f"statuses {whole['statuses']}")
    if args.skip_fresh:
        return
    times: dict[str, list[float]] = {"reuse": [], "fresh": []}
    shares: dict[str, list[float]] = {"reuse": [], "fresh": []}
    ratios, agree = [], True
    for k in range(args.slices):
        axis = Axis(PATH, texts[k::args.slices])
        runs = {}
        for name in (("reuse", "fresh") if k % 2 == 0 else ("fresh", "reuse")):
            runs[name] = measure(axis, reuse=name == "reuse")
            times[name] += runs[name]["times"]
            shares[name].append(runs[name]["highs_share_total"])
        ratios.append(runs["fresh"]["median_s"] / runs["reuse"]["median_s"])
        agree &= all((a is None and b is None) or (a is not None and b is not None and abs(a - b) <= 1e-9 * abs(b))
                     for a, b in zip(runs["reuse"]["values"], runs["fresh"]["values"]))
    medians = {name: statistics.median(values) for name, values in times.items()}
    print(f"  interleaved, {args.slices} slices of {len(texts[::args.slices])} points, each swept both ways:")
    for name in ("reuse", "fresh"):
        print(f"    {name}: median {medians[name] * 1e3:.2f} ms/point, HiGHS share of point time "
              f"{statistics.median(shares[name]):.1%}")
    print(f"  ratio: a fresh model per point takes {medians['fresh'] / medians['reuse']:.1f}x the median time of a "
          f"reused one (slices {min(ratios):.1f}x to {max(ratios):.1f}x); objective values "
          f"{'agree' if agree else 'DIFFER'} point by point")


if __name__ == "__main__":
    main()
