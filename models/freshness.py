"""The ``freshness`` section of MODEL.md §5: weight versions kept, how staleness is counted and handled, and
the optional freshness limits of §3.7."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from trainground.models.base import Fraction, Positive, PositiveInt, Strict, about


class Freshness(Strict):
    max_versions_kept: PositiveInt = Field(
        10,
        description=about(
            "Most weight versions K kept resident for generation; a trajectory whose version gap exceeds K is too "
            "stale. Higher K drops fewer groups but slows replicas by version_slowdown",
            unit="versions",
            typical="4-16",
            seed="10",
        ),
    )
    gap_convention: Literal["consumer", "post_publish"] = Field(
        "consumer",
        description=about(
            "How a version gap is counted: consumer (seed appendix A1, gap = floor(u + W/L)) or post_publish (one "
            "more)",
            seed="consumer",
        ),
    )
    overrun_policy: Literal["drop", "downweight"] = Field(
        "drop",
        description=about(
            "What happens to a group with a member staler than K: drop (lost, more attempts needed) or downweight "
            "(kept with a lower weight, no loss)",
            seed="drop",
        ),
    )
    group_correlation: Literal["independent", "comonotone"] = Field(
        "independent",
        description=about(
            "How lifetimes within a group relate: independent (drop = 1-(1-q)^g, pessimistic) or comonotone (drop "
            "= q, optimistic)",
            seed="independent",
        ),
    )
    max_mean_gap: Positive | None = Field(
        None,
        description=about(
            "Upper limit on the mean version gap: W_use/L under planning.basis steady_state, the consumed (group) "
            "gap's mean under hold (docs/model.md §11); null: no limit",
            unit="versions",
            typical="2-4 (steady_state), 5-8 (hold)",
            seed="null",
        ),
    )
    max_exceedance: Fraction | None = Field(
        None,
        description=about(
            "Upper limit on q, the share of trajectories staler than K; null: no limit",
            unit="share in [0, 1]",
            typical="0.05-0.2",
            seed="null",
        ),
    )
    max_group_drop: Fraction | None = Field(
        None,
        description=about(
            "Upper limit on the share of groups dropped for staleness; null: no limit",
            unit="share in [0, 1]",
            typical="0.1-0.3",
            seed="null",
        ),
    )
