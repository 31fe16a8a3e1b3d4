"""The table of limits (models/limits.py) is what the levers, the diagnosis's whole-plan findings, the labels and
the plausibility caps read: each row names a real field, and each reader lists exactly the rows an instance sets."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainground.models import limits
from trainground.models.edits import load_edited
from trainground.models.fields import field_docs
from trainground.models.plausible import CAPS
from trainground.render.labels import field_label

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "instances" / "seed-week-75.yaml"
CAPPED = [
    "environment.node_types[0].max_nodes=40",
    "environment.cloud.vm_types[0].max_vms=12",
    "limits.max_hourly_cost=90000",
    "limits.max_total_cost=20000000",
    "freshness.max_mean_gap=4",
]


def test_every_limit_is_a_documented_field_with_its_own_words():
    documented = {doc.path.replace("[]", "[*]") for doc in field_docs()}
    assert "environment.node_types[*].max_nodes" in documented
    for limit in limits.LIMITS:
        assert limit.path in documented, limit.path
        item = limit.path.replace("[*]", "[0]")
        assert field_label(item).startswith(limit.label), (item, field_label(item))
        if limit.cap is not None:
            assert CAPS[limit.path] == limit.cap


def test_an_instance_sets_the_limits_it_names_in_the_tables_order():
    inst = load_edited(SEED, CAPPED)
    found = [(s.path, s.value) for s in limits.set_limits(inst, binds=limits.WHOLE_PLAN)]
    assert found == [
        ("environment.node_types[0].max_nodes", 40),
        ("environment.cloud.vm_types[0].max_vms", 12),
        ("limits.max_hourly_cost", 90000),
        ("limits.max_total_cost", 20000000),
    ]
    bare = load_edited(SEED, [])
    assert [s.path for s in limits.set_limits(bare, binds=limits.WHOLE_PLAN)] == [
        "environment.cloud.vm_types[0].max_vms"  # the seed caps its burst VMs, and nothing else of a whole plan
    ]
    assert limits.set_limit(inst, "limits.max_total_cost").limit.criterion == "total_cost"
    assert limits.set_limit(bare, "limits.max_total_cost") is None


@pytest.mark.parametrize(
    "path, now, relaxed",
    [
        ("freshness.max_versions_kept", 8, [12]),  # +50 %
        ("environment.node_types[0].max_nodes", 40, [44]),  # +10 %
        ("environment.cloud.vm_types[0].max_vms", 3, [4]),  # at least +1
        ("freshness.max_group_drop", 0.95, [1.0]),  # a share at most 1
        ("freshness.max_group_drop", 1.0, []),  # already at 1: no step
        ("reliability.restart_time", 900, [450]),  # halved
    ],
)
def test_a_lever_step_is_the_tables(path, now, relaxed):
    edits = [f"{path}={now}"]
    if path.startswith("reliability."):
        edits.append("reliability.gpu_mtbf=50000h")
    inst = load_edited(SEED, edits)
    assert limits.set_limit(inst, path).relaxed(inst) == pytest.approx(relaxed)


def test_the_deadline_steps_a_day_each_way_while_it_stays_above_the_extra_time():
    inst = load_edited(SEED, ["schedule.deadline=1.5d"])
    assert limits.set_limit(inst, "schedule.deadline").relaxed(inst) == [2.5 * 86400, 0.5 * 86400]
    short = load_edited(SEED, ["schedule.deadline=0.9d"])
    assert limits.set_limit(short, "schedule.deadline").relaxed(short) == [1.9 * 86400]


def test_the_levers_and_the_diagnosis_list_the_tables_limits():
    from trainground.drivers.diagnosis import screen as sc
    from trainground.drivers.diagnosis.findings import findings_of
    from trainground.drivers.tradeoffs.levers import steps
    from trainground.solver.table.pairs import TableCache

    inst = load_edited(SEED, CAPPED)
    set_paths = [s.path for s in limits.set_limits(inst)]
    assert [path for _, path, *_ in steps(inst)] == [
        p for s in limits.set_limits(inst) for p in [s.path] * len(s.relaxed(inst))
    ]
    assert set(set_paths) == {path for _, path, *_ in steps(inst)}
    cache = TableCache(8)
    base = sc.screen(inst, cache)
    whole = [f.cand.path for f in findings_of(inst, cache, base, {}) if f.families == ("sandboxes and budgets",)]
    assert whole == [s.path for s in limits.set_limits(inst, binds=limits.WHOLE_PLAN)]
