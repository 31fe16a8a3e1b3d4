"""`report`: one self-contained, well-formed HTML page whose numbers are those of `solve --json` (and of `risk`
and the price of certainty where the instance has an uncertainty section)."""

from __future__ import annotations

import base64
import html
import json
import math
import re
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from trainground.cli import main
from trainground.render.tradeoffs import CORNER_ROWS, shown_corners

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "instances" / "seed-week-75.yaml"
UNCERTAIN = ROOT / "instances" / "seed-week-75-uncertain.yaml"
VOID = {"meta", "img", "br", "hr", "link", "input", "col", "source", "wbr", "area", "base", "embed", "track"}
# Where an element may stand: its parent's tag (the page's own structure, checked beside the nesting).
PARENTS = {"head": {"html"}, "body": {"html"}, "title": {"head"}, "section": {"body"}, "tr": {"thead", "tbody"}}


class Page(HTMLParser):
    """Checks as it reads: every end tag closes the element last opened, nothing is left open, no attribute
    refers to the network; collects the cells that carry a number, the images and the embedded JSON."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.problems: list[str] = []
        self.tags: list[str] = []
        self.cells: list[tuple[str, object, str]] = []
        self.images: list[str] = []
        self.sections: list[str] = []
        self.json_text = ""
        self._cell: list | None = None
        self._in_json = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append(tag)
        if tag in PARENTS and (not self.stack or self.stack[-1] not in PARENTS[tag]):
            self.problems.append(f"<{tag}> inside <{self.stack[-1] if self.stack else 'nothing'}>")
        for name in ("src", "href", "action"):
            if name in a and re.match(r"\s*(https?:)?//", a[name] or ""):
                self.problems.append(f"<{tag} {name}={a[name][:40]}> refers to the network")
        if tag == "script" and "src" in a:
            self.problems.append("an external script")
        if tag == "link":
            self.problems.append("a <link> (stylesheet or font)")
        if tag == "img":
            self.images.append(a.get("src") or "")
        if tag == "section":
            self.sections.append(a.get("id") or "")
        if tag == "td" and "data-key" in a:
            self._cell = [a["data-key"], json.loads(a["data-value"]), ""]
        if tag == "script" and a.get("type") == "application/json":
            self._in_json = True
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.stack.pop()

    def handle_endtag(self, tag):
        if tag in VOID:
            self.problems.append(f"</{tag}> closes a void element")
            return
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"</{tag}> closes <{self.stack[-1] if self.stack else 'nothing'}>")
            return
        self.stack.pop()
        if tag == "td" and self._cell is not None:
            self.cells.append(tuple(self._cell))
            self._cell = None
        if tag == "script":
            self._in_json = False

    def handle_data(self, data):
        if self._cell is not None:
            self._cell[2] += data
        if self._in_json:
            self.json_text += data


def read_page(text: str) -> Page:
    assert text.startswith("<!DOCTYPE html>")
    page = Page()
    page.feed(text)
    page.close()
    assert not page.problems, page.problems
    assert not page.stack, f"left open: {page.stack}"
    for tag in ("html", "head", "title", "body", "h1", "table"):
        assert tag in page.tags, f"no <{tag}>"
    assert not re.search(r"(src|href)\s*=\s*[\"']?\s*https?:", text, re.I)
    return page


def at(document, path: str):
    """The value at ``a.b[0].c`` in ``document``."""
    node = document
    for name, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", path):
        node = node[int(index)] if index else node[name]
    return node


def same(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-9)
    return a == b


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


def run(*args: str) -> Ran:
    """One command in this process (click's runner): the page and the commands it quotes share their imports."""
    done = CliRunner().invoke(main, list(args))
    return Ran(done.exit_code, done.stdout, done.stderr)


def without_clocks(payload: dict) -> dict:
    """A result without its wall times (the only figures two runs of one solve may differ in)."""
    out = {k: v for k, v in payload.items() if k != "timings"}
    if "levers" in out:
        out["levers"] = {k: v for k, v in out["levers"].items() if k != "seconds"}
    if "hold" in out:
        out["hold"] = {k: v for k, v in out["hold"].items() if k != "replay_seconds"}
    return out


@pytest.fixture(scope="module")
def seed_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "seed.html"
    done = run("report", str(SEED), "--out", str(out), "--basis", "steady_state")
    assert done.returncode == 0, done.stderr
    solved = run("solve", str(SEED), "--json", "--basis", "steady_state")
    assert solved.returncode == 0, solved.stderr
    return out.read_text(encoding="utf-8"), json.loads(solved.stdout)


def test_the_page_is_well_formed_and_self_contained(seed_report):
    text, _ = seed_report
    page = read_page(text)
    assert page.sections[:4] == ["summary", "plan", "hold", "levers"] and "frontier" in page.sections
    assert page.images, "the frontier's plot"
    for src in page.images:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1]).startswith(b"\x89PNG\r\n\x1a\n")


