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
