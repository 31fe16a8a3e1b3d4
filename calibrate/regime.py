"""The run regime (MODEL.md §14) a calibration writes into the instance: said with ``--regime``, or read from a
framework step log's evidence; and, for a colocated run, the time per iteration that is neither generation nor
training (``regime.switch_time``).

What a verl log shows (the trainer that wrote it: calibrate/frameworks.py, ``verl_trainer``):

- RayPPOTrainer's keys alone (``verl/trainer/ppo/ray_trainer.py``) and phases that add up to no more than the
  step time (within SEQUENTIAL): generation and training took turns. That trainer runs the hybrid engine only (it
  asserts ``actor_rollout_ref.hybrid_engine``, v0.2 to v0.9), so the same GPUs generate and train: colocated —
  unless the log's config (printed at start, or on the command line) says ``hybrid_engine: False``, or the
  training GPUs given are fewer than perf/throughput's divisor counts in the job: separate pools, k = 0. Phases
  that add up to more than the step overlapped: no regime is read.
- the one-step-off trainer's keys: batch i+1 is generated on the rollout GPUs while batch i trains: pipelined,
  k = 1; the overlap is reported (the batch's generation against the trainer's wait for it).
- the fully-async trainer's keys: async with staleness admission. It is written when the log also shows partial
  rollout (``fully_async/partial/partial_ratio`` above 0, or ``partial_rollout: True`` in the logged config: running
  attempts move to each new version, ``in_flight_updates``) and ``steps_ahead``: the logged config's
  ``staleness_threshold`` s (verl starts at most (1 + s) batches' worth of samples per version, MODEL's k = s), if
  it is at least 1, as MODEL's admission row needs. Otherwise the note says what is missing and which
  ``--regime`` gives it.

slime's and AReaL's logs are not read for a regime: ``--regime`` says it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from trainground.calibrate.figures import Figure, percentile_interval, resample
from trainground.calibrate.frameworks import FULLY_ASYNC, ONE_STEP_OFF, PARTIAL, THRESHOLD
from trainground.calibrate.logs import Steps
from trainground.calibrate.metricslog import ANSI
from trainground.calibrate.phases import in_step_other, lenient_sum
from trainground.calibrate.stepreader import FrameworkSteps
from trainground.calibrate.tables import FORMATS
from trainground.models.regime import Regime

SEQUENTIAL = 0.05  # phases that add up to more than the step by this share overlapped (within it: the sum)
CHOICES = "colocated, pipelined-0, pipelined-1, async, async-inflight, admission-K (a real K >= 1)"
CONFIG = re.compile(
    r"(?:^|[\s'\"{,(])(?:[A-Za-z_]\w*\.)*(hybrid_engine|staleness_threshold|partial_rollout|trigger_parameter_sync_step)"
    r"['\"]?\s*[:=]\s*['\"]?(True|False|true|false|[-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)(?![\w.])"
)


def parse(text: str) -> Regime:
    """The regime a ``--regime`` value names (ValueError, saying what is accepted, for anything else)."""
    said = text.strip().lower()
    if said == "colocated":
        return Regime(mode="colocated")
    if said in ("pipelined-0", "pipelined-1"):
        return Regime(mode="pipelined", steps_ahead=float(said[-1]))
    if said == "async":
        return Regime()
    if said == "async-inflight":
        return Regime(in_flight_updates=True)
    if said.startswith("admission-"):
        try:
            k = float(said.removeprefix("admission-"))
        except ValueError:
            k = math.nan
        if math.isfinite(k) and k >= 1:
            return Regime(mode="async", staleness="admission", steps_ahead=k, in_flight_updates=True)
        raise ValueError(
            f"{text!r}: admission-K needs a real K >= 1 (at most K + 1 batches' worth of groups started but not yet "
            "trained, docs/model.md §14), e.g. admission-4"
        )
    raise ValueError(f"{text!r} is not a regime: give one of {CHOICES}")


@dataclass
class Finding:
    """The regime written (None: none), where it came from, and what the log showed."""

    regime: Regime | None
    source: str = ""  # "the log" or "--regime"; "" when none is written
    seen: str | None = None  # what the log shows, in words (None: it does not say)
    evidence: list[str] = field(default_factory=list)
    assumed: list[str] = field(default_factory=list)
    why_not: str | None = None  # why the log's regime is not written
    overlapped: bool = False  # the log's generation of a batch ran beside the step (verl's one-step-off trainer)

    @property
    def colocated(self) -> bool:
        return self.regime is not None and self.regime.mode == "colocated"

    def sentence(self) -> str:
        parts = [
            f"the log shows {self.seen}"
            if self.seen
            else "the log does not show how generation and training took turns"
        ]
        parts += [f"evidence: {'; '.join(self.evidence)}"] if self.evidence else []
        parts += [f"assumed: {'; '.join(self.assumed)}"] if self.assumed else []
        if self.regime is None:
            head = "regime: none written"
            parts += [self.why_not] if self.why_not else []
        else:
            head = f"regime: {self.regime.label} (from {self.source})"
        return f"{head}: {'; '.join(parts)}"

    def to_json(self) -> dict:
        r = self.regime
        written = None if r is None else r.model_dump(include={"mode", "staleness", "steps_ahead", "in_flight_updates"})
        return {
            "written": written,
            "label": r.label if r is not None else None,
            "source": self.source or None,
            "seen": self.seen,
            "evidence": self.evidence,
            "assumed": self.assumed,
            "not_written": self.why_not,
        }


def detect(steps: Steps | None, extra: FrameworkSteps | None, given: Regime | None) -> Finding:
    """The regime to write: ``given`` (--regime) when there is one, else what the step log shows."""
    seen = _from_log(steps, extra) if steps is not None and extra is not None else Finding(None)
    if given is None:
        seen.source = "the log" if seen.regime is not None else ""
        return seen
    out = Finding(given, "--regime", seen.seen, seen.evidence, seen.assumed, overlapped=seen.overlapped)
    if seen.regime is not None and seen.regime != given:
        out.assumed.append(f"--regime {given.label} is written in place of the log's {seen.regime.label}")
    return out


def _from_log(steps: Steps, extra: FrameworkSteps) -> Finding:
    if extra.name != "verl":
        label = "AReaL" if extra.name == "areal" else extra.name
        return Finding(None, why_not=f"{label}'s keys are not read for a regime: give --regime ({CHOICES})")
    config = config_values(steps.file)
    if extra.trainer == "one_step_off":
        return _one_step_off(steps, extra)
    if extra.trainer == "fully_async":
        return _fully_async(extra, config)
    return _sequential(steps, extra, config)


def _sequential(steps: Steps, extra: FrameworkSteps, config: dict) -> Finding:
    terms, n = extra.terms, steps.rows
    keys = [*terms.generation, *terms.trainer, *in_step_other(terms)]
    phases = lenient_sum(extra.values, keys, n)
    ok = np.isfinite(steps.step_s) & (steps.step_s > 0) if steps.step_s is not None else np.zeros(n, bool)
    for k in terms.generation + terms.trainer:
        ok &= np.isfinite(extra.values[k])
    if not ok.any() or not terms.generation:
        return Finding(None, why_not="no step with its generation, trainer passes and step time logged: give --regime")
    rest = float(np.median((steps.step_s[ok] - phases[ok]) / steps.step_s[ok]))
    sums = (
        f"its phases add up to {np.median(phases[ok]):,.4g} s against {np.median(steps.step_s[ok]):,.4g} s of step "
        f"time ({steps.step_source}; medians over {int(ok.sum()):,} steps, {rest:+.1%} unlogged)"
    )
    if rest < -SEQUENTIAL:
        return Finding(None, why_not=f"{sums}: they overlapped, so generation and training did not take turns")
    evidence = [
        "verl's RayPPOTrainer keys (none of the one-step-off trainer's "
        f"{', '.join('timing_s/' + k for k in ONE_STEP_OFF)} nor the fully-async trainer's {FULLY_ASYNC[0]}*)",
        (
            f"the step time is the sum of its phases: {sums}"
            if rest <= SEQUENTIAL
            else f"no two phases overlapped: {sums}"
        )
        + ": generation and training took turns",
    ]
    hybrid, pools = config.get("hybrid_engine"), _pools(steps, extra)
    if hybrid is not None:
        evidence.append(f"hybrid_engine: {hybrid[0]} in the logged config (line {hybrid[1]})")
    if pools is not None:
        evidence.append(pools[1])
    if (hybrid is not None and hybrid[0] is False) or (pools is not None and pools[0] == "separate"):
        return Finding(Regime(mode="pipelined", steps_ahead=0.0), seen="pipelined k=0", evidence=evidence)
    assumed = []
    if hybrid is None and pools is None:
        assumed.append(
            "the same GPUs generate and train: verl's RayPPOTrainer runs the hybrid engine only (it asserts "
            "actor_rollout_ref.hybrid_engine, v0.2 to v0.9); a log of separate pools is --regime pipelined-0"
        )
    return Finding(Regime(mode="colocated"), seen="colocated", evidence=evidence, assumed=assumed)


def _pools(steps: Steps, extra: FrameworkSteps) -> tuple[str, str] | None:
    """Whether the training GPUs given (--training-gpus, --columns) are every GPU of the job (verl's
    perf/throughput divisor): ("shared" or "separate", the evidence), or None when there is nothing to compare."""
    if extra.job_gpus is None or extra.gpus_from_throughput:
        return None
    ok = np.isfinite(extra.job_gpus) & np.isfinite(steps.training_gpus)
    if not ok.any():
        return None
    job, train = float(np.median(extra.job_gpus[ok])), float(np.median(steps.training_gpus[ok]))
    if job > train:
        return "separate", (
            f"perf/throughput counts {job:,.0f} GPUs in the job against {train:,.0f} training GPUs (medians): "
            f"{job - train:,.0f} GPUs did not train, so generation ran on its own pool"
        )
    return "shared", f"perf/throughput counts {job:,.0f} GPUs in the job, the {train:,.0f} that train (medians)"


def _one_step_off(steps: Steps, extra: FrameworkSteps) -> Finding:
    keys = [k for k in extra.keys if k in {f"timing_s/{n}" for n in ONE_STEP_OFF}]
    evidence = [f"verl's one-step-off trainer keys ({', '.join(keys)}): batch i+1 is generated while batch i trains"]
    gen, wait = steps.generation_s, extra.wait_s
    if gen is not None and wait is not None:
        ok = np.isfinite(gen) & np.isfinite(wait)
        if ok.any():
            g, w = float(np.median(gen[ok])), float(np.median(wait[ok]))
            evidence.append(
                f"the batch's generation ({' + '.join(extra.terms.overlapped)}) took {g:,.4g} s while the trainer "
                f"waited {w:,.4g} s for it ({' + '.join(extra.terms.wait)}; medians over {int(ok.sum()):,} steps): "
                f"{max(g - w, 0.0):,.4g} s overlapped the previous step's training"
            )
    return Finding(Regime(mode="pipelined", steps_ahead=1.0), seen="pipelined k=1", evidence=evidence, overlapped=True)


def _fully_async(extra: FrameworkSteps, config: dict) -> Finding:
    seen = "async with staleness admission (verl's fully-async trainer)"
    marks = [k for k in extra.keys if k.startswith(FULLY_ASYNC[0]) or k in FULLY_ASYNC[1:]]
    evidence = [f"verl's fully-async trainer keys ({', '.join(marks[:4])}{', ...' if len(marks) > 4 else ''})"]
    partial = config.get("partial_rollout")
    moved = int((np.nan_to_num(extra.partial) > 0).sum()) if extra.partial is not None else 0
    if partial is not None:
        evidence.append(f"partial_rollout: {partial[0]} in the logged config (line {partial[1]})")
        in_flight = partial[0] is True
    else:
        in_flight = moved > 0
        if extra.partial is not None:
            evidence.append(f"{PARTIAL} above 0 in {moved:,} of {extra.partial.size:,} records")
    k = config.get("staleness_threshold")
    logged = extra.threshold[np.isfinite(extra.threshold)] if extra.threshold is not None else np.array([])
    if logged.size:
        k = (float(np.median(logged)), 0)
        evidence.append(f"{THRESHOLD}: {k[0]:g} (median of {logged.size:,} records): k = {k[0]:g}")
    elif k is not None:
        evidence.append(f"staleness_threshold: {k[0]:g} in the logged config (line {k[1]}): k = {k[0]:g}")
    if (sync := config.get("trigger_parameter_sync_step")) is not None:
        evidence.append(f"trigger_parameter_sync_step: {sync[0]:g} (local updates per published version)")
    if not in_flight:
        why = (
            "partial_rollout is off: verl waits for running attempts at every weight sync, which docs/model.md §14 "
            "does not model"
            if partial is not None
            else f"no partial rollout seen ({PARTIAL} absent or 0, no partial_rollout in the logged config)"
        )
        return Finding(None, seen=seen, evidence=evidence, why_not=f"{why}; give --regime if the run moved them")
    if k is None:
        why = f"steps_ahead unknown: the log holds neither {THRESHOLD} nor a config's staleness_threshold"
        return Finding(None, seen=seen, evidence=evidence, why_not=f"{why}; give --regime admission-K")
    if k[0] < 1:
        why = (
            f"k = {k[0]:g} is below the k >= 1 docs/model.md §14's admission row needs; give --regime admission-K to "
            "plan at a K >= 1"
        )
        return Finding(None, seen=seen, evidence=evidence, why_not=why)
    regime = Regime(mode="async", staleness="admission", steps_ahead=float(k[0]), in_flight_updates=True)
    return Finding(regime, seen=seen, evidence=evidence)


def config_values(path: str | Path) -> dict[str, tuple[bool | float, int]]:
    """The regime settings a console log's config holds (verl prints its config at start, ``'hybrid_engine':
    True``, and the command line holds ``actor_rollout_ref.hybrid_engine=False``): setting -> (value, line), the
    first found. A JSONL, CSV or Parquet log holds none."""
    path = Path(path)
    if FORMATS.get(path.suffix.lower()) is not None:
        return {}
    out: dict[str, tuple[bool | float, int]] = {}
    with path.open(encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, start=1):
            for key, value in CONFIG.findall(ANSI.sub("", line)):
                if key not in out:
                    out[key] = (
                        value.lower() == "true" if value.lower() in ("true", "false") else float(value),
                        line_no,
                    )
    return out


def switch_time(steps: Steps, extra: FrameworkSteps, rng, replicates: int) -> Figure | None:
    """A colocated run's time per iteration that is neither generation, nor the trainer's passes, nor the weight
    sync, saves and validations (their own terms): the step time less those, per step (verl: ``reward`` and
    ``adv`` on the driver's CPU, and what no timer holds); the mean over the steps, its interval by resampling
    them. MODEL §14's ``switch_time``: a constant per iteration, not scaled with GPUs."""
    gen, upd, step = steps.generation_s, steps.update_s, steps.step_s
    if gen is None or step is None:
        return None
    ok = np.isfinite(gen) & np.isfinite(upd) & np.isfinite(step)
    if not ok.any():
        return None
    per_step = np.maximum(step[ok] - gen[ok] - upd[ok], 0.0)
    value = float(per_step.mean())
    lo, hi = (
        percentile_interval(resample(rng, per_step.size, replicates) @ per_step / per_step.size)
        if per_step.size > 1
        else (None, None)
    )
    others = in_step_other(extra.terms)
    parts = {k.rpartition("/")[2]: float(np.nan_to_num(extra.values[k][ok]).mean()) for k in others}
    unlogged = value - sum(parts.values())
    parts["unlogged"] = unlogged if abs(unlogged) > 1e-9 * max(value, 1.0) else 0.0  # no rounding noise
    terms = " + ".join(f"{k} {v:,.3g}" for k, v in parts.items())
    return Figure(
        "switch_time_s",
        value,
        lo,
        hi,
        int(ok.sum()),
        "s",
        f"{Path(steps.file).name}: {_less(steps.step_source or 'step', [' + '.join(extra.terms.generation), steps.update_source or 'trainer'])}",
        f"colocated: mean per step of what is neither generation nor the trainer's passes ({terms}); "
        "regime.switch_time, not the update law",
    )


def _less(step: str, taken: list[str]) -> str:
    """``timing_s/step less timing_s/update_weights, timing_s/gen and a + b``: a step time less some terms."""
    head, _, already = step.partition(" less ")
    parts = ([already] if already else []) + taken
    return f"{head} less " + (", ".join(parts[:-1]) + " and " if len(parts) > 1 else "") + parts[-1]


def cpu_note(steps: Steps, extra: FrameworkSteps, regime: Regime) -> str | None:
    """Outside a colocated run, the phases of no role inside the step (verl's reward and adv on the driver's
    CPU) have no per-iteration place in MODEL §14: reported, and said so."""
    others = in_step_other(extra.terms)
    if regime.mode == "colocated" or not others:
        return None
    mean = float(np.nan_to_num(lenient_sum(extra.values, others, steps.rows)).mean())
    return (
        f"{' + '.join(others)} ({mean:,.3g} s per step): no per-iteration term of docs/model.md §14's {regime.label} "
        "regime holds them (switch_time is colocated only): reported in the split, not written, and not folded "
        "into the update law"
    )


def generating_gpus(
    finding: Finding, steps: Steps | None, given: float | None
) -> tuple[float | np.ndarray | None, str]:
    """The GPUs a step log's generation phase ran on: --inference-gpus, else, colocated, every GPU of the run
    (its training GPU count, per step); and how it was had, for the figure's note."""
    if given is not None or not finding.colocated or steps is None or not np.isfinite(steps.training_gpus).any():
        return given, ""
    return steps.training_gpus.copy(), ": colocated, every GPU of the run generates (the training GPU count)"
