"""A trainground step log alone (``calibrate --steps`` without a trajectory log or a framework's phases): what it
holds, the update law and the cadence."""

from __future__ import annotations

import numpy as np

from trainground.calibrate.fit import REPLICATES, SEED, Calibration
from trainground.calibrate.logs import Steps
from trainground.calibrate.updates import cadence, fit_update_law


def calibrate_update(steps: Steps, replicates: int = REPLICATES, seed: int = SEED) -> Calibration:
    """A trainground step log alone (no trajectory log, no framework's phases): the update law and the cadence
    it holds; the lifetimes, throughput and tokens are not in it, which a note says (with --into they are kept)."""
    rng = np.random.default_rng(seed)
    note = (
        "lifetimes, tokens/s and tokens per attempt: not in a trainground step log (it holds the updates alone): "
        "not fitted (with --into they are kept as the instance has them); give --trajectories for them"
    )
    return Calibration(
        trajectories=None,
        steps=steps.file,
        occupancy=None,
        per_backend={},
        shares={},
        tokens_per_gpu_s=None,
        window={},
        tokens_per_attempt=None,
        intake=None,
        correlation=None,
        update=fit_update_law(steps, rng, replicates),
        cadence=cadence(steps, rng, replicates),
        gaps=None,
        bottleneck=None,
        notes=[*steps.notes, note],
    )
