"""GitHub workflow commands: one annotation per problem, with file and line, escaped."""

from __future__ import annotations

import re
from dataclasses import replace

from gradscope._src.location import Location
from gradscope._src.printable import shown
from gradscope._src.report import Format, render
from gradscope._src.report.github import annotation, escape_data, escape_property
from gradscope._src.results import report as m
from tests import checks
from tests.report import samples

COMMAND = re.compile(r"^::(error|warning|notice) (?P<props>[^:]*)::(?P<message>.*)$")


def _props(line: str) -> dict[str, str]:
    match = COMMAND.match(line)
    assert match, line
    return dict(item.split("=", 1) for item in match["props"].split(","))


def test_github_every_problem_is_an_annotation_with_file_and_line() -> None:
    result = checks.result(checks.every_kind(), checks.clean())
    lines = render(result, "github").splitlines()
    commands = [line for line in lines if COMMAND.match(line)]
    assert len(commands) == len(result.problems) == 4
    for line, problem in zip(commands, result.problems, strict=True):
        assert line.startswith("::error ")
        props = _props(line)
        assert props["file"] == "configs/x.yaml"
        assert props["line"] == str(problem.line)
        assert props["title"] == f"gradscope {problem.kind}"
        assert line.endswith("::" + problem.message)


def test_github_known_problems_are_notices() -> None:
    lines = render(checks.result(checks.every_kind(), known=1), "github").splitlines()
    notices = [line for line in lines if line.startswith("::notice ")]
    assert len(notices) == 1 and "title=gradscope known unexpected-none" in notices[0]
    assert lines[-1] == ("gradscope check failed: 3 new problems in 1 spec, 1 known (exit code 1)")


def test_github_groups_the_spec_summaries_and_ends_with_the_verdict() -> None:
    lines = render(checks.result(checks.clean()), "github").splitlines()
    assert lines[0] == "::group::gradscope check: 1 spec"
    assert lines[2] == "::endgroup::"
    assert lines[-1].startswith("gradscope check passed")


def test_github_escapes_as_the_actions_toolkit_does() -> None:
    assert escape_data("100% a\r\nb:c,d") == "100%25 a%0D%0Ab:c,d"
    assert escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"
    first = checks.every_kind().problems[0]
    p = replace(first, location=Location("dir,x/sp:ec.yaml", first.location.line),
                message="50%\nnext")  # fmt: skip
    assert p.message == "50%\nnext"  # the problem holds its text as it is (JSON: faithful)
    line = annotation(shown(p))  # what render(result, "github") draws
    assert line.startswith("::error file=dir%2Cx/sp%3Aec.yaml,line=41,")
    # the newline escaped once, as every line-based format shows it (gradscope._src.printable)
    assert line.endswith("::50%25\\nnext")
    assert "\n" not in line and "\n" not in annotation(p)  # raw: %0A, one line too


def test_github_kinds_have_titles() -> None:
    every = checks.every_kind(numeric=True, replicas=True)
    titles = {_props(annotation(f))["title"] for f in every.findings()}
    assert titles == {f"gradscope {kind}" for kind in m.PROBLEM_KINDS}


def test_run_github_group_and_verdict_name_the_run_and_its_call_sites() -> None:
    lines = render(samples.run_report(), Format.GITHUB).splitlines()
    assert lines[0] == "::group::gradscope run train.py --epochs 1: 2 calls at 2 call sites"
    assert (
        lines[1] == "train.py:12 · GradientTape.gradient (eager) · step 1: 3 sources: 1 ok, 2 none"
    )
    assert lines[-1].startswith("gradscope run train.py --epochs 1: 2 call(s) at 2 site(s)")
    assert lines[-1].endswith("(exit code 1)")
    assert not any("check" in line or "spec" in line for line in lines)
    notes = render(samples.trainable_run(), Format.GITHUB).splitlines()
    assert "::notice title=gradscope note%3A train.py%3A23::this fit() reuses" in "\n".join(notes)
