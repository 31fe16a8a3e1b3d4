"""The calibrated instance: the ``--into`` instance (pools, prices, deadline: what logs cannot know)
with every fitted field replaced, each with a YAML comment (source, rows, interval), and an
``uncertainty`` section (MODEL.md §9) whose factors are the fitted intervals.

Fitted fields go into the dumped YAML as placeholders that are then replaced by the value and its
comment, so the comment sits on the field's own line. The ``--into`` file's own comments are not kept.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import yaml

from trainground.calibrate.figures import Figure
from trainground.calibrate.fit import Calibration
from trainground.calibrate.frameworks import AGENT_LOOP
from trainground.calibrate.pools import shapes_of
from trainground.calibrate.regimewriter import write_extra_time, write_regime
from trainground.calibrate.roundtrip import write_logged_run
from trainground.calibrate.yamlfields import MIN_ROWS, Fields, comment, enough, interval, number
from trainground.models.load import read_document

FACTOR_NAMES = ("throughput", "lifetimes", "intake", "updates")


def calibrated_document(cal: Calibration, into_path: str | Path) -> str:
    """The YAML text of the calibrated instance built on ``into_path``."""
    doc = read_document(Path(into_path))
    fields = Fields()
    _occupancy(doc, cal, fields)
    _throughput(doc, cal, fields)
    written = _tokens_per_gpu_s(doc, cal, fields)
    _updates(doc, cal, fields)
    _shares(doc, cal, fields)
    present = isinstance(doc.get("reliability"), dict)
    if present:
        _reliability(doc["reliability"], cal, fields)
    uncertainty = _uncertainty(doc.get("uncertainty"), cal, fields, written)
    if uncertainty.get("factors"):  # nothing fitted with an interval: the instance's own section, if any, stays
        doc["uncertainty"] = uncertainty
    _stages(doc, cal)
    if cal.logged_run is not None:
        write_logged_run(doc, cal, fields)
    write_regime(doc, cal, fields, Path(into_path))
    write_extra_time(doc, cal, fields)
    text = yaml.safe_dump(doc, sort_keys=False, default_flow_style=False, allow_unicode=True, width=120)
    for key, replacement in fields.text.items():
        text = text.replace(key, replacement)
    logs = [Path(f).name for f in (cal.trajectories, cal.steps) if f]
    head = f"# Calibrated by `trainground calibrate` from {' and '.join(logs)} onto {Path(into_path).name}.\n"
    return head + text + ("" if present else reliability_block(cal))


RELIABILITY_HEAD = (
    "# ---- optional, uncomment to use: reliability (docs/model.md §13: failures, checkpoints, weight sync; "
    "the fields left out take their sourced defaults; confidence solves do not read it yet) ----"
)


def _reliability_figures(cal: Calibration) -> list[tuple[str, Figure]]:
    """(reliability field, figure) for the weight-sync and checkpoint times a step log gave, from enough rows."""
    names = (("weight_sync_time", "weight_sync_s"), ("checkpoint_time", "checkpoint_s"))
    return [
        (field, cal.step_figures[key])
        for field, key in names
        if key in cal.step_figures and enough(cal, cal.step_figures[key], f"reliability.{field}")
    ]


def _reliability(section: dict, cal: Calibration, fields: Fields) -> None:
    """The ``--into`` instance's own reliability section, its weight-sync and checkpoint times fitted."""
    for name, figure in _reliability_figures(cal):
        section[name] = fields.put(number(figure.value), comment(figure, figure.note))


def reliability_block(cal: Calibration) -> str:
    """The weight-sync and checkpoint times a step log gave, as a commented ``reliability:`` section (MODEL §13)
    with each figure's comment: uncommented, the plan counts them (and failures at the sourced MTBF). Empty
    when the log gave neither."""
    lines = [f"#   {name}: {number(f.value)}  # {comment(f, f.note)}" for name, f in _reliability_figures(cal)]
    if not lines:
        return ""
    return "\n".join([RELIABILITY_HEAD, "# reliability:", *lines, "# ---- end of reliability ----", ""])


