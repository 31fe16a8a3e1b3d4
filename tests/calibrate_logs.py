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

from trainground.calibrate.logs import Steps, Trajectories

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


@dataclass(frozen=True)
class Pool:
    name: str
    tokens_per_gpu_s: float
    gpus: int


@dataclass(frozen=True)
class TwoPools:
    """A two-pool run: two inference pools at 90 and 40 tokens/s per GPU, lognormal lifetimes (median
    900 s, p99 11,630 s) cut by a timeout at their 95th percentile (5 % of attempts time out)."""

    median: float = 900.0
    p99: float = 11630.0
    timeout_share: float = 0.05
    pools: tuple[Pool, ...] = (Pool("h100", 90.0, 64), Pool("a100", 40.0, 64))
    tokens_mean: float = 8000.0
    group_size: int = 8
    log_end: float = 20000.0

    @property
    def sigma(self) -> float:
        return math.log(self.p99 / self.median) / Z_99

    @property
    def timeout(self) -> float:
        from scipy import special

        return self.median * math.exp(float(special.ndtri(1 - self.timeout_share)) * self.sigma)

    def attempts_per_s(self, pool: Pool) -> float:
        return pool.tokens_per_gpu_s * pool.gpus / self.tokens_mean


def two_pool_columns(truth: TwoPools, seed: int, censored_at: bool = True) -> dict[str, np.ndarray]:
    """A trajectory log of ``truth``: a ``pool`` column, UUID group ids, timed-out attempts ending at the
    timeout (with a ``censored_at`` column when asked, else only their end). The messy cells a real log
    has are added by :func:`mess`."""
    rng = np.random.default_rng(seed)
    g = truth.group_size
    parts = []
    for index, pool in enumerate(truth.pools):
        groups = rng.poisson(truth.attempts_per_s(pool) / g * truth.log_end)
        parts.append((np.sort(rng.uniform(0, truth.log_end, groups)), np.full(groups, index)))
    launch = np.concatenate([p[0] for p in parts])
    pool_of = np.concatenate([p[1] for p in parts])
    order = np.argsort(launch, kind="stable")
    launch, pool_of = launch[order], pool_of[order]
    start = np.repeat(launch, g)
    n = start.size
    life = np.exp(rng.normal(math.log(truth.median), truth.sigma, n))
    timed_out = life > truth.timeout
    end = start + np.minimum(life, truth.timeout)
    end[end > truth.log_end] = np.nan
    uuids = np.array([f"{v:032x}" for v in rng.integers(0, 2**63, launch.size)]) if launch.size else np.array([])
    cols = {
        "start": start,
        "end": end,
        "output_tokens": np.round(rng.uniform(0.5, 1.5, n) * truth.tokens_mean),
        "group": np.repeat(uuids, g),
        "pool": np.array([truth.pools[i].name for i in np.repeat(pool_of, g)]),
    }
    if censored_at:
        cols["censored_at"] = np.where(timed_out & ~np.isnan(end), end, np.nan)
    return cols


def mess(cols: dict[str, np.ndarray], seed: int, nan_rows: int = 5, skewed_rows: int = 3) -> tuple[dict, np.ndarray]:
    """The same log with NaN tokens on ``nan_rows`` ended rows and ``skewed_rows`` ends 50 ms before their
    start (clock skew between hosts)."""
    rng = np.random.default_rng(seed)
    out = {k: v.copy() for k, v in cols.items()}
    ended = np.flatnonzero(~np.isnan(out["end"]))
    picked = rng.choice(ended, nan_rows + skewed_rows, replace=False)
    out["output_tokens"][picked[:nan_rows]] = np.nan
    out["end"][picked[nan_rows:]] = out["start"][picked[nan_rows:]] - 0.05
    return out, picked


def write_table(path, cols: dict[str, np.ndarray], nan_as: str = "") -> None:
    """CSV (or JSONL by extension) with ``nan_as`` for NaN cells of float columns and text columns as text."""
    keys = list(cols)
    with open(path, "w", encoding="utf-8") as handle:
        if str(path).endswith(".jsonl"):
            import json

            for row in zip(*cols.values()):
                record = {k: (None if isinstance(v, float) and math.isnan(v) else _plain(v)) for k, v in zip(keys, row)}
                handle.write(json.dumps(record) + "\n")
            return
        handle.write(",".join(keys) + "\n")
        for row in zip(*cols.values()):
            handle.write(",".join(_cell(v, nan_as) for v in row) + "\n")


def _plain(v):
    return v.item() if hasattr(v, "item") else v


def _cell(v, nan_as: str) -> str:
    if isinstance(v, (float, np.floating)):
        return nan_as if math.isnan(v) else repr(float(v))
    return str(v)


