"""The pictures: PNG decodes, SVG parses, HTML is one self-contained page; 100+ variables."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET
from typing import Any

import numpy as np

from gradscope._src.timeline import Recorder
from gradscope._src.timeline.plot import layer_of, render


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


def _sites_timeline(sites: int, variable: str = "dense/kernel") -> dict[str, Any]:
    """One record per step and site; site 8 explodes at its last step."""
    steps = [
        {"step": i, "site": f"train.py:{s}", "loss": 0.5,
         "variables": {variable: {"status": "ok", "weight_norm": 1.0, "zero_fraction": 0.0,
                                  "norm": 1e6 if (s == 8 and i == 5) else 0.1 * i}}}
        for s in range(1, sites + 1)
        for i in range(1, 6)
    ]  # fmt: skip
    return {"gradscope": 1, "program": "train.py", "steps": steps, "findings": []}


def test_plot_draws_the_worst_sites_only_and_says_which_it_left_out() -> None:
    """120 sites made a 90-megapixel PNG (5.6 inches each) in 161 s and 2 GB."""
    import matplotlib.pyplot as plt

    from gradscope._src.timeline.plot import MAX_SITES, figure

    fig = figure(_sites_timeline(120))
    try:
        width, height = fig.get_size_inches()
        assert height <= 5.6 * MAX_SITES + 1.2 and width == 11
        titles = [ax.get_title(loc="left") for ax in fig.axes if ax.get_title(loc="left")]
        assert len(titles) == MAX_SITES
        assert "gradient norms at train.py:8" in titles  # the exploding one is drawn
        heading = fig._suptitle.get_text()
        assert f"the {MAX_SITES} sites of 120 with the worst findings; not drawn:" in heading
    finally:
        plt.close(fig)
    fig = figure(_sites_timeline(MAX_SITES))  # up to the bound: every site, nothing said
    try:
        assert "not drawn" not in fig._suptitle.get_text()
    finally:
        plt.close(fig)


def test_plot_draws_dollar_signs_and_escaped_names_literally(tmp_path: Any) -> None:
    """`$...$` in a name was matplotlib math text (a lone `$` raised); a lone surrogate
    could not be drawn or written. (All four names in one timeline, each a line of its own:
    one PNG and one SVG drawn, not one each per name: 14 s of rendering.)"""
    import json

    from gradscope._src.timeline.plot import label
    from gradscope._src.timeline.reader import load

    names = ("$\\frac{a", "cost$/kernel", "$x$/kernel", "d\ud800/kernel")
    timeline = _sites_timeline(2, names[0])
    for step in timeline["steps"]:
        (values,) = step["variables"].values()
        step["variables"] = {name: dict(values) for name in names}
    timeline["program"] = "t$x$.py"
    path = tmp_path / "t.json"
    path.write_text(json.dumps(timeline), encoding="utf-8")
    loaded = load(str(path))
    assert len(loaded["steps"][0]["variables"]) == len(names)  # each name its own line
    assert render(loaded, "png").startswith(b"\x89PNG")
    assert b"<svg" in render(loaded, "svg")
    assert label("$x$ costs $3") == "\\$x\\$ costs \\$3"


def test_plot_bounds_records_and_variables_per_site() -> None:
    """Every drawn line's points and every site's variables are bounded; the variables with
    findings are kept first, the last record always."""
    from gradscope._src.timeline.plot import MAX_RECORDS, MAX_VARIABLES, _fewer_variables, _thin

    records = [{"step": i, "variables": {}} for i in range(1, 10 * MAX_RECORDS + 2)]
    kept, every = _thin(records)
    assert every == 11 and len(kept) <= MAX_RECORDS + 1 and kept[-1] is records[-1]
    assert _thin(records[:MAX_RECORDS]) == (records[:MAX_RECORDS], 1)
    names = [f"layer_{i}/kernel" for i in range(MAX_VARIABLES + 50)]
    wide = [{"step": 1, "variables": {n: {"norm": 1.0} for n in names}}]
    finding = {"variable": names[-1], "kind": "nan"}
    fewer, hidden = _fewer_variables(wide, [finding])
    assert hidden == 50 and len(fewer[0]["variables"]) == MAX_VARIABLES
    assert names[-1] in fewer[0]["variables"] and names[0] in fewer[0]["variables"]
