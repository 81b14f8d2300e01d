"""JUnit XML, so CI test tabs (GitLab, Jenkins, Azure, test-reporter actions) list every pair.

One ``<testsuite>`` per spec. In it, one ``<testcase>`` per loss × variable (classname
``<spec path without extension>.<loss>``, name the variable) and one per trainable variable
for "some loss trains it" (classname ``<spec>.any loss``). A problem is a ``<failure>`` whose
``type`` is its kind and whose ``message`` is the one-line message; a problem the baseline
already holds is ``<skipped>`` instead (visible, not failing). So the report has exactly one
failure per new problem. Each test case carries ``file`` and ``line``: the line the problem
points at, else the loss's (or the variable's) line.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import PurePath

from gradscope.analysis import model as m
from gradscope.analysis.check import CheckResult
from gradscope.analysis.policy import line_of
from gradscope.report import style

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def printable_xml(text: str) -> str:
    """``text`` without characters XML 1.0 forbids (each written as an escape instead)."""
    return _NOT_XML.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


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
    lines = [problem.message, f"kind: {problem.kind}", f"at: {problem.spec}:{problem.line}"]
    lines += [f"cut at: {style.cut_text(c)}" for c in problem.cut_points]
    failure.text = "\n".join(lines)


def _case(suite: ET.Element, classname: str, name: str, spec: str, line: int) -> ET.Element:
    return ET.SubElement(suite, "testcase", classname=classname, name=name, file=spec,
                         line=str(line), time="0")  # fmt: skip


def _pair_text(pair: m.PairResult) -> str:
    text = f"status: {pair.status}"
    if pair.norm is not None:
        text += f", norm {style.number(pair.norm)}"
    return text + "".join(f"\ncut at: {style.cut_text(c)}" for c in pair.cut_points)


def _suite(parent: ET.Element, report: m.Report, baseline: str | None) -> ET.Element:
    suite = ET.SubElement(parent, "testsuite", name=report.spec)
    props = ET.SubElement(suite, "properties")
    for key, value in (("name", report.name or ""), ("tensorflow", report.tensorflow),
                       ("device", report.device)):  # fmt: skip
        ET.SubElement(props, "property", name=key, value=value)
    by_pair = {(p.loss, p.variable): p for p in report.problems}
    label = _label(report.spec)
    for loss, pair in report.pairs():
        problem = by_pair.get((loss.name, pair.variable))
        line = problem.line if problem else line_of(loss.source)
        case = _case(suite, f"{label}.{loss.name}", pair.variable, report.spec, line)
        _outcome(case, problem, baseline)
        ET.SubElement(case, "system-out").text = _pair_text(pair)
    for v in report.variables:
        if v.trainable:
            case = _case(suite, f"{label}.{ANY_LOSS}", v.name, report.spec, line_of(v.source))
            _outcome(case, by_pair.get((None, v.name)), baseline)
    _count(suite)
    return suite


def _count(element: ET.Element) -> None:
    cases = list(element.iter("testcase"))
    element.set("tests", str(len(cases)))
    element.set("failures", str(sum(1 for c in cases if c.find("failure") is not None)))
    element.set("errors", "0")
    element.set("skipped", str(sum(1 for c in cases if c.find("skipped") is not None)))
    element.set("time", "0")


def render(result: CheckResult, *, color: bool = False, width: int = 120) -> str:
    """The check result as a JUnit XML document (UTF-8, with an XML declaration)."""
    root = ET.Element("testsuites", name="gradscope check")
    for report in result.reports:
        _suite(root, report, result.baseline)
    _count(root)
    ET.indent(root)
    # XML 1.0 cannot hold most control characters even escaped: write them as \x0c.
    body = printable_xml(ET.tostring(root, encoding="unicode"))
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{body}\n'
