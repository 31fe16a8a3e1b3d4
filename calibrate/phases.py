"""A framework step's time, phase by phase: the step time (logged, or the sum of every logged phase), whether a
save, a validation or the weight sync is inside it, the trainer's busy time, and the split of a step.

Every sum is row by row: a generation or trainer pass that is missing on a row (NaN, text, negative) makes that
row's sum missing; a save, a validation, a weight sync or another phase missing on a row did not happen there (0).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

INSIDE_SHARE = 0.5  # a stall is inside the logged step time when the step exceeds its other phases by this share


@dataclass
class Terms:
    """The keys of each role present in the log, top-level phases only (nested ones are never summed)."""

    generation: list[str] = field(default_factory=list)
    trainer: list[str] = field(default_factory=list)  # the passes (or slime's ``perf/train_time`` alone)
    passes: list[str] = field(default_factory=list)  # the passes themselves, shown in the split
    sync: list[str] = field(default_factory=list)
    checkpoint: list[str] = field(default_factory=list)
    validation: list[str] = field(default_factory=list)
    wait: list[str] = field(default_factory=list)
    partition: list[str] = field(default_factory=list)  # slime: phases that add up to the step
    other: list[str] = field(default_factory=list)  # top-level phases of no role
    overlapped: list[str] = field(default_factory=list)  # a batch's generation timed beside the step: never summed

    def stalls(self) -> dict[str, list[str]]:
        return {"weight sync": self.sync, "checkpoint": self.checkpoint, "validation": self.validation}


def in_step_other(terms: Terms) -> list[str]:
    """The phases of no role timed inside the step (verl times ``start_profile`` and ``stop_profile`` outside)."""
    return [k for k in terms.other if not k.endswith("_profile")]


def strict_sum(values: dict[str, np.ndarray], keys: list[str], rows: int) -> np.ndarray | None:
    """Row sums of ``keys``, NaN where any is missing; None when no key is in the log."""
    if not keys:
        return None
    return np.sum([values[k] for k in keys], axis=0)


def lenient_sum(values: dict[str, np.ndarray], keys: list[str], rows: int) -> np.ndarray:
    """Row sums of ``keys`` with a missing cell read as 0 (the phase did not run on that row)."""
    return np.sum([np.nan_to_num(values[k]) for k in keys], axis=0) if keys else np.zeros(rows)


def fallback_step(values: dict[str, np.ndarray], terms: Terms, rows: int) -> tuple[np.ndarray, list[str]]:
    """The step time when none is logged: the partition's sum (slime: train_wait + train) when the log has
    it, else every top-level phase; generation and trainer passes must be there, the rest may be missing."""
    if terms.partition:
        return strict_sum(values, terms.partition, rows), list(terms.partition)
    needed = terms.generation + terms.trainer
    rest = terms.sync + terms.checkpoint + terms.validation + terms.wait + terms.other
    core = strict_sum(values, needed, rows)
    total = (core if core is not None else np.zeros(rows)) + lenient_sum(values, rest, rows)
    return total, needed + rest


def stalls_inside(
    values: dict[str, np.ndarray], terms: Terms, logged: np.ndarray, fixed: bool | None
) -> tuple[dict[str, bool], list[str]]:
    """For each of weight sync, checkpoint and validation: is it inside the logged step time? ``fixed``: the
    framework's answer (True: inside by construction); None: read from the rows that have it: the logged step
    less every other phase is at least INSIDE_SHARE of the stall (verl before 0.6 times its saves and validations
    inside ``timing_s/step``, from 0.6 on outside)."""
    rows = logged.size
    stall_keys = [k for keys in terms.stalls().values() for k in keys]
    inner = lenient_sum(values, terms.generation + terms.trainer + terms.wait + in_step_other(terms), rows)
    residual = logged - inner
    out, notes = {}, []
    for name, keys in terms.stalls().items():
        if not keys:
            continue
        stall = lenient_sum(values, keys, rows)
        has = (stall > 0) & np.isfinite(logged)
        if fixed is not None or not has.any():
            out[name] = True if fixed is None else fixed
            continue
        ratio = float(np.median(residual[has] / stall[has]))
        out[name] = ratio >= INSIDE_SHARE
        others = len(stall_keys) - len(keys)
        notes.append(
            f"{' + '.join(keys)} ({int(has.sum()):,} row{'s' if has.sum() > 1 else ''}): "
            f"{'inside' if out[name] else 'outside'} the logged step "
            f"time (on those rows the step exceeds its other phases{' and stalls' if others else ''} by "
            f"{np.median(residual[has]):,.3g} s against {np.median(stall[has]):,.3g} s of it)"
            + ("" if out[name] else ": not taken out of the step time, added to the wall time per step")
        )
    return out, notes


@dataclass
class Split:
    """Where a step's wall time went: (term, keys, mean seconds per step, share of the wall time). ``overlap``:
    empty when the terms follow one another within a step (they add up to it), else the sentence saying that
    generation and the trainer's passes ran at the same time (each term is then a share of the step, and the
    shares do not add up). ``unlogged``: why the rest of the step has no row, when it has none."""

    rows: int
    wall_s: float
    terms: list[tuple[str, str, float, float]]
    overlap: str = ""
    unlogged: str = ""

    def to_json(self) -> dict:
        return {
            "rows": self.rows,
            "wall_s": self.wall_s,
            "terms": [{"term": t, "keys": k, "seconds": s, "share": f} for t, k, s, f in self.terms],
            "overlapped": bool(self.overlap),
            "overlap": self.overlap or None,
            "unlogged": self.unlogged or None,
        }

    def share(self, term: str) -> float:
        return sum(f for t, _, _, f in self.terms if t == term)


REST = "not logged (the rest of the step)"


def split(
    values: dict[str, np.ndarray],
    terms: Terms,
    wall: np.ndarray,
    trainer: np.ndarray | None,
    overlapped: bool = False,
) -> Split | None:
    """Mean seconds per step of each term over the rows whose wall time is known: generation, each trainer pass
    (slime's ``train_time`` when it is the only trainer key, or its rest beside the passes), weight sync,
    checkpoint, validation, each other phase, and the unlogged rest of the wall time. Saves and validations are
    averaged over every step, as they cost over a run. The rows are those with the wall time, the generation and
    every trainer pass logged.

    slime's ``train_wait`` (shown when the rollout is not logged) spans everything between two trainings, the
    weight update, the sleep and wake-up of the engines and a validation among it: those are shown as their own
    terms and taken out of the wait, never counted twice.

    When generation overlaps the trainer (``overlapped``: the regime says so; or the two phases alone take longer
    than the step) a step is the longer of the two plus the rest: each term is a share of the step, they are not
    summed, and the unlogged rest is the step less max(generation, trainer) and the other terms, per step. A rest
    that comes out negative has no row; ``unlogged`` says by how much the logged terms exceed the step."""
    ok = np.isfinite(wall)
    for key in terms.generation + terms.passes + terms.trainer:
        ok &= np.isfinite(values[key])
    if not ok.any():
        return None
    n, total = int(ok.sum()), float(wall[ok].mean())
    out: list[tuple[str, str, float, float]] = []
    rows = wall.size

    def add(term: str, keys: list[str], seconds: np.ndarray) -> np.ndarray:
        value = float(np.nan_to_num(seconds[ok]).mean())
        out.append((term, " + ".join(keys), value, value / total if total > 0 else 0.0))
        return np.nan_to_num(seconds)

    inner = terms.sync + terms.validation + terms.other
    sequential = np.zeros(rows)
    gen = np.zeros(rows)
    if terms.generation:
        gen = add("generation", terms.generation, lenient_sum(values, terms.generation, rows))
    if terms.wait and not terms.generation:  # the trainer's wait for a batch generated beside the step
        wait = lenient_sum(values, terms.wait, rows)
        keys = list(terms.wait)
        if terms.partition and inner:  # slime: the wait holds the sync, the sleep and wake-up, a validation
            wait = wait - lenient_sum(values, inner, rows)
            keys = [f"{' + '.join(terms.wait)} less {' + '.join(inner)}"]
        sequential += add("wait for rollouts", keys, wait)
    train = np.zeros(rows)
    for key in terms.passes:
        train += add("trainer", [key], values[key])
    if trainer is not None and terms.trainer and terms.trainer != terms.passes:
        if terms.passes:  # slime: train_time less its passes
            train += add("trainer", [f"{terms.trainer[0]} (rest)"], trainer - lenient_sum(values, terms.passes, rows))
        else:  # slime: train_time alone
            train += add("trainer", list(terms.trainer), trainer)
    for term, keys in terms.stalls().items():
        if keys:
            sequential += add(term, keys, lenient_sum(values, keys, rows))
    for key in terms.other:
        sequential += add("other", [key], values[key])
    overlap = ""
    both = bool(terms.generation) and (bool(terms.passes) or bool(terms.trainer))
    gen_s, train_s = float(gen[ok].mean()), float(train[ok].mean())
    if both and (overlapped or gen_s + train_s > total):
        why = (
            "the regime generates the next batch while the trainer works"
            if overlapped
            else f"they alone take {gen_s + train_s:,.4g} s against a {total:,.4g} s step"
        )
        overlap = (
            f"generation and the trainer's passes overlap ({why}): each term is a share of the step and the shares "
            "do not add up; a step is the longer of the two plus the other terms"
        )
        rest_rows = wall - np.maximum(gen, train) - sequential
    else:
        rest_rows = wall - gen - train - sequential
    rest = float(rest_rows[ok].mean())
    unlogged = ""
    if rest >= 0:
        out.append(("other", REST, rest, rest / total if total > 0 else 0.0))
    else:
        unlogged = (
            f"the logged terms exceed the step by {-rest:,.4g} s ({-rest / total:.1%}) on average"
            + (" even taken as overlapping" if overlap else ": some are timed inside others")
            + ", so the rest of the step is not shown"
        )
    return Split(n, total, out, overlap, unlogged)
