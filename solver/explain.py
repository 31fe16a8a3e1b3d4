"""`explain`: the seed article's arithmetic on one instance, no optimisation (MODEL.md §6).

Each figure comes with the formula that produced it and its inputs, grouped like the
article (generation threshold, environment side, cadence and margin, freshness).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from trainground.models.instance import Instance
from trainground.models.stage_rules import stage_instance
from trainground.solver.explain_regime import regime_lines
from trainground.solver.laws import calculus as calc
from trainground.solver.laws import goodput, startup


@dataclass(frozen=True)
class Line:
    section: str
    key: str
    value: object
    unit: str
    formula: str


@dataclass
class Explanation:
    instance: str
    cadence_s: float
    inference_gpus: int | None
    lines: list[Line] = field(default_factory=list)
    stage: str | None = None  # the stage explained (MODEL §12), None for the whole instance
    stages: list[str] = field(default_factory=list)  # a staged instance's stages, for `explain --stage NAME`

    def values(self) -> dict[str, object]:
        return {line.key: line.value for line in self.lines}

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "instance": self.instance,
            "cadence_s": self.cadence_s,
            "inference_gpus": self.inference_gpus,
            **self.values(),
        }
        if self.stage is not None or self.stages:
            out |= {"stage": self.stage, "stages": list(self.stages)}
        return out


SECTIONS = ("Generation threshold", "Environment side", "Cadence and margin", "Freshness", "Goodput", "Regime")
OPTIONAL_SECTIONS = ("Regime",)  # printed only when the instance has lines in them
Add = Callable[[int, str, object, str, str], None]  # (section index, key, value, unit, formula): one line


def explain(inst: Instance, cadence: float | None = None, inference_gpus: int | None = None) -> Explanation:
    """The seed's figures at ``cadence`` (None: the deadline pace) on ``inference_gpus`` inference cards
    (None: the per-card thresholds say they need them), each line in its section of the article."""
    s, n = inst.schedule, inst.workload.iterations
    L = float(cadence) if cadence is not None else calc.deadline_pace(inst)
    occ = calc.occupancy_of(inst.environment.occupancy)
    w_use = calc.occupancy_used(occ, inst.environment.littles_law_uses)
    out = Explanation(inst.name or "", L, inference_gpus)

    def add(section: int, key: str, value: object, unit: str, formula: str) -> None:
        out.lines.append(Line(SECTIONS[section], key, value, unit, formula))

    pace = "deadline pace (deadline - extra_time)/n" if cadence is None else "given"
    add(2, "cadence_s", L, "s", f"L = {L:.6g} s ({pace}; n={n}, deadline={s.deadline:g} s, extra={s.extra_time:g} s)")
    _generation(inst, L, inference_gpus, w_use, add)
    _environment(inst, L, occ, w_use, add)
    _margin(inst, L, add)
    _startup(inst, L, occ, add)
    _freshness(inst, L, occ, w_use, add)
    if inst.reliable:
        _goodput(inst, L, occ, add)
    if inst.regime is not None and not inst.regime.is_default:  # the seed's regime has no section of its own
        regime_lines(inst, L, inference_gpus, occ, add)
    if inst.stages is not None:
        out.stages = [st.name for st in inst.stages.list]
    return out


def explain_stage(inst: Instance, name: str, cadence: float | None = None, inference_gpus: int | None = None):
    """The seed's arithmetic for stage ``name`` of a staged instance (MODEL §12): :func:`explain` on the
    instance that stage runs as (its tokens, lifetimes, intake and update time), its deadline the run's
    pro rata (``extra_time + (deadline - extra_time)·n_p/n``), so its deadline pace is the run's
    ``(deadline - extra_time)/n`` and its time margin that of its share of the deadline. Raises KeyError
    for a name that is not a stage."""
    assert inst.stages is not None
    stage = next((s for s in inst.stages.list if s.name == name), None)
    if stage is None:
        raise KeyError(name)
    si = stage_instance(inst, stage)
    sched = inst.schedule
    share = sched.extra_time + (sched.deadline - sched.extra_time) * stage.iterations / inst.workload.iterations
    si = si.model_copy(update={"schedule": si.schedule.model_copy(update={"deadline": share})})
    out = explain(si, cadence, inference_gpus)
    out.instance = f"{inst.name or ''} (stage {name}: {stage.iterations:,} iterations)"
    out.stage = name
    out.stages = [st.name for st in inst.stages.list]
    return out


def _generation(inst: Instance, L: float, G: int | None, w_use: float, add: Add) -> None:
    """The Generation threshold section: the rates at cadence ``L``, the tokens/s each of ``G`` inference
    cards must deliver, the cards the first shape needs and the decode rate."""
    w, a = inst.workload, inst.inference.availability
    B, tok, p = w.batch_trajectories, w.tokens_per_attempt, w.intake_rate
    r1 = inst.inference.shapes[0].tokens_per_gpu_s
    uses = inst.environment.littles_law_uses
    r_eff = B / L
    r_raw = r_eff / p
    add(0, "effective_trajectories_per_s", r_eff, "1/s", f"R_eff = B/L = {B}/{L:.6g}")
    add(0, "attempts_per_s", r_raw, "1/s", f"R_raw = R_eff/p = {r_eff:.6g}/{p:g}")
    lossless = B * tok / (L * G) if G else None
    adjusted = lossless / (a * p) if G else None
    add(
        0,
        "lossless_threshold_tokens_per_gpu_s",
        lossless,
        "tok/s/GPU",
        f"B·tokens/(L·G) = {B}·{tok:g}/({L:.6g}·{G})" if G else "needs --inference-gpus",
    )
    add(
        0,
        "loss_adjusted_threshold_tokens_per_gpu_s",
        adjusted,
        "tok/s/GPU",
        f"lossless/(a·p) = {lossless:.6g}/({a:g}·{p:g})" if G else "needs --inference-gpus",
    )
    add(
        0,
        "inference_gpus_needed",
        B * tok / (L * p * a * r1),
        "GPUs",
        f"B·tokens/(L·p·a·r_1) = {B}·{tok:g}/({L:.6g}·{p:g}·{a:g}·{r1:g})",
    )
    add(
        0,
        "demand_share_of_capacity",
        adjusted / r1 if G else None,
        "share",
        f"loss-adjusted threshold/r_1 = {adjusted:.6g}/{r1:g}" if G else "needs --inference-gpus",
    )
    add(0, "decode_tokens_per_s", tok / w_use, "tok/s", f"tokens/W_use = {tok:g}/{w_use:.6g} ({uses})")


def _environment(inst: Instance, L: float, occ: calc.Occupancy, w_use: float, add: Add) -> None:
    """The Environment side section: the occupancy law, the environments in flight and the nodes of each
    type that would hold them alone."""
    env, w = inst.environment, inst.workload
    r_raw = w.batch_trajectories / L / w.intake_rate
    add(
        1,
        "occupancy_mean_s",
        occ.mean,
        "s",
        f"median·exp(sigma²/2) = {occ.median:.6g}·exp({occ.sigma:.6g}²/2)" if occ.sigma else "sample mean",
    )
    add(
        1,
        "occupancy_sigma",
        occ.sigma,
        "ln s",
        f"ln(p99/median)/z_0.99 = ln({occ.p99:.6g}/{occ.median:.6g})/{calc.Z_99:.4f}"
        if occ.sigma
        else "empirical: none",
    )
    add(1, "inflight_median", r_raw * occ.median, "envs", f"R_raw·median(W) = {r_raw:.6g}·{occ.median:.6g}")
    add(1, "inflight_mean", r_raw * occ.mean, "envs", f"R_raw·mean(W) = {r_raw:.6g}·{occ.mean:.6g}")
    inflight_use, u, uses = r_raw * w_use, env.utilisation_cap, env.littles_law_uses
    nodes = {}
    parts = []
    for node in env.node_types:
        load = sum(inflight_use * b.share / node.density[b.name] for b in env.backends if b.name in node.density)
        runs_all = all(b.name in node.density for b in env.backends if b.share > 0)
        nodes[node.name] = int(calc.ceil_tol(load / u)) if runs_all else None
        parts.append(f"{node.name}: ceil({inflight_use:.6g}·share/density/{u:g})")
    add(1, "nodes_needed", nodes, "nodes", f"Σ_b E_b/density_kb/u with E = R_raw·W_use ({uses}); " + "; ".join(parts))


def _margin(inst: Instance, L: float, add: Add) -> None:
    """The Cadence and margin section after the cadence: the time margin and the makespan at ``L``."""
    s, n = inst.schedule, inst.workload.iterations
    add(
        2,
        "time_margin",
        float(calc.time_margin(inst, L)),
        "share",
        f"(deadline - n·L - extra)/deadline = ({s.deadline:g} - {n}·{L:.6g} - {s.extra_time:g})/{s.deadline:g}",
    )
    add(2, "makespan_s", float(calc.makespan(inst, L)), "s", f"T = n·L + extra = {n}·{L:.6g} + {s.extra_time:g}")


def _freshness(inst: Instance, L: float, occ: calc.Occupancy, w_use: float, add: Add) -> None:
    """The Freshness section: version gaps, the exceedance q(L,K) and the group-drop bounds."""
    fr, K, g = inst.freshness, inst.freshness.max_versions_kept, inst.workload.group_size
    gap_note = " + 1 (post_publish)" if fr.gap_convention == "post_publish" else ""
    add(
        3,
        "mean_version_gap",
        float(calc.mean_version_gap(w_use, L, fr.gap_convention)),
        "versions",
        f"W_use/L = {w_use:.6g}/{L:.6g}{gap_note}",
    )
    add(
        3,
        "p99_version_gap",
        float(calc.p99_version_gap(occ, L, fr.gap_convention)),
        "versions",
        f"p99(W)/L = {occ.p99:.6g}/{L:.6g}{gap_note}",
    )
    q = float(calc.exceedance(occ, L, K))
    lower, upper = calc.group_drop_bounds(q, g)
    add(3, "exceedance", q, "share", f"q(L,K) = ∫_K^(K+1) S(vL) dv at K={K} (max_versions_kept)")
    add(3, "group_drop_upper", float(upper), "share", f"1-(1-q)^g = 1-(1-{q:.4g})^{g} (independent durations)")
    add(3, "group_drop_lower", float(lower), "share", "q (comonotone durations)")


def _startup(inst: Instance, L: float, occ: calc.Occupancy, add: Add) -> None:
    """MODEL.md §8 at the explained cadence with K = max_versions_kept: the pipeline fill and T with it."""
    w, s, fr = inst.workload, inst.schedule, inst.freshness
    K = fr.max_versions_kept
    q = float(calc.exceedance(occ, L, K))
    drop = float(calc.group_drop(q, w.group_size, fr.overrun_policy, fr.group_correlation))
    if drop >= 1:
        add(2, "startup_fill_s", None, "s", f"every group is dropped at K={K}: no batch forms")
        add(2, "makespan_with_startup_s", None, "s", "no batch forms")
        return
    r_raw = w.batch_trajectories / L / (w.intake_rate * (1 - drop))
    fill = float(startup.fill(occ, r_raw, w.batch_trajectories, w.group_size, w.intake_rate, fr.group_correlation))
    law = "F(s)^g" if fr.group_correlation != "comonotone" and w.group_size > 1 else "F(s)"
    add(
        2,
        "startup_fill_s",
        fill,
        "s",
        f"smallest t with p·R_raw·∫_0^t {law} ds >= B; R_raw = B/(L·p·(1-drop)) = {r_raw:.6g} at K={K}, "
        f"g={w.group_size}, {fr.group_correlation}",
    )
    groups = int(calc.min_groups_for(inst, L)[0])
    if groups == 0:
        add(2, "makespan_with_startup_s", None, "s", f"no admissible training groups keep U(m) <= L = {L:.6g} s")
        return
    update = float(calc.update_time(inst.training.update_time, groups * inst.training.gpus_per_group))
    add(
        2,
        "makespan_with_startup_s",
        fill + (w.iterations - 1) * L + update + s.extra_time,
        "s",
        f"T = fill + (n-1)·L + U(m) + extra = {fill:.6g} + {w.iterations - 1}·{L:.6g} + {update:.6g} + "
        f"{s.extra_time:g} (m = {groups}, the fewest groups with U(m) <= L){'; counted' if s.count_startup else ''}",
    )


def _goodput(inst: Instance, L: float, occ: calc.Occupancy, add: Add) -> None:
    """MODEL.md §13 at the explained cadence, training on the fewest groups with U(m) <= L: M_train, the
    checkpoint interval τ, the goodput γ and T with it; each shape's availability; the weight-sync share."""
    rel, n, extra = inst.reliability, inst.workload.iterations, inst.schedule.extra_time
    groups = int(calc.min_groups_for(inst, L)[0])
    if rel is not None and groups > 0:
        gpus = groups * inst.training.gpus_per_group
        terms = goodput.training_terms(rel, gpus)
        mtbf, tau, gamma = float(terms.mtbf), float(terms.interval), float(terms.goodput)
        how = "Young's sqrt(2·checkpoint_time·M_train)" if rel.checked_interval() is None else "given"
        add(4, "mtbf_training_s", mtbf, "s", f"M_train = gpu_mtbf/G_t = {rel.gpu_mtbf:g}/{gpus} (m = {groups})")
        add(4, "checkpoint_interval_s", tau, "s", f"τ = {how} = {tau:.6g}")
        add(
            4,
            "training_goodput",
            gamma,
            "share",
            f"γ = 1 - checkpoint_time/τ - (restart_time + τ/2)/M_train = 1 - {rel.checkpoint_time:g}/{tau:.6g} - "
            f"({rel.restart_time:g} + {tau / 2:.6g})/{mtbf:.6g}",
        )
        span = n * L / gamma + extra if gamma > 0 else None
        add(4, "makespan_with_goodput_s", span, "s", f"T = n·L/γ + extra = {n}·{L:.6g}/{gamma:.6g} + {extra:g}")
        add(4, "failures_expected_training", span / mtbf if span else None, "failures", "T/M_train")
    shares = goodput.availabilities(inst, occ.mean)
    rates = goodput.replica_event_rates(inst)
    add(
        4,
        "availability",
        {s.name: float(a) for s, a in zip(inst.inference.shapes, shares)},
        "share",
        "a_s = a·max(0, 1 - rate_s·(replica_restart_time + mean(W)/2)), rate_s = g_s/gpu_mtbf + "
        "preemptions_per_hour/3600: "
        + ", ".join(f"{s.name} {r * 3600:.4g}/h" for s, r in zip(inst.inference.shapes, rates)),
    )
    sync = rel.weight_sync_time if rel is not None else 0.0
    add(4, "weight_sync_share", sync / L, "share", f"weight_sync_time/L = {sync:g}/{L:.6g}")
