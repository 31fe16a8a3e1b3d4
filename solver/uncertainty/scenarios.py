"""Scenarios of MODEL.md §9: draws of the uncertainty factors, the instance's fields in each, and a fixed
plan evaluated over them. No pyomo; every quantity is a numpy array over scenarios.

- :func:`draw` (or :func:`from_draws` for hand-made multipliers) gives a :class:`Scenarios`: the (S, F)
  multipliers and, per concrete field path a factor reaches, the product of its factors' draws.
  :meth:`Scenarios.value` is that field's value in every scenario, clipped into its valid range.
- :func:`values_of` reads the run-level fields every evaluation needs (:class:`Values`), and
  :func:`update_time` the update law, per scenario.
- :mod:`solver.uncertainty.deadline` gives, per scenario and ``K``, what a plan must meet at the deadline pace
  ``L_dl`` to be on time (the per-scenario coefficients of a chance-constrained model).
- :func:`evaluate` runs a fixed plan through every scenario (:class:`Outcome`); its sandbox room comes
  from :mod:`solver.uncertainty.hosts`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from trainground.models.edits import edited
from trainground.models.instance import AmdahlLaw, Instance, InverseLaw
from trainground.models.uncertainty import expand, render_path, valid_range
from trainground.solver.laws import calculus as calc
from trainground.solver.laws import holding
from trainground.solver.laws.goodput import inverse_goodput
from trainground.solver.tolerances import REL_TOL, ROOT_WIDTH_TOL, ZERO_SHARE_TOL
from trainground.solver.uncertainty import goodput as goodput
from trainground.solver.uncertainty.lifetimes import Lifetimes, lifetimes_of


@dataclass(frozen=True)
class Scenarios:
    """S scenarios: every factor drawn once per scenario (MODEL §9)."""

    factors: tuple[str, ...]
    draws: np.ndarray  # (S, F) multipliers as drawn, column j for factor j
    scale: dict[str, np.ndarray] = field(repr=False)  # concrete field path -> (S,) product of its factors' draws
    seed: int | None = None

    @property
    def size(self) -> int:
        return int(self.draws.shape[0])

    def value(self, path: str, nominal: float) -> np.ndarray:
        """(S,) the field at ``path`` in every scenario: ``nominal`` times its multipliers, clipped into
        the field's valid range (``nominal`` everywhere when no factor reaches it)."""
        scale = self.scale.get(path)
        if scale is None:
            return np.full(self.size, float(nominal))
        low, high = valid_range(path)
        return np.clip(nominal * scale, low, high)

    def scales(self, prefix: str) -> bool:
        """True when some factor reaches a field whose path starts with ``prefix``."""
        return any(p.startswith(prefix) for p in self.scale)


def draw(inst: Instance, samples: int | None = None, seed: int | None = None) -> Scenarios:
    """``samples`` scenarios (default the section's ``samples``) drawn with ``seed`` (default its ``seed``)."""
    unc = _section(inst)
    seed = unc.seed if seed is None else seed
    return from_draws(inst, unc.draws(unc.samples if samples is None else samples, seed), seed)


def from_draws(inst: Instance, draws: np.ndarray, seed: int | None = None) -> Scenarios:
    """Scenarios from given multipliers, (S, F) in the order of ``uncertainty.factors``."""
    unc = _section(inst)
    draws = np.atleast_2d(np.asarray(draws, dtype=float))
    if draws.shape[1] != len(unc.factors):
        raise ValueError(f"draws have {draws.shape[1]} columns for {len(unc.factors)} factors")
    document = inst.model_dump(mode="python")
    scale: dict[str, np.ndarray] = {}
    for j, factor in enumerate(unc.factors):
        reached = {
            render_path(tokens)
            for path in factor.paths
            for tokens, value in expand(document, path)
            if value is not None
        }
        for path in reached:
            scale[path] = scale[path] * draws[:, j] if path in scale else draws[:, j].copy()
    return Scenarios(tuple(f.name for f in unc.factors), draws, scale, seed)


