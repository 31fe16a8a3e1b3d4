"""Would pyomo's public persistent interface do for the HiGHS adapter? Time the levers of a plan (every limit moved
one step, each re-solved on one reused model: retargets, cap changes, objective switches) two ways, each in a
fresh process, median of ROUNDS:

- ``adapter``: as shipped (solver/highs.py): a change pushes to HiGHS only the coefficients whose expressions hold a
  changed Param (it reads the interface's private helper lists to know which);
- ``public``: pyomo's public ``update_parameters()`` on every change (every mutable coefficient re-evaluated and
  pushed), the one public way to tell the interface that Params moved.

The plans must be the same both ways (asserted); the figure is the levers' wall time.

    python bench/highs_interface.py [INSTANCE] [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WAYS = ("adapter", "public")


def one(instance: str, way: str) -> dict:
    from trainground.drivers.tradeoffs.levers import levers
    from trainground.models.load import load_instance
    from trainground.solver import highs
    from trainground.solver.solve import solve_instance

    if way == "public":
        highs.HighsModel.params_changed = lambda self, changed: self._pyomo.update_parameters()  # type: ignore[method-assign]
    inst = load_instance(Path(instance))
    result = solve_instance(inst)
    start = time.perf_counter()
    found = levers(inst, result)
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "values": [lv.objective_value for lv in found.items], "solves": found.solves}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("instance", nargs="?", default=str(ROOT / "instances" / "seed-week-75.yaml"))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--one", choices=WAYS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.instance, args.one)))
        return
    runs: dict[str, list[dict]] = {way: [] for way in WAYS}
    for _ in range(args.rounds):
        for way in WAYS:
            out = subprocess.run(
                [sys.executable, __file__, args.instance, "--one", way], capture_output=True, text=True, check=True
            )
            runs[way].append(json.loads(out.stdout))
    base = runs["adapter"][0]["values"]
    for way in WAYS:
        assert all(r["values"] == base for r in runs[way]), f"{way}: other plans than the adapter's"
    adapter = statistics.median(r["seconds"] for r in runs["adapter"])
    print(f"levers of {Path(args.instance).name}: {runs['adapter'][0]['solves']} re-solves, {args.rounds} rounds")
    for way in WAYS:
        median = statistics.median(r["seconds"] for r in runs[way])
        print(f"  {way:<8} median {median:6.3f} s  ({median / adapter:4.2f}x the adapter)")


if __name__ == "__main__":
    main()