def _occupancy(doc: dict, cal: Calibration, fields: Fields) -> None:
    occ = cal.occupancy
    env = doc.setdefault("environment", {})
    if occ is None and cal.logged_run is not None and cal.logged_run.slowest is not None:
        return  # the logged run's law (calibrate.roundtrip.write_logged_run)
    if occ is None:
        if "agent_loop_median_s" not in cal.step_figures:
            cal.notes.append(
                "environment.occupancy kept from --into: the step log holds no per-trajectory times (give "
                "--trajectories for a fitted lifetime law)"
            )
            return
        _loop_occupancy(env, cal, fields)
        return
    if occ.law == "lognormal":
        med, p99 = occ.figures["median"], occ.figures["p99"]
        env["occupancy"] = {
            "distribution": "lognormal",
            "median": fields.put(number(med.value), comment(med, "censored lognormal MLE")),
            "p99": fields.put(number(p99.value), comment(p99, "censored lognormal MLE")),
        }
        return
    samples = "[" + ", ".join(number(round(s, 3)) for s in occ.samples) + "]"
    env["occupancy"] = {
        "distribution": "empirical",
        "samples": fields.put(
            samples,
            comment(
                occ.figures["p99"],
                f"Kaplan–Meier quantiles, lognormal rejected (KS {occ.distance:.3f}); interval of the p99",
            ),
        ),
    }


def _loop_occupancy(env: dict, cal: Calibration, fields: Fields) -> None:
    """The agent loop's lognormal (no trajectory log): each field's comment names the keys it comes from."""
    loop = {k: cal.step_figures.get(f"agent_loop_{k}_s") for k in ("median", "p99")}
    if loop["median"] is None or loop["p99"] is None:
        return
    keys = f"{AGENT_LOOP}{{min,mean,max}}"
    env["occupancy"] = {"distribution": "lognormal"} | {
        k: fields.put(
            number(f.value),
            f"calibrated: lognormal from {keys} per step, not per-trajectory times: {f.rows:,} steps of "
            f"{Path(f.source.split(' (')[0]).name}, {interval(f)} (step-level, wider)",
        )
        for k, f in loop.items()
    }
    cal.notes.append(
        "written lifetimes: environment.occupancy from the agent loop's per-step min/mean/max (no trajectory "
        "log); tokens per attempt, intake, group correlation, backend shares and tokens/s per GPU kept from --into"
    )


def _throughput(doc: dict, cal: Calibration, fields: Fields) -> None:
    work = doc.setdefault("workload", {})
    if cal.tokens_per_attempt is None:
        return
    work["tokens_per_attempt"] = fields.put(
        number(cal.tokens_per_attempt.value), comment(cal.tokens_per_attempt, "mean output tokens")
    )
    if cal.intake is not None and cal.intake.value > 0:
        work["intake_rate"] = fields.put(number(min(cal.intake.value, 1.0)), comment(cal.intake, "effective share"))
    if cal.correlation is not None:
        verdict = "comonotone" if cal.correlation.note.startswith("closer to comonotone") else "independent"
        doc.setdefault("freshness", {})["group_correlation"] = fields.put(
            verdict, comment(cal.correlation, f"within-group ICC {cal.correlation.value:.2f}")
        )


def _tokens_per_gpu_s(doc: dict, cal: Calibration, fields: Fields) -> list[tuple[str, list[int], Figure]]:
    """Each logged pool's figure into the shapes it names; the pooled figure only when the instance has one
    pool (a pooled figure is wrong for every pool of a mixed run). Returns (pool, shape indices, figure)."""
    shapes = doc.get("inference", {}).get("shapes", [])
    how = "output tokens / allocated GPU-s, steady window"
    written: list[tuple[str, list[int], Figure]] = []
    if cal.pool_throughput:
        for pool, fig in cal.pool_throughput.items():
            where = shapes_of(pool, shapes)
            if not where:
                cal.notes.append(f"pool {pool}: no shape of the instance is named {pool} or runs on it: not written")
            for i in where:
                shapes[i]["tokens_per_gpu_s"] = fields.put(number(fig.value), comment(fig, f"pool {pool}: {how}"))
            written += [(pool, where, fig)] if where else []
        done = {i for _, where, _ in written for i in where}
        for i, shape in enumerate(shapes):
            if i not in done:
                cal.notes.append(
                    f"shape {shape.get('name')} (pool {shape.get('pool')}) keeps its own tokens/s per GPU "
                    f"({shape.get('tokens_per_gpu_s')}): the logs have no pool of that name"
                )
    elif (fig := _step_log_rate(cal)) is not None:
        pools = sorted({str(s.get("pool")) for s in shapes})
        if len(pools) > 1:
            cal.notes.append(f"tokens/s per GPU not written: one figure from the step log, {len(pools)} pools")
        elif enough(cal, fig, "inference.shapes[*].tokens_per_gpu_s"):
            for shape in shapes:
                shape["tokens_per_gpu_s"] = fields.put(number(fig.value), comment(fig, fig.note))
            written.append(("", list(range(len(shapes))), fig))
    elif cal.tokens_per_gpu_s is not None:
        pools = sorted({str(s.get("pool")) for s in shapes})
        if len(pools) > 1:
            cal.notes.append(
                f"tokens/s per GPU not written: the log pools the instance's {len(pools)} pools ({', '.join(pools)}) "
                "into one figure, wrong for each; give the trajectory log a pool column (or --pool NAME=FILE) "
                "and --inference-gpus NAME=N,..."
            )
            return written
        fig = cal.tokens_per_gpu_s
        for shape in shapes:
            shape["tokens_per_gpu_s"] = fields.put(number(fig.value), comment(fig, how))
        written.append(("", list(range(len(shapes))), fig))
        if cal.regime is not None and cal.regime.regime is not None and cal.regime.regime.batched:
            cal.notes.append(
                f"tokens/s per GPU written from the trajectory log's window: in a run that generated in batches "
                f"({cal.regime.regime.label}) the window also holds the time its GPUs trained or waited, so the "
                "figure understates their generation rate; a framework step log gives it over the generation phases"
            )
    return written