def instance_of(inst: Instance, scen: Scenarios, s: int) -> Instance:
    """Scenario ``s`` as an instance of its own: every field a factor reaches set to its value there.
    Raises :class:`models.load.InstanceError` when the scaled fields break a rule that clipping does not
    restore (e.g. a lognormal's p99 scaled below its median)."""
    document = inst.model_dump(mode="python")
    changes = {}
    for path in scen.scale:
        nominal = expand(document, path)[0][1]
        changes[path] = float(scen.value(path, nominal)[s])
    return edited(inst, changes)


def _section(inst: Instance):
    if inst.uncertainty is None:
        raise ValueError(f"{inst.name}: no uncertainty section (docs/model.md §9)")
    return inst.uncertainty


@dataclass(frozen=True)
class Values:
    """The run-level fields of an instance in every scenario, (S,) arrays ((S, shapes) per shape)."""

    tokens: np.ndarray  # tokens per attempt
    intake: np.ndarray  # p
    availability: np.ndarray  # a
    shape_availability: np.ndarray  # (S, shapes) a_s of MODEL §13 (a in every column without its terms)
    weight_sync: np.ndarray  # weight_sync_time, s (0 without MODEL §13)
    rate: np.ndarray  # (S, shapes) tokens/s per GPU
    slowdown: np.ndarray  # (S, shapes)
    deadline: np.ndarray  # s
    extra: np.ndarray  # s
    lifetimes: Lifetimes
    w_use: np.ndarray  # s, the occupancy figure Little's law uses
    peak_to_mean: np.ndarray
    max_mean_gap: np.ndarray | None
    max_exceedance: np.ndarray | None
    max_group_drop: np.ndarray | None


def values_of(inst: Instance, scen: Scenarios) -> Values:
    w, fr, env, sched = inst.workload, inst.freshness, inst.environment, inst.schedule
    v = scen.value
    shapes = inst.inference.shapes
    lifetimes = lifetimes_of(env.occupancy, scen)
    availability = v("inference.availability", inst.inference.availability)

    def limit(name: str) -> np.ndarray | None:
        nominal = getattr(fr, name)
        return None if nominal is None else v(f"freshness.{name}", nominal)

    return Values(
        tokens=v("workload.tokens_per_attempt", w.tokens_per_attempt),
        intake=v("workload.intake_rate", w.intake_rate),
        availability=availability,
        shape_availability=goodput.shape_availability(inst, scen, availability, lifetimes.mean),
        weight_sync=goodput.weight_sync(inst, scen),
        rate=np.stack(
            [v(f"inference.shapes[{i}].tokens_per_gpu_s", s.tokens_per_gpu_s) for i, s in enumerate(shapes)], 1
        ),
        slowdown=np.stack(
            [v(f"inference.shapes[{i}].version_slowdown", s.version_slowdown) for i, s in enumerate(shapes)], 1
        ),
        deadline=v("schedule.deadline", sched.deadline),
        extra=v("schedule.extra_time", sched.extra_time),
        lifetimes=lifetimes,
        w_use=lifetimes.mean if env.littles_law_uses == "mean" else lifetimes.median,
        peak_to_mean=v("environment.peak_to_mean", env.peak_to_mean),
        max_mean_gap=limit("max_mean_gap"),
        max_exceedance=limit("max_exceedance"),
        max_group_drop=limit("max_group_drop"),
    )


def update_time(inst: Instance, scen: Scenarios, gpus) -> np.ndarray:
    """U(G_t) per scenario, (S, len(gpus)) for an array ``gpus`` ((S,) for a number); NaN outside a
    table's measured range (docs/model.md §2)."""
    law, v, where = inst.training.update_time, scen.value, "training.update_time"
    g = np.atleast_1d(np.asarray(gpus, dtype=float))[None, :]
    if isinstance(law, (InverseLaw, AmdahlLaw)):
        ref_time = v(f"{where}.reference_time", law.reference_time)[:, None]
        ref = v(f"{where}.reference_gpus", law.reference_gpus)[:, None] / g
        f = v(f"{where}.serial_fraction", law.serial_fraction)[:, None] if isinstance(law, AmdahlLaw) else 0.0
        out = ref_time * (f + (1 - f) * ref)
    else:
        xs = np.stack([v(f"{where}.points[{j}].gpus", p.gpus) for j, p in enumerate(law.points)], 1)
        ys = np.stack([v(f"{where}.points[{j}].seconds", p.seconds) for j, p in enumerate(law.points)], 1)
        out = np.full((scen.size, g.shape[1]), np.nan)
        for j in range(xs.shape[1] - 1):  # segment j of every scenario's table at once
            x0, x1, y0, y1 = xs[:, j, None], xs[:, j + 1, None], ys[:, j, None], ys[:, j + 1, None]
            inside = (g >= x0 * (1 - REL_TOL)) & (g <= x1 * (1 + REL_TOL)) & np.isnan(out)
            t = np.clip((g - x0) / (x1 - x0), 0.0, 1.0)
            out = np.where(inside, y0 + t * (y1 - y0), out)
    return out if np.ndim(gpus) else out[:, 0]


