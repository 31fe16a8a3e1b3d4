"""Durations: numbers are seconds, strings carry one unit (s, m, h, d, w); anything else is refused with the rule."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from trainground.models.instance import Schedule
from trainground.models.units import format_duration, parse_duration


@pytest.mark.parametrize(
    "text, seconds",
    [
        ("600s", 600.0),
        ("10m", 600.0),
        ("168h", 604800.0),
        ("7d", 604800.0),
        ("2w", 1209600.0),
        ("1.5h", 5400.0),
        (".5h", 1800.0),
        ("600", 600.0),
        (" 10 m ", 600.0),
        ("7 d", 604800.0),  # as the outputs print a deadline: a planner means seven days
        ("1e3s", 1000.0),
        ("0s", 0.0),
        (600, 600.0),
        (1.5, 1.5),
        (0, 0.0),
    ],
    ids=repr,
)
def test_durations_parse(text, seconds):
    value = parse_duration(text)
    assert isinstance(value, float)
    assert value == pytest.approx(seconds, rel=1e-12)


@pytest.mark.parametrize(
    "text",
    [
        "7days",
        "10 parsecs",
        "",
        "   ",
        "h",
        "10ms",
        "1h30m",
        "1 h 30 m",
        "+5m",
        "1.2.3s",
        "ten minutes",
        "nan",
        "inf",
        "5 S",
        "1,000s",
    ],
    ids=repr,
)
def test_bad_duration_strings_are_refused_with_the_rule(text):
    with pytest.raises(ValueError) as info:
        parse_duration(text)
    message = str(info.value)
    assert repr(text) in message
    assert "cannot read duration" in message and "s, m, h, d, w" in message


def test_overflowing_duration_is_refused():
    with pytest.raises(ValueError, match="not finite"):
        parse_duration("1e400s")


@pytest.mark.parametrize("flag", [True, False])
def test_booleans_are_not_durations(flag):
    with pytest.raises(ValueError, match="must be a duration"):
        parse_duration(flag)


@pytest.mark.parametrize("value", [None, [600], {"s": 600}])
def test_other_types_are_left_to_the_type_check(value):
    assert parse_duration(value) is value


def test_durations_in_the_model():
    schedule = Schedule(deadline="7d", extra_time="1.5h", cadence={"min": "60s", "max": "10m", "step": 1})
    assert (schedule.deadline, schedule.extra_time) == (604800.0, 5400.0)
    assert (schedule.cadence.min, schedule.cadence.max, schedule.cadence.step) == (60.0, 600.0, 1.0)


@pytest.mark.parametrize("deadline", ["7days", "-1d", "0s", 0, -5, math.inf, math.nan, True])
def test_bad_durations_in_the_model(deadline):
    with pytest.raises(ValidationError) as info:
        Schedule(deadline=deadline)
    assert [e["loc"] for e in info.value.errors()] == [("deadline",)]


@pytest.mark.parametrize(
    "seconds, text",
    [(604800, "604,800 s (7.00 d)"), (5400, "5,400 s (1.50 h)"), (600, "600.00 s"), (0.5, "0.50 s")],
)
def test_format_duration(seconds, text):
    assert format_duration(seconds) == text
