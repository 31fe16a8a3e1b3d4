"""Confidence solves (MODEL.md §9): the whole `solve --confidence α` command with S = 1,000 scenarios on
both bundled uncertain instances (seed-week-75-uncertain: one GPU pool; seed-3000-cards-uncertain: two)
for α = 0.5 ... 0.99, medians of wall and CPU time, and the four-level `frontier --confidence-curve`;
then how the MIP grows with S (100, 300, 1,000): scenario groups, rows and columns HiGHS holds, pairs
built, HiGHS runs and seconds.

    PYTHONPATH=. python bench/confidence.py [--repeat 3] [--root DIR] [--skip-growth] [--args "..."]

``--root`` times another checkout's cli.py (e.g. the commit before a change) on this tree's instances;
``--args`` adds options to every command (e.g. ``--basis steady_state`` where that is not the default).
The machine's other load inflates wall time; CPU time of the child process is printed beside it.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INSTANCES = [ROOT / "instances" / "seed-week-75-uncertain.yaml", ROOT / "instances" / "seed-3000-cards-uncertain.yaml"]
INSTANCE = INSTANCES[0]
ALPHAS = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99)
CURVE = "0.5,0.8,0.9,0.95"


EXTRA: list[str] = []  # options added to every command (--args)


def timed(root: Path, args: list[str], repeat: int) -> tuple[float, float, str]:
    """Median wall and CPU seconds of `cli.py ARGS` in ``root``, and its first output line."""
    walls, cpus, first = [], [], ""
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, str(root / "cli.py"), *args, *EXTRA],
            capture_output=True,
            text=True,
            cwd=root,
            env={"PYTHONPATH": str(root)},
        )
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        text = done.stdout or done.stderr
        first = text.splitlines()[0] if text else f"exit {done.returncode}"
    return statistics.median(walls), statistics.median(cpus), first


def alpha_table(root: Path, repeat: int) -> None:
    print(f"instance | alpha | wall s | CPU s | first line   (median of {repeat}, S = 1,000)")
    for inst in INSTANCES:
        for alpha in ALPHAS:
            wall, cpu, first = timed(root, ["solve", str(inst), "--confidence", str(alpha)], repeat)
            print(f"{inst.stem} | {alpha} | {wall:.2f} | {cpu:.2f} | {first.split(': ', 1)[-1]}", flush=True)
    with tempfile.TemporaryDirectory() as out:
        for inst in INSTANCES:
            wall, cpu, _ = timed(root, ["frontier", str(inst), "--confidence-curve", CURVE, "--out", out], repeat)
            print(f"{inst.stem} | frontier --confidence-curve {CURVE} | {wall:.2f} | {cpu:.2f} |", flush=True)


def growth(samples: int) -> dict:
    """One confidence solve at S = ``samples`` (the bundled instance), in process: sizes and times."""
    from trainground.models.edits import load_edited
    from trainground.solver.solve import Planner

    inst = load_edited(INSTANCE, [f"uncertainty.samples={samples}", "uncertainty.confidence=0.9"])
    start, cpu = time.perf_counter(), time.process_time()
    planner = Planner(inst)
    result = planner.solve()
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    blocks = planner.confidence.blocks
    size = result.model_size or {}
    return {
        "S": samples,
        "groups": int(blocks.req.weight.size),
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
    parser.add_argument("--root", type=Path, default=ROOT, help="checkout whose cli.py is timed")
    parser.add_argument("--skip-growth", action="store_true")
    parser.add_argument("--args", default="", help="options added to every command")
    args = parser.parse_args()
    EXTRA.extend(args.args.split())
    alpha_table(args.root.resolve(), args.repeat)
    if args.skip_growth:
        return
    rows = [growth(s) for s in (100, 300, 1000)]
    print(" | ".join(rows[0]))
    for row in rows:
        print(" | ".join(str(v) for v in row.values()))


if __name__ == "__main__":
    main()
