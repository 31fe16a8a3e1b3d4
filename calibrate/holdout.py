"""A hold-out check of a framework step log's figures (``calibrate --holdout``): fit on the first half of the
steps, predict the second half's mean step time from the fitted figures alone, and compare with what the
second half logged; the naive prediction, the first half's mean logged step time, beside it.

The prediction is generation + the trainer's busy time (the update law at each second-half step's training
GPUs, the run's configuration) + weight sync + the rest of a step, each the first half's figure: the
generation's and the rest's means, the weight sync's median, over the first half's steps without a save or a
validation. Where the regime overlaps generation with training (pipelined with k >= 1, async: docs/model.md §14),
a step is the longer of the two, not their sum: per first-half step max(generation, its update scaled to the
predicted trainer time), averaged, + weight sync + the rest, the rest then being what the logged steps hold beyond
max(generation, update) + weight sync. With no regime known, a log whose generation and update together exceed its
logged step is read as overlapped, as the step split reads it. Steps with a save or a validation are left out of the second half's mean (they are their own terms).
Nothing measured in the second half enters the prediction.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from trainground.calibrate.logs import Steps
from trainground.calibrate.stepreader import FrameworkSteps
from trainground.calibrate.updates import fit_update_law
from trainground.models.regime import Regime

MIN_HALF = 3  # steps each half needs


def overlaps(regime: Regime | None) -> bool:
    """Whether the regime generates the next batch while the trainer works; False when it is unknown."""
    return regime is not None and regime.overlaps_training


def holdout(
    steps: Steps, extra: FrameworkSteps, regime: Regime | None = None, replicates: int = 200, seed: int = 0
) -> tuple[dict | None, str]:
    """The check as a JSON-ready dict and its sentence, or None and why it could not be made; ``regime`` is the
    logged run's (read from the log or said with --regime), None when unknown (phases taken one after another)."""
    n = steps.rows
    logged = extra.logged_step
    gen = steps.generation_s if steps.generation_s is not None else np.zeros(n)
    stall = np.zeros(n, bool)
    for seconds in (extra.checkpoint_s, extra.validation_s):
        if seconds is not None:
            stall |= np.nan_to_num(seconds) > 0
    sync = extra.weight_sync_s if extra.weight_sync_s is not None else np.zeros(n)
    usable = np.isfinite(logged) & np.isfinite(gen) & np.isfinite(steps.update_s) & ~stall
    half = n // 2
    first, second = np.arange(n) < half, np.arange(n) >= half
    a, b = first & usable, second & np.isfinite(logged) & ~stall
    if a.sum() < MIN_HALF or b.sum() < MIN_HALF:
        return None, (
            f"hold-out not made: each half needs {MIN_HALF} steps without a save or a validation and with every "
            f"phase logged (first half {int(a.sum())}, second half {int(b.sum())} of {n:,} steps)"
        )
    rng = np.random.default_rng(seed)
    fit = fit_update_law(
        Steps(
            steps.file,
            steps.iteration[first],
            steps.update_s[first],
            steps.training_gpus[first],
            update_source=steps.update_source,
        ),
        rng,
        replicates,
    )
    gpus = steps.training_gpus[b]
    if fit is not None and np.isfinite(gpus).all():
        trainer, how = float(np.mean(fit.seconds(gpus))), f"the {fit.law} law at the second half's training GPUs"
    else:
        trainer, how = float(np.median(steps.update_s[a])), "the first half's median (no training GPU count)"
    sync_s = np.nan_to_num(sync)
    update = steps.update_s[a]
    # overlapped as the regime says, or, with no regime known, as the step split reads it (calibrate.phases):
    # generation and training together longer than the logged step
    overlapped = overlaps(regime) or (regime is None and float(np.mean(gen[a] + update)) > float(np.mean(logged[a])))
    busy = np.maximum(gen[a], update) if overlapped else gen[a] + update
    terms = {
        "generation": float(gen[a].mean()),
        "trainer": trainer,
        "weight sync": float(np.median(sync_s[a])),
        "other": float(np.mean(logged[a] - busy - sync_s[a])),
    }
    if overlapped:  # per step, the longer phase, the trainer's passes scaled to the predicted trainer time
        scale = trainer / float(update.mean()) if update.mean() > 0 else 1.0
        head = float(np.mean(np.maximum(gen[a], update * scale)))
    else:
        head = terms["generation"] + trainer
    predicted = head + terms["weight sync"] + terms["other"]
    actual = float(logged[b].mean())
    naive = float(np.nanmean(logged[first]))
    it = steps.iteration
    left_out = [f"{v:g}" for v in it[second & stall]]
    result = {
        "first_steps": [float(it[first][0]), float(it[first][-1])],
        "second_steps": [float(it[second][0]), float(it[second][-1])],
        "fitted_rows": int(a.sum()),
        "checked_rows": int(b.sum()),
        "left_out": left_out,
        "terms": terms,
        "overlapped": overlapped,
        "trainer_from": how,
        "predicted_s": predicted,
        "naive_s": naive,
        "logged_s": actual,
        "predicted_error": predicted / actual - 1,
        "naive_error": naive / actual - 1,
    }
    parts = " + ".join(f"{k} {v:,.4g}" for k, v in terms.items())
    if overlapped:
        g, t = terms["generation"], trainer
        parts = f"max(generation {g:,.4g}, trainer {t:,.4g}) + weight sync {terms['weight sync']:,.4g} + other "
        parts += f"{terms['other']:,.4g}, generation and training overlapping ({regime.label})"  # type: ignore[union-attr]
    sentence = (
        f"hold-out ({Path(steps.file).name}): fitted on steps {it[first][0]:g}-{it[first][-1]:g} "
        f"({int(a.sum())} steps), the second half's mean step time (steps {it[second][0]:g}-{it[second][-1]:g}, "
        f"{int(b.sum())} steps{_left_out(left_out)})"
        f" is {actual:,.4g} s; predicted {predicted:,.4g} s ({predicted / actual - 1:+.1%}) = {parts} (trainer from "
        f"{how}); naive, the first half's mean logged step time: {naive:,.4g} s ({naive / actual - 1:+.1%})"
    )
    return result, sentence


def _left_out(steps: list[str]) -> str:
    if not steps:
        return ""
    return f", the save/validation step{'s' if len(steps) > 1 else ''} {', '.join(steps)} left out"
