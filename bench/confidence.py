"""Confidence solves (MODEL.md §9): the whole `solve --confidence 0.9` command with S = 1,000 scenarios on
the bundled uncertain seed instance (as bundled, lifetimes at sigma 0.1, and with that factor at sigma 0.2,
where no plan reaches 90 %), medians of wall and CPU time; then how the MIP grows with S (100, 300, 1,000): scenario
groups, dominance edges, rows and columns HiGHS holds, pairs built, HiGHS runs and seconds.

    PYTHONPATH=. python bench/confidence.py [--repeat 3]

The machine's other load inflates wall time; CPU time of the child process is printed beside it.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INSTANCE = ROOT / "instances" / "seed-week-75-uncertain.yaml"
REACHABLE: list[str] = []  # the bundled instance: 90 % is reachable
WIDER = ["--set", "uncertainty.factors[1].sigma=0.2"]  # lifetimes twice as uncertain: no plan reaches 90 %


def whole_command(edits: list[str], repeat: int) -> tuple[float, float, str]:
    """Median wall and CPU seconds of `solve INSTANCE --confidence 0.9`, and its first output line."""
    walls, cpus, first = [], [], ""
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, str(ROOT / "cli.py"), "solve", str(INSTANCE), "--confidence", "0.9", *edits],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env={"PYTHONPATH": str(ROOT)},
        )
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        first = (
            (done.stdout or done.stderr).splitlines()[0] if (done.stdout or done.stderr) else f"exit {done.returncode}"
        )
    return statistics.median(walls), statistics.median(cpus), first


def growth(samples: int) -> dict:
    """One confidence solve at S = ``samples`` (the bundled instance), in process: sizes and times."""
    import numpy as np

    from models.edits import load_edited
    from solver.confidence_model import dominance_edges
    from solver.solve import Planner

    inst = load_edited(INSTANCE, [f"uncertainty.samples={samples}", "uncertainty.confidence=0.9"])
    start, cpu = time.perf_counter(), time.process_time()
    planner = Planner(inst)
    result = planner.solve()
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    blocks = planner.confidence.blocks
    edges = dominance_edges(
        blocks.req, np.unique(planner.pairs.kept), blocks.allowed, float(planner.pairs.cadence.max())
    )
    size = result.model_size or {}
    return {
        "S": samples,
        "groups": int(blocks.req.weight.size),
        "edges": len(edges),
        "columns": size.get("variables"),
        "rows": size.get("rows"),
        "pairs built": size.get("pairs_built"),
        "HiGHS runs": size.get("highs_runs"),
        "HiGHS wall s": round(result.timings.highs, 2),
        "solve wall s": round(seconds, 2),
        "solve CPU s": round(cpu, 2),
        "status": str(result.status),
        "total cost": round(result.objective_value or 0.0, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    for label, edits in (("bundled (lifetimes sigma 0.1)", REACHABLE), ("lifetimes sigma 0.2", WIDER)):
        wall, cpu, first = whole_command(edits, args.repeat)
        print(
            f"solve --confidence 0.9, S = 1,000, {label}: median wall {wall:.2f} s, CPU {cpu:.2f} s "
            f"({args.repeat} runs) -> {first}"
        )
    rows = [growth(s) for s in (100, 300, 1000)]
    print(" | ".join(rows[0]))
    for row in rows:
        print(" | ".join(str(v) for v in row.values()))


if __name__ == "__main__":
    main()