def _step_log_rate(cal: Calibration) -> Figure | None:
    """The step log's tokens/s per GPU over each step's generation phase, written when there is no trajectory
    log; when the run generated in batches (a colocated or pipelined regime: the trajectory log's window holds
    the time its GPUs did not generate); or when the step log logged saves or validations: the window then holds
    those stalls. Its figure comes out low in both cases (a note says which was written)."""
    fig = cal.step_figures.get("generation_tokens_per_gpu_s")
    if fig is None:
        return None
    if cal.trajectories is None:
        return fig
    stalls = cal.split.share("checkpoint") + cal.split.share("validation") if cal.split is not None else 0.0
    batched = cal.regime is not None and cal.regime.regime is not None and cal.regime.regime.batched
    if not (stalls > 0 or batched) or cal.tokens_per_gpu_s is None:
        return None
    why = (
        f"the run generated in batches ({cal.regime.regime.label}): the window also holds the time its GPUs "
        "trained or waited, which a generation phase never does"
        if batched and cal.regime is not None and cal.regime.regime is not None
        else f"the step log logged saves and validations ({stalls:.1%} of a step's time), which the window holds "
        "and a generation phase never does"
    )
    cal.notes.append(
        f"tokens/s per GPU written from the step log's generation phases ({fig.value:,.4g}), not the trajectory "
        f"log's window ({cal.tokens_per_gpu_s.value:,.4g}): {why}"
    )
    return fig


def _updates(doc: dict, cal: Calibration, fields: Fields) -> None:
    fit = cal.update
    if fit is None or not enough(cal, fit.reference, "training.update_time"):
        if fit is None and cal.steps and cal.trajectories is None:
            cal.notes.append("training.update_time kept from --into: the step log gave no update law")
        return
    ref = fit.reference
    why = comment(ref, f"{fit.law} law by least squares" + ("; the trainer's busy time" if cal.split else ""))
    if fit.law == "table":
        points = "[" + ", ".join(f"{{gpus: {number(g)}, seconds: {number(s)}}}" for g, s in fit.points) + "]"
        law = {"law": "table", "points": fields.put(points, why + " (medians per GPU count)")}
    else:
        where = Path(ref.source.split(":")[0]).name
        law = {
            "law": fit.law,
            "reference_gpus": fields.put(
                number(fit.reference_gpus), f"calibrated: the training GPU count most rows of {where} ran at"
            ),
            "reference_time": fields.put(number(ref.value), why),
        }
        if fit.law == "amdahl":
            law["serial_fraction"] = fields.put(number(min(max(fit.serial_fraction or 0.0, 0.0), 1.0)), why)
    before = doc.get("training", {}).get("update_time", {}).get("law")
    if before is not None and before != fit.law:
        misses = ", ".join(f"{k} misses by {v:.0%}" for k, v in fit.miss.items()) or "one GPU count in the log"
        cal.notes.append(f"update law: the instance's {before} replaced by {fit.law} ({misses} on the per-GPU medians)")
    doc.setdefault("training", {})["update_time"] = law


def _shares(doc: dict, cal: Calibration, fields: Fields) -> None:
    """Backend shares, when the log's backends are exactly the instance's (else the instance keeps its own)."""
    backends = doc.get("environment", {}).get("backends", [])
    if not cal.shares or {b.get("name") for b in backends} != set(cal.shares):
        if cal.shares:
            cal.notes.append(
                "backend shares not written: the log's backends differ from the instance's "
                f"({', '.join(sorted(cal.shares))})"
            )
        return
    rounded = {k: round(v, 6) for k, v in cal.shares.items()}
    biggest = max(rounded, key=rounded.get)
    rounded[biggest] = round(1.0 - sum(v for k, v in rounded.items() if k != biggest), 6)
    for b in backends:
        b["share"] = fields.put(
            number(rounded[b["name"]]), f"calibrated: share of {cal.trajectories.split('/')[-1]}'s attempts"
        )


