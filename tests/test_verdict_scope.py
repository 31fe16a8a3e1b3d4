"""What a hold verdict covers, said where it is read: `solve`'s hold line and `report`'s opening. The replays
of MODEL §11 vary the run itself (sandbox lifetimes, launches) at the nominal inputs; the uncertainty of the
inputs (§9) is in the verdict only for a confidence solve, whose replays draw a scenario each. An instance
whose uncertainty section the verdict leaves out is pointed at `risk` and `solve --confidence`, and its report
opens with the plan's on-time probability under the section's factors."""

from __future__ import annotations

import dataclasses
import io
import json
import re
from html import unescape
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner
from rich.console import Console

from tests.test_confidence_hold import FACTORS, uncertain_hold
from tests.test_hold import small
from trainground.cli import main
from trainground.drivers.answer import Answer
from trainground.drivers.report import Findings, gather
from trainground.drivers.risk import assess
from trainground.models.edits import edited
from trainground.models.load import load_instance
from trainground.render.confidence import render_curve
from trainground.render.hold import uncertainty_pointer
from trainground.render.report import summary

ROOT = Path(__file__).resolve().parents[1]
LEVERS = 1e-9  # seconds for the levers: the leads do not read them
NOMINAL = "the run's own variance (sandbox lifetimes, launches) at the instance's nominal inputs, not uncertainty"


def solved_text(inst, tmp_path: Path) -> tuple[str, str]:
    path = tmp_path / "run.json"
    path.write_text(json.dumps(inst.model_dump(mode="json")))
    result = CliRunner().invoke(main, ["solve", str(path), "--no-levers"])
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split()), str(path)


def test_the_hold_line_says_its_verdict_covers_the_runs_variance_at_the_nominal_inputs(tmp_path):
    text, _ = solved_text(small(), tmp_path)
    assert "plan holds (basis hold)" in text
    assert f"what the verdict covers: {NOMINAL} in the inputs themselves" in text
    assert "trainground risk" not in text  # no uncertainty section: nothing to point at


def test_an_uncertainty_section_the_verdict_leaves_out_is_pointed_at_risk_and_confidence(tmp_path):
    inst = edited(uncertain_hold(), {"uncertainty.confidence": None})
    text, path = solved_text(inst, tmp_path)
    assert NOMINAL in text
    assert "the uncertainty section (throughput, lifetimes, updates) is not in this verdict" in text
    assert f"`trainground risk {path}` gives the plan's on-time probability under its factors" in text
    assert f"`trainground solve {path} --confidence 0.9` the best plan on time in at least 90% of its" in text


def test_a_confidence_solves_verdict_covers_the_inputs_uncertainty_too(tmp_path):
    text, _ = solved_text(uncertain_hold(), tmp_path)
    assert "the inputs' uncertainty, each replay drawing one scenario of the uncertainty section" in text
    assert NOMINAL not in text and "trainground risk" not in text


def test_a_staged_instance_is_pointed_at_risk_alone():
    staged = load_instance(ROOT / "instances" / "seed-week-stages.yaml")
    inst = edited(staged, {"uncertainty": {"samples": 100, "seed": 0, "factors": FACTORS[:1]}})
    text = uncertainty_pointer(inst, SimpleNamespace(confidence=None), "staged.yaml")
    assert "`trainground risk staged.yaml`" in text and "--confidence" not in text  # stages refuse it


def leads_of(findings, source: str = "run.yaml") -> list[str]:
    """The opening paragraphs of the report's summary section (the page without its plots)."""
    html = summary(findings, findings.answer.to_json(), source)
    return [" ".join(unescape(p).split()) for p in re.findall(r'<p class="lead">(.*?)</p>', html, re.S)]


@pytest.fixture(scope="module")
def nominal_findings():
    """The small uncertain run planned at its nominal inputs, with throughput ±10 %: its plan is on time in fewer
    than 90 % of the scenarios, and the price of certainty holds the plan for 90 %."""
    inst = edited(uncertain_hold(), {"uncertainty.confidence": None, "uncertainty.factors[0].sd": 0.1})
    return gather(inst, with_frontier=False, alphas=[0.9], samples=2000, levers_time=LEVERS)