def group_drop(inst: Instance, q: np.ndarray) -> np.ndarray:
    w, fr = inst.workload, inst.freshness
    return calc.group_drop(q, w.group_size, fr.overrun_policy, fr.group_correlation)


def exceedance_limit(inst: Instance, values: Values) -> np.ndarray:
    """(S,) the largest exceedance q the freshness limits allow (max_exceedance, and max_group_drop read
    back through the drop law); inf where neither is set."""
    limit = np.full(values.deadline.shape, np.inf)
    if values.max_exceedance is not None:
        limit = np.minimum(limit, values.max_exceedance * (1 + REL_TOL) + ZERO_SHARE_TOL)
    fr, g = inst.freshness, inst.workload.group_size
    if values.max_group_drop is not None and fr.overrun_policy == "drop":
        d = np.minimum(values.max_group_drop * (1 + REL_TOL) + ZERO_SHARE_TOL, 1.0)
        q = d if fr.group_correlation == "comonotone" or g == 1 else -np.expm1(np.log1p(-d) / g)
        limit = np.minimum(limit, q)
    return limit


@dataclass(frozen=True)
class Outcome:
    """A fixed plan in every scenario (MODEL §9), arrays over scenarios; inf where no cadence works."""

    cadence: np.ndarray  # realised cadence L_s, s
    attempts: np.ndarray  # R_raw at (L_s, K) with the scenario's values (MODEL §2), 1/s
    makespan: np.ndarray  # T_s, s
    deadline: np.ndarray  # the scenario's deadline, s
    hourly_cost: np.ndarray  # $/h, at the scenario's prices
    total_cost: np.ndarray  # hourly_cost · T_s / 3600, $
    on_time: np.ndarray  # bool: T_s + allowance <= deadline
    allowance: float = 0.0  # MODEL §11's run-variance allowance Δ of a plan sized under hold, s

    @classmethod
    def of(cls, cadence, attempts, makespan, deadline, hourly_cost, allowance: float = 0.0) -> Outcome:
        """The outcome of realised cadences and makespans, its total cost ``hourly_cost · T_s / 3600`` and its
        verdict ``T_s + allowance <= deadline`` derived."""
        return cls(
            cadence=cadence,
            attempts=attempts,
            makespan=makespan,
            deadline=deadline,
            hourly_cost=hourly_cost,
            total_cost=hourly_cost * makespan / 3600.0,
            on_time=makespan + allowance <= deadline * (1 + REL_TOL),
            allowance=allowance,
        )

    @property
    def lateness(self) -> np.ndarray:
        """max(0, T_s + Δ - deadline), s: zero exactly where the scenario is on time."""
        return np.maximum(self.makespan + self.allowance - self.deadline, 0.0)


