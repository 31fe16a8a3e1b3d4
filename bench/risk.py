"""Risk of a plan over many scenarios (MODEL.md §9), and the whole `risk` command, on the seed baseline.

    python bench/risk.py [--samples 10000] [--repeats 5] [--instance instances/seed-week-75-uncertain.yaml]

Measures, as medians over ``repeats`` runs:

- ``scenarios``: drawing ``samples`` scenarios and evaluating the deterministic optimum in every one
  (:func:`solver.uncertainty.scenarios.draw` + :func:`solver.uncertainty.scenarios.evaluate`), target <= 2 s for 10,000;
- ``assess``: the same plus the one-at-a-time sensitivity (:func:`drivers.risk.assess`);
- ``command``: `trainground risk INSTANCE --samples N --json` as a fresh process (interpreter start,
  imports, load, solve, verify, assess, JSON), the time a user waits;
- ``confidence``: the section below, for `solve --confidence 0.9` with S = 1,000 (target <= 10 s).

The instance defaults to the bundled seed baseline with uncertainty (three factors); ``--instance``
takes another file with an ``uncertainty`` section.
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

from trainground.drivers.risk import assess  # noqa: E402
from trainground.models.load import load_instance  # noqa: E402
from trainground.solver.solve import solve_instance  # noqa: E402
from trainground.solver.uncertainty import scenarios as sc  # noqa: E402

DEFAULT = ROOT / "instances" / "seed-week-75-uncertain.yaml"


def timed(call, repeats: int) -> tuple[float, list[float], object]:
    times, value = [], None
    for _ in range(repeats):
        clock = time.perf_counter()
        value = call()
        times.append(time.perf_counter() - clock)
    return statistics.median(times), times, value


def command_seconds(instance: Path, samples: int, repeats: int) -> tuple[float, list[float]]:
    times = []
    for _ in range(repeats):
        clock = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "cli.py", "risk", str(instance), "--samples", str(samples), "--json"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        times.append(time.perf_counter() - clock)
        if proc.returncode != 0:
            raise SystemExit(f"risk failed ({proc.returncode}): {proc.stderr}")
    return statistics.median(times), times


# ---------------------------------------------------------------- confidence solve
# The chance-constrained solve (`solve --confidence 0.9`, S = 1,000 scenarios, target <= 10 s for the whole
# command); bench/confidence.py measures it further (CPU time, a reachable variant, growth with S).


def confidence_seconds(instance: Path, repeats: int) -> tuple[float, list[float]] | None:
    """Whole-command time of `solve INSTANCE --confidence 0.9 --json` with the instance's S (1,000 bundled)."""
    times = []
    for _ in range(repeats):
        clock = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "cli.py", "solve", str(instance), "--confidence", "0.9", "--json"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        times.append(time.perf_counter() - clock)
        if proc.returncode not in (0, 3):  # 3: no plan reaches the confidence (the bundled instance at 0.9)
            raise SystemExit(f"solve --confidence failed ({proc.returncode}): {proc.stderr}")
    return statistics.median(times), times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--instance", type=Path, default=DEFAULT)
    args = parser.parse_args()
    inst = load_instance(args.instance)
    plan = solve_instance(inst).plan
    med, runs, outcome = timed(lambda: sc.evaluate(inst, plan, sc.draw(inst, args.samples)), args.repeats)
    report = {
        "instance": inst.name,
        "samples": args.samples,
        "repeats": args.repeats,
        "scenarios_s": med,
        "scenarios_runs_s": runs,
        "on_time_share": float(outcome.on_time.mean()),
    }
    med, runs, _ = timed(lambda: assess(inst, plan, args.samples), args.repeats)
    report |= {"assess_s": med, "assess_runs_s": runs}
    med, runs = command_seconds(args.instance, args.samples, args.repeats)
    report |= {"command_s": med, "command_runs_s": runs}
    confidence = confidence_seconds(args.instance, args.repeats)
    report["confidence_command_s"] = None if confidence is None else confidence[0]
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