def test_every_number_shown_is_solve_jsons(seed_report):
    text, solved = seed_report
    page = read_page(text)
    data = json.loads(page.json_text)
    assert without_clocks(data["solve"]) == without_clocks(solved)
    checked = [key for key, value, _ in page.cells if key.startswith("solve.")]
    for key, value, _ in page.cells:
        if key.startswith("solve."):
            assert same(value, at(solved, key[len("solve.") :])), key
    assert {"solve.plan.total_cost", "solve.plan.makespan_s", "solve.startup_estimate_s"} <= set(checked)
    assert any(k.startswith("solve.levers.items[") for k in checked)
    shown = {key: text for key, _, text in page.cells}
    assert shown["solve.plan.total_cost"] == f"${solved['plan']['total_cost']:,.0f}"
    first = solved["levers"]["items"][0]
    assert shown["solve.levers.items[0].saving"] == f"${first['saving']:,.0f}"  # money, as the cost it saves


def test_the_page_opens_with_the_plan_in_one_sentence(seed_report):
    text, solved = seed_report
    opening = re.search(r'<p class="lead">(.*?)</p>', text).group(1)
    plan = solved["plan"]
    replicas = plan["inference"][0]
    assert opening.startswith("The cheapest plan: ")
    assert f"{replicas['replicas']:,} {replicas['shape']} replicas" in opening
    assert f"{plan['training_groups']:,} training groups" in opening and f"${plan['total_cost']:,.0f}" in opening
    assert "sized on the average rates" in text  # the basis said in words, not only its name


def test_the_frontier_rows_are_the_frontier_commands(seed_report, tmp_path):
    text, _ = seed_report
    page = read_page(text)
    rows = json.loads(page.json_text)["frontier"]["rows"]
    done = run("frontier", str(SEED), "--json", "--basis", "steady_state", "--out", str(tmp_path / "f"))
    assert done.returncode == 0, done.stderr
    walked = json.loads(done.stdout)["frontiers"]
    expected = [(name, p["makespan_s"], p["cost"]) for name, f in walked.items() for p in f["points"]]
    assert [(r["frontier"], r["makespan_s"], r["cost"]) for r in rows] == expected
    corners = [key for key, _, _ in page.cells if key.startswith("frontier.") and key.endswith(".cost")]
    shown = [shown_corners(f["corners"]) for f in walked.values()]  # at most 12 a frontier, both ends kept
    assert len(corners) == sum(len(c) for c in shown) and all(len(c) <= CORNER_ROWS for c in shown)
    cheapest = [r for r in rows if r["frontier"] == "total_cost"][-1]  # walked on the plan's basis: the plan
    assert f"frontier.rows[{rows.index(cheapest)}].cost" in corners
    assert same(cheapest["cost"], json.loads(page.json_text)["solve"]["plan"]["total_cost"])
    for key, value, _ in page.cells:
        if key.startswith("frontier."):
            index, column = re.fullmatch(r"frontier\.rows\[(\d+)\]\.(.+)", key).groups()
            assert rows[int(index)]["corner"] and same(value, rows[int(index)][column]), key


