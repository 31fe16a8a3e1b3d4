"""The environment section of MODEL.md §5: sandbox lifetimes (occupancy), backends, node types, cloud spillover."""

from __future__ import annotations

import math
from pathlib import Path
from statistics import NormalDist
from typing import Annotated, Literal

from pydantic import Field, ValidationInfo, model_validator

from trainground.models.base import (
    DURATION,
    AtLeastOne,
    Count,
    FieldError,
    Fraction,
    Name,
    NonNegative,
    Positive,
    PositiveDuration,
    PositiveFraction,
    Strict,
    about,
)
from trainground.models.plausible import CAPS, MAX_SAMPLES, file_cap_bytes, number_rule, too_large

Z_99 = NormalDist().inv_cdf(0.99)  # standard normal quantile at 0.99
LIFETIME = "two of median, p99, mean, sigma describe the lognormal; leave the other two null"


class Lognormal(Strict):
    distribution: Literal["lognormal"] = Field(
        description=about(
            "How a sandbox's lifetime W (one trajectory attempt, start to end) is distributed: lognormal, fitted "
            f"from two figures ({LIFETIME})",
            seed="lognormal",
        )
    )
    median: PositiveDuration | None = Field(
        None,
        description=about(
            "Median sandbox lifetime", unit=DURATION, typical="5-30 min for agentic coding tasks", seed="1044s"
        ),
    )
    p99: PositiveDuration | None = Field(
        None,
        description=about(
            "99th percentile of the sandbox lifetime; sets the tail that drives stale versions and drops",
            unit=DURATION,
            typical="5-20x the median",
            seed="13900s",
        ),
    )
    mean: PositiveDuration | None = Field(
        None,
        description=about(
            "Mean sandbox lifetime (above the median for a lognormal)",
            unit=DURATION,
            seed="null (follows from median and p99: 1939 s)",
        ),
    )
    sigma: Positive | None = Field(
        None,
        description=about(
            "Standard deviation of ln W: ln(p99/median)/2.326",
            unit="dimensionless",
            typical="0.5-1.5",
            seed="null (follows from median and p99: 1.11)",
        ),
    )

    @model_validator(mode="after")
    def _two_parameters(self) -> Lognormal:
        given = [k for k in ("median", "p99", "mean", "sigma") if getattr(self, k) is not None]
        if len(given) != 2:
            raise ValueError(
                f"a lognormal occupancy takes exactly two of median, p99, mean, sigma (got {len(given)}: "
                f"{', '.join(given) or 'none'})"
            )
        m, p, mean = self.median, self.p99, self.mean
        if m is not None and p is not None and p <= m:
            raise FieldError("p99", f"p99 ({p:g} s) must be above the median ({m:g} s)")
        if m is not None and mean is not None and mean <= m:
            raise FieldError("mean", f"a lognormal mean ({mean:g} s) must be above its median ({m:g} s)")
        if p is not None and mean is not None:
            gap = math.log(p / mean)
            if Z_99 * Z_99 < 2 * gap:
                raise FieldError("p99", f"no lognormal has mean {mean:g} s and p99 {p:g} s (p99/mean too large)")
            if Z_99 - math.sqrt(Z_99 * Z_99 - 2 * gap) <= 0:
                raise FieldError("p99", f"p99 ({p:g} s) must be above the mean ({mean:g} s)")
        return self


class Empirical(Strict):
    distribution: Literal["empirical"] = Field(
        description=about(
            "Sandbox lifetimes given as measured samples (the distribution is their empirical law); give exactly "
            "one of samples, csv"
        )
    )
    samples: list[PositiveDuration] | None = Field(
        None, description=about("Measured sandbox lifetimes, at least 2", unit=DURATION + " (each)")
    )
    csv: str | None = Field(
        None,
        description=about(
            "CSV file of lifetimes in seconds (first column, one header line allowed), path relative to the "
            "instance file"
        ),
    )

    @model_validator(mode="after")
    def _one_source(self, info: ValidationInfo) -> Empirical:
        if (self.samples is None) == (self.csv is None):
            raise ValueError("an empirical occupancy takes exactly one of samples, csv")
        source = "samples"
        if self.csv is not None:
            source = "csv"
            base = Path((info.context or {}).get("base_dir", "."))
            try:
                object.__setattr__(self, "samples", read_samples_csv(base / self.csv))
            except ValueError as exc:
                raise FieldError("csv", str(exc)) from None
        if len(self.samples) < 2:
            raise FieldError(source, f"needs at least 2 samples, got {len(self.samples)}")
        return self


