"""Writes bench/data/whatif-large.yaml: the large what-if — 24 inference shapes over 6 GPU
pools, 8 sandbox node types, 5 cloud VM types, a cadence grid in 0.05 s steps and up to 32 resident
versions — deterministic, so benchmarks and tests read the same file. With ``--measure``, also runs
`trainground solve` on it with ``--time-limit`` (default 30 s) ``--measure`` times and prints, per run
and as medians, the whole command's wall time, its peak memory (maximum resident set, from
/usr/bin/time) and the status it ended with. Target: within 35 s and under 2 GB.

    python bench/whatif.py [--measure 3] [--time-limit 30]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import yaml

OUT = Path(__file__).resolve().parent / "data" / "whatif-large.yaml"


def instance() -> dict:
    pools = [{"name": f"pool{i}", "gpus": 2000 + 1500 * i, "gpu_hour_cost": round(1.4 + 0.45 * i, 2)} for i in range(6)]
    shapes = []
    for i in range(24):
        pool = pools[i % 6]["name"]
        tp = (1, 2, 4, 8)[i // 6]
        shapes.append(
            {
                "name": f"{pool}-tp{tp}",
                "pool": pool,
                "gpus_per_replica": tp,
                "tokens_per_gpu_s": round(40 + 9 * (i % 6) + 6 * (i // 6), 1),
                "version_slowdown": round(0.004 + 0.002 * (i % 4), 3),
            }
        )
    nodes = []
    for k in range(8):
        density = {"container": 600 + 350 * k}
        if k % 2 == 0:
            density["microvm"] = 200 + 120 * k
        if k % 3 == 0:
            density["gpu-sim"] = 40 + 10 * k
        nodes.append(
            {
                "name": f"node{k}",
                "cores": 96 + 32 * (k % 4),
                "memory_gb": 768 + 256 * (k % 5),
                "density": density,
                "hour_cost": round(6 + 1.7 * k, 2),
                **({"max_nodes": 30 + 5 * k} if k % 2 else {}),
            }
        )
    vms = []
    for v in range(5):
        density = {"container": 48 * (v + 1)}
        if v % 2 == 0:
            density["microvm"] = 10 * (v + 1)
        vms.append(
            {
                "name": f"vm{v}",
                "density": density,
                "cores": 16 * (v + 1),
                "memory_gb": 64 * (v + 1),
                "hour_cost": round(0.8 * (v + 1), 2),
                "billed_fraction": 0.25,
                **({"max_vms": 300} if v < 3 else {}),
            }
        )
    return {
        "schema_version": 1,
        "name": "whatif-large",
        "workload": {
            "iterations": 1000,
            "batch_trajectories": 4096,
            "group_size": 8,
            "tokens_per_attempt": 32768,
            "intake_rate": 0.9,
        },
        "schedule": {"deadline": "7d", "extra_time": "2h", "cadence": {"min": "100s", "step": "0.05s"}},
        "gpu_pools": pools,
        "inference": {"availability": 0.95, "shapes": shapes},
        "training": {
            "pool": "pool5",
            "gpus_per_group": 16,
            "update_time": {"law": "amdahl", "reference_gpus": 6000, "reference_time": "280s", "serial_fraction": 0.05},
        },
        "environment": {
            "occupancy": {"distribution": "lognormal", "median": "1044s", "p99": "13900s"},
            "backends": [
                {"name": "container", "share": 0.6, "cores": 0.05, "memory_gb": 0.4},
                {"name": "microvm", "share": 0.3, "cores": 0.2, "memory_gb": 1.5},
                {"name": "gpu-sim", "share": 0.1, "cores": 1.0},
            ],
            "node_types": nodes,
            "utilisation_cap": 0.8,
            "peak_to_mean": 1.6,
            "cloud": {"eligible_share": {"container": 0.6, "microvm": 0.3}, "vm_types": vms},
        },
        "freshness": {"max_versions_kept": 32, "max_exceedance": 0.25},
        "objective": "total_cost",
    }


def measure(runs: int, time_limit: float) -> None:
    root = OUT.parents[2]
    command = [
        "/usr/bin/time",
        "-f",
        "%e %M",
        sys.executable,
        "cli.py",
        "solve",
        str(OUT.relative_to(root)),
        "--time-limit",
        f"{time_limit:g}",
        "--json",
    ]
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    walls, peaks = [], []
    for i in range(runs):
        done = subprocess.run(
            command, capture_output=True, text=True, cwd=root, env={**os.environ, "PYTHONPATH": str(root)}
        )
        wall, kb = done.stderr.strip().splitlines()[-1].split()
        try:
            result = json.loads(done.stdout)
            status, gap = (
                result["status"] + (" with a verified plan" if result.get("plan") else ""),
                result.get("mip_gap"),
            )
        except (ValueError, KeyError):
            status, gap = f"exit {done.returncode}", None
        walls.append(float(wall))
        peaks.append(int(kb) / 1024)
        print(
            f"run {i + 1}: {float(wall):.1f} s wall, peak {int(kb) / 1024:,.0f} MB, status {status}"
            + (f", gap {gap}" if gap is not None else "")
        )
    print(
        f"median: {statistics.median(walls):.1f} s wall, peak memory {statistics.median(peaks):,.0f} MB "
        f"(max {max(peaks):,.0f} MB); target: within {time_limit + 5:g} s and under 2,048 MB"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--measure", type=int, default=0, metavar="RUNS")
    parser.add_argument("--time-limit", type=float, default=30.0)
    args = parser.parse_args()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(
        "# Generated by bench/whatif.py: the large what-if.\n" + yaml.safe_dump(instance(), sort_keys=False, width=120)
    )
    print(f"wrote {OUT.relative_to(OUT.parents[2])}")
    if args.measure:
        measure(args.measure, args.time_limit)
