"""Said once (issue 45.1): 200 variables, 20 of them cut by one ``stop_gradient`` line, facts
made by hand and fixed and judged as ``inspect`` does (no TensorFlow). Each format says the
cut's fix once, naming the 20 variables it covers, and no format repeats it per row; the
output of 200 variables stays a screenful per problem, not per pair."""

from __future__ import annotations

import re

import pytest

from gradscope._src.analysis import fixes
from gradscope._src.analysis.policy import find_problems
from gradscope._src.engine.status import classify
from gradscope._src.report import notebook, render
from gradscope._src.results import report as m
from gradscope._src.results.facts import CutPoint, LossFacts, PairFacts, RunFacts, VariableFacts
from tests import checks

N, CUT = 200, 20


def _name(i: int) -> str:
    return f"block{i // 2}/{'kernel' if i % 2 == 0 else 'bias'}"


def report() -> m.Report:
    variables = tuple(VariableFacts(_name(i), (8, 8), "float32", True, f"model.py:{i + 1}")
                      for i in range(N))  # fmt: skip
    cut = (CutPoint("frozen", "StopGradient", "stopped", "model.py:40"),)
    pairs = tuple(PairFacts(v.name, True, has_gradient=i >= CUT, reachable=True,
                            norm=0.5 if i >= CUT else None, cut_points=cut if i < CUT else ())
                  for i, v in enumerate(variables))  # fmt: skip
    facts = RunFacts("model.py:build", "2.21.0", "CPU:0", variables,
                     (LossFacts("main", 0.7, (), pairs),))  # fmt: skip
    results = fixes.fixed_losses(classify(facts, {"main": "model.py:41"}))
    expect = [checks.expectation("main", connected=["*"])]  # every variable: 20 problems
    problems = fixes.fixed_problems(find_problems("model.py", results, variables, expect),
                                    results)  # fmt: skip
    return m.Report("model.py:build", None, "2.21.0", "CPU:0", variables, tuple(results),
                    tuple(problems))  # fmt: skip


@pytest.fixture(scope="module")
def outputs() -> dict[str, str]:
    made = report()
    out = {f: render(made, f, width=w) for f, w in (("table", 80), ("markdown", 100),
                                                      ("html", 100))}  # fmt: skip
    out["table 200"] = render(made, "table", width=200)
    out["notebook html"] = notebook.render(made)
    return out


def test_the_cut_is_there_with_its_fix(outputs: dict[str, str]) -> None:
    made = report()
    cut = [p for _, p in made.pairs() if p.cut_points]
    assert len(cut) == CUT and all(p.fix is not None for p in cut)


def test_each_fix_is_said_once_naming_the_variables_it_covers(outputs: dict[str, str]) -> None:
    for name, text in outputs.items():
        flat = " ".join(re.sub(r"<[^>]+>", "", text).split())  # tags and wrapping gone
        assert flat.count("model.py:40, `stop_gradient`") == 1 or flat.count("fix (") == 1, name
        covered = re.findall(r"fix(?:\*\*)? \(([^)]*)\)", flat)
        assert covered == [f"{_name(0)} … {_name(CUT - 1)}, {CUT} variables"], (name, covered)


def test_two_hundred_variables_read_in_a_screenful_per_problem(outputs: dict[str, str]) -> None:
    lines = outputs["table 200"].splitlines()
    # the matrix (a row per variable), the cuts (gathered: one row), the problems (gathered)
    assert len(lines) < N + 40, len(lines)
    assert all(len(line) <= 80 for line in outputs["table"].splitlines())


def test_fixes_differing_only_in_name_and_line_are_one_fix() -> None:
    """Two integer variables made at two lines: one fix, naming both and each one's line;
    the same words for several variables (an apply_gradients fed one call's Nones) too."""
    from gradscope._src.report.rows import fix_groups, fix_line
    from gradscope._src.results import causes

    made = [causes.NotFloating(line=f"ints.py:{4 + i}", dtype="int32", names=(v,))
            for i, v in enumerate(("steps", "count"))]  # fmt: skip
    items = [(v, c.fix(causes.Context("none:nondifferentiable", v, site="ints.py:9")))
             for v, c in zip(("steps", "count"), made, strict=True)]  # fmt: skip
    ((names, fix),) = fix_groups(items)
    assert names == ("steps", "count")
    line = fix_line(names, fix)
    assert line.startswith("fix (steps, count): Each of these 2 variables holds int32 values")
    assert "at ints.py:4 (`steps`) and ints.py:5 (`count`)" in line
    many = [(f"c{i}", items[0][1].__class__(items[0][1].kind, f"m.py:{i + 1}",
                                           items[0][1].text.replace("ints.py:4", f"m.py:{i + 1}")
                                           .replace("`steps`", f"`c{i}`")))
            for i in range(20)]  # fmt: skip
    ((names, fix),) = fix_groups(many)
    assert len(names) == 20 and "m.py:1 (`c0`) … m.py:20 (`c19`) (20 lines)" in fix.text
    same = causes.Fix("var-list", "d.py:41", "pass `model.trainable_variables` (`a/kernel`)")
    assert len(fix_groups([("a/kernel", same), ("a/bias", same)])) == 1


def test_a_run_reports_markdown_gathers_rows_as_its_table() -> None:
    """200 sources: the Markdown table gathers those that read the same into one row each,
    as the terminal's does (a source a problem names keeps its own), and says the fix once."""
    from gradscope._src.report import markdown
    from gradscope._src.results import causes
    from gradscope._src.results import run as rr

    fix = causes.NotFloating(line="m.py:3", dtype="int32").fix(
        causes.Context("none:nondifferentiable", "c0", site="m.py:9"))  # fmt: skip
    sources = [rr.SourceResult(f"layer{i}/kernel", "ok", 1.0, (3, 2), False) for i in range(180)]
    sources += [rr.SourceResult(f"c{i}", "none:nondifferentiable", None, (), False, fix=fix)
                for i in range(20)]  # fmt: skip
    call = rr.CallResult("m.py:9", "GradientTape.gradient", "eager", 1, "m.py:8", 1.0,
                         tuple(sources))  # fmt: skip
    report = rr.RunReport("m.py", ("m.py",), "2.21.0", "CPU:0", (call,), ())
    text = markdown.run_document(report)
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    assert len(rows) == 3, rows  # the header, the 180 gathered, the 20 gathered
    assert rows[1].startswith("| layer0 … layer179 | 180 in 180 layers | ok |")
    assert text.count("**fix**") == 1
