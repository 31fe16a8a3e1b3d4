"""Logs drawn from known parameters, for calibration tests and the calibrate bench.

Groups of ``group_size`` attempts launch as a Poisson process at ``attempts_per_s``; each attempt
lives a lognormal lifetime (or one draw per group when ``comonotone``; or a two-component mixture),
emits a uniform number of output tokens around ``tokens_mean`` and is effective with probability
``intake``. The log ends at ``log_end``: later launches are absent, later ends empty (running).
The truth of tokens/s per GPU is ``attempts_per_s · tokens_mean / inference_gpus``. Iterations:
boundaries every ``cadence`` from 10 % to 90 % of the log, update times from an amdahl law (inverse
when ``serial_fraction`` is 0) with lognormal noise, training GPUs cycling over ``training_gpus``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from calibrate.logs import Steps, Trajectories

Z_99 = 2.3263478740408408


@dataclass(frozen=True)
class Truth:
    median: float = 1044.0
    p99: float = 13900.0
    tokens_mean: float = 20000.0
    intake: float = 0.8
    group_size: int = 8
    attempts_per_s: float = 20.0
    inference_gpus: int = 4000
    log_end: float = 40000.0
    reference_gpus: float = 512.0
    reference_time: float = 300.0
    serial_fraction: float = 0.0
    training_gpus: tuple[float, ...] = (256.0, 512.0, 1024.0)
    update_noise: float = 0.05
    cadence: float = 600.0
    comonotone: bool = False
    mixture: bool = False

    @property
    def sigma(self) -> float:
        return math.log(self.p99 / self.median) / Z_99

    @property
    def tokens_per_gpu_s(self) -> float:
        return self.attempts_per_s * self.tokens_mean / self.inference_gpus


def columns(truth: Truth, seed: int) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(trajectory columns, step columns) with NaN for empty cells."""
    rng = np.random.default_rng(seed)
    g = truth.group_size
    groups = rng.poisson(truth.attempts_per_s / g * truth.log_end)
    launch = np.sort(rng.uniform(0, truth.log_end, groups))
    start = np.repeat(launch, g)
    n = start.size
    if truth.comonotone:
        life = np.repeat(np.exp(rng.normal(math.log(truth.median), truth.sigma, groups)), g)
    elif truth.mixture:
        short = rng.random(n) < 0.5
        life = np.exp(np.where(short, rng.normal(math.log(200), 0.3, n), rng.normal(math.log(5000), 0.3, n)))
    else:
        life = np.exp(rng.normal(math.log(truth.median), truth.sigma, n))
    end = start + life
    end[end > truth.log_end] = np.nan
    tokens = np.round(rng.uniform(0.5, 1.5, n) * truth.tokens_mean)
    effective = (rng.random(n) < truth.intake).astype(float)
    traj = {
        "start": start,
        "end": end,
        "output_tokens": tokens,
        "group": np.repeat(np.arange(groups), g),
        "effective": effective,
    }
    boundary = np.arange(0.1 * truth.log_end, 0.9 * truth.log_end + 1e-9, truth.cadence)
    gpus = np.resize(np.array(truth.training_gpus), boundary.size)
    f = truth.serial_fraction
    law = truth.reference_time * (f + (1 - f) * truth.reference_gpus / gpus)
    update = law * np.exp(rng.normal(0, truth.update_noise, boundary.size))
    steps = {
        "iteration": np.arange(boundary.size, dtype=float),
        "boundary": boundary,
        "update_s": update,
        "training_gpus": gpus,
        "inference_gpus": np.full(boundary.size, float(truth.inference_gpus)),
    }
    return traj, steps


def logs(truth: Truth, seed: int) -> tuple[Trajectories, Steps]:
    """The same logs as in-memory objects (what the readers return)."""
    traj, steps = columns(truth, seed)
    log_end = float(np.nanmax(np.concatenate([traj["end"], traj["start"]])))
    log = Trajectories(
        "generated",
        traj["start"],
        traj["end"],
        traj["output_tokens"],
        log_end,
        effective=traj["effective"],
        group=traj["group"],
    )
    return log, Steps(
        "generated",
        steps["iteration"],
        steps["update_s"],
        steps["training_gpus"],
        steps["inference_gpus"],
        steps["boundary"],
    )


def write_csv(path, cols: dict[str, np.ndarray]) -> None:
    """CSV with empty cells for NaN (through pyarrow)."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    arrays = [pa.array(v, mask=np.isnan(v)) if v.dtype.kind == "f" else pa.array(v) for v in cols.values()]
    pcsv.write_csv(pa.table(arrays, names=list(cols)), path)
