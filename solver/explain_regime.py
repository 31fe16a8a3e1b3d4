"""`explain`'s Regime section: MODEL.md §14's closed forms on one instance (solver/laws/regimes.py), no optimisation.

Printed only for an instance with a ``regime`` section, after the seed's figures (which stay those of the
seed's regime, without the timeout). Batch modes (colocated, pipelined) give the batch's attempts ``N``, the
wait for its slowest ``M_N``, the generation phase ``D`` and the least cadence the mode admits, with the
makespan it implies; admission gives ``E[M_g]`` and its cadence bound at the explained cadence's update time; async
drop with regime fields set gives its resident versions, the age limit K and §2's drops and gaps over ``W_τ``.
"""

from __future__ import annotations

import math

from trainground.models.instance import Instance
from trainground.models.regime import Regime
from trainground.solver.laws import calculus as calc
from trainground.solver.laws import goodput, holding
from trainground.solver.laws import regimes as rg

REGIME = 5  # the section index of SECTIONS in solver/explain.py


def regime_lines(inst: Instance, L: float, G: int | None, occ: calc.Occupancy, add) -> None:
    """The Regime section at cadence ``L`` on ``G`` inference GPUs (None: colocated takes the training pool,
    pipelined's throughput terms need the count)."""
    r = inst.regime
    assert r is not None
    tau = r.rollout_timeout
    p = rg.intake(inst, occ)
    tokens = inst.workload.tokens_per_attempt * rg.token_scale(occ, tau)
    add(REGIME, "regime", r.label, "", f"regime.mode {r.mode}, staleness {r.staleness} (docs/model.md §14)")
    if tau is not None:
        _timeout(inst, r, occ, p, tokens, add)
    sync = rg.sync_time(inst)
    add(REGIME, "regime_weight_sync_s", sync, "s", "t_s = regime.weight_sync_time, else reliability's, else 0")
    if r.batched:
        _batch(inst, r, L, G, occ, p, tokens, sync, add)
    else:
        _async(inst, r, L, occ, p, tokens, sync, add)


def _timeout(inst: Instance, r: Regime, occ: calc.Occupancy, p: float, tokens: float, add) -> None:
    tau = r.rollout_timeout
    assert tau is not None
    mean = rg.timeout_mean(occ, tau)
    add(REGIME, "timeout_occupancy_mean_s", mean, "s", f"mean(W_τ) = E[min(W, τ)], τ = {tau:g} s")
    add(REGIME, "timeout_cdf", rg.timeout_cdf(occ, tau), "share", f"F(τ) = P(W <= {tau:g} s)")
    add(
        REGIME,
        "token_scale",
        rg.token_scale(occ, tau),
        "ratio",
        f"mean(W_τ)/mean(W) = {mean:.6g}/{occ.mean:.6g}: tokens per attempt {inst.workload.tokens_per_attempt:g} → "
        f"{tokens:.6g}",
    )
    if r.truncated == "filter":
        add(REGIME, "timeout_intake", p, "share", f"p·F(τ) = {inst.workload.intake_rate:g}·F(τ) (truncated: filter)")


def _batch(inst, r: Regime, L: float, G: int | None, occ, p: float, tokens: float, sync: float, add) -> None:
    """Colocated and pipelined: N, M_N, D, the busy share, U and the least admissible cadence."""
    w, tau = inst.workload, r.rollout_timeout
    N = rg.attempts_per_batch(w.batch_trajectories, w.group_size, p)
    draws = rg.batch_draws(inst, N)
    add(
        REGIME,
        "attempts_per_batch",
        N,
        "attempts",
        f"N = g·ceil(B/(g·p)) = {w.group_size}·ceil({w.batch_trajectories}/({w.group_size}·{p:.6g}))",
    )
    slowest = rg.expected_max(occ, draws, tau)
    limit = "∞" if tau is None else f"{tau:g}"
    add(
        REGIME,
        "slowest_attempt_s",
        slowest,
        "s",
        f"M_N = ∫_0^{limit} (1 - F(t)^N') dt, N' = {draws} ({inst.freshness.group_correlation})",
    )
    for key, q in (("slowest_attempt_p10_s", 0.1), ("slowest_attempt_p90_s", 0.9)):
        value = rg.max_quantile(occ, draws, q, tau)
        add(REGIME, key, value, "s", f"F⁻¹(q^(1/N')) at q = {q:g} (the spread of the max), at most τ = {limit}")
    _phase(inst, r, G, occ, N, tokens, slowest, sync, add)
    peak = {b.name: N * b.share for b in inst.environment.backends}
    add(REGIME, "launch_peak", peak, "envs", "N·s_b: all N attempts of a batch start at once (row 6 at least this)")
    cap = r.max_concurrent_attempts
    if cap is not None:
        add(REGIME, "concurrency_cap_holds", N <= cap, "", f"N <= max_concurrent_attempts: {N} <= {cap}")


