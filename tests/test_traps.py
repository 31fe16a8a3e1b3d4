"""Small traps closed: bare-number durations read as implausible seconds warn with the unit (and the
diagnosis repeats it), --set problems name the option, negative durations say "must be positive", and
a closed pipe ends a command quietly with its own exit code."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from tests.test_known_optima import base
from trainground.cli import main
from trainground.models.load import read_document
from trainground.models.plausible import unit_warnings

SEED = Path(__file__).resolve().parents[1] / "instances" / "seed-week-75.yaml"
TRAINGROUND = Path(sys.executable).with_name("trainground")
DEADLINE_10 = "schedule.deadline: 10 is read as 10 s (under an hour); did you mean 10d?"


@pytest.fixture(scope="module")
def hand(tmp_path_factory) -> Path:
    """The hand-solved instance of test_known_optima (solves in milliseconds)."""
    path = tmp_path_factory.mktemp("hand") / "hand.yaml"
    path.write_text(yaml.safe_dump(base()))
    return path


def run(*args: str):
    return CliRunner().invoke(main, list(args))


def test_a_bare_deadline_in_seconds_warns_and_the_diagnosis_repeats_it(hand):
    result = run("solve", str(hand), "--set", "schedule.deadline=10")
    assert result.exit_code == 3
    assert result.stderr.strip() == f"{hand}: warning: {DEADLINE_10}"
    assert DEADLINE_10 in result.stdout  # under the diagnosis
    as_json = run("solve", str(hand), "--set", "schedule.deadline=10", "--json")
    assert json.loads(as_json.stdout)["diagnosis"]["notes"][0] == DEADLINE_10  # the units first


def test_a_bare_deadline_in_a_file_warns(tmp_path):
    data = read_document(SEED)
    data["schedule"]["deadline"] = 10
    path = tmp_path / "ten.yaml"
    path.write_text(yaml.safe_dump(data))
    result = run("explain", str(path))
    assert result.exit_code == 0 and DEADLINE_10 in result.stderr


@pytest.mark.parametrize("args", [(), ("--set", "schedule.deadline=10d"), ("--set", "schedule.deadline=604800")])
def test_plausible_durations_do_not_warn(args):
    result = run("explain", str(SEED), *args)
    assert result.exit_code == 0 and result.stderr == ""


@pytest.mark.parametrize(
    "section, value, warning",
    [
        (
            {"schedule": {"deadline": 500}},
            None,
            "schedule.deadline: 500 is read as 500 s (under an hour); did you mean 500h?",
        ),
        ({"schedule": {"deadline": "500s"}}, None, None),  # a unit was written: never questioned
        (
            {"schedule": {"deadline": 7200, "cadence": {"min": "3h"}}},
            None,
            "under one cadence (cadence.min 10,800 s (3.00 h))",
        ),
        (
            {"schedule": {"deadline": "7d", "extra_time": 2}},
            None,
            "schedule.extra_time: 2 is read as 2 s (under a minute); did you mean 2h?",
        ),
        ({"schedule": {"deadline": "7d", "extra_time": 0}}, None, None),
        (
            {"training": {"update_time": {"reference_time": 5}}},
            None,
            "reference_time: 5 is read as 5 s (under 10 s); did you mean 5m?",
        ),
        ({"environment": {"occupancy": {"median": 3, "p99": "2h"}}}, None, "occupancy.median: 3 is read as 3 s"),
    ],
)
def test_unit_warnings(section, value, warning):
    found = unit_warnings(section)
    if warning is None:
        assert found == []
    else:
        assert len(found) == 1 and warning in found[0]


def test_a_typo_inside_set_names_the_option_not_the_file():
    result = run("solve", str(SEED), "--set", "schedule.deadlin=10d")
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "--set schedule.deadlin=10d: schedule.deadlin: unknown key 'deadlin'; did you "
        "mean 'deadline'? (allowed here: deadline, extra_time, cadence, count_startup)"
    )
    bad_value = run("explain", str(SEED), "--set", "gpu_pools[0].gpus=lots")
    assert bad_value.exit_code == 2
    assert bad_value.stderr.startswith("--set gpu_pools[0].gpus=lots: gpu_pools[0].gpus: must be a whole number")
    bad_path = run("explain", str(SEED), "--set", "gpu_pools[5].gpus=1")
    assert bad_path.stderr.strip() == "--set gpu_pools[5].gpus=1: gpu_pools[5]: no such list item"


def test_problems_in_the_file_still_name_the_file(tmp_path):
    data = read_document(SEED)
    data["workload"]["iterations"] = 0
    path = tmp_path / "zero.yaml"
    path.write_text(yaml.safe_dump(data))
    result = run("explain", str(path), "--set", "schedule.deadline=8d")
    assert result.exit_code == 2 and result.stderr.startswith(f"{path}: workload.iterations: must be > 0")


@pytest.mark.parametrize(
    "value, shown",
    [("-3d", "'-3d'"), ("-10m", "'-10m'"), ("-0.5h", "'-0.5h'"), ("-5s", "'-5s'"), ("-3", "-3"), ("-0.5", "-0.5")],
)
def test_negative_durations_are_refused(value, shown):
    result = run("explain", str(SEED), "--set", f"schedule.deadline={value}")
    assert result.exit_code == 2
    assert f"schedule.deadline: a duration cannot be negative, got {shown}" in result.stderr


@pytest.mark.parametrize(
    "args, code",
    [  # an optimal solve: test_a_pipe_closed_after_the_first_line
        (["solve", "HAND", "--set", "schedule.deadline=2000s"], 3),
        (["schema"], 0),
    ],
)
def test_a_closed_pipe_ends_quietly_with_the_commands_own_exit_code(hand, args, code):
    """As `trainground ... | head -0`: the reader has gone before the first write."""
    argv = [str(TRAINGROUND), *(str(hand) if a == "HAND" else a for a in args)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()
    stderr = proc.stderr.read()
    assert proc.wait(timeout=120) == code
    assert stderr == b""


def test_a_pipe_closed_after_the_first_line(hand, tmp_path):
    """As `trainground solve ... | head -1`, through a shell."""
    script = f"'{TRAINGROUND}' solve '{hand}' 2>'{tmp_path / 'err'}' | head -1; exit ${{PIPESTATUS[0]}}"
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.startswith("hand: optimal")
    assert (tmp_path / "err").read_text() == ""


# Few long iterations under a bare-number deadline: the deadline pace is 600,000 s / 20 = 30,000 s, so the
# seed's 60 s..pace grid at a 1 s step times its K = 1..10 holds about 300,000 (cadence, K) entries, the
# screen's budget (drivers/diagnosis/candidates.py MAX_ENTRIES): widening it for a longer deadline did not fit.
FINE_GRID = ["workload.iterations=20", "workload.batch_trajectories=204800", "gpu_pools[0].gpus=3000"]


def test_a_fine_grid_does_not_stop_the_diagnosis_from_raising_the_deadline():
    from trainground.drivers.diagnosis.diagnose import diagnosed
    from trainground.models.edits import edited, load_edited
    from trainground.solver.solve import solve_instance

    inst = load_edited(SEED, [*FINE_GRID, "schedule.deadline=600000"])
    result = solve_instance(inst)
    assert result.status == "infeasible"
    diagnosis = diagnosed(inst, result).diagnosis
    assert "deadline" not in diagnosis["cannot_help"]
    change = next(c for c in diagnosis["changes"] if c["input"] == "deadline")
    assert change["exact"] and change["value"] > 600000  # exact: one grid step (n·step of makespan) less has no plan
    assert solve_instance(edited(inst, {"schedule.deadline": change["value"]})).status == "optimal"
    assert (
        solve_instance(edited(inst, {"schedule.deadline": change["value"] - 20 * inst.schedule.cadence.step})).status
        == "infeasible"
    )


# The same question on the default basis, hold (docs/model.md §11), where start-up is counted and every
# (cadence, K) pair lists each training-group count worth having (§8): the diagnosis's probes at a loose value
# (16 times the pool's 3,000 GPUs: 48,000, room for 6,000 groups of 8) listed up to 6,000 rows for each of the
# ~27,000 pairs of the 60 s..30,000 s grid at a 10 s step, ~10^8 rows, and ran out of memory.
HOLD = [*FINE_GRID, "schedule.deadline=600000", "schedule.cadence.step=10s", "planning.basis=hold"]
MEMORY = 4 * 2**30  # bytes of address space the command may take: ample for a diagnosis, far short of the rows


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


@pytest.mark.parametrize("gpus", [3000, 3100])  # 3000: no pair passes; 3100: pairs pass, whole plans are cut
def test_under_hold_the_diagnosis_of_a_bare_deadline_fits_in_memory_and_finds_the_deadline(gpus):
    from trainground.models.edits import load_edited
    from trainground.solver.solve import Planner

    edits = [*HOLD, f"gpu_pools[0].gpus={gpus}"]
    argv = [str(TRAINGROUND), "solve", str(SEED), "--no-levers", "--json", *(a for e in edits for a in ("--set", e))]
    done = subprocess.run(argv, capture_output=True, text=True, preexec_fn=_limit_memory, timeout=600)
    assert done.returncode == 3, done.stderr  # infeasible, diagnosed (an internal error is exit 1)
    diagnosis = json.loads(done.stdout)["diagnosis"]
    assert "deadline" not in diagnosis["cannot_help"]
    change = next(c for c in diagnosis["changes"] if c["input"] == "deadline")
    assert change["exact"] and change["value"] > 600000
    # exact on the hold rows the diagnosis reads (the replays then set the allowance): the shortest makespan
    at = Planner(load_edited(SEED, [*edits, f"schedule.deadline={change['value']}"])).solve("makespan")
    assert at.plan is not None and at.plan.makespan_s == pytest.approx(change["value"], rel=1e-9)
    short = Planner(load_edited(SEED, [*edits, f"schedule.deadline={change['value'] * (1 - 1e-6)}"])).solve()
    assert short.plan is None