def _uncertainty(
    existing: dict | None, cal: Calibration, fields: Fields, written: list[tuple[str, list[int], Figure]]
) -> dict[str, Any]:
    """§9 factors: normal (mean 1) for throughput (one per pool written), intake and updates, with the sd of
    the larger of the estimate's interval and the spread the run showed; lognormal (median 1, sigma from the
    median's interval) for lifetimes. Factors of other names in the instance are kept."""
    section = dict(existing or {})
    ours = [name for name, _, _ in written if name]
    kept = [
        f
        for f in section.get("factors", [])
        if f.get("name") not in FACTOR_NAMES + tuple(f"throughput_{p}" for p in ours)
    ]
    factors = []
    lifetimes = _lifetimes_factor(cal, fields)
    factors += [lifetimes] if lifetimes else []
    for pool, where, fig in written:
        shape_paths = (
            [f"inference.shapes[{i}].tokens_per_gpu_s" for i in where]
            if pool
            else ["inference.shapes[*].tokens_per_gpu_s"]
        )
        factors.append(_factor(fields, f"throughput_{pool}" if pool else "throughput", shape_paths, "normal", fig))
    if cal.intake is not None and cal.intake.value > 0:
        factors.append(_factor(fields, "intake", ["workload.intake_rate"], "normal", cal.intake))
    if cal.update is not None and cal.update.reference.rows >= MIN_ROWS:
        path = (
            "training.update_time.points[*].seconds"
            if cal.update.law == "table"
            else "training.update_time.reference_time"
        )
        factors.append(_factor(fields, "updates", [path], "normal", cal.update.reference))
    section["factors"] = factors + kept
    return section


def _stages(doc: dict, cal: Calibration) -> None:
    """The stages calibrate proposes (MODEL §12, :mod:`calibrate.stages`), when the logs ask for them and the
    instance has none of its own; a lifetimes factor then reaches the stages' lifetimes too."""
    found = cal.stages
    if found is None or not found.proposed or doc.get("stages"):
        return
    doc["stages"] = {"capacity": "fixed", "list": [dict(s) for s in found.stages]}
    for factor in doc.get("uncertainty", {}).get("factors", []):
        if factor.get("name") == "lifetimes" and "environment.occupancy.median" in factor.get("paths", []):
            factor["paths"] = [*factor["paths"], "stages.list[*].occupancy.median", "stages.list[*].occupancy.p99"]


def _lifetimes_factor(cal: Calibration, fields: Fields) -> dict | None:
    """Lognormal, sigma from the median's interval (a trajectory log's law); from the wider of the median's
    and the p99's intervals for the agent loop's law, whose p99 rests on a sigma read from per-step extremes."""
    occ = cal.occupancy
    lognormal = ["environment.occupancy.median", "environment.occupancy.p99"]
    if occ is not None:
        paths = lognormal if occ.law == "lognormal" else ["environment.occupancy.samples[*]"]
        return _factor(fields, "lifetimes", paths, "lognormal", occ.figures["median"])
    loop = [cal.step_figures[k] for k in ("agent_loop_median_s", "agent_loop_p99_s") if k in cal.step_figures]
    if not loop:
        return None
    return _factor(fields, "lifetimes", lognormal, "lognormal", max(loop, key=lambda f: f.log_sd))


def _factor(fields: Fields, name: str, paths: list[str], dist: str, source: Figure) -> dict:
    estimate = source.relative_sd if dist == "normal" else source.log_sd
    estimate = estimate if math.isfinite(estimate) else 0.0
    spread = source.spread if source.spread is not None and math.isfinite(source.spread) else 0.0
    value = max(estimate, spread)
    if value == 0:
        why = f"0: the {source.rows:,} rows of {source.name} are constant"
    elif spread > estimate:
        why = f"the spread of {source.name} over the run (the estimate's own interval gives {number(estimate)})"
    else:
        why = f"the 90 % interval of {source.name}" + (
            f" (its spread over the run: {number(spread)})" if spread else ""
        )
    value_text = fields.put(number(value), f"calibrated: {why}; {source.rows:,} rows")
    if dist == "normal":
        return {"name": name, "paths": paths, "dist": "normal", "mean": 1.0, "sd": value_text}
    return {"name": name, "paths": paths, "dist": "lognormal", "median": 1.0, "sigma": value_text}
