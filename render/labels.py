"""Field paths as people read them: ``inference.shapes[1].tokens_per_gpu_s`` → "tokens/s/GPU (shape h200-tp8)".

A label is the field's own words, then the named item it belongs to (shape, pool, node
type, VM type, backend), named as the instance names it. ``names`` maps the path of each
list item (``inference.shapes[1]``) to its ``name``; a path whose item has no name keeps
its index.
"""

from __future__ import annotations

import re

from trainground.models.limits import LIMITS

FIELD_WORDS = {
    **{limit.key: limit.label for limit in LIMITS},  # the limits' words are theirs (models/limits.py)
    "tokens_per_gpu_s": "tokens/s/GPU",
    "gpu_hour_cost": "$/GPU-hour",
    "gpus_per_replica": "GPUs per replica",
    "version_slowdown": "slowdown per version",
    "hour_cost": "$/hour",
    "billed_fraction": "billed fraction",
    "extra_time": "extra time",
    "batch_trajectories": "trajectories per batch",
    "tokens_per_attempt": "tokens per attempt",
    "intake_rate": "intake rate",
    "group_size": "group size",
    "iterations": "iterations",
    "availability": "availability",
    "reference_time": "update time at the reference",
    "reference_gpus": "reference GPUs",
    "gpus_per_group": "GPUs per training group",
    "utilisation_cap": "utilisation cap",
    "peak_to_mean": "peak-to-mean",
    "median": "occupancy median",
    "p99": "occupancy p99",
    "memory_gb": "memory (GB)",
    "cores": "cores",
    "share": "share",
}
LIST_WORDS = {
    "shapes": "shape",
    "gpu_pools": "pool",
    "node_types": "node type",
    "vm_types": "VM type",
    "backends": "backend",
    "list": "stage",  # stages.list
}
MAP_WORDS = {"density": "density of {}", "eligible_share": "cloud-eligible share of {}"}
_ITEM = re.compile(r"^(.*?)([A-Za-z_]+)\[(\d+|\*)\]$")


def _items(path: str) -> list[tuple[str, str, str]]:
    """(item path, list name, index) for every list item along ``path``, outermost first; ``[*]``'s index is '*'."""
    out, parts = [], path.split(".")
    for depth in range(len(parts)):
        prefix = ".".join(parts[: depth + 1])
        match = _ITEM.match(prefix)
        if match:
            out.append((prefix, match.group(2), match.group(3)))
    return out


def field_label(path: str, names: dict[str, str] | None = None) -> str:
    """The words for the field at ``path``, with the named item it belongs to."""
    names = names or {}
    parts = path.split(".")
    leaf = re.sub(r"\[(\d+|\*)\]$", "", parts[-1])
    parent = re.sub(r"\[(\d+|\*)\]$", "", parts[-2]) if len(parts) > 1 else ""
    if parent in MAP_WORDS:
        words = MAP_WORDS[parent].format(leaf)
    else:
        words = FIELD_WORDS.get(leaf, leaf.replace("_", " "))
    owners = [
        f"every {LIST_WORDS.get(kind, kind)}"
        if index == "*"
        else f"{LIST_WORDS.get(kind, kind)} {names.get(item, f'#{index}')}"
        for item, kind, index in _items(path)
    ]
    return f"{words} ({', '.join(owners)})" if owners else words
