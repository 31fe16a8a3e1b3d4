"""Benchmark of the diagnosis: the whole `trainground solve` command (start-up, load, solve, diagnosis,
rendering) on every infeasible instance — the bundled ones that are infeasible and tests/data/infeasible —
median wall time over ``--repeats`` runs, with the CPU time it took (user + system: what the command
costs on a quiet machine when the wall time is inflated by load) and the number of re-solves the
diagnosis spent. Target: ≤ 2 s median for the slowest.

    python bench/diagnose.py [--repeats 3] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from trainground.models.load import load_instance  # noqa: E402
from trainground.solver.solve import solve_instance  # noqa: E402

TARGET_S = 2.0


def infeasible_instances(only: list[str] | None = None) -> list[Path]:
    """tests/data/infeasible, and the bundled instances whose solve finds no plan (solved here to find out;
    with ``only``, just those named)."""
    found = [p for p in sorted((ROOT / "tests" / "data" / "infeasible").glob("*.yaml")) if not only or p.stem in only]
    for path in sorted((ROOT / "instances").iterdir()):
        if path.suffix in (".yaml", ".yml", ".toml", ".json") and (not only or path.stem in only):
            inst = load_instance(path)
            if inst.stages is None and solve_instance(inst).status == "infeasible":  # stages: bench/stages.py
                found.append(path)
    return found


def command_env() -> dict[str, str]:
    """The environment a user's command runs in: this repository importable, and bytecode cached as Python does
    by default (with PYTHONDONTWRITEBYTECODE set, every run would recompile the project, ~0.2 s a command)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPATH": str(ROOT)}


def run(command: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, check=False, capture_output=True, cwd=ROOT, env=command_env())
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def diagnosis_alone(path: Path) -> tuple[int, float]:
    """(re-solves, CPU seconds) of the diagnosis alone, in this process (imports and the first solve excluded)."""
    from trainground.drivers.diagnosis.diagnose import diagnosed

    inst = load_instance(path)
    result = solve_instance(inst)
    start = time.process_time()
    diagnosis = diagnosed(inst, result).diagnosis
    return diagnosis.get("solves", 0), time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", nargs="*", help="instance file stems to run")
    args = parser.parse_args()
    paths = infeasible_instances(args.only)
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    for label, code in (
        ("import cli", "import cli"),
        ("imports of solve", "import cli, commands.plan, solver.solve, drivers.diagnosis.diagnose"),
    ):
        floor = [run([sys.executable, "-c", code]) for _ in range(args.repeats)]
        print(
            f"floor, {label}: median {statistics.median(w for w, _ in floor):.2f} s wall, "
            f"{statistics.median(c for _, c in floor):.2f} s CPU"
        )
    rows = []
    for path in paths:
        runs = [run([sys.executable, "cli.py", "solve", str(path.relative_to(ROOT))]) for _ in range(args.repeats)]
        rows.append(
            (
                path.relative_to(ROOT),
                statistics.median(w for w, _ in runs),
                statistics.median(c for _, c in runs),
                *diagnosis_alone(path),
            )
        )
    print(f"{'instance':46} {'wall median':>12} {'CPU median':>11} {'re-solves':>10} {'diagnosis CPU':>14}")
    for name, wall, cpu, solves, alone in sorted(rows, key=lambda r: -r[1]):
        print(f"{str(name):46} {wall:11.2f}s {cpu:10.2f}s {solves:10d} {alone:13.2f}s")
    if rows:
        name, wall, cpu, _, _ = max(rows, key=lambda r: r[1])
        verdict = "meets" if wall <= TARGET_S else "misses"
        print(
            f"slowest: {name} {wall:.2f} s wall ({cpu:.2f} s CPU), {verdict} the {TARGET_S:g} s target "
            f"(median of {args.repeats}; load average now {os.getloadavg()[0]:.2f})"
        )


if __name__ == "__main__":
    main()
