"""Test helpers shared by the plan tests."""

from __future__ import annotations


def decisions(result) -> dict:
    """A plan's decisions in the instance's vocabulary, for comparing two plans."""
    plan = result.plan
    return {
        "cadence": plan.cadence_s,
        "K": plan.versions_kept,
        "replicas": {r.shape: r.replicas for r in plan.inference},
        "groups": plan.training_groups,
        "nodes": {n.type: n.count for n in plan.local_nodes},
        "vms": {v.type: v.count for v in plan.cloud_vms},
    }
