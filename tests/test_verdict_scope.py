"""What a hold verdict covers, said where it is read: `solve`'s hold line and `report`'s opening. The replays
of MODEL §11 vary the run itself (sandbox lifetimes, launches) at the nominal inputs; the uncertainty of the
inputs (§9) is in the verdict only for a confidence solve, whose replays draw a scenario each. An instance
whose uncertainty section the verdict leaves out is pointed at `risk` and `solve --confidence`, and its report
opens with the plan's on-time probability under the section's factors."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path
from types import SimpleNamespace

from click.testing import CliRunner

from tests.test_confidence_hold import FACTORS, uncertain_hold
from tests.test_hold import small
from trainground.cli import main
from trainground.drivers.report import gather
from trainground.models.edits import edited
from trainground.models.load import load_instance
from trainground.render.hold import uncertainty_pointer
from trainground.render.report import report_html

ROOT = Path(__file__).resolve().parents[1]
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


def test_the_report_opens_with_what_the_verdict_covers_and_the_on_time_probability_under_the_factors():
    inst = edited(uncertain_hold(), {"uncertainty.confidence": None})
    findings = gather(inst, with_frontier=False, alphas=[0.9], samples=2000)
    leads = [unescape(p) for p in re.findall(r'<p class="lead">(.*?)</p>', report_html(findings, "run.yaml"), re.S)]
    assert len(leads) == 2
    assert "of its 16 replays at its nominal inputs (they vary the run itself: sandbox lifetimes, launches)" in leads[0]
    risk, plan = findings.risk, findings.answer.result.plan
    assert f"this plan is on time in {risk.on_time_probability:.2%} of 2,000 scenarios" in leads[1]
    assert "the replays above vary the run, not the inputs" in leads[1]
    best = dict(findings.certainty.points)[0.9].plan
    assert f"costs ${best.total_cost:,.0f} ({best.total_cost / plan.total_cost - 1:+.1%} against this plan" in leads[1]
    assert "<code>trainground solve run.yaml --confidence 0.9</code>" in leads[1]
