"""The ``reliability`` section of MODEL.md §13: failures, checkpoints, replica restarts and weight sync.

Absent, every figure of §2–§11 is unchanged. Present, the training goodput γ divides the trainer-paced
part of the makespan, each inference shape's availability drops by its failures (and its pool's
preemptions, ``gpu_pools[].preemptions_per_hour``), and each published version pauses generation for
``weight_sync_time``. The default figures are sourced: Meta's Llama 3 report counts 419 unexpected
interruptions in 54 days on 16,384 GPUs (about 50,000 GPU-hours between failures), and MoonshotAI's
checkpoint-engine loads the 1T-parameter Kimi-K2 into 16 inference instances on 256 GPUs in 16 s.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, WithJsonSchema

from trainground.models.base import DURATION, NonNegativeDuration, PositiveDuration, Strict, about
from trainground.models.units import _DURATION, parse_duration


def _interval(value: object) -> object:
    """``auto`` stays the word; anything else is a positive duration."""
    if value == "auto":
        return value
    seconds = parse_duration(value)
    if isinstance(seconds, (int, float)) and not seconds > 0:
        raise ValueError(f"must be auto or a duration > 0, got {value!r}")
    return seconds


_INTERVAL_SCHEMA = WithJsonSchema(
    {
        "anyOf": [
            {"type": "number", "exclusiveMinimum": 0},
            {"type": "string", "pattern": _DURATION.pattern, "examples": ["30m", "2486s"]},
            {"const": "auto"},
        ]
    },
    mode="validation",
)
Interval = Annotated[float | Literal["auto"], Field(union_mode="left_to_right"), BeforeValidator(_interval)]


class Reliability(Strict):
    gpu_mtbf: PositiveDuration = Field(
        50000 * 3600.0,
        description=about(
            "Mean time between failures of one GPU, its host's share included: a group of G GPUs fails every "
            "gpu_mtbf/G. Llama 3's report: 419 unexpected interruptions in 54 days on 16,384 GPUs, about 50,000 h",
            unit=DURATION,
            typical="20,000h-100,000h",
            seed="50000h",
        ),
    )
    restart_time: NonNegativeDuration = Field(
        900.0,
        description=about(
            "Time a training failure costs beyond the lost progress: detect, reschedule, reload the last checkpoint",
            unit=DURATION,
            typical="5m-1h",
            seed="15m",
        ),
    )
    checkpoint_time: PositiveDuration = Field(
        60.0,
        description=about(
            "Blocking time to save one training checkpoint",
            unit=DURATION,
            typical="10s-5m",
            seed="60s",
        ),
    )
    checkpoint_interval: Annotated[Interval, _INTERVAL_SCHEMA] = Field(
        "auto",
        description=about(
            "Time between training checkpoints, or auto: Young's interval sqrt(2·checkpoint_time·M_train), "
            "M_train = gpu_mtbf/training GPUs, chosen per plan and reported",
            unit=f"{DURATION}; or auto",
            typical="auto, or 30m-3h",
            seed="auto",
        ),
    )
    replica_restart_time: NonNegativeDuration = Field(
        300.0,
        description=about(
            "Time an inference replica is out after its failure or preemption (its running attempts are "
            "relaunched; each event also loses half a mean lifetime of their work)",
            unit=DURATION,
            typical="1m-15m",
            seed="5m",
        ),
    )
    weight_sync_time: NonNegativeDuration = Field(
        0.0,
        description=about(
            "Generation paused on every replica per published version while new weights load: supply × "
            "(1 - weight_sync_time/L). MoonshotAI's checkpoint-engine: 16 s for Kimi-K2 (1T parameters) to 16 "
            "instances on 256 GPUs; tensor-by-tensor paths take minutes",
            unit=DURATION,
            typical="0s-5m",
            seed="0s",
        ),
    )

    def checked_interval(self) -> float | None:
        """The given checkpoint interval in seconds, or None for auto."""
        return None if self.checkpoint_interval == "auto" else float(self.checkpoint_interval)