def _phase(inst, r: Regime, G: int | None, occ, N: int, tokens: float, slowest: float, sync: float, add) -> None:
    """The supply S, the generation phase D, the busy share, U and the cadence that follows."""
    tau = r.rollout_timeout
    shape = inst.inference.shapes[0]
    gpus, update, train_gpus = _fleet(inst, r, G)
    a = (
        inst.inference.availability
        if r.mode == "colocated" or not inst.reliable
        else float(goodput.availabilities(inst, rg.timeout_mean(occ, tau))[0])
    )
    supply = a * gpus * shape.tokens_per_gpu_s if gpus else None
    ok = supply is not None
    whose = "the training pool's GPUs, all generating in turn" if G is None else "--inference-gpus"
    thru = N * tokens / supply if supply else None
    add(
        REGIME,
        "generation_throughput_s",
        thru,
        "s",
        f"N·tokens/S, S = a·G·r_1 = {a:g}·{gpus}·{shape.tokens_per_gpu_s:g} ({whose})"
        if ok
        else "needs --inference-gpus",
    )
    phase = rg.generation_phase(N, tokens, supply, slowest) if supply else None
    add(REGIME, "generation_phase_s", phase, "s", "D = max(N·tokens/S, M_N)" if ok else "needs --inference-gpus")
    busy = rg.busy_share(N, tokens, supply, phase) if supply and phase else None
    add(REGIME, "generation_busy_share", busy, "share", "N·tokens/(S·D)" if ok else "needs --inference-gpus")
    add(
        REGIME,
        "regime_update_time_s",
        update,
        "s",
        f"U on {train_gpus} training GPUs (the most groups the pool leaves)"
        if update is not None
        else "no admissible training groups",
    )
    used = max(train_gpus, gpus or 0) if r.mode == "colocated" else train_gpus  # the GPUs γ is computed on
    _batch_cadence(inst, r, phase, update, sync, used, add)


