"""The seed article's figures, one test case per row of its table of figures (each case holds the row's value).

Each case runs ``trainground explain <bundled instance> [--cadence S] [--inference-gpus N]
[--set PATH=VALUE ...] --json`` in-process and compares the JSON with the table's exact
value: floats to 0.1 % relative, integers (node counts) exactly.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from click.testing import CliRunner

from trainground.cli import main

INSTANCES = Path(__file__).resolve().parents[1] / "instances"
REL = 1e-3  # every figure to 0.1 %, integers (node counts) exactly

MEDIAN = "environment.littles_law_uses=median"


@dataclass(frozen=True)
class Run:
    """One `explain` invocation and the figures it must print (key -> exact value).

    A key ``nodes_needed.<type>`` reads one node type of the ``nodes_needed`` map.
    """

    instance: str
    expect: dict[str, float | int]
    cadence: float | None = None
    inference_gpus: int | None = None
    edits: tuple[str, ...] = field(default_factory=tuple)

    def argv(self) -> list[str]:
        args = ["explain", str(INSTANCES / self.instance), "--json"]
        if self.cadence is not None:
            args += ["--cadence", repr(self.cadence)]
        if self.inference_gpus is not None:
            args += ["--inference-gpus", str(self.inference_gpus)]
        for edit in self.edits:
            args += ["--set", edit]
        return args


# (row id, runs) -- every row of the table; base set-up is seed-week-75.yaml.
ROWS: list[tuple[str, list[Run]]] = [
    (
        "row01-lossless-threshold",
        [Run("seed-week-75.yaml", {"lossless_threshold_tokens_per_gpu_s": 73.97}, inference_gpus=3000)],
    ),
    ("row02-effective-trajectories", [Run("seed-week-75.yaml", {"effective_trajectories_per_s": 6.7725})]),
    (
        "row03-loss-adjusted-threshold",
        [Run("seed-lossy.yaml", {"loss_adjusted_threshold_tokens_per_gpu_s": 103.47}, inference_gpus=3000)],
    ),
    ("row04-median-inflight-nodes", [Run("seed-median.yaml", {"inflight_median": 7070.5, "nodes_needed.standard": 7})]),
    ("row05-lognormal-sigma-mean", [Run("seed-week-75.yaml", {"occupancy_sigma": 1.1128, "occupancy_mean_s": 1939.2})]),
    ("row06-mean-inflight-nodes", [Run("seed-week-75.yaml", {"inflight_mean": 13132.9, "nodes_needed.standard": 13})]),
    (
        "row07-dsec-density-3200",
        [
            Run("seed-dsec-3200.yaml", {"nodes_needed.dsec": 3}, edits=(MEDIAN,)),
            Run("seed-dsec-3200.yaml", {"nodes_needed.dsec": 5}),
        ],
    ),
    (
        "row08-intake-80-inflight-nodes",
        [Run("seed-intake-80.yaml", {"inflight_mean": 16416.2, "nodes_needed.standard": 16})],
    ),
    (
        "row09-intake-80-cadence-500-rates",
        [Run("seed-intake-80.yaml", {"effective_trajectories_per_s": 8.192, "attempts_per_s": 10.24}, cadence=500)],
    ),
    (
        "row10-intake-80-cadence-500-inflight-nodes",
        [Run("seed-intake-80.yaml", {"inflight_mean": 19857.0, "nodes_needed.standard": 19}, cadence=500)],
    ),
    ("row11-cadence-500-time-margin", [Run("seed-cadence-500.yaml", {"time_margin": 0.17328}, cadence=500)]),
    (
        "row12-cadence-500-threshold",
        [
            Run(
                "seed-cadence-500.yaml",
                {"lossless_threshold_tokens_per_gpu_s": 89.48},
                cadence=500,
                inference_gpus=3000,
            )
        ],
    ),
    (
        "row13-cadence-500-inflight",
        [Run("seed-cadence-500.yaml", {"inflight_median": 8552.4, "inflight_mean": 15885.6}, cadence=500)],
    ),
    ("row14-cadence-600-median-gap", [Run("seed-median.yaml", {"mean_version_gap": 1.74}, cadence=600)]),
    ("row15-cadence-600-mean-gap", [Run("seed-week-75.yaml", {"mean_version_gap": 3.232}, cadence=600)]),
    (
        "row16-cadence-600-k10-exceedance",
        [Run("seed-week-75.yaml", {"exceedance": 0.0532, "group_drop_upper": 0.3544}, cadence=600)],
    ),
    (
        "row17-cadence-600-k4-exceedance",
        [
            Run(
                "seed-week-75.yaml",
                {"exceedance": 0.1975, "group_drop_upper": 0.8280},
                cadence=600,
                edits=("freshness.max_versions_kept=4",),
            )
        ],
    ),
    (
        "row18-cadence-500-k10-exceedance",
        [Run("seed-cadence-500.yaml", {"exceedance": 0.0734, "group_drop_upper": 0.4568}, cadence=500)],
    ),
    (
        "row19-batching-cadences-median-gap",
        [
            Run("seed-median.yaml", {"mean_version_gap": 4.667}, cadence=223.70),
            Run("seed-median.yaml", {"mean_version_gap": 1.400}, cadence=745.65),
        ],
    ),
    ("row20-cadence-600-p99-gap", [Run("seed-week-75.yaml", {"p99_version_gap": 23.17}, cadence=600)]),
    (
        "row21-tier-200-demand-share",
        [Run("seed-week-200.yaml", {"demand_share_of_capacity": 0.3699}, inference_gpus=3000)],
    ),
    (
        "row22-decode-speed",
        [
            Run("seed-lossy.yaml", {"decode_tokens_per_s": 31.61}, edits=(MEDIAN,)),
            Run("seed-lossy.yaml", {"decode_tokens_per_s": 17.02}),
        ],
    ),
    ("row23-tier-60-inference-gpus-needed", [Run("seed-week-60.yaml", {"inference_gpus_needed": 3698.7})]),
]

# The note under the table: with the article's rounded mean (median 1044 s, mean 1900 s),
# the in-flight means of rows 8, 10 and 13 become those of the three cases below.
ROUNDED_MEAN = "environment.occupancy={distribution: lognormal, median: 1044, mean: 1900}"
NOTE: list[tuple[str, list[Run]]] = [
    (
        "note-rounded-mean-rows-08-10-13",
        [
            Run("seed-intake-80.yaml", {"inflight_mean": 16083}, edits=(ROUNDED_MEAN,)),
            Run("seed-intake-80.yaml", {"inflight_mean": 19456}, cadence=500, edits=(ROUNDED_MEAN,)),
            Run("seed-cadence-500.yaml", {"inflight_mean": 15565}, cadence=500, edits=(ROUNDED_MEAN,)),
        ],
    ),
]


def explain_json(run: Run) -> dict:
    result = CliRunner().invoke(main, run.argv())
    assert result.exit_code == 0, f"{' '.join(run.argv())}\nexit {result.exit_code}: {result.output}"
    return json.loads(result.stdout)


def lookup(data: dict, key: str):
    node = data
    for part in key.split("."):
        assert isinstance(node, dict) and part in node, f"no key {key!r} in explain --json output"
        node = node[part]
    return node


def check(runs: list[Run]) -> None:
    for run in runs:
        data = explain_json(run)
        for key, exact in run.expect.items():
            got = lookup(data, key)
            where = f"{key} of {' '.join(run.argv()[1:])}"
            if isinstance(exact, int) and key.startswith("nodes_needed"):
                assert type(got) is int and got == exact, f"{where}: expected {exact}, got {got!r}"
            else:
                assert got is not None, f"{where}: expected {exact}, got null"
                assert abs(got - exact) <= REL * abs(exact), (
                    f"{where}: expected {exact} (±0.1 %), got {got} ({(got - exact) / exact:+.3%})"
                )


@pytest.mark.parametrize("runs", [pytest.param(runs, id=row) for row, runs in ROWS])
def test_seed_figure(runs: list[Run]) -> None:
    check(runs)


@pytest.mark.parametrize("runs", [pytest.param(runs, id=row) for row, runs in NOTE])
def test_seed_note_rounded_mean(runs: list[Run]) -> None:
    check(runs)


def test_every_row_is_covered() -> None:
    """The table has 23 rows; each has exactly one case above."""
    numbers = [int(row[3:5]) for row, _ in ROWS]
    assert numbers == list(range(1, 24))


# --- the bundled scenario files themselves ---------------------------------------------------

BUNDLED = sorted(p for p in INSTANCES.iterdir() if p.suffix in (".yaml", ".toml", ".json"))


@pytest.mark.parametrize("path", BUNDLED, ids=[p.name for p in BUNDLED])
def test_bundled_instance_explains(path: Path) -> None:
    """Every bundled instance loads and explains (exit 0, parseable JSON, named after its file)."""
    data = explain_json(Run(path.name, {}))
    assert data["instance"] == path.stem
    if path.suffix != ".json":  # JSON has no comments; the others open with a one-line description
        first = path.read_text().splitlines()[0]
        assert first.startswith("# ") and len(first) > 10


@pytest.mark.parametrize("fmt", [".toml", ".json"])
def test_format_variants_match_yaml(fmt: str) -> None:
    from trainground.models.load import load_instance

    assert load_instance(INSTANCES / f"seed-week-75{fmt}") == load_instance(INSTANCES / "seed-week-75.yaml")
    assert explain_json(Run(f"seed-week-75{fmt}", {}, inference_gpus=3000)) == explain_json(
        Run("seed-week-75.yaml", {}, inference_gpus=3000)
    )


def test_two_week_deadline_admits_the_60_tier() -> None:
    """Appendix A2: at two weeks the raw generation constraint no longer excludes 60 tokens/s/GPU."""
    data = explain_json(Run("seed-2week-60.yaml", {}, inference_gpus=3000))
    assert data["cadence_s"] == pytest.approx(1209.6)
    assert data["lossless_threshold_tokens_per_gpu_s"] == pytest.approx(73.9736 / 2, rel=REL)
    assert data["inference_gpus_needed"] == pytest.approx(3698.7 / 2, rel=REL)
    assert data["inference_gpus_needed"] < 3000
    # the 60 tier at one week needs more than 3,000 cards
    assert explain_json(Run("seed-week-60.yaml", {}))["inference_gpus_needed"] > 3000


def test_dsec_mixed_counts_both_backends() -> None:
    """Mixed shares: nodes = ceil(E·(share_c/3200 + share_m/800)) with E = R_raw·mean(W)."""
    data = explain_json(Run("seed-dsec-mixed.yaml", {}))
    load = data["inflight_mean"] * (0.67 / 3200 + 0.33 / 800)
    assert data["nodes_needed"] == {"dsec": 9}
    assert 8 < load <= 9
