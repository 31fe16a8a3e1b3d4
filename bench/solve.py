"""Benchmark of `trainground solve`: the whole command against the import floor; per bundled instance,
the in-process solve (load, build, solve, extract, verify; imports excluded) with the pairs it built,
against enumerating the cadence grid with one inner integer solve per grid point; the HiGHS settings;
the searches' probe sizes. Prints medians and ratios.

    python bench/solve.py [--repeats 5] [--skip-enumeration | --enumerate NAME ...] [--only NAME ...]
                          [--sections command instances highs probes] [--instructions]

``--instructions`` also counts the whole commands' instructions under valgrind (callgrind), a figure
the machine's load does not move. ``--enumerate`` limits the (slow) enumeration to the named instances, the acceptance ones by default
(``--enumerate all``: every instance). docs/regenerate.d/performance.sh runs it for docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from trainground.models.load import load_instance  # noqa: E402
from trainground.solver import highs as highs_module  # noqa: E402
from trainground.solver.highs import STAGE_OPTIONS, HighsModel  # noqa: E402
from trainground.solver.mip import search as search_module  # noqa: E402
from trainground.solver.mip.model import add_pair, build_model, refresh_globals  # noqa: E402
from trainground.solver.solve import Planner  # noqa: E402
from trainground.solver.table.pairs import build  # noqa: E402

INSTANCES = ROOT / "instances"
SEED = INSTANCES / "seed-week-75.yaml"
# Whole commands run as a user's do: with bytecode cached, as Python does by default (with PYTHONDONTWRITEBYTECODE
# set, every run would recompile the project's modules, ~0.2 s a command).
USER_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
FOCUS = ("seed-week-75", "large-three-pools", "two-backends-cloud")  # the acceptance instances


def median_wall(command: list[str], repeats: int) -> tuple[float, float]:
    """Median wall seconds and median CPU seconds (user + system) of ``command`` as a subprocess. CPU time
    counts only the command's own work, so on a loaded machine it moves much less than wall time."""
    walls, cpus = [], []
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(command, check=False, capture_output=True, cwd=ROOT, env=USER_ENV)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def in_process(path: Path, objective: str, repeats: int) -> dict:
    """Median wall of load + build + solve + extract + verify, a fresh model each time."""
    walls, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = Planner(load_instance(path)).solve(objective)
        walls.append(time.perf_counter() - start)
    size = result.model_size or {}
    return {
        "wall": statistics.median(walls),
        "value": result.objective_value,
        "status": result.status,
        "pairs": size.get("pairs", 0),
        "built": size.get("pairs_built", 0),
        "highs": result.timings.highs,
    }


def enumerate_grid(path: Path, objective: str) -> tuple[float, float | None, int]:
    """The baseline: one inner integer problem per cadence grid point (all its K), solved one by one."""
    start = time.perf_counter()
    inst = load_instance(path)
    pairs = build(inst)
    keys = pairs.keys()
    best = None
    cadences = np.unique(np.round(pairs.cadence, 9))
    for cadence in cadences:
        model = build_model(inst, pairs)
        for row in np.flatnonzero(np.abs(pairs.cadence - cadence) < 1e-9):
            add_pair(model, int(row), keys[row])
        refresh_globals(model)
        getattr(model, f"objective_{objective}").activate()
        solver = HighsModel()
        solver.load(model)
        outcome = solver.run(STAGE_OPTIONS[objective])
        if outcome.status == "optimal" and (best is None or outcome.objective_value < best):
            best = outcome.objective_value
    return time.perf_counter() - start, best, len(cadences)


def instances(only: list[str]) -> list[Path]:
    """The bundled instances one plan solves (the staged ones are bench/stages.py's)."""
    paths = [p for p in sorted(INSTANCES.glob("*.yaml")) if load_instance(p).stages is None]
    return [p for p in paths if not only or p.stem in only]


def per_instance(repeats: int, enumerated: set[str] | None, only: list[str]) -> None:
    """``enumerated``: the instances also enumerated (None: all of them)."""
    enumerate_any = enumerated is None or bool(enumerated)
    print(
        f"{'instance':28s} {'status':10s} {'pairs built/admissible':>23s} {'MIP s':>8s} {'HiGHS s':>8s}"
        + (f" {'enumeration s':>14s} {'ratio':>7s} {'same optimum':>13s}" if enumerate_any else "")
    )
    for path in instances(only):
        enumerate_too = enumerated is None or path.stem in enumerated
        mip = in_process(path, "total_cost", repeats)
        line = (
            f"{path.stem:28s} {mip['status']:10s} {mip['built']:>11d}/{mip['pairs']:<11d} "
            f"{mip['wall']:8.3f} {mip['highs']:8.3f}"
        )
        if enumerate_too and mip["pairs"]:
            seconds, best, points = enumerate_grid(path, "total_cost")
            same = (best is None and mip["value"] is None) or (
                best is not None and mip["value"] is not None and abs(best - mip["value"]) <= 1e-9 * abs(best)
            )
            line += f" {seconds:14.2f} {seconds / mip['wall']:6.0f}x {str(same):>13s}"
        print(line, flush=True)


