"""A real big model, MobileNet (keras.applications, weights=None), read through every view:
statuses as bare TensorFlow has them, a table that fits, a picture reduced to what matters.

One module-scoped run feeds every test: MobileNet with a head behind a stop_gradient
(``tests/frontends/python/data/applications.py``), 83 variables, 174 picture boxes.
"""

from __future__ import annotations

import re
import struct

import pytest

from gradscope._src.engine.picture.draw import CUT, LOSS, VARIABLE
from gradscope._src.report import render
from gradscope._src.report.prune import LIMIT, simplify
from gradscope._src.results import report as m
from tests.conftest import ROOT

pytestmark = pytest.mark.tf

TARGET = "tests/frontends/python/data/applications.py:mobilenet"


@pytest.fixture(scope="module")
def report() -> m.Report:
    import gradscope

    return gradscope.inspect(str(ROOT / TARGET), pictures=True)


@pytest.fixture(scope="module")
def bare() -> dict[str, dict[str, bool]]:
    """Per loss, per variable: whether bare TensorFlow's GradientTape returns a gradient."""
    import tensorflow as tf

    from tests.frontends.python.data.applications import mobilenet

    target = mobilenet()
    out: dict[str, dict[str, bool]] = {}
    for name, loss in target.losses.items():
        with tf.GradientTape() as tape:
            value = loss()
        grads = tape.gradient(value, target.variables)
        out[name] = {v.path: g is not None for v, g in zip(target.variables, grads, strict=True)}
    return out


def test_big_model_statuses_agree_with_bare_tensorflow(report: m.Report, bare) -> None:
    assert len(report.variables) == 83
    for loss in report.losses:
        for pair in loss.pairs:
            assert m.has_gradient(pair.status) == bare[loss.name][pair.variable], pair
    assert report.loss("main").pair("conv1/kernel").status == m.STOPPED
    assert report.loss("aux").pair("head/kernel").status == m.DISCONNECTED


@pytest.mark.parametrize("width", [80, 120])
def test_big_model_table_is_a_few_rows_with_counts(report: m.Report, width: int) -> None:
    text = render(report, "table", width=width)
    lines = text.splitlines()
    assert len(lines) < 30, text  # 83 variables, 81 identical cuts and problems, gathered
    assert all(len(line) <= width for line in lines), text
    assert "conv1 … conv_pw_13_bn" in text and "81 in 54 layers" in text
    flat = " ".join(text.split())
    assert "conv1/kernel (+80) none:stopped" in flat
    assert "(and 80 more like it: conv1_bn/gamma … conv_pw_13_bn/beta)" in flat
    assert text.count("unexpected-none") == 1
    every = render(report, "table", width=width, group="none")
    assert len(every.splitlines()) > 83 * 3  # --group none: a row, a cut and a problem each


def test_big_model_problems_only_lists_what_is_wrong(report: m.Report) -> None:
    text = render(report, "table", width=120, problems_only=True, group="none")
    rows = [line.split()[0] for line in text.splitlines() if re.match(r"conv|head", line)]
    assert "head/kernel" not in rows and len(rows) == 81


def test_big_model_picture_keeps_the_cut_and_gathers_the_rest(report: m.Report) -> None:
    full = report.picture("main")
    assert full is not None and len(full.boxes) > LIMIT
    small = simplify(full, report.loss("main"))
    assert small.reduced == len(full.boxes) and len(small.boxes) <= 12
    assert {b.kind for b in small.boxes} >= {VARIABLE, LOSS}
    assert [link.cuts for link in small.links if link.flow == CUT] == [
        link.cuts for link in full.links if link.flow == CUT
    ]  # the red links are still the report's cut points
    gathered = [b for b in small.boxes if b.kind == VARIABLE and b.members]
    assert [len(b.members) for b in gathered] == [81]
    shown = {name for b in small.boxes if b.kind == VARIABLE for name in b.members or (b.name,)}
    assert shown == {v.name for v in report.variables}  # every variable is still somewhere


def test_big_model_png_is_top_to_bottom_and_readable(report: m.Report) -> None:
    from gradscope._src.report import dot, draw, graphviz

    if graphviz.find() is None:
        pytest.skip("Graphviz's dot is not installed (apt-get install graphviz)")
    assert 'rankdir="TB"' in dot.picture(report, "main")
    png = draw.draw(report, "main", draw.PictureFormat.PNG)
    assert isinstance(png, bytes) and png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])
    assert width < 2000 and height < 2000  # at 144 dpi: it fits a screen at 100% zoom
    page = draw.draw(report, "main", draw.PictureFormat.HTML)
    assert isinstance(page, str)
    assert page.index('<section id="loss-main">') < page.index("Every loss × every variable")
    assert ".picture svg{max-width:100%" in page