@dataclass(frozen=True)
class StepTruth:
    """A framework's step log from known parameters: an amdahl update law over the training GPU counts, a
    weight sync and a checkpoint every ``checkpoint_every`` steps, generation at ``tokens_per_gpu_s`` on
    ``inference_gpus`` (not colocated: the job's GPUs are training + inference), and the mess of a real log:
    a restart that re-runs ``restart`` steps, ``missing`` steps absent, ``nan_rows`` NaN update times."""

    steps: int = 300
    training_gpus: tuple[float, ...] = (128.0, 256.0, 512.0)
    reference_gpus: float = 256.0
    reference_time: float = 200.0
    serial_fraction: float = 0.2
    update_noise: float = 0.04
    weight_sync: float = 30.0
    checkpoint: float = 240.0
    checkpoint_every: int = 50
    inference_gpus: int = 256  # the two pools of TwoPools at 128 GPUs each, pooled 65 tokens/s per GPU
    tokens_per_gpu_s: float = 65.0
    responses: int = 512
    response_mean: float = 8000.0
    prompt_mean: float = 2000.0
    staleness: float = 1.5
    life_median: float = 900.0  # per-trajectory times of verl's agent loop: lognormal, as TwoPools
    life_p99: float = 11630.0
    restart: int = 8
    missing: int = 3
    nan_rows: int = 2

    def update(self, gpus: np.ndarray) -> np.ndarray:
        f = self.serial_fraction
        return self.reference_time * (f + (1 - f) * self.reference_gpus / gpus)

    @property
    def generation(self) -> float:
        return self.responses * self.response_mean / (self.tokens_per_gpu_s * self.inference_gpus)


def step_records(truth: StepTruth, framework: str, seed: int) -> list[dict]:
    """One flat record per logged step (keys as ``framework`` names them; ``trainer/gpus`` is an extra key
    a user would add), with a restart, missing steps and NaN rows."""
    rng = np.random.default_rng(seed)
    order = list(range(1, truth.steps + 1))
    cut = truth.steps // 2
    order = order[:cut] + list(range(cut - truth.restart + 1, cut + 1)) + order[cut:]  # the restart re-runs
    gone = set(rng.choice(np.arange(10, truth.steps - 10), truth.missing, replace=False).tolist())
    order = [step for step in order if step not in gone]
    nan_at = set(rng.choice(np.arange(cut + truth.restart, len(order)), truth.nan_rows, replace=False).tolist())
    keys_rng = np.random.default_rng(seed + 1)  # the framework-specific keys draw apart: the same steps for each
    records = []
    for row, step in enumerate(order):
        gpus = truth.training_gpus[step % len(truth.training_gpus)]
        update = float(truth.update(np.array(gpus)) * math.exp(rng.normal(0, truth.update_noise)))
        gen = truth.generation * math.exp(rng.normal(0, 0.03))
        sync = truth.weight_sync * math.exp(rng.normal(0, 0.05))
        save = truth.checkpoint * math.exp(rng.normal(0, 0.05)) if step % truth.checkpoint_every == 0 else None
        total = gen + update + sync + 10.0 + (save or 0.0)
        tokens = truth.responses * (truth.response_mean + truth.prompt_mean)
        if row in nan_at:
            update = float("nan")
        records.append(_keys(framework, step, gpus, update, gen, sync, save, total, tokens, truth, keys_rng))
    return records


def _keys(framework, step, gpus, update, gen, sync, save, total, tokens, truth, rng) -> dict:
    common = {"trainer/gpus": gpus, "actor/entropy": float(rng.random())}  # an extra key, ignored unless mapped
    if framework == "verl":
        sigma = math.log(truth.life_p99 / truth.life_median) / Z_99
        lives = np.exp(rng.normal(math.log(truth.life_median), sigma, truth.responses))
        loop = "timing_s/agent_loop/generate_sequences/"
        out = {
            loop + "min": float(lives.min()),
            loop + "mean": float(lives.mean()),
            loop + "max": float(lives.max()),
            "step": step,
            "timing_s/gen": gen,
            "timing_s/update_actor": update,
            "timing_s/update_weights": sync,
            "timing_s/step": total,
            "response_length/mean": truth.response_mean,
            "prompt_length/mean": truth.prompt_mean,
            "perf/total_num_tokens": tokens,
            "perf/time_per_step": total,
            "perf/throughput": tokens / (total * (gpus + truth.inference_gpus)),
        }
        if save is not None:
            out["timing_s/save_checkpoint"] = save
    elif framework == "slime":
        out = {
            "rollout/step": step,
            "perf/actor_train_time": update,
            "perf/rollout_time": gen,
            "perf/train_wait_time": gen,
            "perf/update_weights_time": sync,
            "perf/step_time": total,
            "staleness/mean": truth.staleness + rng.normal(0, 0.2),
        }
        if save is not None:
            out["perf/save_model_time"] = save
    else:
        out = {
            "step": step,
            "timeperf/rollout": gen,
            "timeperf/train_step": update,
            "timeperf/update_weights": sync,
            "timeperf/save": save if save is not None else 0.0,
        }
    return {**out, **common}


def write_records(path, records: list[dict], framework: str) -> None:
    """verl: its file logger's ``{"step": N, "data": {...}}`` lines; slime: flat JSONL; a ``.csv`` path: a
    wandb-style export (one column per key, empty where a step lacks it)."""
    import json

    if str(path).endswith(".csv"):
        keys = list(dict.fromkeys(k for r in records for k in r))
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(",".join(keys) + "\n")
            for r in records:
                handle.write(",".join("" if r.get(k) is None else repr(r[k]) for k in keys) + "\n")
        return
    with open(path, "w", encoding="utf-8") as handle:
        for r in records:
            if framework == "verl":
                step = r["step"]
                r = {"step": step, "data": {k: v for k, v in r.items() if k != "step"}}
            handle.write(json.dumps(r) + "\n")
