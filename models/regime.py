"""The ``regime`` section of MODEL.md §14: how generation and training take turns.

Absent (or ``mode: async, staleness: drop`` with every other field at its default) it is the seed's regime
and every figure of §2–§13 is unchanged. The rules that tie its fields to one another and to the rest of
the instance are :func:`models.regime_rules.regime_errors`; the closed forms are ``solver/laws/regimes.py``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from trainground.models.base import (
    DURATION,
    NonNegative,
    NonNegativeDuration,
    PositiveDuration,
    PositiveInt,
    Strict,
    about,
)

Mode = Literal["async", "pipelined", "colocated"]
Staleness = Literal["drop", "admission"]


class Regime(Strict):
    mode: Mode = Field(
        "async",
        description=about(
            "How generation and training take turns: async (separate pools, attempts launched continuously, the "
            "seed's regime), pipelined (separate pools, one batch generated at a time) or colocated (one set of "
            "GPUs alternates: generate a batch, wait for its slowest attempt, train on it)",
            seed="async",
        ),
    )
    staleness: Staleness = Field(
        "drop",
        description=about(
            "Mode async only: drop (freshness.max_versions_kept versions kept, staler groups dropped) or "
            "admission (at most (steps_ahead + 1) batches' worth of groups started but not yet trained, nothing "
            "dropped for age)",
            seed="drop",
        ),
    )
    steps_ahead: NonNegative | None = Field(
        None,
        description=about(
            "k: under mode pipelined 0 (generate, then train) or 1 (generate batch i+1 while batch i trains), required; "
            "staleness admission a real k >= 1, required; null elsewhere",
            unit="batches",
            typical="pipelined 0-1; admission 1-16",
            seed="null",
        ),
    )
    in_flight_updates: bool = Field(
        False,
        description=about(
            "Mode async only: running attempts move to each new version as it is published (one version "
            "resident); required true with staleness admission",
            seed="false",
        ),
    )
    recompute: Literal["none", "prefix"] = Field(
        "none",
        description=about(
            "With in_flight_updates: none (the KV cache is kept across a publish) or prefix (every publish "
            "re-prefills each running attempt's context and what it has generated so far)",
            seed="none",
        ),
    )
    prefill_cost: NonNegative = Field(
        0.05,
        description=about(
            "With recompute: prefix only: output-token equivalents of generation per context token re-prefilled",
            unit="output tokens per prefilled token",
            typical="0.02-0.1",
            seed="0.05",
        ),
    )
    context_tokens: NonNegative = Field(
        0.0,
        description=about(
            "With recompute: prefix only: prompt and tool-observation tokens re-prefilled with the generated prefix",
            unit="tokens",
            typical="0-32,768",
            seed="0",
        ),
    )
    rollout_timeout: PositiveDuration | None = Field(
        None,
        description=about(
            "Any mode: an attempt still running this long is cut short there (lifetimes become min(W, timeout), "
            "tokens per attempt scale with the mean lifetime); leave null if the measured figures already include "
            "the run's timeout",
            unit=DURATION,
            typical="30m-4h",
            seed="null",
        ),
    )
    truncated: Literal["keep", "filter"] = Field(
        "keep",
        description=about(
            "With rollout_timeout: keep (a cut-short attempt is a sample) or filter (it is not: intake p becomes "
            "p·F(timeout))",
            seed="keep",
        ),
    )
    max_concurrent_attempts: PositiveInt | None = Field(
        None,
        description=about(
            "Any mode: the rollout controller's cap on running attempts; null: none",
            unit="attempts",
            typical="1,000-100,000",
            seed="null",
        ),
    )
    switch_time: NonNegativeDuration = Field(
        0.0,
        description=about(
            "Mode colocated only: moving the GPUs between generation and training, per iteration",
            unit=DURATION,
            typical="0s-2m",
            seed="0s",
        ),
    )
    weight_sync_time: NonNegativeDuration | None = Field(
        None,
        description=about(
            "Any mode: seconds per published version; null: reliability.weight_sync_time (0 without it). Under "
            "async it enters the sync factor as reliability.weight_sync_time does; under pipelined and colocated "
            "it is part of each iteration",
            unit=DURATION,
            typical="0s-5m",
            seed="null",
        ),
    )

    @property
    def is_default(self) -> bool:
        """The seed's regime (async, drop, every other field at its default): §2–§13 unchanged."""
        return self == Regime()

    @property
    def batched(self) -> bool:
        """A batch mode (pipelined or colocated): all N attempts of a batch launched together."""
        return self.mode != "async"

    @property
    def overlaps_training(self) -> bool:
        """Whether the next batch is generated while the trainer works (pipelined with k >= 1, async): a step then
        lasts the longer of generation and training, not their sum."""
        return self.mode == "async" or (self.mode == "pipelined" and (self.steps_ahead or 0) >= 1)

    @property
    def own_replay(self) -> bool:
        """Replayed by its own module (simulate.regimes, simulate.admission), not the §10 engine: a batch or an
        admission run, whose sandboxes hold a launch or publish peak rather than the engine's queue."""
        return self.batched or self.staleness == "admission"

    @property
    def label(self) -> str:
        """The regime in a few words: 'colocated', 'pipelined k=1', 'async admission k=8', 'async drop'."""
        k = "" if self.steps_ahead is None else f" k={self.steps_ahead:g}"
        if self.mode == "async":
            flight = ", in-flight updates" if self.in_flight_updates else ""
            return f"async {self.staleness}{k}{flight}"
        return f"{self.mode}{k}"