def test_risk_and_the_price_of_certainty_where_there_is_uncertainty(tmp_path):
    out = tmp_path / "uncertain.html"
    common = ("--basis", "steady_state")
    done = run(
        "report",
        str(UNCERTAIN),
        "--out",
        str(out),
        "--no-frontier",
        "--confidence-curve",
        "0.8",
        "--samples",
        "2000",
        *common,
    )
    assert done.returncode == 0, done.stderr
    page = read_page(out.read_text(encoding="utf-8"))
    assert {"risk", "certainty"} <= set(page.sections) and "frontier" not in page.sections
    data = json.loads(page.json_text)
    risk = run("risk", str(UNCERTAIN), "--json", "--samples", "2000", *common)
    assert risk.returncode == 0, risk.stderr
    assessed = json.loads(risk.stdout)
    for key, value, _ in page.cells:
        if key.startswith("risk."):
            assert same(value, at(assessed, key[len("risk.") :])), key
    curve = run(
        "frontier", str(UNCERTAIN), "--confidence-curve", "0.8", "--json", "--out", str(tmp_path / "c"), *common
    )
    assert curve.returncode == 0, curve.stderr
    point = json.loads(curve.stdout)["points"][0]["result"]
    row = data["certainty"]["rows"][1]
    assert row["confidence"] == 0.8 and same(row["total_cost"], point["plan"]["total_cost"])
    assert same(row["out_of_sample"], point["confidence"]["out_of_sample"])
    assert len(page.images) == 3  # the risk's two plots and the curve


def test_the_validator_catches_what_it_checks():
    broken = "<!DOCTYPE html><html><head><title>t</title></head><body><h1>x</h1><table><tbody><tr><td>1</td></tr></tbody></table>"
    with pytest.raises(AssertionError):
        read_page(broken + "<p></div></body></html>")
    with pytest.raises(AssertionError):
        read_page(broken + '<img src="https://example.org/a.png"></body></html>')
    with pytest.raises(AssertionError):
        read_page(broken + '<script src="x.js"></script></body></html>')
    with pytest.raises(AssertionError):
        read_page(broken + "<section><p>left open</section></body></html>")


