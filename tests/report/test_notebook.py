"""Every result in a notebook: an HTML table (``_repr_html_``) with statuses, cut and fix
text, escaped; the terminal table where IPython prints text (``_repr_pretty_``)."""

from __future__ import annotations

import html
from dataclasses import replace
from typing import Any

import pytest

import gradscope
from gradscope._src.report import render
from gradscope._src.report.notebook import render as notebook_html
from gradscope._src.results import run as rr
from gradscope._src.results.cut import CutPoint
from gradscope._src.results.fix import Fix
from tests.conftest import ROOT

pytestmark = pytest.mark.tf

SPEC = str(ROOT / "configs" / "multitask.yaml")


class _Printer:
    """What IPython's pretty printer gives ``_repr_pretty_``."""

    def __init__(self) -> None:
        self.out = ""

    def text(self, words: str) -> None:
        self.out += words


def _pretty(result: Any) -> str:
    printer = _Printer()
    result._repr_pretty_(printer, False)
    return printer.out


@pytest.fixture(scope="module")
def report() -> Any:
    return gradscope.inspect(SPEC)


def test_inspect_html_has_every_pair_and_its_cut(report: Any) -> None:
    page = report._repr_html_()
    assert page.startswith('<div class="gradscope">') and "<table" in page
    for _loss, pair in report.pairs():
        assert html.escape(pair.variable) in page and str(pair.status) in page
        for cut in pair.cut_points:
            assert html.escape(f"{cut.node} ({cut.op}) at {cut.source}") in page
    for problem in report.problems:
        assert html.escape(problem.message, quote=True) in page


def test_every_result_has_html_and_the_terminal_table(report: Any) -> None:
    results = [report, gradscope.diff(SPEC, "loss_1", "loss_2"), gradscope.diff(SPEC),
               gradscope.check([SPEC])]  # fmt: skip
    for result in results:
        assert "<table" in result._repr_html_()
        assert _pretty(result) == render(result, "table", width=_pretty_width())


def _pretty_width() -> int:
    import shutil

    return shutil.get_terminal_size((100, 24)).columns


def test_run_report_html_escapes_names_and_shows_fixes() -> None:
    cut = CutPoint("<stop>", "StopGradient", "stopped", "train.py:3")
    source = rr.SourceResult("head/<b>", "none:stopped", None, (2,), False, (cut,))
    call = rr.CallResult("train.py:5", "GradientTape.gradient", "eager", 1, "train.py:4", 1.5,
                         (source,))  # fmt: skip
    fix = Fix("remove-stop", "train.py:3", "remove tf.stop_gradient at train.py:3")
    problem = rr.RunProblem.run_problem("train.py:5", 1, "head/<b>", "unexpected-none",
                                        "no gradient", (cut,), fix=fix)  # fmt: skip
    made = rr.RunReport("train.py", ("train.py",), "2.21.0", "CPU:0", (call,), (problem,))
    page = made._repr_html_()
    assert "head/&lt;b&gt;" in page and "head/<b>" not in page  # escaped
    assert "&lt;stop&gt; (StopGradient) at train.py:3" in page
    # the fix is said once, naming what it covers (not in a column repeated per row)
    assert page.count("remove tf.stop_gradient at train.py:3") == 1
    assert "fix (head/&lt;b&gt;): remove tf.stop_gradient" in page
    plain = replace(made, problems=(replace(problem, fix=None),))
    assert "fix (" not in plain._repr_html_()  # no fix when no finding has one
    assert _pretty(made) == render(made, "table", width=_pretty_width())


def test_plot_shows_a_timeline_inline_with_its_findings() -> None:
    timeline = {
        "gradscope": 1, "program": "train.py",
        "steps": [{"step": s, "site": "train.py:9", "loss": 1.0 / s,
                   "variables": {"d/kernel": {"status": "ok", "norm": 0.5 / s,
                                              "weight_norm": 1.0, "zero_fraction": 0.0}}}
                  for s in (1, 2, 3)],
        "findings": [{"kind": "vanishing", "site": "train.py:9", "variable": "d/kernel",
                      "from_step": 2, "message": "the norm fell <1e-3"}],
    }  # fmt: skip
    picture = gradscope.plot(timeline)
    page = picture._repr_html_()
    assert "<svg" in page and "the norm fell &lt;1e-3" in page and "vanishing" in page
    assert picture._repr_png_().startswith(b"\x89PNG")
    assert "1 finding" in _pretty(picture)


@pytest.mark.parametrize("given", [42, "/no/such/timeline.json", {"steps": "x"}])
def test_plot_refuses_what_is_not_a_timeline(given: Any) -> None:
    with pytest.raises(gradscope.UsageError, match=r"^gradscope\.plot: "):
        gradscope.plot(given)


def test_notebook_renderer_refuses_an_unknown_result() -> None:
    with pytest.raises(ValueError, match="no notebook rendering for int"):
        notebook_html(3)
