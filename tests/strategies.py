"""Hypothesis strategies: small random instances the brute-force reference can enumerate."""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st

from trainground.models.load import validate


def examples(count: int) -> int:
    """A property test's example count under the loaded Hypothesis profile: ``count`` under `ci`, scaled by the
    profile's max_examples over 100 (tests/conftest.py: `deep` runs ten times as many)."""
    return max(1, count * settings.default.max_examples // 100)


def deep() -> bool:
    """Whether the loaded Hypothesis profile asks for more than the `ci` profile's examples (`deep`)."""
    return settings.default.max_examples > 100


def cases(every: list, first: int) -> list:
    """A brute-force test's parametrized cases under the loaded profile: the ``first`` ones under `ci`, every one
    under a profile with more examples (`deep`)."""
    return list(every) if deep() else list(every)[:first]


def _maybe(draw, strategy, p_none: float = 0.5):
    return None if draw(st.floats(0, 1)) < p_none else draw(strategy)


@st.composite
def small_instances(draw) -> dict:
    n = draw(st.integers(2, 12))
    B = draw(st.integers(1, 12))
    p = draw(st.sampled_from([1.0, 0.9, 0.6]))
    L_min = draw(st.integers(4, 40))
    step = draw(st.sampled_from([1, 2, 5]))
    count = draw(st.integers(1, 6))
    L_max = L_min + step * (count - 1)
    extra = draw(st.sampled_from([0, 0, 7]))
    deadline = n * L_max * draw(st.sampled_from([0.85, 1.0, 1.0, 1.3])) + extra
    explicit_max = draw(st.booleans())

    pools = [{"name": "main", "gpus": draw(st.integers(4, 16)), "gpu_hour_cost": draw(st.sampled_from([1.0, 2.5]))}]
    if draw(st.booleans()):
        pools.append(
            {"name": "spare", "gpus": draw(st.integers(2, 8)), "gpu_hour_cost": draw(st.sampled_from([0.5, 3.0]))}
        )
    shapes = []
    for i in range(draw(st.integers(1, 3 if len(pools) == 1 else 2))):
        shapes.append(
            {
                "name": f"s{i}",
                "pool": draw(st.sampled_from([pl["name"] for pl in pools])),
                "gpus_per_replica": draw(st.sampled_from([1, 2, 4])),
                "tokens_per_gpu_s": draw(st.sampled_from([1.0, 2.0, 3.5, 6.0, 12.0])),
                "version_slowdown": draw(st.sampled_from([0.0, 0.0, 0.05, 0.3])),
            }
        )
    tokens = draw(st.sampled_from([4, 8, 16]))
    gpg = draw(st.sampled_from([1, 2]))
    law_kind = draw(st.sampled_from(["inverse", "amdahl", "table"]))
    if law_kind == "inverse":
        law = {
            "law": "inverse",
            "reference_gpus": draw(st.integers(1, 6)),
            "reference_time": L_min * draw(st.sampled_from([0.5, 1.0, 2.0])),
        }
    elif law_kind == "amdahl":
        law = {
            "law": "amdahl",
            "reference_gpus": draw(st.integers(1, 6)),
            "reference_time": L_min * draw(st.sampled_from([0.5, 1.0, 2.0])),
            "serial_fraction": draw(st.sampled_from([0.0, 0.1, 0.5])),
        }
    else:
        xs = sorted(draw(st.sets(st.integers(1, 12), min_size=2, max_size=4)))
        law = {
            "law": "table",
            "points": [{"gpus": x, "seconds": L_min * draw(st.sampled_from([0.3, 0.8, 1.5, 3.0]))} for x in xs],
        }
    training = {"pool": "main", "gpus_per_group": gpg, "update_time": law}
    if draw(st.booleans()):
        training["max_groups"] = draw(st.integers(1, 4))

    if draw(st.floats(0, 1)) < 0.8:
        median = L_min * draw(st.sampled_from([0.3, 1.0, 2.5]))
        occupancy = {"distribution": "lognormal", "median": median, "sigma": draw(st.sampled_from([0.3, 0.8, 1.3]))}
    else:
        samples = draw(st.lists(st.integers(1, 4 * L_max), min_size=3, max_size=12))
        occupancy = {"distribution": "empirical", "samples": samples}
    # Scale densities to the expected load so a handful of nodes suffices.
    load = B / L_min / p * 3 * L_min
    backends = [{"name": "ctr", "share": 1.0, "cores": 0.5, "memory_gb": 1.0}]
    if draw(st.booleans()):
        share = draw(st.sampled_from([0.25, 0.5]))
        backends = [{"name": "ctr", "share": 1 - share, "cores": 0.5}, {"name": "vm", "share": share, "cores": 1.0}]
    names = [b["name"] for b in backends]
    node_types = []
    for i in range(draw(st.integers(1, 2))):
        hosted = names if i == 0 else draw(st.sampled_from([names, names[:1], names[-1:]]))
        node_types.append(
            {
                "name": f"n{i}",
                "density": {b: max(1.0, round(load * draw(st.sampled_from([0.4, 0.8, 1.5])), 1)) for b in hosted},
                "cores": draw(st.sampled_from([None, 16.0])),
                "hour_cost": draw(st.sampled_from([0.3, 1.0, 4.0])),
                "max_nodes": draw(st.sampled_from([None, 2, 4])),
            }
        )
    cloud = {}
    if draw(st.booleans()):
        cloud = {
            "eligible_share": {b: draw(st.sampled_from([0.0, 0.5, 1.0])) for b in names},
            "vm_types": [
                {
                    "name": "burst",
                    "density": {b: max(1.0, round(load * draw(st.sampled_from([0.2, 0.5])), 1)) for b in names},
                    "hour_cost": draw(st.sampled_from([0.2, 2.0])),
                    "billed_fraction": draw(st.sampled_from([0.3, 1.0])),
                    "max_vms": draw(st.sampled_from([1, 3])),
                }
            ],
        }
    freshness = {
        "max_versions_kept": draw(st.integers(1, 4)),
        "gap_convention": draw(st.sampled_from(["consumer", "post_publish"])),
        "overrun_policy": draw(st.sampled_from(["drop", "drop", "downweight"])),
        "group_correlation": draw(st.sampled_from(["independent", "comonotone"])),
        "max_mean_gap": _maybe(draw, st.sampled_from([1.5, 4.0]), 0.8),
        "max_exceedance": _maybe(draw, st.sampled_from([0.05, 0.3]), 0.8),
        "max_group_drop": _maybe(draw, st.sampled_from([0.2, 0.6]), 0.8),
    }
    data = {
        "name": "random",
        "workload": {
            "iterations": n,
            "batch_trajectories": B,
            "group_size": draw(st.sampled_from([1, 4, 8])),
            "tokens_per_attempt": tokens,
            "intake_rate": p,
        },
        "schedule": {
            "deadline": deadline,
            "extra_time": extra,
            "cadence": {"min": L_min, "step": step, **({"max": L_max} if explicit_max else {})},
        },
        "gpu_pools": pools,
        "inference": {"availability": draw(st.sampled_from([1.0, 0.9])), "shapes": shapes},
        "training": training,
        "environment": {
            "occupancy": occupancy,
            "littles_law_uses": draw(st.sampled_from(["mean", "median"])),
            "backends": backends,
            "node_types": node_types,
            "utilisation_cap": draw(st.sampled_from([1.0, 0.8])),
            "peak_to_mean": draw(st.sampled_from([1.0, 1.5])),
            "cloud": cloud,
        },
        "freshness": freshness,
        "objective": draw(st.sampled_from(["total_cost", "hourly_cost", "makespan"])),
        "limits": {
            "max_hourly_cost": _maybe(draw, st.sampled_from([15.0, 40.0]), 0.85),
            "max_total_cost": _maybe(draw, st.sampled_from([5.0, 30.0]), 0.85),
        },
    }
    # MODEL §8 start-up and §4 reserved pools, drawn last so the draws above keep their examples.
    if draw(st.floats(0, 1)) < 0.3:
        data["schedule"]["count_startup"] = True
        data["schedule"]["deadline"] = deadline * draw(st.sampled_from([1.0, 1.5]))
    for pool in pools:
        if draw(st.floats(0, 1)) < 0.25:
            pool["billing"] = "reserved"
    return data


def instance_of(data: dict):
    return validate(data, "random.yaml")


@st.composite
def mixed_backend_instances(draw) -> dict:
    """A small instance whose backends share node and VM types while only some state cores or memory_gb
    (MODEL §3.5): every host type may state either figure, and a backend without it adds 0 to that row."""
    data = draw(small_instances())
    # The rows are the point here: a grid that meets the deadline and an update law that keeps up with
    # one or two groups, so that most examples reach the sandbox rows.
    w, sched = data["workload"], data["schedule"]
    cadence = sched["cadence"]
    cadence["max"] = cadence["min"] + cadence["step"] * draw(st.integers(0, 3))
    sched["deadline"] = w["iterations"] * cadence["max"] * draw(st.sampled_from([1.0, 1.3])) + sched["extra_time"]
    data["training"]["update_time"] = {
        "law": "inverse",
        "reference_gpus": 1,
        "reference_time": cadence["min"] * draw(st.sampled_from([0.5, 1.0, 2.0])),
    }
    load = 3 * w["batch_trajectories"] / w["intake_rate"]  # as small_instances scales densities
    shares = draw(st.sampled_from([(0.5, 0.5), (0.7, 0.3), (0.6, 0.3, 0.1)]))
    backends = []
    for i, share in enumerate(shares):
        backend = {"name": f"b{i}", "share": share}
        cores, memory = draw(st.sampled_from([None, 0.5, 2.0])), draw(st.sampled_from([None, 1.0, 4.0]))
        if i == 0:  # the first backend states both figures, the second at most one: always a mix
            cores, memory = cores or 1.0, memory or 2.0
        elif i == 1 and cores is not None and memory is not None:
            cores = None
        backend.update({k: v for k, v in (("cores", cores), ("memory_gb", memory)) if v is not None})
        backends.append(backend)
    names = [b["name"] for b in backends]

    def host(name: str, hosted: list[str], scale) -> dict:
        # Cores and memory sized to the same load as the densities, so any row can bind.
        spec = {"name": name, "density": {b: max(1.0, round(load * draw(scale), 1)) for b in hosted}}
        for key in ("cores", "memory_gb"):
            if draw(st.booleans()):
                spec[key] = max(1.0, round(load * draw(st.sampled_from([0.3, 0.6, 1.5])), 1))
        return spec

    node_types = []
    for i in range(draw(st.integers(1, 2))):
        hosted = names if i == 0 else draw(st.sampled_from([names, names[:1], names[1:]]))
        node = host(f"n{i}", hosted, st.sampled_from([0.4, 0.8, 1.5]))
        node.update(hour_cost=draw(st.sampled_from([0.3, 1.0, 4.0])), max_nodes=draw(st.sampled_from([None, 3, 6])))
        node_types.append(node)
    cloud = {}
    if draw(st.booleans()):
        vm = host("burst", draw(st.sampled_from([names, names[:2]])), st.sampled_from([0.2, 0.5]))
        vm.update(
            hour_cost=draw(st.sampled_from([0.2, 2.0])),
            billed_fraction=draw(st.sampled_from([0.3, 1.0])),
            max_vms=draw(st.sampled_from([1, 3])),
        )
        cloud = {"eligible_share": {b: draw(st.sampled_from([0.0, 0.5, 1.0])) for b in names}, "vm_types": [vm]}
    data["environment"].update(backends=backends, node_types=node_types, cloud=cloud)
    return data


@st.composite
def reliable_instances(draw) -> dict:
    """A small instance with MODEL §13's reliability section and a preemptible pool beside training's,
    scaled so that goodput, availability and weight sync all move the optimum (and γ <= 0 happens)."""
    data = draw(small_instances())
    cadence = data["schedule"]["cadence"]
    L_min = cadence["min"]
    # A short grid and few K keep the enumeration to a few seconds for 200 examples.
    cadence["max"] = L_min + cadence["step"] * draw(st.integers(0, 2))
    data["freshness"]["max_versions_kept"] = min(data["freshness"]["max_versions_kept"], 2)
    data["reliability"] = {
        "gpu_mtbf": draw(st.sampled_from([150.0, 600.0, 3000.0, 1e6])),
        "restart_time": draw(st.sampled_from([0.0, 1.0, 5.0])),
        "checkpoint_time": draw(st.sampled_from([0.5, 2.0])),
        "checkpoint_interval": draw(st.sampled_from(["auto", "auto", 8.0, 30.0])),
        "replica_restart_time": draw(st.sampled_from([0.0, 2.0, 10.0])),
        "weight_sync_time": draw(st.sampled_from([0.0, 1.0, 0.3 * L_min])),
    }
    pools = data["gpu_pools"]
    if len(pools) == 1:
        pools.append({"name": "spare", "gpus": draw(st.integers(2, 8)), "gpu_hour_cost": 0.5})
        data["inference"]["shapes"].append(
            {
                "name": "spot",
                "pool": "spare",
                "gpus_per_replica": draw(st.sampled_from([1, 2])),
                "tokens_per_gpu_s": 3.5,
            }
        )
    pools[1]["preemptions_per_hour"] = draw(st.sampled_from([0.0, 36.0, 180.0]))
    # More deadline room: failures lengthen the run, so that most examples still have a plan.
    data["schedule"]["deadline"] *= draw(st.sampled_from([1.0, 1.3, 1.6]))
    return data
