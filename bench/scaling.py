"""How a solve grows with the instance: inference pools, shapes, cadence grid points, confidence scenarios and
iterations, each varied alone from the seed baseline (instances/seed-week-75.yaml), on each basis:
``steady_state`` (docs/model.md §2-§8) and ``hold`` (§11, the default), the MIP alone on both (the pair table,
bounds, model, HiGHS, verification: under hold its rows count the start-up, one row per training-group count
worth having, E^hold sandboxes and consumed gaps, without the allowance loop's replays); and the ``replays``
axis, a whole hold solve (the allowance loop: its rounds of 16 replays each) against iterations.

    python bench/scaling.py [--repeats 3] [--sections pools shapes grid scenarios iterations replays]
                            [--bases steady_state hold] [--limit-gb 6]

Each size is solved in a fresh Python process (so its peak resident memory is its own) under an address-space
limit (--limit-gb: a size that needs more says "out of memory" instead of swapping the machine) and a time
limit (--limit-s: a size that takes longer says so, and the larger sizes of its axis are not run), in process
there (loading and the solve; imports excluded). Printed per size: the basis, the median wall seconds and CPU
seconds of the repeats, the peak MB, the table's rows (pairs) and the status; per axis and basis, the fitted
growth exponent b of time ≈ a·size^b (least squares on the logs). The first line printed is the load average.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "instances" / "seed-week-75.yaml"


def edits_for(axis: str, size: int) -> list[str]:
    """--set edits that give the seed ``size`` pools, shapes, grid points, scenarios or iterations."""
    if axis == "pools":  # `size` pools of the seed's 10,000 GPUs, one tp8 shape each, prices and speeds apart
        pools = [{"name": f"p{i}", "gpus": 10_000, "gpu_hour_cost": 2.0 + 0.1 * i} for i in range(size)]
        shapes = [
            {"name": f"tp8-p{i}", "pool": f"p{i}", "gpus_per_replica": 8, "tokens_per_gpu_s": 75 + 5 * i}
            for i in range(size)
        ]
        return [f"gpu_pools={json.dumps(pools)}", f"inference.shapes={json.dumps(shapes)}", "training.pool=p0"]
    if axis == "shapes":  # one pool, `size` shapes of 1..8 GPUs per replica
        shapes = [
            {"name": f"s{i}", "pool": "main", "gpus_per_replica": 2 ** (i % 4), "tokens_per_gpu_s": 70 + 3 * i}
            for i in range(size)
        ]
        return [f"inference.shapes={json.dumps(shapes)}"]
    if axis == "grid":  # the cadence grid from 60 s to the deadline pace (604.8 s) in `size` points
        return [f"schedule.cadence.step={(604.8 - 60.0) / (size - 1):.9g}s"]
    if axis == "scenarios":  # a confidence solve at 0.9 over `size` scenarios of the bundled uncertain instance
        return [f"uncertainty.samples={size}", "uncertainty.confidence=0.9"]
    if axis == "iterations":  # `size` iterations in a deadline scaled with them
        return [f"workload.iterations={size}", f"schedule.deadline={604_800 * size // 1000}"]
    raise ValueError(axis)


AXES = {
    "pools": [1, 2, 4, 8],
    "shapes": [1, 2, 4, 8],
    "grid": [100, 1_000, 10_000, 100_000, 1_000_000],
    "scenarios": [100, 1_000, 10_000],
    "iterations": [250, 500, 1_000, 2_000, 4_000],
    "replays": [250, 500, 1_000, 2_000],
}
BASES = ("steady_state", "hold")


def child(file: str, basis: str, whole: bool, edits: list[str]) -> None:
    """One measurement in this fresh process: prints {seconds, cpu, peak_mb, status, rows}; ``whole``: the
    allowance loop of a hold solve (drivers.hold), else the MIP alone (solver.solve)."""
    import resource
    import time

    from trainground.drivers.hold import solve_planned
    from trainground.models.edits import load_edited_checked
    from trainground.solver.solve import solve_instance

    clock, cpu = time.perf_counter(), time.process_time()  # imports excluded
    inst, _ = load_edited_checked(Path(file), [f"planning.basis={basis}", *edits])
    result = solve_planned(inst) if whole else solve_instance(inst)
    seconds, cpu = time.perf_counter() - clock, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rows = (result.model_size or {}).get("pairs")
    rounds = result.hold.rounds if result.hold is not None else None
    print(
        json.dumps(
            {
                "seconds": seconds,
                "cpu": cpu,
                "peak_mb": peak,
                "status": str(result.status),
                "rows": rows,
                "rounds": rounds,
            }
        )
    )


def measure(axis: str, basis: str, size: int, repeats: int, limit_gb: float, limit_s: float) -> dict:
    file = ROOT / "instances" / ("seed-week-75-uncertain.yaml" if axis == "scenarios" else "seed-week-75.yaml")
    runs = []
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    limit = int(limit_gb * (1 << 30))

    def address_space() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    edits = edits_for("iterations" if axis == "replays" else axis, size)
    for _ in range(repeats):
        args = [sys.executable, __file__, "--child", str(file), basis, str(axis == "replays"), *edits]
        try:
            done = subprocess.run(
                args,
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                check=False,
                preexec_fn=address_space,
                timeout=limit_s,
            )
        except subprocess.TimeoutExpired:
            return {
                "seconds": math.nan,
                "cpu": math.nan,
                "peak_mb": math.nan,
                "status": f"over {limit_s:g} s",
                "rows": None,
            }
        if done.returncode != 0:
            memory = "MemoryError" in done.stderr or "Unable to allocate" in done.stderr
            status = f"out of memory ({limit_gb:g} GB)" if memory else f"exit {done.returncode}"
            return {"seconds": math.nan, "cpu": math.nan, "peak_mb": math.nan, "status": status, "rows": None}
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return {
        "seconds": statistics.median(r["seconds"] for r in runs),
        "cpu": statistics.median(r["cpu"] for r in runs),
        "peak_mb": max(r["peak_mb"] for r in runs),
        "status": runs[-1]["status"] + (f", {runs[-1]['rounds']} rounds" if runs[-1].get("rounds") else ""),
        "rows": runs[-1]["rows"],
    }


def growth(sizes: list[int], seconds: list[float]) -> float | None:
    points = [(math.log(s), math.log(t)) for s, t in zip(sizes, seconds) if t > 0 and math.isfinite(t)]
    if len(points) < 2:
        return None
    mx = statistics.mean(x for x, _ in points)
    my = statistics.mean(y for _, y in points)
    return sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x, _ in points)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sections", nargs="+", default=list(AXES), choices=list(AXES))
    parser.add_argument("--bases", nargs="+", default=list(BASES), choices=list(BASES))
    parser.add_argument("--limit-gb", type=float, default=6.0, help="address space of each child, GB")
    parser.add_argument("--limit-s", type=float, default=120.0, help="seconds a size may take before it is cut")
    parser.add_argument("--child", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], args.child[1], args.child[2] == "True", args.child[3:])
        return
    print("load average:", " ".join(Path("/proc/loadavg").read_text().split()[:3]), f"; medians of {args.repeats}")
    print(f"{'axis':<11} {'basis':<13} {'size':>9} {'wall s':>8} {'cpu s':>8} {'peak MB':>8} {'rows':>11}  status")
    for axis in args.sections:
        for basis in ["hold"] if axis == "replays" else args.bases:
            sizes, times = AXES[axis], []
            for size in sizes:
                if times and not math.isfinite(times[-1]):  # a smaller size was cut: a larger one would be too
                    print(f"{axis:<11} {basis:<13} {size:>9,}  (not run: the size before it was cut)", flush=True)
                    times.append(math.nan)
                    continue
                m = measure(axis, basis, size, args.repeats, args.limit_gb, args.limit_s)
                times.append(m["seconds"])
                rows = "" if m["rows"] is None else f"{m['rows']:,}"
                print(
                    f"{axis:<11} {basis:<13} {size:>9,} {m['seconds']:>8.2f} {m['cpu']:>8.2f} {m['peak_mb']:>8.0f} "
                    f"{rows:>11}  {m['status']}",
                    flush=True,
                )
            b = growth(sizes, times)
            fitted = f"time ~ size^{b:.2f}" if b is not None else "n/a"
            print(f"{axis:<11} {basis:<13} growth: {fitted}", flush=True)


if __name__ == "__main__":
    if Path(sys.path[0]).resolve() == ROOT / "bench":
        sys.path[0] = str(ROOT)
    main()