def evaluate(inst: Instance, plan, scen: Scenarios, allowance: float = 0.0) -> Outcome:
    """``plan`` (fitting ``inst``) in every scenario of ``scen``, on time iff ``T_s + allowance <= deadline``;
    MODEL §13's terms at the scenario's values: a_s and weight sync in the supply, T's trainer-paced part / γ.

    Its capacity is fixed; its realised cadence ``L_s`` is the smallest ``L' >= L`` at which §3's
    constraints 2, 3, 5, 6 and 7 hold with the scenario's values (under hold, rows 5-6 hold E^hold at the
    scenario's lifetimes, MODEL §11 item 2; each only gets easier as ``L'`` grows:
    the throughput and sandbox rows ask ``L'·(1 - drop(L')) >= need``, the update and mean-gap rows are
    floors, the exceedance and drop limits ask ``q(L') <= limit``), found by bisection, vectorised. The seed's
    regime only: an async drop run with regime fields set is :func:`solver.uncertainty.drop.evaluate`'s (MODEL §14),
    which :func:`solver.uncertainty.stages.evaluate_any` picks."""
    from trainground.solver.uncertainty.hosts import room

    if inst.regime is not None and not inst.regime.is_default:
        raise ValueError(
            f"{inst.name}: scenarios.evaluate reads the seed's regime only; an async drop run with regime fields set "
            "is solver.uncertainty.drop.evaluate's (solver.uncertainty.stages.evaluate_any picks it)"
        )
    v = values_of(inst, scen)
    w, K = inst.workload, plan.versions_kept
    theta = room(inst, plan, scen, v.peak_to_mean)
    if inst.holds:  # MODEL §11 item 2: the hosts hold E^hold, at most this attempt rate
        rate = holding.hold_attempt_limit(inst, theta, v.lifetimes.mean, v.lifetimes.pair_min_mean())
    else:
        rate = theta / v.w_use
    with np.errstate(divide="ignore", invalid="ignore"):
        need_tokens = w.batch_trajectories / v.intake * v.tokens / token_supply(inst, plan, v, K)
        need_rooms = w.batch_trajectories / v.intake / rate
    update = np.nan_to_num(update_time(inst, scen, plan.training_gpus), nan=np.inf)
    floor = np.maximum(plan.cadence_s, update / (1 + REL_TOL))
    if v.max_mean_gap is not None:
        room_gap = v.max_mean_gap * (1 + REL_TOL) - (1.0 if inst.freshness.gap_convention == "post_publish" else 0.0)
        floor = np.maximum(floor, np.where(room_gap > 0, v.w_use / np.where(room_gap > 0, room_gap, 1.0), np.inf))
    needs = (need_tokens * (1 - REL_TOL), need_rooms * (1 - REL_TOL))
    cadence = _smallest_cadence(inst, v, K, floor, needs, exceedance_limit(inst, v))
    attempts = _attempts_at(inst, v, K, cadence)
    pace = inverse_goodput(goodput.training_goodput(inst, scen, plan.training_gpus))  # inf: no progress
    with np.errstate(invalid="ignore"):
        makespan = w.iterations * cadence * pace + v.extra
        if inst.counts_startup:
            makespan = _with_startup(inst, v, cadence, attempts, update, pace)
    hourly = hourly_cost(inst, plan, scen)
    return Outcome.of(cadence, attempts, makespan, v.deadline, hourly, allowance)


def token_supply(inst: Instance, plan, v: Values, K: int) -> np.ndarray:
    """(S,) tokens/s the plan's replicas deliver with K versions resident (MODEL §2), at a_s (§13); before
    weight sync, whose share depends on the cadence."""
    replicas = {r.shape: r.replicas for r in plan.inference}
    total = np.zeros(v.deadline.shape)
    for i, s in enumerate(inst.inference.shapes):
        total += (
            replicas.get(s.name, 0)
            * s.gpus_per_replica
            * v.rate[:, i]
            * calc.supply_multiplier(v.slowdown[:, i], K)
            * v.shape_availability[:, i]
        )
    return total


