"""JUnit XML: parses with a standard parser, one failure per new problem, known ones skipped."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from gradscope.report import render
from gradscope.results import report as m
from tests import checks


def _parse(result) -> ET.Element:
    text = render(result, "junit")
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>\n')
    return ET.fromstring(text.encode("utf-8"))


def test_junit_has_one_failure_per_problem() -> None:
    result = checks.result(checks.every_kind(numeric=True, replicas=True), checks.clean())
    root = _parse(result)
    failures = root.findall(".//testcase/failure")
    assert len(failures) == len(result.failures) == 9
    assert sorted(f.get("type") for f in failures) == sorted(m.PROBLEM_KINDS)
    assert {f.get("message") for f in failures} == {p.message for p in result.failures}
    assert root.get("failures") == "9" and root.get("errors") == "0"


def test_junit_one_case_per_pair_and_per_trainable_variable() -> None:
    result = checks.result(checks.every_kind(), checks.clean())
    root = _parse(result)
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == [checks.SPEC, checks.OTHER]
    first = suites[0]
    pairs = sum(len(loss.pairs) for loss in result.reports[0].losses)
    trainable = sum(1 for v in result.reports[0].variables if v.trainable)
    assert len(first.findall("testcase")) == pairs + trainable == int(first.get("tests"))
    assert int(root.get("tests")) == sum(int(s.get("tests")) for s in suites)
    case = first.find("testcase[@classname='configs/x.loss_1'][@name='task1/w']")
    assert case is not None
    assert (case.get("file"), case.get("line")) == (checks.SPEC, "41")
    failure = case.find("failure")
    assert failure is not None and failure.get("type") == m.UNEXPECTED_NONE
    assert "cut at: frozen (StopGradient) at configs/x.yaml:17" in (failure.text or "")
    never = first.find("testcase[@classname='configs/x.any loss'][@name='spare']")
    assert never is not None and never.find("failure").get("type") == m.NEVER_TRAINED


def test_junit_known_problems_are_skipped_not_failed() -> None:
    result = checks.result(checks.every_kind(), known=1)
    root = _parse(result)
    skipped = root.findall(".//testcase/skipped")
    assert len(skipped) == 1 and root.get("skipped") == "1"
    assert skipped[0].get("message", "").startswith("known unexpected-none (in baseline")
    assert len(root.findall(".//testcase/failure")) == 3


def test_junit_passing_run_has_no_failures() -> None:
    root = _parse(checks.result(checks.clean()))
    assert root.findall(".//failure") == [] and root.get("tests") == "2"