def _fleet(inst: Instance, r: Regime, G: int | None) -> tuple[int | None, float | None, int]:
    """(inference GPUs, U, training GPUs): colocated shares the training pool (default: as many whole replicas
    of the first shape as it holds, training on the most groups it holds); pipelined trains on the most groups
    the training pool leaves beside G inference GPUs of the first shape."""
    t, shape = inst.training, inst.inference.shapes[0]
    pool = inst.pool(t.pool)
    lo, hi = calc.group_range(inst)
    gpus: int | None
    if r.mode == "colocated":
        gpus = G if G is not None else pool.gpus // shape.gpus_per_replica * shape.gpus_per_replica
        groups = hi
    else:
        gpus = G
        left = pool.gpus - (G or 0) if shape.pool == t.pool else pool.gpus
        groups = min(hi, left // t.gpus_per_group)
    if groups < lo or groups <= 0:
        return gpus, None, 0
    train = groups * t.gpus_per_group
    update = float(calc.update_time(t.update_time, train))
    return gpus, (None if math.isnan(update) else update), train


def _batch_cadence(inst, r: Regime, phase, update, sync: float, used: int, add) -> None:
    """The least admissible L of the batch mode, and the makespan and time margin it implies, with §13's γ on
    the ``used`` GPUs (colocated: max(inference, training) GPUs; pipelined: the training GPUs)."""
    if phase is None or update is None:
        add(REGIME, "regime_cadence_s", None, "s", "needs D and U")
        return
    if r.mode == "colocated":
        least = rg.colocated_cadence(phase, update, sync, r.switch_time)
        formula = f"L = D + U + t_s + switch_time = {phase:.6g} + {update:.6g} + {sync:g} + {r.switch_time:g}"
    else:
        k = r.steps_ahead or 0.0
        least = rg.pipelined_cadence(phase, update, sync, k)
        terms = f"{phase:.6g} + {update:.6g}" if k == 0 else f"max({phase:.6g}, {update:.6g})"
        formula = f"L = {'D + U' if k == 0 else 'max(D, U)'} + t_s (k = {k:g}) = {terms} + {sync:g}"
    add(REGIME, "regime_cadence_s", least, "s", formula)
    n, extra, deadline = inst.workload.iterations, inst.schedule.extra_time, inst.schedule.deadline
    gamma = float(goodput.training_terms(inst.reliability, used).goodput) if inst.reliability else 1.0
    if gamma <= 0:
        add(REGIME, "regime_makespan_s", None, "s", f"γ = {gamma:.4g} <= 0: no progress")
        return
    if r.mode == "pipelined" and r.steps_ahead == 1 and inst.counts_startup:
        span = phase + ((n - 1) * least + update) / gamma + extra
        how = f"T = D + ((n-1)·L + U)/γ + extra, γ = {gamma:.6g}"
    else:
        span = n * least / gamma + extra
        how = f"T = n·L/γ + extra = {n}·{least:.6g}/{gamma:.6g} + {extra:g}"
    add(REGIME, "regime_makespan_s", span, "s", f"{how} ({span / 86400:.1f} days)")
    add(
        REGIME,
        "regime_time_margin",
        (deadline - span) / deadline,
        "share",
        f"(deadline - T)/deadline, deadline {deadline:g} s",
    )


def _async(inst, r: Regime, L: float, occ, p: float, tokens: float, sync: float, add) -> None:
    """Async: admission's E[M_g] and cadence bound, the concurrency cap and recompute's demand at cadence L."""
    w, tau = inst.workload, r.rollout_timeout
    mean = rg.timeout_mean(occ, tau)
    r_raw = w.batch_trajectories / (L * p)
    if r.staleness == "admission":
        _admission(inst, r, L, occ, p, sync, add)
    else:
        r_raw = _drop(inst, r, L, occ, p, add)
    cap = r.max_concurrent_attempts
    if cap is not None:
        add(
            REGIME,
            "concurrency_cap_holds",
            r_raw * mean <= cap,
            "",
            f"R_raw·mean(W_τ) <= max_concurrent_attempts: {r_raw * mean:.6g} <= {cap}",
        )
    if r.in_flight_updates and r.recompute == "prefix":
        bias = rg.length_bias(occ, tau)
        add(REGIME, "length_bias", bias, "ratio", "E[W_τ²]/(2·E[W_τ]²) (running attempts are length-biased)")
        extra = rg.recompute_demand(r_raw, mean, r.prefill_cost, r.context_tokens, tokens, bias, L)
        add(
            REGIME,
            "recompute_tokens_per_s",
            extra,
            "tok/s",
            f"R_raw·mean(W_τ)·prefill_cost·(context + tokens·bias)/L"
            f" = {r_raw:.6g}·{mean:.6g}·{r.prefill_cost:g}·({r.context_tokens:g} + {tokens:.6g}·{bias:.4g})/{L:.6g}",
        )
        demand = r_raw * tokens
        add(REGIME, "recompute_share", extra / (demand + extra), "share", "recompute/(R_raw·tokens + recompute)")


def _drop(inst, r: Regime, L: float, occ, p: float, add) -> float:
    """Async drop: the versions resident and the age limit K = max_versions_kept, §2's exceedance and drops over
    W_τ at (L, K), the attempt rate they ask, the first shape's supply multiplier and the gaps (per trajectory and
    consumed). Returns R_raw."""
    w, fr, tau = inst.workload, inst.freshness, r.rollout_timeout
    K = fr.max_versions_kept
    resident = 1 if r.in_flight_updates else K
    how = "in-flight updates: running attempts move to each version" if r.in_flight_updates else "K versions kept"
    add(REGIME, "versions_resident", resident, "versions", how)
    add(REGIME, "age_limit", K, "versions", "K = freshness.max_versions_kept: staler groups are dropped")
    q = float(rg.timeout_exceedance(occ, tau, L, K))
    cut = "W_τ" if tau is not None else "W"
    add(REGIME, "regime_exceedance", q, "share", f"q(L,K) = ∫_K^(K+1) S(vL) dv of {cut} at L = {L:.6g} s, K = {K}")
    drop = float(calc.group_drop(q, w.group_size, fr.overrun_policy, fr.group_correlation))
    add(REGIME, "regime_group_drop", drop, "share", f"{fr.overrun_policy}, {fr.group_correlation}, g = {w.group_size}")
    r_raw = w.batch_trajectories / (L * p * (1.0 - drop)) if drop < 1 else math.inf
    add(
        REGIME,
        "regime_attempts_per_s",
        r_raw,
        "1/s",
        f"R_raw = B/(L·p·(1 - drop)) = {w.batch_trajectories}/({L:.6g}·{p:.6g}·{1 - drop:.6g})",
    )
    shape = inst.inference.shapes[0]
    mult = float(calc.supply_multiplier(shape.version_slowdown, resident))
    add(
        REGIME,
        "supply_multiplier",
        mult,
        "ratio",
        f"1 - slowdown·(resident - 1) = 1 - {shape.version_slowdown:g}·{resident - 1} ({shape.name})",
    )
    uses = inst.environment.littles_law_uses
    post = 1.0 if fr.gap_convention == "post_publish" else 0.0
    gap = rg.timeout_used(occ, tau, uses) / L + post
    add(REGIME, "regime_mean_version_gap", gap, "versions", f"W_use/L of {cut} ({uses})" + (" + 1" if post else ""))
    mean_gap, p99_gap = holding.consumed_gaps(inst, occ, L, K, tau)
    given = " given G <= K" if fr.overrun_policy == "drop" else ""
    add(REGIME, "consumed_mean_gap", mean_gap, "versions", f"G = floor(u + M/L){given}, M of {cut} at L = {L:.6g} s")
    add(
        REGIME,
        "consumed_p99_gap",
        p99_gap,
        "versions",
        f"smallest k with P(G <= k{given.replace(' given', ' |')}) >= 0.99",
    )
    return r_raw


def _admission(inst, r: Regime, L: float, occ, p: float, sync: float, add) -> None:
    """Admission: E[M_g], the slots and the cadence bound at the update time of the fewest groups keeping up at L."""
    w, tau = inst.workload, r.rollout_timeout
    k = r.steps_ahead
    assert k is not None
    draws = rg.group_draws(inst)
    group_max = rg.expected_max(occ, draws, tau)
    add(
        REGIME,
        "slowest_attempt_s",
        group_max,
        "s",
        f"E[M_g] = ∫_0^{'∞' if tau is None else f'{tau:g}'} (1 - F(t)^{draws}) dt (a group's completion)",
    )
    slots = math.ceil((k + 1) * w.batch_trajectories / w.group_size - 1e-9)
    add(
        REGIME,
        "admission_slots",
        slots,
        "groups",
        f"ceil((k+1)·B/g) = ceil({k + 1:g}·{w.batch_trajectories}/{w.group_size})",
    )
    peak = {b.name: rg.publish_peak(w.batch_trajectories, p, b.share, occ, tau, L) for b in inst.environment.backends}
    add(REGIME, "publish_peak", peak, "envs", f"(B/p)·s_b·Σ_i S_τ(i·L) at L = {L:.6g} s (row 6 at least this)")
    mean_gap, p99_gap = rg.consumed_gaps(occ, draws, tau, L)
    post = 1 if inst.freshness.gap_convention == "post_publish" else 0
    note = f" at L = {L:.6g} s" + (" + 1 (post_publish)" if post else "")
    add(REGIME, "consumed_mean_gap", mean_gap + post, "versions", f"E[M_g]/L, G = floor(u + M_g/L), no K{note}")
    add(REGIME, "consumed_p99_gap", p99_gap + post, "versions", f"smallest k with P(G <= k) >= 0.99{note}")
    groups = int(calc.min_groups_for(inst, L)[0])
    if groups == 0:
        add(REGIME, "admission_cadence_s", None, "s", f"no admissible training groups keep U(m) <= L = {L:.6g} s")
    else:
        update = float(calc.update_time(inst.training.update_time, groups * inst.training.gpus_per_group))
        bound = rg.admission_cadence(group_max, p, update, sync, k)
        verdict = "meets" if bound <= L else "exceeds"
        add(
            REGIME,
            "admission_cadence_s",
            bound,
            "s",
            f"L >= (E[M_g]/p + U + t_s)/(k + 1/2) = ({group_max:.6g}/"
            f"{p:.6g} + {update:.6g} + {sync:g})/{k + 0.5:g} (m = {groups}; L = {L:.6g} s {verdict} it)",
        )
