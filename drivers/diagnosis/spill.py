"""Why cloud VMs cannot stand in for local sandbox nodes, said in one note of a diagnosis.

MODEL §3.5–3.6: local nodes hold every backend's mean in-flight environments ``E_b`` (row 5) whatever the
VMs do; VMs hold part of the peak ``E^pk_b = peak_to_mean·E_b`` (row 6), at most ``eligible_share_b`` of it.
So the local nodes must hold ``max(E_b, (1 - eligible_share_b)·E^pk_b)``, and the most VMs take off them is
``min(eligible_share_b, 1 - 1/peak_to_mean)`` of the peak: nothing at ``peak_to_mean`` 1, whatever the share.
"""

from __future__ import annotations

from trainground.models.instance import Instance

LAW = (
    "local nodes hold each backend's mean in-flight environments, and cloud VMs only the peak's part above "
    "the mean, at most eligible_share of the peak (docs/model.md §3, rows 5 and 6)"
)


def vm_relief(inst: Instance) -> dict[str, float]:
    """{backend: the largest share of its peak in-flight environments that VMs can take off the local nodes}."""
    env = inst.environment
    above_mean = 1.0 - 1.0 / env.peak_to_mean
    out = {}
    for backend in env.backends:
        holders = [v for v in env.cloud.vm_types if backend.name in v.density and v.max_vms != 0]
        share = env.cloud.eligible_share.get(backend.name, 0.0)
        out[backend.name] = min(share, above_mean) if holders else 0.0
    return out


def spill_note(inst: Instance, cannot_help: list[str], sandbox_limits: bool) -> str | None:
    """The note of a diagnosis whose sandbox limits cut whole plans (``sandbox_limits``) when VMs cannot lift
    them: a VM cap among ``cannot_help``, or VMs that can take nothing off the local nodes. None otherwise."""
    env = inst.environment
    if not sandbox_limits or not env.cloud.vm_types or not env.backends:
        return None
    relief = vm_relief(inst)
    vm_caps = [name for name in cannot_help if name.startswith("max_vms[")]
    if not vm_caps and any(relief.values()):
        return None
    head = f"{', '.join(vm_caps)} cannot help" if vm_caps else "cloud VMs cannot help"
    return f"{head}: {LAW}; {'; '.join(_reasons(inst, relief))}"


def _reasons(inst: Instance, relief: dict[str, float]) -> list[str]:
    env = inst.environment
    if env.peak_to_mean <= 1.0:
        return ["peak_to_mean is 1, so the peak is the mean and VMs take nothing off the local nodes"]
    out = []
    for name, share in relief.items():
        holders = [v for v in env.cloud.vm_types if name in v.density]
        if not env.cloud.eligible_share.get(name, 0.0):
            out.append(f"{name}: eligible_share is 0 (a backend not listed cannot spill)")
        elif not holders:
            out.append(f"{name}: no VM type has a density for it")
        elif all(v.max_vms == 0 for v in holders):
            out.append(f"{name}: max_vms is 0 on every VM type that holds it")
        else:
            out.append(
                f"{name}: VMs take at most {share:.1%} of its peak (min(eligible_share, 1 - 1/peak_to_mean) at "
                f"peak_to_mean {env.peak_to_mean:g}); the local nodes hold the rest, and at least the mean"
            )
    return out
