"""What cloud spillover means (MODEL §3.5–3.6), said where a planner meets it: local nodes always hold the
mean in-flight environments and VMs at most eligible_share of the peak, so VMs take at most
min(eligible_share, 1 - 1/peak_to_mean) of the peak off the local nodes. The closed form is checked against the
plans the solver returns, and the diagnosis of a what-if whose VMs cannot help says why."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from trainground.cli import main
from trainground.drivers.diagnosis.diagnose import diagnosed
from trainground.drivers.diagnosis.spill import vm_relief
from trainground.models.edits import edited
from trainground.models.load import load_instance
from trainground.solver.solve import solve_instance

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "instances" / "seed-week-75.yaml"
MAX_NODES_ONLY = ROOT / "tests" / "data" / "infeasible" / "max-nodes-only.yaml"
STEADY = {"planning.basis": "steady_state"}
DENSITY = 1048  # the seed node's containers; its VMs (64 for $0.2 an hour) are the cheaper host


@pytest.mark.parametrize("peak_to_mean, share, relief", [(2.0, 0.3, 0.3), (1.25, 0.5, 0.2), (1.0, 1.0, 0.0)])
def test_the_local_nodes_of_a_plan_hold_the_peak_the_vms_cannot_take(peak_to_mean, share, relief):
    inst = edited(
        load_instance(SEED),
        {
            **STEADY,
            "environment.peak_to_mean": peak_to_mean,
            "environment.cloud.eligible_share.container": share,
            "environment.cloud.vm_types[0].max_vms": None,
        },
    )
    assert vm_relief(inst) == {"container": pytest.approx(relief)}
    result = solve_instance(inst)
    nodes = sum(n.count for n in result.plan.local_nodes)
    # VMs are the cheaper host, so the plan keeps the fewest nodes the rows allow: those holding what VMs cannot
    assert nodes == math.ceil((1 - relief) * result.metrics.inflight_peak / DENSITY - 1e-9)
    assert (sum(v.count for v in result.plan.cloud_vms) > 0) == (relief > 0)


def notes_of(inst) -> list[str]:
    result = solve_instance(inst)
    assert result.status == "infeasible"
    return diagnosed(inst, result, depth="conflict").diagnosis["notes"]


def spill_line(notes: list[str]) -> str:
    found = [n for n in notes if n.startswith("max_vms[burst] cannot help")]
    assert len(found) == 1, notes
    assert "local nodes hold each backend's mean in-flight environments" in found[0]
    return found[0]


def test_a_diagnosis_says_vms_take_nothing_at_a_peak_to_mean_of_one():
    line = spill_line(notes_of(edited(load_instance(MAX_NODES_ONLY), STEADY)))
    assert "peak_to_mean is 1, so the peak is the mean" in line


@pytest.mark.parametrize(
    "changes, reason",
    [
        ({"environment.cloud.eligible_share.container": 0.0}, "container: eligible_share is 0"),
        ({"environment.cloud.vm_types[0].max_vms": 0}, "container: max_vms is 0 on every VM type"),
        ({}, "container: VMs take at most 33.3% of its peak"),
    ],
)
def test_a_diagnosis_says_why_the_vms_of_a_what_if_cannot_help(changes, reason):
    inst = edited(load_instance(MAX_NODES_ONLY), {**STEADY, "environment.peak_to_mean": 1.5, **changes})
    assert reason in spill_line(notes_of(inst))


def test_a_diagnosis_whose_vms_can_help_has_no_spill_note():
    # VMs may take 40 % of a peak at twice the mean: 25 nodes hold the rest, and 224 VMs (not 10) restore a plan
    inst = edited(
        load_instance(SEED),
        {
            **STEADY,
            "environment.peak_to_mean": 2.0,
            "environment.cloud.eligible_share.container": 0.4,
            "environment.node_types[0].max_nodes": 25,
            "environment.cloud.vm_types[0].max_vms": 10,
        },
    )
    result = solve_instance(inst)
    diagnosis = diagnosed(inst, result, depth="conflict").diagnosis
    assert "max_vms[burst]" in diagnosis["relaxations"]
    assert not any("VMs" in n for n in diagnosis["notes"]), diagnosis["notes"]


def test_the_starter_says_what_spillover_means_beside_its_fields():
    result = CliRunner().invoke(main, ["init"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()

    def comment_above(key: str) -> str:
        at = next(i for i, line in enumerate(lines) if line.strip().startswith(f"{key}:"))
        above = []
        for line in reversed(lines[:at]):
            if not line.strip().startswith("#"):
                break
            above.append(line.strip().lstrip("# "))
        return " ".join(reversed(above))

    assert "at 1 the peak is the mean and VMs never replace a node" in comment_above("peak_to_mean")
    assert "local nodes always hold the mean" in comment_above("eligible_share")
    assert "min(share, 1 - 1/peak_to_mean)" in comment_above("eligible_share")
