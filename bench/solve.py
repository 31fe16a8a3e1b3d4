"""Benchmark of `trainground solve`: the whole command, model build vs HiGHS, the single MIP vs
enumerating the cadence grid, the HiGHS settings and the search's probe sizes. Prints medians and ratios.

    python bench/solve.py [--repeats 7] [--skip-enumeration]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from models.load import load_instance  # noqa: E402
from solver import coefficients  # noqa: E402
from solver import solve as solve_module  # noqa: E402
from solver.model import add_pair, build_model, refresh_globals  # noqa: E402
from solver.solve import Planner, make_solver  # noqa: E402

SEED = ROOT / "instances" / "seed-week-75.yaml"
LARGE = ROOT / "instances" / "large-three-pools.yaml"


def median_wall(command: list[str], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(command, check=False, capture_output=True, cwd=ROOT)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def in_process(path: Path, objective: str, repeats: int) -> dict[str, float]:
    inst = load_instance(path)
    rows = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = Planner(inst).solve(objective)
        wall = time.perf_counter() - start
        t = result.timings
        rows.append((wall, t.build, t.solve, t.highs, result.objective_value, result.model_size["pairs_built"]))
    wall, build, solve, highs = (statistics.median(r[i] for r in rows) for i in range(4))
    return {"wall": wall, "build": build, "solve": solve, "highs": highs, "outside": 1 - highs / wall,
            "value": rows[0][4], "pairs_built": rows[0][5], "pairs": result.model_size["pairs"]}


def enumerate_grid(path: Path, objective: str) -> tuple[float, float, int]:
    """The baseline: one inner integer problem per cadence grid point (all its K), solved one by one."""
    inst = load_instance(path)
    start = time.perf_counter()
    pairs = coefficients.build(inst)
    best = None
    cadences = np.unique(np.round(pairs.cadence, 9))
    keys = pairs.keys()
    for cadence in cadences:
        rows = [r for r in range(pairs.size) if abs(keys[r][0] - cadence) < 1e-9]
        model = build_model(inst, pairs)
        for row in rows:
            add_pair(model, row, keys[row])
        refresh_globals(model)
        getattr(model, f"objective_{objective}").activate()
        opt = make_solver()
        outcome = opt.solve(model, solver_options={**solve_module.STAGE_OPTIONS[objective]})
        if outcome.status == "optimal" and (best is None or outcome.objective_value < best):
            best = outcome.objective_value
    return time.perf_counter() - start, best, len(cadences)


def with_options(path: Path, objective: str, options: dict, repeats: int) -> float:
    saved_base, saved_stage = dict(solve_module.HIGHS_OPTIONS), {k: dict(v) for k, v in solve_module.STAGE_OPTIONS.items()}
    try:
        solve_module.HIGHS_OPTIONS.update(options.get("base", {}))
        if "stage" in options:  # else each criterion keeps its shipped presolve setting
            for key in solve_module.STAGE_OPTIONS:
                solve_module.STAGE_OPTIONS[key] = dict(options["stage"])
        return in_process(path, objective, repeats)["highs"]
    finally:
        solve_module.HIGHS_OPTIONS.clear()
        solve_module.HIGHS_OPTIONS.update(saved_base)
        solve_module.STAGE_OPTIONS.update(saved_stage)


def probe_sizes(repeats: int) -> None:
    """Wall time of every bundled seed instance solved under the three criteria (fresh model each,
    no diagnosis), and of the large instance's total cost and makespan, per pair of probe sizes."""
    seeds = [load_instance(p) for p in sorted((ROOT / "instances").glob("*.yaml")) if p != LARGE]
    large = load_instance(LARGE)
    saved = solve_module.COST_PROBE_PAIRS, solve_module.MAKESPAN_PROBE_PAIRS
    try:
        for cost, makespan in dict.fromkeys((saved, (1, saved[1]), (1, 1), (6, 6))):
            solve_module.COST_PROBE_PAIRS, solve_module.MAKESPAN_PROBE_PAIRS = cost, makespan
            walls = []
            for _ in range(repeats):
                start = time.perf_counter()
                for inst in seeds:
                    for objective in ("total_cost", "hourly_cost", "makespan"):
                        Planner(inst).solve(objective, diagnose=False)
                walls.append(time.perf_counter() - start)
            large_walls = {}
            for objective in ("total_cost", "makespan"):
                start = time.perf_counter()
                Planner(large).solve(objective, diagnose=False)
                large_walls[objective] = time.perf_counter() - start
            label = f"{cost} / {makespan}" + ("  (as shipped)" if (cost, makespan) == saved else "")
            print(f"{label:22s} {len(seeds) * 3} seed solves {statistics.median(walls):.3f} s (median of {repeats})   "
                  f"large total cost {large_walls['total_cost']:.2f} s   large makespan {large_walls['makespan']:.3f} s")
    finally:
        solve_module.COST_PROBE_PAIRS, solve_module.MAKESPAN_PROBE_PAIRS = saved


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--skip-enumeration", action="store_true")
    args = parser.parse_args()
    n = args.repeats

    print("== whole commands (subprocess, median of", n, "runs)")
    floor = median_wall([sys.executable, "-c", "import pyomo.environ, highspy"], n)
    command = median_wall(["trainground", "solve", str(SEED.relative_to(ROOT))], n)
    print(f"import pyomo + highspy only          {floor:7.3f} s")
    print(f"trainground solve seed-week-75.yaml  {command:7.3f} s   (target <= 1.0 s)")

    print("\n== in process (median of", n, "solves, fresh model each)")
    print(f"{'instance':22s} {'objective':12s} {'wall s':>8s} {'build s':>8s} {'solve s':>8s} {'HiGHS s':>8s} "
          f"{'outside HiGHS':>13s} {'pairs built/admissible':>24s}")
    for path in (SEED, LARGE):
        for objective in ("total_cost", "hourly_cost", "makespan"):
            r = in_process(path, objective, n)
            print(f"{path.stem:22s} {objective:12s} {r['wall']:8.3f} {r['build']:8.3f} {r['solve']:8.3f} "
                  f"{r['highs']:8.3f} {r['outside']:13.1%} {r['pairs_built']:>11d}/{r['pairs']:<12d}")

    print("\n== HiGHS settings (median HiGHS seconds of one solve)")
    variants = {
        "tuned (as shipped)": {},
        "stock HiGHS (presolve on, heuristics on)": {
            "base": {"mip_heuristic_run_feasibility_jump": True, "mip_heuristic_effort": 0.05, "presolve_rule_off": 0},
            "stage": {"presolve": "on"}},
        "with presolve probing and enumeration": {"base": {"presolve_rule_off": 0}},
        "presolve off everywhere": {"stage": {"presolve": "off"}},
    }
    for name, options in variants.items():
        cells = []
        for path in (SEED, LARGE):
            for objective in ("total_cost", "makespan"):
                if name == "tuned (as shipped)":
                    cells.append(in_process(path, objective, n)["highs"])
                else:
                    cells.append(with_options(path, objective, options, n))
        print(f"{name:42s} seed total {cells[0]:.4f}  seed makespan {cells[1]:.4f}  "
              f"large total {cells[2]:.4f}  large makespan {cells[3]:.4f}")

    print("\n== probe sizes: pairs opened by a search's first HiGHS run (cost criteria / makespan)")
    probe_sizes(3)

    if args.skip_enumeration:
        return
    print("\n== one MIP vs enumerating the cadence grid (objective total_cost)")
    for path in (SEED, LARGE):
        mip = in_process(path, "total_cost", 3)
        seconds, best, points = enumerate_grid(path, "total_cost")
        same = best is not None and abs(best - mip["value"]) <= 1e-9 * abs(best)
        print(f"{path.stem:22s} MIP {mip['wall']:.3f} s   enumeration of {points} grid points {seconds:.2f} s   "
              f"ratio {seconds / mip['wall']:.0f}x   same optimum: {same} ({mip['value']:,.2f})")


if __name__ == "__main__":
    main()
