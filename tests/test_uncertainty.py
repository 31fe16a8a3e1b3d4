"""The `uncertainty:` section of MODEL.md §9: valid sections load, the JSON Schema agrees with the loader,
draws are reproducible and per factor, and scenarios scale exactly the fields their paths reach.

Invalid sections (each giving exit 2 with the field named) are in tests/data/invalid/uncertainty-*.yaml,
checked by tests/test_invalid_instances.py.
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from click.testing import CliRunner
from scipy import stats

from trainground.cli import main
from trainground.models.load import InstanceError, read_document, validate
from trainground.models.uncertainty import Factor, valid_range
from trainground.solver.uncertainty import scenarios as sc

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "instances" / "seed-week-75.yaml"
UNCERTAIN = ROOT / "instances" / "seed-week-75-uncertain.yaml"
THROUGHPUT = {
    "name": "throughput",
    "paths": ["inference.shapes[*].tokens_per_gpu_s"],
    "dist": "normal",
    "mean": 1.0,
    "sd": 0.05,
}


def with_section(section: dict, base: Path = SEED) -> dict:
    document = read_document(base)
    document["uncertainty"] = section
    return document


@pytest.fixture(scope="module")
def validator():
    schema = json.loads(CliRunner().invoke(main, ["schema"]).stdout)
    return jsonschema.Draft202012Validator(schema)


VALID = {
    "normal": {"dist": "normal", "mean": 1.0, "sd": 0.08},
    "lognormal": {"dist": "lognormal", "median": 1.0, "sigma": 0.2},
    "uniform": {"dist": "uniform", "low": 0.95, "high": 1.3},
    "triangular": {"dist": "triangular", "low": 0.9, "mode": 1.0, "high": 1.3},
    "degenerate normal": {"dist": "normal", "mean": 1.0, "sd": 0.0},
    "degenerate uniform": {"dist": "uniform", "low": 1.1, "high": 1.1},
}


@pytest.mark.parametrize("kind", sorted(VALID), ids=str)
def test_each_distribution_loads_and_the_schema_agrees(kind: str, validator):
    factor = {"name": "f", "paths": ["training.update_time.reference_time"], **VALID[kind]}
    document = with_section({"samples": 10, "seed": 3, "confidence": 0.9, "factors": [factor]})
    inst = validate(document, "x.yaml")
    assert inst.uncertainty.factors[0].dist == factor["dist"]
    assert inst.uncertainty.confidence == 0.9
    assert not list(validator.iter_errors(document))


def test_section_defaults_and_the_bundled_instance():
    inst = validate(with_section({"factors": [THROUGHPUT]}), "x.yaml")
    assert (inst.uncertainty.samples, inst.uncertainty.seed, inst.uncertainty.confidence) == (1000, 0, None)
    bundled = validate(read_document(UNCERTAIN), str(UNCERTAIN))
    assert [f.name for f in bundled.uncertainty.factors] == ["throughput", "lifetimes", "updates"]


@pytest.mark.parametrize(
    "change",
    [
        {"dist": "weibull"},
        {"sd": -0.1},
        {"sd": None},
        {"low": 0.9},
        {"extra": 1},
        {"paths": []},
    ],
    ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()),
)
def test_the_schema_refuses_what_the_loader_refuses(change: dict, validator):
    factor = {**THROUGHPUT, **change}
    factor = {k: v for k, v in factor.items() if v is not None}
    document = with_section({"factors": [factor]})
    with pytest.raises(InstanceError):
        validate(copy.deepcopy(document), "x.yaml")
    assert list(validator.iter_errors(document)), f"schema accepts {factor}"


def test_quantiles_and_support_match_scipy():
    cases = [
        (Factor(name="a", paths=["x"], dist="normal", mean=1.0, sd=0.05), stats.norm(1.0, 0.05)),
        (Factor(name="b", paths=["x"], dist="lognormal", median=1.2, sigma=0.3), stats.lognorm(0.3, scale=1.2)),
        (Factor(name="c", paths=["x"], dist="uniform", low=0.9, high=1.4), stats.uniform(0.9, 0.5)),
        (
            Factor(name="d", paths=["x"], dist="triangular", low=0.8, mode=1.0, high=1.5),
            stats.triang((1.0 - 0.8) / 0.7, loc=0.8, scale=0.7),
        ),
    ]
    for factor, law in cases:
        for p in (0.01, 0.1, 0.5, 0.9, 0.99):
            assert factor.quantile(p) == pytest.approx(law.ppf(p), rel=1e-9)
        draws = factor.sample(np.random.default_rng(1), 20000)
        assert stats.kstest(draws, law.cdf).pvalue > 1e-4
        assert not factor.degenerate
    point = Factor(name="e", paths=["x"], dist="triangular", low=1.1, mode=1.1, high=1.1)
    assert point.degenerate and point.support == (1.1, 1.1)
    assert np.all(point.sample(np.random.default_rng(0), 5) == 1.1)


def test_draws_are_reproducible_and_each_factor_has_its_own_stream():
    inst = validate(read_document(UNCERTAIN), "x.yaml")
    a, b = inst.uncertainty.draws(500), inst.uncertainty.draws(500)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, inst.uncertainty.draws(500, seed=1))
    first = validate(with_section({"factors": [inst.uncertainty.factors[0].model_dump()]}), "x.yaml")
    assert np.array_equal(first.uncertainty.draws(500)[:, 0], a[:, 0])


def test_scenarios_scale_exactly_the_fields_reached_and_clip_into_range():
    document = with_section(
        {
            "factors": [
                THROUGHPUT,
                {"name": "intake", "paths": ["workload.intake_rate"], "dist": "uniform", "low": 0.5, "high": 1.5},
                {
                    "name": "both",
                    "paths": ["environment.occupancy.median", "environment.occupancy.p99"],
                    "dist": "lognormal",
                    "median": 1.0,
                    "sigma": 0.2,
                },
                {
                    "name": "median again",
                    "paths": ["environment.occupancy.median"],
                    "dist": "uniform",
                    "low": 2.0,
                    "high": 2.0,
                },
            ]
        }
    )
    inst = validate(document, "x.yaml")
    draws = np.array([[1.1, 0.8, 1.5, 2.0], [0.9, 1.4, 0.5, 2.0]])
    scen = sc.from_draws(inst, draws)
    assert set(scen.scale) == {
        "inference.shapes[0].tokens_per_gpu_s",
        "workload.intake_rate",
        "environment.occupancy.median",
        "environment.occupancy.p99",
    }
    assert scen.value("inference.shapes[0].tokens_per_gpu_s", 75.0) == pytest.approx([82.5, 67.5])
    assert scen.value("workload.intake_rate", 1.0) == pytest.approx([0.8, 1.0])  # clipped at 1
    assert scen.value("environment.occupancy.median", 1044.0) == pytest.approx([1044 * 3.0, 1044 * 1.0])
    assert scen.value("environment.occupancy.p99", 13900.0) == pytest.approx([13900 * 1.5, 13900 * 0.5])
    assert scen.value("schedule.deadline", 7.0) == pytest.approx([7.0, 7.0])  # reached by no factor
    assert scen.scales("environment.occupancy") and not scen.scales("training")


def test_valid_ranges():
    assert valid_range("workload.intake_rate") == (1e-9, 1.0)
    assert valid_range("environment.peak_to_mean") == (1.0, math.inf)
    assert valid_range("environment.cloud.eligible_share.container") == (0.0, 1.0)
    assert valid_range("inference.shapes[0].version_slowdown") == (0.0, math.inf)
    assert valid_range("inference.shapes[3].tokens_per_gpu_s") == (1e-9, math.inf)
    assert valid_range("training.update_time.serial_fraction") == (0.0, 1.0)


def test_a_normal_draw_below_zero_is_clipped_to_a_positive_floor():
    inst = validate(with_section({"factors": [THROUGHPUT]}), "x.yaml")
    scen = sc.from_draws(inst, np.array([[-0.5], [0.0]]))
    assert np.all(scen.value("inference.shapes[0].tokens_per_gpu_s", 75.0) == 1e-9)
