"""JUnit XML: valid against Jenkins xunit's junit-10.xsd, one failure per new problem, known
ones skipped, and a report of the errors when the check stopped on a bad spec."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from gradscope._src.errors import ErrorGroup, SpecError, SpecErrors, TargetError
from gradscope._src.location import Location
from gradscope._src.report import Format, failed, render
from gradscope._src.results import report as m
from gradscope._src.results.facts import VariableFacts
from tests import checks
from tests.report import samples

XSD = Path(__file__).parent / "data" / "jenkins-junit-10.xsd"


@pytest.fixture(scope="module")
def junit_10():
    """Jenkins xunit's junit-10 schema (restated in tests/report/data)."""
    import xmlschema

    return xmlschema.XMLSchema(str(XSD))


def _parse(result) -> ET.Element:
    text = render(result, "junit")
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>\n')
    return ET.fromstring(text.encode("utf-8"))


RESULTS = {
    "every-kind": lambda: checks.result(checks.every_kind(numeric=True), checks.clean()),
    "known": lambda: checks.result(checks.every_kind(), known=1),
    "clean": lambda: checks.result(checks.clean()),
}


@pytest.mark.parametrize("name", sorted(RESULTS))
def test_junit_is_valid_against_jenkins_xunit_junit_10(name: str, junit_10) -> None:
    text = render(RESULTS[name](), "junit")
    junit_10.validate(text)  # raises, naming the element and attribute, when invalid


def test_junit_schema_refuses_what_gradscope_once_wrote(junit_10) -> None:
    """The schema is strict where it matters: the old report fails it."""
    old = """<testsuites name="gradscope check" tests="1" failures="0" errors="0" skipped="0">
      <testsuite name="s" tests="1" failures="0" errors="0">
        <testcase classname="s.l" name="w" file="s.yaml" line="3" time="0"/>
      </testsuite></testsuites>"""
    assert not junit_10.is_valid(old)
    assert not junit_10.is_valid(old.replace(' skipped="0"', ""))  # file/line on the case
    assert junit_10.is_valid(old.replace(' skipped="0"', "").replace(' file="s.yaml" line="3"', ""))


def test_junit_places_each_case_in_its_text() -> None:
    root = _parse(checks.result(checks.every_kind(), checks.clean()))
    case = root.find("testsuite/testcase[@classname='configs/x.loss_1'][@name='task1/w']")
    assert case is not None and case.get("file") is None and case.get("line") is None
    assert (case.findtext("failure") or "").startswith(f"at: {checks.SPEC}:41\n")
    assert (case.findtext("system-out") or "").startswith(f"at: {checks.SPEC}:41\n")
    assert root.find("testsuite").get("file") == checks.SPEC
    assert root.get("skipped") is None


def test_junit_report_of_a_bad_spec_holds_every_error(junit_10) -> None:
    errors = SpecErrors([
        SpecError(Location("specs/a.yaml", 5, 40), "nodes[0].inputs[0]", "saw 'ww'"),
        SpecError(Location("specs/a.yaml", 9, 3), "losses.l", "saw 'x'"),
    ])  # fmt: skip
    group = ErrorGroup([errors, TargetError("gradscope: cannot import pkg.mod")])
    text = failed.render(group, "junit")
    assert text is not None
    junit_10.validate(text)
    root = ET.fromstring(text.encode("utf-8"))
    assert root.get("errors") == "3" and root.get("failures") == "0"
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["specs/a.yaml", "gradscope check"]
    texts = [e.text for e in root.iter("error")]
    assert texts[0] == "at: specs/a.yaml:5:40\nnodes[0].inputs[0]: saw 'ww'"
    assert texts[2] == "gradscope: cannot import pkg.mod"


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
    failure = case.find("failure")
    assert failure is not None and failure.get("type") == m.UNEXPECTED_NONE
    assert "cut at: frozen (StopGradient) at configs/x.yaml:17" in (failure.text or "")
    never = first.find("testcase[@classname='configs/x.any loss'][@name='spare']")
    assert never is not None and never.find("failure").get("type") == m.NEVER_TRAINED