def highs_settings(repeats: int) -> None:
    variants = {
        "tuned (as shipped)": ({}, None),
        "stock HiGHS (presolve on, heuristics on)": (
            {"mip_heuristic_run_feasibility_jump": True, "mip_heuristic_effort": 0.05, "presolve_rule_off": 0},
            "on",
        ),
        "with presolve probing and enumeration": ({"presolve_rule_off": 0}, None),
        "presolve off everywhere": ({}, "off"),
    }
    saved_base = dict(highs_module.OPTIONS)
    saved_stage = {k: dict(v) for k, v in highs_module.STAGE_OPTIONS.items()}
    for name, (base, presolve) in variants.items():
        try:
            highs_module.OPTIONS.update(base)
            if presolve is not None:
                for stage in highs_module.STAGE_OPTIONS.values():
                    stage["presolve"] = presolve
            cells = [
                in_process(path, objective, repeats)["highs"]
                for path in (SEED, INSTANCES / "large-three-pools.yaml")
                for objective in ("total_cost", "makespan")
            ]
        finally:
            highs_module.OPTIONS.clear()
            highs_module.OPTIONS.update(saved_base)
            for key, value in saved_stage.items():
                highs_module.STAGE_OPTIONS[key] = value
        print(
            f"{name:42s} seed total {cells[0]:.4f}  seed makespan {cells[1]:.4f}  "
            f"large total {cells[2]:.4f}  large makespan {cells[3]:.4f}"
        )


def probe_sizes(repeats: int) -> None:
    """Wall time of the bundled seed instances under the three criteria, per probe size of the cost search."""
    seeds = [load_instance(p) for p in sorted(INSTANCES.glob("seed-*.yaml"))]
    seeds = [inst for inst in seeds if inst.stages is None]
    saved = search_module.COST_PROBE_PAIRS
    try:
        for size in dict.fromkeys((saved, 1, 6)):
            search_module.COST_PROBE_PAIRS = size
            walls = []
            for _ in range(repeats):
                start = time.perf_counter()
                for inst in seeds:
                    for objective in ("total_cost", "hourly_cost", "makespan"):
                        Planner(inst).solve(objective)
                walls.append(time.perf_counter() - start)
            label = f"{size}" + ("  (as shipped)" if size == saved else "")
            print(f"cost probe {label:16s} {len(seeds) * 3} seed solves {statistics.median(walls):.3f} s")
    finally:
        search_module.COST_PROBE_PAIRS = saved


def instructions(command: list[str]) -> int:
    """Instructions the command executes, counted by valgrind's callgrind: the same on a loaded machine
    as on a quiet one (a run takes ~50x its normal time)."""
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command],
        check=False,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=USER_ENV,
    )
    return int(next(line for line in done.stderr.splitlines() if "Collected :" in line).split()[-1])


def whole_commands(repeats: int, count_instructions: bool) -> None:
    """The seed `solve` (with its levers, and without) against importing pyomo and highspy alone."""
    entry = shutil.which("trainground")
    solve = ([entry] if entry else [sys.executable, "cli.py"]) + ["solve", str(SEED.relative_to(ROOT))]
    commands = {
        "import pyomo.environ, highspy": [sys.executable, "-c", "import pyomo.environ, highspy"],
        "trainground solve seed-week-75.yaml": solve,
        "  the same, --no-levers": [*solve, "--no-levers"],
    }
    print(f"== whole commands (subprocess, median of {repeats} runs)")
    print(
        f"{'':37s} {'wall s':>8s} {'CPU s':>8s} {'wall ratio':>11s} {'CPU ratio':>10s}"
        + ("  instructions" if count_instructions else "")
    )
    floor, floor_count = None, None
    for name, command in commands.items():
        wall, cpu = median_wall(command, repeats)
        floor = floor or (wall, cpu)
        line = f"{name:37s} {wall:8.3f} {cpu:8.3f} {wall / floor[0]:11.2f} {cpu / floor[1]:10.2f}"
        if count_instructions:
            count = instructions(command)
            floor_count = floor_count or count
            line += f"  {count / 1e9:6.2f} G = {count / floor_count:.2f}x"
        print(line)
    print("target: the whole seed solve <= 1.4x the import")
    print(f"1-minute load average after the runs {os.getloadavg()[0]:8.2f} (on {os.cpu_count()} cores)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--skip-enumeration", action="store_true")
    parser.add_argument(
        "--enumerate",
        nargs="*",
        default=list(FOCUS),
        metavar="NAME",
        help="instances also enumerated (default: the acceptance ones; 'all': every one)",
    )
    parser.add_argument("--only", nargs="*", default=[], help="instance names (file stems) to measure")
    parser.add_argument(
        "--sections",
        nargs="*",
        default=["command", "instances", "highs", "probes"],
        choices=["command", "instances", "highs", "probes"],
    )
    parser.add_argument(
        "--instructions", action="store_true", help="also count each whole command's instructions (valgrind)"
    )
    args = parser.parse_args()
    n = args.repeats
    enumerated = set() if args.skip_enumeration else None if "all" in args.enumerate else set(args.enumerate)

    if "command" in args.sections:
        whole_commands(n, args.instructions)
    if "instances" in args.sections:
        print(
            f"\n== per instance, in process (total_cost, median of {n}; enumeration: one integer solve per grid point)"
        )
        per_instance(n, enumerated, args.only or [])
    if "highs" in args.sections:
        print("\n== HiGHS settings (median HiGHS seconds of one solve)")
        highs_settings(n)
    if "probes" in args.sections:
        print("\n== probe sizes: pairs opened by the cost search's first HiGHS run")
        probe_sizes(3)


if __name__ == "__main__":
    main()
