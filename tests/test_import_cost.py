"""What a plain solve imports. scipy is kept off the solve path: once it is imported beside pyomo,
pyomo's deferred-import hook loads scipy.stats, sparse and spatial too, which costs more than a second
of start-up on every command (docs/performance.md). Only the commands that need scipy (calibrate,
a risk run on several active backends) import it, inside the function that uses it.
The model is built with ``pyomo.core`` alone: ``pyomo.environ`` also loads every plugin package of
pyomo (DAE, GDP, network, the solver plugins, ...), about 0.4 s of CPU that a solve never uses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Runs the CLI in a fresh interpreter, then prints the exit code and the scipy modules it imported.
_PROBE = """
import json, sys
from trainground import cli
try:
    cli.main(sys.argv[1:], standalone_mode=False)
    code = 0
except SystemExit as stop:
    code = stop.code
scipy = sorted(m for m in sys.modules if m.split(".")[0] == "scipy")
print(json.dumps({"code": code, "scipy": scipy, "pyomo.environ": "pyomo.environ" in sys.modules,
                  "diagnosis": any(m.removeprefix("trainground.") == "drivers.diagnosis.diagnose" for m in sys.modules)}))
"""


def _imports_of(*args: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *args], cwd=ROOT, capture_output=True, text=True, check=False, timeout=300
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "args",
    [
        ("solve", "instances/seed-week-75.yaml"),
        ("solve", "instances/seed-week-75.yaml", "--set", "schedule.count_startup=true", "--no-levers"),
        ("solve", "tests/data/infeasible/max-nodes-only.yaml"),
        ("explain", "instances/seed-week-75.yaml"),
        ("solve", "instances/seed-week-75-uncertain.yaml", "--confidence", "0.9", "--basis", "steady_state"),
    ],
    ids=["seed", "start-up counted", "diagnosis", "explain", "confidence"],
)
def test_no_scipy_on_the_solve_path(args):
    seen = _imports_of(*args, "--json")
    assert seen["code"] in (0, 3), seen  # 3: the diagnosed instance has no plan
    assert seen["scipy"] == [], f"{' '.join(args)} imported {seen['scipy'][:5]}"
    assert not seen["pyomo.environ"], f"{' '.join(args)} imported pyomo.environ"


def test_a_solve_with_a_plan_imports_no_diagnosis():
    """The diagnosis's modules (screen, candidates, findings, searches) load only when a solve finds no plan;
    the levers under a plan import their re-solves alone (drivers.diagnosis.feasibility)."""
    assert not _imports_of("solve", "instances/seed-week-75.yaml", "--json")["diagnosis"]
    assert _imports_of("solve", "tests/data/infeasible/max-nodes-only.yaml", "--json")["diagnosis"]


def test_the_probe_sees_scipy_when_a_command_imports_it():
    """The probe is not blind: calibrate's lifetime fits use scipy's special functions, and it sees them."""
    seen = _imports_of("calibrate", "--trajectories", "instances/logs/seed-small-trajectories.csv")
    assert seen["code"] == 0 and "scipy.special" in seen["scipy"], seen
