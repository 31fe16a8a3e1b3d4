"""The starter instance `trainground init` writes: the seed article's baseline (one run of 1,000 iterations
× 4,096 trajectories in a week) with every field present, over any number of GPU pools and sandbox backends."""

from __future__ import annotations

from typing import Any

from trainground.models.limits import LIMITS


def starter_document(pools: int = 1, backends: tuple[str, ...] = ("container",)) -> dict[str, Any]:
    """A valid, feasible instance document with every field set (optional ones at their defaults or null).

    Pool ``i`` (0-based) has the seed's 10,000 GPUs at 2 + 0.5·i $/GPU-hour and one tp8 shape at
    75·(1 + 0.25·i) tokens/s/GPU; training runs on the first pool. Backends share the attempts
    equally, each with the seed container's figures.
    """
    if pools < 1:
        raise ValueError("pools must be >= 1")
    names = list(dict.fromkeys(backends))
    if not names or any(not n for n in names):
        raise ValueError("backends must name at least one backend")
    pool_names = ["main"] if pools == 1 else [f"pool{i + 1}" for i in range(pools)]
    shares = [round(1 / len(names), 4)] * len(names)
    shares[-1] = round(1 - sum(shares[:-1]), 4)
    return {
        "schema_version": 1,
        "name": "my-run",
        "workload": {
            "iterations": 1000,
            "batch_trajectories": 4096,
            "group_size": 8,
            "tokens_per_attempt": 32768,
            "intake_rate": 1.0,
        },
        "schedule": {
            "deadline": "7d",
            "extra_time": "0s",
            "cadence": {"min": "60s", "max": None, "step": "1s"},
            "count_startup": False,
        },
        "gpu_pools": [
            {
                "name": name,
                "gpus": 10000,
                "gpu_hour_cost": 2.0 + 0.5 * i,
                "billing": "used",
                "preemptions_per_hour": None,
            }
            for i, name in enumerate(pool_names)
        ],
        "inference": {
            "availability": 1.0,
            "shapes": [
                {
                    "name": "tp8" if pools == 1 else f"tp8-{name}",
                    "pool": name,
                    "gpus_per_replica": 8,
                    "tokens_per_gpu_s": 75 * (1 + 0.25 * i),
                    "version_slowdown": 0.0,
                }
                for i, name in enumerate(pool_names)
            ],
        },
        "training": {
            "pool": pool_names[0],
            "gpus_per_group": 8,
            "min_groups": 1,
            "max_groups": None,
            "update_time": {"law": "inverse", "reference_gpus": 7000, "reference_time": "300s"},
        },
        "environment": {
            "occupancy": {"distribution": "lognormal", "median": "1044s", "p99": "13900s", "mean": None, "sigma": None},
            "littles_law_uses": "mean",
            "backends": [{"name": n, "share": s, "cores": 0.05, "memory_gb": 0.5} for n, s in zip(names, shares)],
            "node_types": [
                {
                    "name": "standard",
                    "cores": 188,
                    "memory_gb": 1560,
                    "density": {n: 1048 for n in names},
                    "hour_cost": 12.0,
                    "max_nodes": None,
                }
            ],
            "utilisation_cap": 1.0,
            "peak_to_mean": 1.0,
            "cloud": {
                "eligible_share": {n: 1.0 for n in names},
                "vm_types": [
                    {
                        "name": "burst",
                        "density": {n: 64 for n in names},
                        "cores": 16,
                        "memory_gb": 64,
                        "hour_cost": 1.0,
                        "billed_fraction": 0.2,
                        "max_vms": 200,
                    }
                ],
            },
        },
        "freshness": {
            "max_versions_kept": 10,
            "gap_convention": "consumer",
            "overrun_policy": "drop",
            "group_correlation": "independent",
            "max_mean_gap": None,
            "max_exceedance": None,
            "max_group_drop": None,
        },
        "objective": "total_cost",
        "limits": {limit.key: None for limit in LIMITS if limit.path.startswith("limits.")},  # every budget, unset
        "uncertainty": {
            "samples": 1000,
            "seed": 0,
            "confidence": None,
            "factors": [
                {
                    "name": "throughput",
                    "paths": ["inference.shapes[*].tokens_per_gpu_s"],
                    "dist": "normal",
                    "mean": 1.0,
                    "sd": 0.05,
                    "median": None,
                    "sigma": None,
                    "low": None,
                    "mode": None,
                    "high": None,
                }
            ],
        },
        "planning": {"basis": "hold", "on_time": 0.9, "sandbox_wait": 0.01, "replays": 16, "seed": 0},
    }


def optional_sections() -> dict[str, Any]:
    """Sections `init` writes commented out, ready to uncomment: the reliability of MODEL §13 at the sourced
    figures (Llama 3's 419 interruptions in 54 days on 16,384 GPUs, about 50,000 GPU-hours between failures;
    checkpoint-engine's 16 s for Kimi-K2 to 16 instances on 256 GPUs), and the stages of MODEL §12 (the seed
    week with responses growing from 16k to 48k tokens per attempt), and a run regime of MODEL §14 (admission
    control at k = 8 with in-flight updates, every field shown)."""
    return {
        "reliability": {
            "gpu_mtbf": "50000h",
            "restart_time": "15m",
            "checkpoint_time": "60s",
            "checkpoint_interval": "auto",
            "replica_restart_time": "5m",
            "weight_sync_time": "16s",
        },
        "regime": {
            "mode": "async",
            "staleness": "admission",
            "steps_ahead": 8,
            "in_flight_updates": True,
            "recompute": "none",
            "prefill_cost": 0.05,
            "context_tokens": 0,
            "rollout_timeout": None,
            "truncated": "keep",
            "max_concurrent_attempts": None,
            "switch_time": "0s",
            "weight_sync_time": None,
        },
        "stages": {
            "capacity": "fixed",
            "switch_time": "0s",
            "list": [
                {
                    "name": "early",
                    "iterations": 300,
                    "tokens_per_attempt": 16384,
                    "intake_rate": None,
                    "occupancy": {
                        "distribution": "lognormal",
                        "median": "700s",
                        "p99": "9000s",
                        "mean": None,
                        "sigma": None,
                    },
                    "update_time_scale": 1.0,
                },
                {"name": "mid", "iterations": 400},
                {
                    "name": "late",
                    "iterations": 300,
                    "tokens_per_attempt": 49152,
                    "update_time_scale": 1.5,
                    "occupancy": {"distribution": "lognormal", "median": "1500s", "p99": "20000s"},
                },
            ],
        },
    }