def test_the_report_leads_with_the_on_time_probability_and_the_plan_for_the_target_share(nominal_findings):
    """Not with the nominal plan and its replays' verdict: first what a planner should trust, the plan's on-time
    probability under the factors, then the recommended plan (planning.on_time, 90 %) with its decisions and its
    price beside the nominal plan's; the nominal plan and its hold verdict come second, said to be nominal."""
    findings = nominal_findings
    risk, plan = findings.risk, findings.answer.result.plan
    best = dict(findings.certainty.points)[0.9]
    assert risk.on_time_probability < 0.9 and best.plan.total_cost > plan.total_cost  # a recommendation to make
    first, second = leads_of(findings)
    assert first.startswith(
        f"Sized at the nominal inputs, the plan below is on time in {risk.on_time_probability:.2%} of 2,000 "
        "scenarios of the uncertainty section's factors (throughput, lifetimes, updates;"
    )
    assert "It holds" not in first and "replays" not in first
    groups = f"{best.plan.training_groups:,} training groups ({best.plan.training_gpus:,} GPUs)"
    assert (
        f"Recommended: the best plan on time in at least 90% of them: {best.plan.inference[0].replicas:,} tp8" in first
    )
    assert groups in first
    extra = best.plan.total_cost / plan.total_cost - 1
    assert f"${best.plan.total_cost:,.0f} against ${plan.total_cost:,.0f} for the plan at the nominal inputs" in first
    assert f"({extra:+.1%}), on time in {best.confidence.out_of_sample:.1%} of 10,000 fresh scenarios" in first
    assert "<code>trainground solve run.yaml --confidence 0.9</code> gives it" in first
    assert second.startswith("At the nominal inputs, the cheapest plan: ")
    assert "of its 16 replays at its nominal inputs (they vary the run itself: sandbox lifetimes, launches)" in second


def test_a_nominal_plan_that_is_the_plan_for_the_target_share_is_said_to_be_it(nominal_findings):
    """When the price of certainty's plan for planning.on_time runs what the nominal plan runs, the opening says the
    nominal plan already is that plan instead of recommending it beside itself."""
    nominal = nominal_findings.answer.result
    point = dict(nominal_findings.certainty.points)[0.9]
    same = nominal.model_copy(update={"confidence": point.confidence})  # the curve's point, the nominal decisions
    curve = dataclasses.replace(nominal_findings.certainty, points=[(0.9, same)])
    first = leads_of(dataclasses.replace(nominal_findings, certainty=curve))[0]
    assert "Recommended" not in first
    assert (
        f"It is already the best plan on time in at least 90% of them: on time in "
        f"{point.confidence.out_of_sample:.1%} of 10,000 fresh scenarios" in first
    )


def test_a_confidence_instances_report_leads_with_its_plan_for_the_confidence_and_the_nominal_price(
    nominal_findings,
):
    """With uncertainty.confidence: 0.9 in the file, solve's plan is the curve's plan for 90 % (the same confidence
    solve): the page opens with its on-time shares and its price beside the plan sized at the nominal inputs."""
    inst = edited(nominal_findings.answer.inst, {"uncertainty.confidence": 0.9})
    result = dict(nominal_findings.certainty.points)[0.9]
    findings = Findings(
        Answer(inst, result),
        risk=assess(inst, result.plan, 2000, allowance=result.allowance_s),
        certainty=nominal_findings.certainty,
    )
    nominal = findings.certainty.deterministic.plan
    assert result.confidence is not None and nominal.total_cost < result.plan.total_cost
    first, second = leads_of(findings)
    assert first.startswith(
        f"Planned for uncertainty.confidence = 90%: this plan is on time in {findings.risk.on_time_probability:.2%} "
        "of 2,000 scenarios"
    )
    extra = result.plan.total_cost / nominal.total_cost - 1
    assert f"in {result.confidence.out_of_sample:.1%} of 10,000 fresh ones its solve drew" in first
    assert f"costs ${result.plan.total_cost:,.0f} against ${nominal.total_cost:,.0f} for the plan sized at" in first
    assert f"({extra:+.1%}; The price of certainty, below)" in first
    assert second.startswith("The cheapest plan on time in at least 90% of the uncertainty section's scenarios: ")
    assert "replays, each in one scenario of the uncertainty section" in second


def test_the_allowance_column_of_the_price_of_certainty_says_what_sets_it(nominal_findings):
    """Each plan's allowance is its own loop's order statistic: the note under the table names k of R for every
    row (read from each plan's hold report) and why Δ need not grow with the confidence."""
    found = nominal_findings.certainty
    console = Console(file=io.StringIO(), width=175)
    render_curve(console, found, [])
    text = " ".join(console.file.getvalue().split())
    det, (_, point) = found.deterministic, found.points[0]
    assert (
        f"deterministic {det.hold.order} of {det.hold.replays}; 90% {point.hold.order} of {point.hold.replays}." in text
    )
    assert "the k-th smallest of its R replays' lateness beyond the planned makespan, k = ceil(α·(R + 1))" in text
    assert "needs little or none (0 s: replays that end early ask no negative allowance)" in text