def test_junit_known_problems_are_skipped_not_failed() -> None:
    result = checks.result(checks.every_kind(), known=1)
    root = _parse(result)
    skipped = root.findall(".//testcase/skipped")
    assert len(skipped) == 1 and root.find("testsuite").get("skipped") == "1"
    assert skipped[0].get("message", "").startswith("known unexpected-none (in baseline")
    assert len(root.findall(".//testcase/failure")) == 3


def test_junit_passing_run_has_no_failures() -> None:
    root = _parse(checks.result(checks.clean()))
    assert root.findall(".//failure") == [] and root.get("tests") == "2"


def test_junit_places_a_target_or_timeline_case_in_its_own_file() -> None:
    """A report's lines may lie in another file than the report's name (a Python target's
    module, a timeline's program): ``at:`` names that file, never ``t.py:build:8``."""
    variables = [
        VariableFacts("w", (3,), "float32", True, "t.py:5"),
        VariableFacts("spare", (2,), "float32", True, "t.py:6"),
    ]
    loss = m.LossResult(
        "main",
        1.0,
        (checks.pair("w", m.OK, 0.5), checks.pair("spare", m.DISCONNECTED)),
        source="t.py:8",
    )
    root = _parse(checks.result(checks.report([loss], variables, spec="t.py:build")))
    texts = {
        (case.get("name"), case.get("classname")): case.findtext("system-out") or ""
        for case in root.iter("testcase")
    }
    assert texts[("w", "t.py:build.main")].startswith("at: t.py:8\n")
    assert texts[("w", "t.py:build.any loss")] == "at: t.py:5"
    assert texts[("spare", "t.py:build.any loss")] == "at: t.py:6"
    never = root.find("testsuite/testcase[@name='spare'][@classname='t.py:build.any loss']")
    assert (never.findtext("failure") or "").startswith("at: t.py:6\n")


@pytest.mark.parametrize("report", [samples.run_report, samples.trainable_run])
def test_run_junit_is_titled_by_the_run_and_valid_junit_10(report) -> None:
    import xmlschema

    text = render(report(), Format.JUNIT)
    xmlschema.XMLSchema(str(Path(__file__).parent / "data" / "jenkins-junit-10.xsd")).validate(
        text.encode("utf-8")
    )
    suites = ET.fromstring(text.encode("utf-8"))
    assert suites.get("name") == f"gradscope run {' '.join(report().argv)}"
    assert "check" not in text and "spec" not in text


@pytest.mark.parametrize("make", [samples.clean_run, samples.trainable_run])
def test_run_stopped_is_a_skipped_case_in_junit_never_a_plain_pass(make) -> None:
    import xmlschema

    schema = xmlschema.XMLSchema(str(Path(__file__).parent / "data" / "jenkins-junit-10.xsd"))
    finished, stopped = render(make(), Format.JUNIT), render(samples.stopped(make()), Format.JUNIT)
    for text in (finished, stopped):
        schema.validate(text.encode("utf-8"))  # the skipped case sits before a suite's notes
    assert "<skipped" not in finished
    suites = ET.fromstring(stopped.encode("utf-8"))
    (case,) = [c for c in suites.iter("testcase") if c.find("skipped") is not None]
    (suite,) = [s for s in suites.iter("testsuite") if case in list(s)]
    assert (suite.get("name"), suite.get("skipped")) == ("train.py", "1")
    assert case.get("name") == "the rest of the program (not run: stopped by --stop)"
    message = case.find("skipped").get("message")  # type: ignore[union-attr]
    assert message.startswith("stopped by --stop at step 2 of train.py:")
    assert "the rest of the program did not run, so nothing in it was watched" in message
    # everything else is as it was: the same cases, outcomes and counts
    assert len(list(suites.iter("testcase"))) == len(
        list(ET.fromstring(finished.encode("utf-8")).iter("testcase"))) + 1  # fmt: skip