def read_samples_csv(path: Path) -> list[float]:
    """Occupancy samples in seconds: the first column of a CSV, one header line allowed; the file within the
    size cap, at most MAX_SAMPLES samples, each within the plausibility cap on a lifetime (models.plausible)."""
    cap = file_cap_bytes()
    try:
        with path.open("rb") as handle:
            data = handle.read(cap + 1)
    except OSError as exc:
        raise ValueError(f"cannot read samples CSV '{path}': {exc.strerror or exc}") from None
    if len(data) > cap:
        raise ValueError(f"{path.name}: {too_large(max(len(data), path.stat().st_size), cap)}")
    try:
        lines = data.decode("utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path.name}: not UTF-8 text (byte {exc.start + 1})") from None
    lines_used = len(lines) - lines.count("")
    if lines_used > MAX_SAMPLES + 1:
        raise ValueError(
            f"{path.name}: {lines_used:,} lines, more than the {MAX_SAMPLES:,} samples (and a header) an instance may use"
        )
    samples: list[float] = []
    longest, _ = CAPS["environment.occupancy.samples[*]"]
    for number, line in enumerate(lines, start=1):
        cell = line.split(",")[0].strip()
        if not cell:
            continue
        try:
            value = float(cell)
        except ValueError:
            if number == 1 and not samples:
                continue
            raise ValueError(f"{path.name} line {number}: {cell!r} is not a number of seconds") from None
        if not math.isfinite(value) or value <= 0:
            raise ValueError(f"{path.name} line {number}: samples must be finite and > 0, got {cell}")
        if value > longest:
            raise ValueError(f"{path.name} line {number}: {number_rule(value, 'environment.occupancy.samples[*]')}")
        samples.append(value)
    return samples


Occupancy = Annotated[Lognormal | Empirical, Field(discriminator="distribution")]
HOST = "A backend missing from a host's density cannot run on that host"


class Backend(Strict):
    name: Name = Field(
        description=about(
            "Name of a sandbox backend (container, microVM...); density and eligible_share maps use it",
            seed="container",
        )
    )
    share: Fraction = Field(
        description=about(
            "Share of trajectory attempts that run on this backend; shares of all backends sum to 1",
            unit="share in [0, 1]",
            seed="1.0",
        )
    )
    cores: Positive | None = Field(
        None,
        description=about(
            "CPU cores one environment of this backend uses; counts against a host's cores (null adds 0)",
            unit="cores",
            typical="0.05-0.5",
            seed="0.05",
        ),
    )
    memory_gb: Positive | None = Field(
        None,
        description=about(
            "Memory one environment of this backend uses; counts against a host's memory_gb (null adds 0)",
            unit="GB",
            typical="0.5-4",
            seed="0.5",
        ),
    )


class NodeType(Strict):
    name: Name = Field(description=about("Name of a local sandbox node type, echoed in the plan", seed="standard"))
    cores: Positive | None = Field(
        None,
        description=about(
            "CPU cores of one node; null: no cores row for this type", unit="cores", typical="64-256", seed="188"
        ),
    )
    memory_gb: Positive | None = Field(
        None,
        description=about(
            "Memory of one node; null: no memory row for this type", unit="GB", typical="512-2048", seed="1560"
        ),
    )
    density: dict[str, Positive] = Field(
        description=about(
            f"Environments of each backend one node holds at full use, {{backend: count}}. {HOST}",
            unit="environments per node",
            typical="1,048 containers (observed peak), 3,200 containers or 800 "
            "microVMs (demonstrated operating points)",
            seed="{container: 1048}",
        )
    )
    hour_cost: NonNegative = Field(
        description=about("Price of one node per hour", unit="$ per node-hour", typical="5-20", seed="12.0")
    )
    max_nodes: Count | None = Field(
        None, description=about("Most nodes of this type the plan may use; null: no limit", unit="nodes", seed="null")
    )


