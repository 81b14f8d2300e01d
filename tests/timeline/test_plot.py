"""The pictures: PNG decodes, SVG parses, HTML is one self-contained page; 100+ variables."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET
from typing import Any

import numpy as np

from gradscope.timeline import Recorder
from gradscope.timeline.plot import layer_of, render


def deep_timeline(layers: int = 60) -> dict[str, Any]:
    """A 60-layer run (120 variables) whose norms shrink with depth and whose layer 7 dies."""
    rng = np.random.default_rng(0)
    recorder = Recorder(every=10, program="deep.py")
    for step in range(10, 310, 10):
        entries = []
        for i in range(layers):
            scale = 10.0 ** (-i / 12) * (1 + 0.2 * rng.random())
            kernel = rng.normal(size=(8, 8)) * scale
            if i == 7 and step >= 150:
                kernel[:] = 0.0
            entries += [
                (f"block_{i}/dense/kernel", kernel, np.ones((8, 8))),
                (f"block_{i}/dense/bias", kernel[0] * 0.3, np.ones(8)),
            ]
        recorder.record(step, "deep.py:40", 1.0 / step, entries)
    return recorder.close()


def test_plot_png_svg_html_of_120_variables() -> None:
    import matplotlib.image

    timeline = deep_timeline()
    assert len(timeline["steps"][0]["variables"]) == 120
    assert {(f["kind"], f["variable"]) for f in timeline["findings"]} == {
        ("dead", "block_7/dense/kernel"),
        ("dead", "block_7/dense/bias"),
    }
    png = render(timeline, "png")
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    pixels = matplotlib.image.imread(io.BytesIO(png), format="png")
    assert pixels.shape[0] > 400 and pixels.shape[1] > 800
    svg = ET.fromstring(render(timeline, "svg"))
    assert svg.tag.endswith("svg")
    page = render(timeline, "html").decode("utf-8")
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page
    # Nothing fetched: no scripts, stylesheets, images or fonts from elsewhere (namespace
    # URIs of the SVG's metadata are names, not requests).
    for external in ("src=", "<link", "<script", 'href="http', "url(http", "@import"):
        assert external not in page, external
    assert "block_7/dense/kernel" in page and "dead" in page


def test_plot_of_an_empty_timeline_still_draws() -> None:
    png = render({"program": "p.py", "steps": [], "findings": []}, "png")
    assert png.startswith(b"\x89PNG")


def test_layer_of_a_variable() -> None:
    assert layer_of("model/block_1/dense/kernel") == "model/block_1/dense"
    assert layer_of("spare") == "spare"
