"""Every output grows with problems + variables, never their product (issue 42.12): a model of
10,000 variables with 100 that no loss reads, built as facts by hand (no TensorFlow), drawn
in every format. Each fix is said once, naming the variables it covers; the words of a fix
never list every variable the loss reads."""

from __future__ import annotations

import re

import pytest

from gradscope._src.analysis import fixes
from gradscope._src.analysis import run as run_policy
from gradscope._src.analysis.policy import find_problems
from gradscope._src.engine.status import classify
from gradscope._src.report import notebook, render
from gradscope._src.results import report as m
from gradscope._src.results import run as rr
from gradscope._src.results.check import CheckResult
from gradscope._src.results.facts import LossFacts, PairFacts, RunFacts, VariableFacts
from gradscope._src.results.status import Status

#: (variables, unread ones): the small model and the one ten times as big.
SMALL, BIG = (1_000, 10), (10_000, 100)


def _name(i: int) -> str:
    return f"layer{i // 2}/{'kernel' if i % 2 == 0 else 'bias'}"


def run_report(n: int, unread: int) -> rr.RunReport:
    """One watched call whose first ``unread`` sources the loss never reads, fixed and judged
    as ``gradscope run`` does."""
    sources = tuple(
        rr.SourceResult(_name(i), Status.DISCONNECTED if i < unread else Status.OK,
                        None if i < unread else 0.5, (4, 4), False)
        for i in range(n)
    )  # fmt: skip
    call = rr.CallResult("train.py:57", "GradientTape.gradient", "eager", 1, "train.py:54", 0.7,
                         sources)  # fmt: skip
    calls = fixes.fixed_calls([call])
    problems = fixes.fixed_run_problems(run_policy.problems_of(calls, ()), calls)
    return rr.RunReport("train.py", ("train.py",), "2.21.0", "CPU:0", tuple(calls),
                        tuple(problems))  # fmt: skip


def inspect_report(n: int, unread: int) -> m.Report:
    """One loss of a Python target that reads all but its first ``unread`` variables, as
    ``inspect`` classifies, fixes and judges it."""
    variables = tuple(VariableFacts(_name(i), (4, 4), "float32", True, f"model.py:{i + 1}")
                      for i in range(n))  # fmt: skip
    pairs = tuple(PairFacts(v.name, True, has_gradient=i >= unread, reachable=i >= unread,
                            norm=0.5 if i >= unread else None)
                  for i, v in enumerate(variables))  # fmt: skip
    facts = RunFacts("model.py:build", "2.21.0", "CPU:0", variables,
                     (LossFacts("main", 0.7, (), pairs),))  # fmt: skip
    results = fixes.fixed_losses(classify(facts, {"main": "model.py:3"}))
    problems = fixes.fixed_problems(find_problems("model.py", results, variables, ()), results)
    return m.Report("model.py:build", None, "2.21.0", "CPU:0", variables, tuple(results),
                    tuple(problems))  # fmt: skip


def _outputs(n: int, unread: int) -> dict[str, str]:
    run, inspect = run_report(n, unread), inspect_report(n, unread)
    check = CheckResult((inspect,))
    out = {f"run {f}": render(run, f) for f in ("table", "json", "markdown", "junit", "sarif",
                                                 "github")}  # fmt: skip
    out |= {f"inspect {f}": render(inspect, f) for f in ("table", "json", "markdown", "html")}
    out |= {f"check {f}": render(check, f) for f in ("table", "junit", "sarif", "github",
                                                       "markdown")}  # fmt: skip
    for name, result in (("run", run), ("inspect", inspect)):
        out[f"{name} table --problems"] = render(result, "table", problems_only=True)
        out[f"{name} notebook html"] = notebook.render(result)
        out[f"{name} notebook text"] = notebook.text(result)
    return out


@pytest.fixture(scope="module")
def sizes() -> tuple[dict[str, str], dict[str, str]]:
    return _outputs(*SMALL), _outputs(*BIG)


def test_scale_every_output_grows_linearly(sizes: tuple[dict[str, str], dict[str, str]]) -> None:
    small, big = sizes
    grown = {name: len(big[name]) / len(small[name]) for name in small}
    # ten times the variables and the problems: about ten times the output (a product of
    # problems and variables would be a hundred times)
    assert all(g < 12 for g in grown.values()), grown
    assert len(big["run notebook html"]) < 1_000_000 and len(big["run table"]) < 200_000


def test_scale_a_fix_is_said_once_naming_what_it_covers(
    sizes: tuple[dict[str, str], dict[str, str]],
) -> None:
    _, big = sizes
    unread = [_name(i) for i in range(BIG[1])]
    for name in ("run table", "run markdown", "run notebook html", "inspect table",
                 "inspect markdown", "inspect notebook html", "check markdown"):  # fmt: skip
        text = " ".join(big[name].split())  # a table wraps its lines
        assert text.count("No loss reads") == 1, name  # one cause, one fix
        covered = re.search(r"fix(?:\*\*)? \(([^)]*)\)", text)
        # the first and the last of the 100 it covers, and how many (issue 45.1: a screenful
        # per cause; the rows name each)
        assert covered is not None, name
        assert covered.group(1) == f"{unread[0]} … {unread[-1]}, {len(unread)} variables", name


def test_scale_problems_only_names_no_healthy_variable(
    sizes: tuple[dict[str, str], dict[str, str]],
) -> None:
    _, big = sizes
    healthy = _name(BIG[1] + 7)  # read by the loss, no problem: not in a fix's words either
    for name in ("run table --problems", "inspect table --problems"):
        assert healthy not in big[name] and _name(0) in big[name], name
    for name, text in big.items():  # no fix lists more than three of the variables it reads
        assert text.count(f"`{healthy}`") <= 1, name