def _smallest_cadence(
    inst: Instance, v: Values, K: int, floor: np.ndarray, needs: tuple[np.ndarray, np.ndarray], q_limit: np.ndarray
) -> np.ndarray:
    """Per scenario the smallest L' >= floor with (L' - weight_sync_time)·(1 - drop(L')) >= the token need,
    L'·(1 - drop(L')) >= the sandbox need and q(L') <= q_limit (inf if none); each side grows with L'."""
    tokens, rooms = needs
    need = np.maximum(tokens + v.weight_sync, rooms)

    def ok(L: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", over="ignore"):
            q = v.lifetimes.exceedance(L, K)
            kept = 1.0 - group_drop(inst, q)
            return ((L - v.weight_sync) * kept >= tokens) & (L * kept >= rooms) & (q <= q_limit)

    return smallest_where(ok, floor, need)


def smallest_where(ok: Callable[[np.ndarray], np.ndarray], floor: np.ndarray, need: np.ndarray) -> np.ndarray:
    """Per scenario the smallest L' >= floor with ``ok(L')`` (an (S,) test that, once true, stays true as L' grows),
    inf where ``floor`` or ``need`` (a first guess of the scale of L') is infinite or no L' up to 2^64 times the
    first bracket passes; bisection to ROOT_WIDTH_TOL, vectorised."""
    finite = np.isfinite(floor) & np.isfinite(need)
    lo = np.where(finite, floor, 1.0)
    done = ~finite | ok(lo)
    hi = np.where(done, lo, 2.0 * np.maximum(lo, need))
    for _ in range(64):  # bracket: double until the constraints hold
        short = ~done & ~ok(hi)
        if not short.any():
            break
        lo, hi = np.where(short, hi, lo), np.where(short, 2.0 * hi, hi)
    bracketed = done | ok(hi)
    for _ in range(64):  # halve until every open bracket is within ROOT_WIDTH_TOL of its top (or 64 halvings)
        if not np.any(~done & (hi - lo > ROOT_WIDTH_TOL * hi)):
            break
        mid = 0.5 * (lo + hi)
        good = ok(mid)
        hi, lo = np.where(~done & good, mid, hi), np.where(~done & ~good, mid, lo)
    out = np.where(done, lo, hi)
    return np.where(finite & bracketed, out, np.inf)


def _attempts_at(inst: Instance, v: Values, K: int, cadence: np.ndarray) -> np.ndarray:
    """(S,) R_raw = B/(L_s·p·(1 - drop(L_s, K))) at the realised cadences (inf where no cadence works)."""
    at = np.isfinite(cadence)
    L = np.where(at, cadence, 1.0)
    intake = v.intake * (1.0 - group_drop(inst, v.lifetimes.exceedance(L, K)))
    with np.errstate(divide="ignore"):
        return np.where(at & (intake > 0), inst.workload.batch_trajectories / (L * intake), np.inf)


def _with_startup(
    inst: Instance, v: Values, cadence: np.ndarray, attempts: np.ndarray, update: np.ndarray, pace: np.ndarray
) -> np.ndarray:
    """MODEL §8: T = fill(L_s, K) + ((n-1)·L_s + U(m))·pace + extra_time per scenario, pace = 1/γ (§13)."""
    w, fr = inst.workload, inst.freshness
    at = np.isfinite(attempts)
    fill = np.full(cadence.shape, np.inf)
    if at.any():
        sub = v.lifetimes.take(at)
        fill[at] = sub.fill(attempts[at], w.batch_trajectories, w.group_size, v.intake[at], fr.group_correlation)
    steady = ((w.iterations - 1) * cadence + update) * pace + v.extra
    return np.where(at, fill + steady, np.inf)


def hourly_cost(inst: Instance, plan, scen: Scenarios) -> np.ndarray:
    """(S,) the plan's $/h at each scenario's prices (MODEL §4: GPUs used, or a reserved pool's every GPU)."""
    env, v = inst.environment, scen.value
    gpus = {p.name: 0 for p in inst.gpu_pools}
    for r in plan.inference:
        gpus[r.pool] += r.gpus
    gpus[inst.training.pool] += plan.training_gpus
    total = np.zeros(scen.size)
    for i, pool in enumerate(inst.gpu_pools):
        billed = pool.gpus if pool.billing == "reserved" else gpus[pool.name]
        total += billed * v(f"gpu_pools[{i}].gpu_hour_cost", pool.gpu_hour_cost)
    nodes = {c.type: c.count for c in plan.local_nodes}
    vms = {c.type: c.count for c in plan.cloud_vms}
    for i, k in enumerate(env.node_types):
        total += nodes.get(k.name, 0) * v(f"environment.node_types[{i}].hour_cost", k.hour_cost)
    for i, m in enumerate(env.cloud.vm_types):
        where = f"environment.cloud.vm_types[{i}]"
        total += (
            vms.get(m.name, 0) * v(f"{where}.hour_cost", m.hour_cost) * v(f"{where}.billed_fraction", m.billed_fraction)
        )
    return total
