"""Words a person reads in a report (issue 45.4): a watched call's value is its loss; the
summary's problem count is what the problems table adds up to; ``check`` of a Python target
says "target", not "spec"; a watched test's failure leads with the variable's name (pytest's
short summary cuts the rest). Hand-made facts, no TensorFlow."""

from __future__ import annotations

import re
from dataclasses import replace

from gradscope._src.analysis import run as run_policy
from gradscope._src.report import render
from gradscope._src.watch.pytest_plugin import failure_line
from tests import checks
from tests.report import samples


def test_a_watched_call_heading_names_its_loss() -> None:
    text = render(samples.run_report(), "table", width=200)
    assert "· step 1 · loss 2.50e+00 at train.py:11" in text and "target" not in text


def test_the_summary_count_is_what_the_problems_table_adds_up_to() -> None:
    made = samples.run_report()
    # nothing allowed: patch and g/kernel at train.py:12, d/kernel at model.py:40
    run = replace(made, problems=tuple(run_policy.problems_of(made.calls, [])))
    assert len(run.findings()) == 3
    for width in (80, 200):
        text = render(run, "table", width=width)
        table = text[text.index("Problems") : text.rindex("call(s) at")]
        shown = [int(n or 1) for n in re.findall(r"^ (?:unexpected-none|nan)(?: ×(\d+))?", table,
                                                 flags=re.M)]  # fmt: skip
        assert sum(shown) == 3 and "unexpected-none ×2" in table
        assert "· 3 problems ·" in text.replace("\n", " ")


def test_check_of_a_python_target_says_target() -> None:
    target = replace(checks.every_kind(), spec="train.py:make")
    assert checks.result(target).verdict().endswith("problems in 1 target")
    both = checks.result(checks.every_kind(), checks.clean(spec="train.py:clean"))
    assert both.checked() == "1 spec and 1 target"
    assert checks.result(checks.clean(spec="a.py:f"), checks.clean(spec="b.py:g")).verdict() == (
        "passed: 2 targets, 2 pairs, no unexpected gradients"
    )
    assert checks.result(checks.every_kind()).checked() == "1 spec"


def test_a_watched_tests_failure_leads_with_the_variables() -> None:
    assert failure_line(samples.run_report()) == (
        "gradscope: patch, d/kernel got 1 unexpected-none, 1 nan"
    )
    made = samples.run_report()
    run = replace(made, problems=tuple(run_policy.problems_of(made.calls, [])) * 2)
    assert failure_line(run, most=2).startswith("gradscope: patch, g/kernel and 1 more got ")
