"""The plots of a sweep over three paths read apart: each path's figure tells the other two paths' values by
colour and by marker and line style, each with a legend titled with that path; the heatmaps of the first two
paths come one panel per value of the third, each panel titled with it; every path names a file."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_frontier import png_size
from trainground.drivers.tradeoffs.sweep import parse_axis, run_sweep
from trainground.render.labels import field_label
from trainground.render.plots import _png
from trainground.render.sweep_plots import HEATMAP_PX, SWEEP_PX, slug, sweep_figures

SEED = Path(__file__).resolve().parents[1] / "instances" / "seed-week-75.yaml"
PATHS = ("schedule.deadline", "inference.shapes[0].tokens_per_gpu_s", "freshness.max_versions_kept")
VALUES = (("6d", "7d", "8d"), ("60", "75", "90"), ("8", "10", "12"))


@pytest.fixture(scope="module")
def report():
    axes = [parse_axis(f"{p}={','.join(v)}") for p, v in zip(PATHS, VALUES)]
    return run_sweep(SEED, [parse_axis("planning.basis=steady_state"), *axes])


@pytest.fixture(scope="module")
def figures(report):
    return sweep_figures(report)


def label(report, path: str) -> str:
    return field_label(path, report.names)


def test_every_path_names_a_figure_and_the_third_faceted_heatmaps(report, figures):
    names = set(figures)
    assert names == {f"sweep-{slug(p)}.png" for p in PATHS} | {f"sweep-heatmap-by-{slug(PATHS[2])}.png"}
    sizes = {name: png_size(_png(fig)) for name, fig in figures.items()}  # what sweep_pngs writes
    assert sizes.pop(f"sweep-heatmap-by-{slug(PATHS[2])}.png") == HEATMAP_PX
    assert set(sizes.values()) == {SWEEP_PX}


@pytest.mark.parametrize("k", range(3))
def test_each_figure_has_a_legend_for_each_other_path_and_nine_distinct_series(report, figures, k):
    fig = figures[f"sweep-{slug(PATHS[k])}.png"]
    others = [j for j in range(3) if j != k]
    legends = [(lg.get_title().get_text(), [t.get_text() for t in lg.get_texts()]) for lg in fig.legends]
    assert legends == [(label(report, PATHS[j]), list(VALUES[j])) for j in others]
    objective = fig.axes[0]
    series = [line for line in objective.get_lines() if line.get_linestyle() != "None"]  # failures are crosses
    looks = {(line.get_color(), line.get_marker(), line.get_linestyle()) for line in series}
    assert len(series) == len(looks) == 9  # a series per pair of the other paths' values, no two alike
    colours = {(line.get_color()) for line in series}
    markers = {(line.get_marker(), line.get_linestyle()) for line in series}
    assert len(colours) == len(markers) == 3


def test_the_faceted_heatmap_has_a_panel_per_value_of_the_third_path(report, figures):
    fig = figures[f"sweep-heatmap-by-{slug(PATHS[2])}.png"]
    panels = [ax for ax in fig.axes if ax.get_images()]
    assert [ax.get_title() for ax in panels] == [f"{label(report, PATHS[2])} = {v}" for v in VALUES[2]]
    for ax in panels:
        assert (ax.get_ylabel(), ax.get_xlabel()) == (label(report, PATHS[0]), label(report, PATHS[1]))
    shown = [t.get_text() for ax in panels for t in ax.texts]
    statuses = [r["status"] for r in report.rows]
    assert len(shown) == 27 and shown.count("infeasible") == statuses.count("infeasible") > 0
    norms = {(im.norm.vmin, im.norm.vmax) for ax in panels for im in ax.get_images()}
    assert len(norms) == 1  # one colour scale: a colour means the same cost in every panel