def test_bad_input_is_one_message_and_exit_2(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(SEED.read_text(encoding="utf-8").replace("deadline:", "deadline: -1\n_was:"), encoding="utf-8")
    done = run("report", str(bad), "--out", str(tmp_path / "r.html"))
    assert done.returncode == 2 and "Traceback" not in done.stderr and "bad.yaml" in done.stderr
    assert not (tmp_path / "r.html").exists()


def test_the_frontier_is_walked_on_the_plans_basis_unless_told(monkeypatch):
    """Walked on another basis than the plan's, the frontier's cheapest point is not the plan the page opens with
    (a steady-state frontier under a hold plan showed a cheaper plan than the plan)."""
    from trainground.drivers import answer as answer_module
    from trainground.drivers import report as driver
    from trainground.drivers.tradeoffs import frontier as frontier_module
    from trainground.models.edits import load_edited

    walked: list[str] = []
    monkeypatch.setattr(driver, "answer", lambda inst, *a, **k: answer_module.Answer(inst, None))  # no solve
    monkeypatch.setattr(frontier_module, "frontiers", lambda inst, **k: walked.append(inst.planning.basis))
    for basis, told, expected in (
        ("hold", None, "hold"),
        ("steady_state", None, "steady_state"),
        ("hold", "steady_state", "steady_state"),
    ):
        inst = load_edited(SEED, [f"planning.basis={basis}"])
        found = driver.gather(inst, frontier_basis=told) if told else driver.gather(inst)
        assert walked[-1] == expected == found.frontier_basis


def test_the_api_passes_the_frontier_basis_on(monkeypatch, tmp_path):
    import trainground
    from trainground.drivers import report as driver

    told: dict = {}

    def gather(inst, objective=None, **options):
        told.update(options)
        raise RuntimeError("stop here")

    monkeypatch.setattr(driver, "gather", gather)
    with pytest.raises(RuntimeError, match="stop here"):
        trainground.report(SEED, frontier_basis="hold", basis="steady_state")
    assert told["frontier_basis"] == "hold"


def test_levers_without_a_figure_are_explained_on_the_page(tmp_path):
    out = tmp_path / "r.html"
    done = run(
        "report", str(SEED), "--out", str(out), "--basis", "steady_state", "--no-frontier", "--levers-time", "1e-9"
    )
    assert done.returncode == 0, done.stderr
    text = out.read_text(encoding="utf-8")
    read_page(text)
    levers = text.split('<section id="levers">')[1].split("</section>")[0]
    opened = levers.split("<details>")[0]  # said in the open, not only in the folded command text
    assert "without a figure" in opened and "--levers-time" in opened


# A run of 40 iterations of 64 trajectories on the default basis, hold (tests/test_hold.py's small run): its
# replays take milliseconds, so the page's hold numbers and its frontier on the plan's basis can be checked.
SMALL_HOLD = {
    "planning.basis": "hold",
    "workload.iterations": "40",
    "workload.batch_trajectories": "64",
    "workload.group_size": "4",
    "schedule.deadline": "6h",
    "schedule.cadence.min": "300s",
    "schedule.cadence.step": "2s",
    "gpu_pools[0].gpus": "400",
    "training.update_time.reference_gpus": "64",
    "training.update_time.reference_time": "120s",
    "environment.occupancy.median": "300s",
    "environment.occupancy.p99": "3000s",
    "environment.node_types[0].density.container": "40",
    "environment.cloud.vm_types[0].max_vms": "0",
    "freshness.max_versions_kept": "3",
}


def test_a_hold_page_is_solve_jsons_and_its_frontier_ends_at_the_plan(tmp_path):
    sets = [a for path, value in SMALL_HOLD.items() for a in ("--set", f"{path}={value}")]
    out = tmp_path / "hold.html"
    done = run("report", str(SEED), "--out", str(out), *sets)
    assert done.returncode == 0, done.stderr
    solved = run("solve", str(SEED), "--json", *sets)
    assert solved.returncode == 0, solved.stderr
    expected = json.loads(solved.stdout)
    text = out.read_text(encoding="utf-8")
    page = read_page(text)
    data = json.loads(page.json_text)
    assert expected["basis"] == "hold" and without_clocks(data["solve"]) == without_clocks(expected)
    held = [key for key, value, _ in page.cells if key.startswith("solve.hold.")]
    assert {"solve.hold.allowance_s", "solve.hold.on_time_share", "solve.hold.expected_total_cost"} <= set(held)
    for key, value, _ in page.cells:
        if key.startswith("solve."):
            assert same(value, at(expected, key[len("solve.") :])), key
    cheapest = [r for r in data["frontier"]["rows"] if r["frontier"] == "total_cost"][-1]
    assert same(cheapest["cost"], expected["plan"]["total_cost"]) and cheapest["allowance_from"] == "replays"
    assert "Walked on the hold basis" in text
    assert "run-variance allowance kept, without replays of its own" in text  # the levers under hold: not replayed
    verdict = "It holds" if expected["hold"]["allowance_converged"] else "It does NOT hold"
    assert verdict in re.search(r'<p class="lead">(.*?)</p>', text).group(1)


def test_a_run_regime_gets_its_plan_its_risk_and_a_note_in_place_of_the_price_of_certainty(tmp_path):
    """A pipelined run (MODEL §14) is reported as solve plans it; with an uncertainty section it gets its risk (risk's
    scenarios evaluate a batch run), and the price of certainty is left out with a note saying why (a confidence
    solve plans the seed's regime only)."""
    doc = yaml.safe_load((ROOT / "instances" / "regimes" / "areal-1.5b-128gpus.yaml").read_text())
    doc["uncertainty"] = {
        "samples": 200,
        "factors": [{"name": "throughput", "paths": ["inference.shapes[*].tokens_per_gpu_s"], "dist": "normal",
                     "mean": 1.0, "sd": 0.05}],
    }  # fmt: skip
    path = tmp_path / "areal-uncertain.yaml"
    path.write_text(yaml.safe_dump(doc))
    out = tmp_path / "areal.html"
    done = run("report", str(path), "--out", str(out), "--no-frontier", "--basis", "steady_state")
    assert done.returncode == 0, done.stderr
    page = read_page(out.read_text(encoding="utf-8"))
    data = json.loads(page.json_text)
    assert data["solve"]["regime"]["mode"] == "pipelined" and data["solve"]["plan"] is not None
    assert "risk" in page.sections and "certainty" not in page.sections  # risk's scenarios evaluate a batch run
    assert data["risk"]["on_time_probability"] is not None
    note = "no price of certainty: solve --confidence plans the seed's regime only"
    assert note in html.unescape(out.read_text(encoding="utf-8"))


def test_a_page_without_a_plan_says_there_is_nothing_to_replay(tmp_path):
    out = tmp_path / "colocated.html"
    colocated = ROOT / "instances" / "regimes" / "seed-week-colocated.yaml"  # no batch finishes in a week's cadences
    done = run("report", str(colocated), "--out", str(out), "--no-frontier", "--basis", "steady_state")
    assert done.returncode == 3, done.stderr
    text = html.unescape(out.read_text(encoding="utf-8"))
    assert "no plan (infeasible): nothing to replay" in text and "the plan is sized on" not in text
