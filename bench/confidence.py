"""Confidence solves (MODEL.md §9, under hold §11's last paragraphs): the whole `solve --confidence α` command
with S = 1,000 scenarios on both bundled uncertain instances (seed-week-75-uncertain: one GPU pool;
seed-3000-cards-uncertain: two) for α = 0.5 ... 0.99 on both bases, medians of wall and CPU time, and of the
seconds the allowance loop spent replaying (hold); the four-level `frontier --confidence-curve` likewise; then
how the solve grows with S (100, 300, 1,000): scenario groups, pairs, pairs whose model HiGHS ran, seconds.

    python bench/confidence.py [--repeat 3] [--root DIR] [--bases hold,steady_state] [--skip-growth]

``--root`` times another checkout's cli.py (e.g. the commit before a change) on this tree's instances, run by
that checkout's own venv (DIR/.venv, made with pip install -e .): its editable install maps its folders.
The machine's other load inflates wall time; CPU time of the child process is printed beside it, and the
load average before and after the table.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INSTANCES = [ROOT / "instances" / "seed-week-75-uncertain.yaml", ROOT / "instances" / "seed-3000-cards-uncertain.yaml"]
ALPHAS = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99)
CURVE = "0.5,0.8,0.9,0.95"


def python_of(root: Path) -> str:
    """The interpreter that runs ``root``'s code: this one for this checkout, else that checkout's own venv's."""
    if root.resolve() == ROOT:
        return sys.executable
    python = root / ".venv" / "bin" / "python"
    if not python.exists():
        raise SystemExit(f"--root {root}: no .venv there; make one with pip install -e . so its folders are its own")
    return str(python)


def timed(root: Path, args: list[str], repeat: int) -> tuple[float, float, float | None, dict]:
    """Median wall and CPU seconds of `cli.py ARGS --json` in ``root``, the median of the replay seconds its JSON
    reports (None: no replays), and the last run's JSON."""
    walls, cpus, replays, payload = [], [], [], {}
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(
            [python_of(root), str(root / "cli.py"), *args, "--json"], capture_output=True, text=True, cwd=root
        )
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        try:
            payload = json.loads(done.stdout)
        except json.JSONDecodeError:
            payload = {"status": f"exit {done.returncode}"}
        seconds = replay_seconds(payload)
        if seconds is not None:
            replays.append(seconds)
    return statistics.median(walls), statistics.median(cpus), statistics.median(replays) if replays else None, payload


def replay_seconds(payload: dict) -> float | None:
    """The wall seconds a solve's allowance loops replayed (a curve's summed over its points)."""
    results = [payload]
    if "points" in payload:
        results = [payload["deterministic"], *(p["result"] for p in payload["points"])]
    found = [(r.get("hold") or {}).get("replay_seconds") for r in results]
    found = [s for s in found if s is not None]
    return sum(found) if found else None


def outcome(payload: dict) -> str:
    status = payload.get("status", "?")
    value = payload.get("objective_value")
    return status if value is None else f"{status}, total_cost = ${value:,.2f}"


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def alpha_table(root: Path, repeat: int, bases: list[str]) -> None:
    print(f"load average {load()}")
    print(
        f"instance | basis | alpha | wall s | CPU s | replays s | wall s less replays | result   (median of {repeat})"
    )
    for basis in bases:
        for inst in INSTANCES:
            for alpha in ALPHAS:
                args = ["solve", str(inst), "--confidence", str(alpha), "--basis", basis]
                wall, cpu, replays, payload = timed(root, args, repeat)
                rest = wall - (replays or 0.0)
                shown = "" if replays is None else f"{replays:.2f}"
                print(
                    f"{inst.stem} | {basis} | {alpha} | {wall:.2f} | {cpu:.2f} | {shown} | {rest:.2f} | {outcome(payload)}",
                    flush=True,
                )
    with tempfile.TemporaryDirectory() as out:
        for basis in bases:
            for inst in INSTANCES:
                args = ["frontier", str(inst), "--confidence-curve", CURVE, "--out", out, "--basis", basis]
                wall, cpu, replays, _ = timed(root, args, repeat)
                shown = "" if replays is None else f"{replays:.2f}"
                rest = wall - (replays or 0.0)
                print(
                    f"{inst.stem} | {basis} | curve {CURVE} | {wall:.2f} | {cpu:.2f} | {shown} | {rest:.2f} |",
                    flush=True,
                )
    print(f"load average {load()}")


def growth(samples: int, basis: str) -> dict:
    """One confidence solve at S = ``samples`` (the first instance, α = 0.9, no allowance loop), in process."""
    from trainground.models.edits import load_edited
    from trainground.solver.solve import Planner

    edits = [f"uncertainty.samples={samples}", "uncertainty.confidence=0.9", f"planning.basis={basis}"]
    inst = load_edited(INSTANCES[0], edits)
    start, cpu = time.perf_counter(), time.process_time()
    planner = Planner(inst)
    result = planner.solve()
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    size = result.model_size or {}
    return {
        "basis": basis,
        "S": samples,
        "groups": planner.confidence.groups if planner.confidence else None,
        "pairs": size.get("pairs"),
        "pairs run": size.get("pairs_built"),
        "HiGHS runs": size.get("highs_runs"),
        "HiGHS s": round(result.timings.highs, 2),
        "solve wall s": round(seconds, 2),
        "solve CPU s": round(cpu, 2),
        "status": str(result.status),
        "total cost": round(result.objective_value or 0.0, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--root", type=Path, default=ROOT, help="checkout whose cli.py is timed")
    parser.add_argument("--bases", default="hold,steady_state", help="bases to time, comma-separated")
    parser.add_argument("--skip-growth", action="store_true")
    args = parser.parse_args()
    bases = [b for b in args.bases.split(",") if b]
    alpha_table(args.root.resolve(), args.repeat, bases)
    if args.skip_growth:
        return
    rows = [growth(s, basis) for basis in bases for s in (100, 300, 1000)]
    print(" | ".join(rows[0]))
    for row in rows:
        print(" | ".join(str(v) for v in row.values()))


if __name__ == "__main__":
    main()