class VmType(Strict):
    name: Name = Field(description=about("Name of a cloud VM type for peak spillover", seed="burst"))
    density: dict[str, Positive] = Field(
        description=about(
            f"Environments of each backend one VM holds (VMs have no utilisation cap), {{backend: count}}. {HOST}",
            unit="environments per VM",
            typical="64-256 containers",
            seed="{container: 64}",
        )
    )
    cores: Positive | None = Field(
        None, description=about("CPU cores of one VM; null: no cores row", unit="cores", typical="16-64", seed="16")
    )
    memory_gb: Positive | None = Field(
        None, description=about("Memory of one VM; null: no memory row", unit="GB", typical="64-256", seed="64")
    )
    hour_cost: NonNegative = Field(
        description=about("Price of one VM per hour while it runs", unit="$ per VM-hour", typical="0.5-5", seed="1.0")
    )
    billed_fraction: Fraction = Field(
        1.0,
        description=about(
            "Share of the run's hours a VM is billed for: spillover VMs run only through peaks, so the plan pays "
            "V·hour_cost·billed_fraction per hour",
            unit="share in [0, 1]",
            typical="0.1-0.3",
            seed="0.2",
        ),
    )
    max_vms: Count | None = Field(
        None,
        description=about(
            "Most VMs of this type the plan may use; null: no limit",
            unit="VMs",
            typical="a scale unit, e.g. 200",
            seed="200",
        ),
    )


class Cloud(Strict):
    eligible_share: dict[str, Fraction] = Field(
        default_factory=dict,
        description=about(
            "Largest share of each backend's peak in-flight environments that cloud VMs may hold, {backend: share}; "
            "a backend not listed cannot spill. Not a share of the load: local nodes always hold the mean, so VMs "
            "take at most min(share, 1 - 1/peak_to_mean) of the peak off them, nothing at peak_to_mean 1",
            unit="share in [0, 1]",
            typical="0.3-0.8",
            seed="{container: 1.0}",
        ),
    )
    vm_types: list[VmType] = Field(
        default_factory=list,
        description=about(
            "Cloud VM types that hold part of each peak above the mean (spillover); empty: no spillover",
            seed="one type, burst",
        ),
    )


class Environment(Strict):
    occupancy: Occupancy = Field(
        description=about(
            "The sandbox lifetime W of one attempt: a lognormal (distribution: lognormal) or measured samples "
            "(distribution: empirical)",
            seed="lognormal, median 1044s, p99 13900s",
        )
    )
    littles_law_uses: Literal["mean", "median"] = Field(
        "mean",
        description=about(
            "Which lifetime figure W_use Little's law (in-flight = attempts/s × W_use) and the mean version gap use: "
            "mean (right for a long-run average) or median (understates a skewed law, as the seed shows)",
            seed="mean",
        ),
    )
    backends: list[Backend] = Field(
        min_length=0,
        description=about(
            "Sandbox backends and the share of attempts each runs; [] for a run without tool sandboxes (plain "
            "reasoning RL): no sandbox rows, and attempts never wait for one",
            seed="one backend, container",
        ),
    )
    node_types: list[NodeType] = Field(
        min_length=0,
        description=about(
            "Local sandbox node types the plan chooses counts of; [] with no backends", seed="one type, standard"
        ),
    )
    utilisation_cap: PositiveFraction = Field(
        1.0,
        description=about(
            "Highest share of a local node's density, cores and memory that planned load may fill (headroom for "
            "faults and bursts); VMs are not capped",
            unit="share in (0, 1]",
            typical="0.7-0.9 (DSec spills above 0.8)",
            seed="1.0",
        ),
    )
    peak_to_mean: AtLeastOne = Field(
        1.0,
        description=about(
            "Peak in-flight environments over the mean; local nodes hold the mean, local nodes plus cloud VMs the "
            "peak, so VMs are used only above 1 (at 1 the peak is the mean and VMs never replace a node)",
            unit="ratio >= 1",
            typical="1.2-2",
            seed="1.0",
        ),
    )
    cloud: Cloud = Field(
        Cloud(),
        description=about(
            "Cloud spillover: VMs hold part of each backend's peak above its mean in-flight environments (which "
            "local nodes always hold); which backends may spill, and VM types"
        ),
    )
