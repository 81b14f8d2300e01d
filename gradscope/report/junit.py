"""JUnit XML, so CI test tabs (GitLab, Jenkins, Azure, test-reporter actions) list every pair.

One ``<testsuite>`` per spec. In it, one ``<testcase>`` per loss × variable (classname
``<spec path without extension>.<loss>``, name the variable) and one per trainable variable
for "some loss trains it" (classname ``<spec>.any loss``). A problem is a ``<failure>`` whose
``type`` is its kind and whose ``message`` is the one-line message; a problem the baseline
already holds is ``<skipped>`` instead (visible, not failing). So the report has exactly one
failure per new problem. The document is valid against Jenkins xunit's ``junit-10.xsd``
(pytest's own flavour): a test case has no ``file`` or ``line`` attribute, so its place
(``at: FILE:LINE``, the line the problem points at, else the loss's or the variable's) is
the first line of its ``<system-out>`` and of its failure text; each suite names its spec
in ``file``, and only suites count ``skipped``.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import PurePath

from gradscope.analysis import model as m
from gradscope.analysis.check import CheckResult
from gradscope.analysis.policy import line_of
from gradscope.report import style

ANY_LOSS = "any loss"


def _label(spec: str) -> str:
    path = PurePath(spec)
    return path.with_suffix("").as_posix() if path.suffix in (".yaml", ".yml") else spec


def _outcome(case: ET.Element, problem: m.Problem | None, baseline: str | None) -> None:
    if problem is None:
        return
    if problem.known:
        where = f" (in baseline {baseline})" if baseline else ""
        ET.SubElement(case, "skipped", message=f"known {problem.kind}{where}: {problem.message}")
        return
    failure = ET.SubElement(case, "failure", type=problem.kind, message=problem.message)
    lines = [f"at: {problem.spec}:{problem.line}", problem.message, f"kind: {problem.kind}"]
    lines += [f"cut at: {style.cut_text(c)}" for c in problem.cut_points]
    failure.text = "\n".join(lines)


def _case(suite: ET.Element, classname: str, name: str) -> ET.Element:
    return ET.SubElement(suite, "testcase", classname=classname, name=name, time="0")


def _pair_text(pair: m.PairResult, where: str) -> str:
    text = f"at: {where}\nstatus: {pair.status}"
    if pair.norm is not None:
        text += f", norm {style.number(pair.norm)}"
    return text + "".join(f"\ncut at: {style.cut_text(c)}" for c in pair.cut_points)


def _suite(parent: ET.Element, report: m.Report, baseline: str | None) -> ET.Element:
    suite = ET.SubElement(parent, "testsuite", name=report.spec, file=report.spec)
    props = ET.SubElement(suite, "properties")
    for key, value in (("name", report.name or ""), ("tensorflow", report.tensorflow),
                       ("device", report.device)):  # fmt: skip
        ET.SubElement(props, "property", name=key, value=value)
    by_pair = {(p.loss, p.variable): p for p in report.problems}
    label = _label(report.spec)
    for loss, pair in report.pairs():
        problem = by_pair.get((loss.name, pair.variable))
        line = problem.line if problem else line_of(loss.source)
        case = _case(suite, f"{label}.{loss.name}", pair.variable)
        _outcome(case, problem, baseline)
        ET.SubElement(case, "system-out").text = _pair_text(pair, f"{report.spec}:{line}")
    for v in report.variables:
        if v.trainable:
            case = _case(suite, f"{label}.{ANY_LOSS}", v.name)
            _outcome(case, by_pair.get((None, v.name)), baseline)
            where = f"at: {report.spec}:{line_of(v.source)}"
            ET.SubElement(case, "system-out").text = where
    _count(suite)
    return suite


def _count(element: ET.Element) -> None:
    cases = list(element.iter("testcase"))
    element.set("tests", str(len(cases)))
    element.set("failures", str(sum(1 for c in cases if c.find("failure") is not None)))
    element.set("errors", str(sum(1 for c in cases if c.find("error") is not None)))
    if element.tag == "testsuite":  # junit-10.xsd allows `skipped` on a suite only
        element.set("skipped", str(sum(1 for c in cases if c.find("skipped") is not None)))
    element.set("time", "0")


def render(result: CheckResult, *, color: bool = False, width: int = 120) -> str:
    """The check result as a JUnit XML document (UTF-8, with an XML declaration)."""
    root = ET.Element("testsuites", name="gradscope check")
    for report in result.reports:
        _suite(root, report, result.baseline)
    return document(root)


def document(root: ET.Element) -> str:
    """``<testsuites>`` with its counts, as an indented UTF-8 document."""
    _count(root)
    ET.indent(root)
    body = ET.tostring(root, encoding="unicode")
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{body}\n'


def spec_errors(errors: Sequence[tuple[str | None, int, int, str]]) -> str:
    """A report for a check that stopped at bad input (exit 2): one suite per spec file, one
    ``<error>`` test case per ``(file, line, column, message)`` (``file`` None: an error with
    no place, such as a target that cannot be imported), so the CI test tab says why.
    """
    root = ET.Element("testsuites", name="gradscope check")
    suites: dict[str, ET.Element] = {}
    for path, line, column, message in errors:
        name = path or "gradscope check"
        if name not in suites:
            suites[name] = ET.SubElement(root, "testsuite", name=name)
            if path:
                suites[name].set("file", path)
        case = _case(suites[name], f"{_label(name)}.spec", f"line {line}" if path else "error")
        error = ET.SubElement(case, "error", type="spec-error", message=message)
        error.text = f"at: {path}:{line}:{column}\n{message}" if path else message
    for suite in suites.values():
        _count(suite)
    return document(root)
