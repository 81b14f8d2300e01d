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
A pair's second problem (a ``nan`` that is also a ``replica-mismatch``) or a problem
about a whole loss (``replica-loss-scale``) gets a test case of its own, named
``<variable or "every variable">: <kind>``.
``gradscope run`` has one suite per file holding a call site, one test case per call and
source (classname ``<file>.<call>``, ``GradientTape.gradient at line 12 (step 1)``), its
``<testsuites>`` named by the command. Failures are drawn from the result's findings
(``results/finding.py``), whatever the result.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import TYPE_CHECKING

from gradscope._src.location import Location
from gradscope._src.report import style
from gradscope._src.report.formats import Format, assert_never, unsupported
from gradscope._src.report.table import ending
from gradscope._src.results import report as m
from gradscope._src.results import run as rr
from gradscope._src.results import words
from gradscope._src.results.check import CheckResult
from gradscope._src.results.cut import CutPoint
from gradscope._src.results.diff import DiffMatrix, DiffReport
from gradscope._src.results.finding import Finding, file_of

if TYPE_CHECKING:
    from gradscope._src.report.formats import Result

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def printable_xml(text: str) -> str:
    """``text`` without characters XML 1.0 forbids (each written as an escape instead)."""
    return _NOT_XML.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


ANY_LOSS = "any loss"


def _label(spec: str) -> str:
    path = PurePath(spec)
    return path.with_suffix("").as_posix() if path.suffix in (".yaml", ".yml") else spec


def _outcome(case: ET.Element, finding: Finding | None, baseline: str | None) -> None:
    if finding is None:
        return
    if finding.known:
        where = f" (in baseline {baseline})" if baseline else ""
        ET.SubElement(case, "skipped", message=f"known {finding.kind}{where}: {finding.message}")
        return
    failure = ET.SubElement(case, "failure", type=finding.kind, message=finding.message)
    lines = [f"at: {_at(finding)}", finding.message, f"kind: {finding.kind}"]
    lines += [f"cut at: {words.cut_text(c)}" for c in finding.cut_points]
    lines += [f"fix: {finding.fix.sentence()}"] if finding.fix is not None else []
    failure.text = "\n".join(lines)


def _case(suite: ET.Element, classname: str, name: str) -> ET.Element:
    return ET.SubElement(suite, "testcase", classname=classname, name=name, time="0")


def _at(finding: Finding) -> str:
    """Where a finding points: its own file (a timeline's program, a target's module), which
    need not be the suite's, and its line when known."""
    return str(finding.location)


def _source(source: str, spec: str) -> str:
    """A loss's or a variable's ``FILE:LINE`` source as written; line 1 of ``spec`` if none."""
    return str(Location.at(source, spec))


@dataclass(frozen=True)
class _Row:
    """One test case of a suite before its outcome: a loss (or a watched call) and a variable
    (``loss`` None: "some loss trains it"), where it is when no finding points elsewhere, and
    what its ``<system-out>`` says after that place."""

    loss: str | None
    variable: str
    where: str
    detail: str = ""


def _detail(status: str, norm: float | None, cuts: Sequence[CutPoint]) -> str:
    text = f"\nstatus: {status}"
    if norm is not None:
        text += f", norm {style.number(norm)}"
    return text + "".join(f"\ncut at: {words.cut_text(c)}" for c in cuts)


def _suite(parent: ET.Element, suite: _Suite, baseline: str | None) -> ET.Element:
    """One suite: a test case per row, failing on the first finding of its loss and variable;
    one more per finding no row holds (a pair's second, or one about a whole loss)."""
    element = ET.SubElement(parent, "testsuite", name=suite.name, file=suite.name)
    props = ET.SubElement(element, "properties")
    for key, value in suite.properties:
        ET.SubElement(props, "property", name=key, value=value)
    by_pair: dict[tuple[str | None, str | None], Finding] = {}
    for f in suite.findings:
        by_pair.setdefault((f.loss, f.variable), f)
    label = _label(suite.name)
    placed: set[int] = set()
    for row in suite.rows:
        finding = by_pair.get((row.loss, row.variable))
        placed |= {id(finding)} if finding else set()
        case = _case(element, f"{label}.{row.loss or ANY_LOSS}", row.variable)
        _outcome(case, finding, baseline)
        # a pair's case is at its finding's line; a variable's stays at the variable's
        where = _at(finding) if finding and row.loss is not None else row.where
        ET.SubElement(case, "system-out").text = f"at: {where}{row.detail}"
    for f in suite.findings:  # a second finding of a pair, or one about a whole loss
        if id(f) not in placed:
            case = _case(
                element,
                f"{label}.{f.loss or ANY_LOSS}",
                f"{f.variable or 'every variable'}: {f.kind}",
            )
            _outcome(case, f, baseline)
            ET.SubElement(case, "system-out").text = f"at: {_at(f)}"
    if suite.notes:  # every note in every format (a JUnit viewer shows a suite's system-out)
        ET.SubElement(element, "system-out").text = "\n".join(f"note: {n}" for n in suite.notes)
    _count(element)
    return element


@dataclass(frozen=True)
class _Suite:
    """What a suite shows: its name (a spec, a target, a timeline, a file holding call
    sites), properties, rows, findings and notes."""

    name: str
    properties: tuple[tuple[str, str], ...]
    rows: tuple[_Row, ...]
    findings: tuple[Finding, ...]
    notes: tuple[str, ...]


def _report_suite(report: m.Report) -> _Suite:
    """A report's suite: a row per loss x variable, and per trainable variable for "some
    loss trains it"."""
    rows = [
        _Row(
            loss.name,
            pair.variable,
            _source(loss.source, report.spec),
            _detail(pair.status, pair.norm, pair.cut_points),
        )
        for loss, pair in report.pairs()
    ]
    rows += [_Row(None, v.name, _source(v.source, report.spec)) for v in report.variables
             if v.trainable]  # fmt: skip
    notes = tuple(f"{f'{loss}: ' if loss else ''}{note}" for loss, note in style.note_rows(report))
    props = (("name", report.name or ""), ("tensorflow", report.tensorflow),
             ("device", report.device))  # fmt: skip
    return _Suite(report.spec, props, tuple(rows), report.findings(), notes)


def _run_suites(report: rr.RunReport) -> list[_Suite]:
    """A run's suites: one per file holding a call site, a row per watched call and source."""
    findings = report.findings()
    props = (("name", " ".join(report.argv)), ("tensorflow", report.tensorflow),
             ("device", report.device))  # fmt: skip
    return [
        _Suite(
            path,
            props,
            tuple(
                _Row(
                    c.label, s.name, _source(c.site, path), _detail(s.status, s.norm, s.cut_points)
                )
                for c in calls
                for s in c.sources
            ),
            tuple(f for f in findings if f.report == path),
            tuple(f"{c.label}: {note}" for c in calls for note in c.notes),
        )
        for path, calls in report.files().items()
    ]


def _count(element: ET.Element) -> None:
    cases = list(element.iter("testcase"))
    element.set("tests", str(len(cases)))
    element.set("failures", str(sum(1 for c in cases if c.find("failure") is not None)))
    element.set("errors", str(sum(1 for c in cases if c.find("error") is not None)))
    if element.tag == "testsuite":  # junit-10.xsd allows `skipped` on a suite only
        element.set("skipped", str(sum(1 for c in cases if c.find("skipped") is not None)))
    element.set("time", "0")


#: The test case a run ``--stop`` stopped adds, skipped: the rest of the program.
NOT_RUN = "the rest of the program (not run: stopped by --stop)"


def render(result: Result, *, color: bool = False, width: int = 120) -> str:
    """A check result or a run as a JUnit XML document (UTF-8, with an XML declaration). A
    run ``--stop`` stopped has one more test case, skipped, in the suite of the site where it
    stopped (what did not run was not watched: never a plain pass)."""
    match result:
        case CheckResult():
            return check_document(result)
        case rr.RunReport():
            unchecked = []
            if result.stop is not None:
                unchecked.append((file_of(result.stop.site), NOT_RUN, ending(result)))
            return _document(_run_suites(result), None, result.title(), unchecked)
        case m.Report() | DiffReport() | DiffMatrix():
            unsupported(Format.JUNIT, result)
        case _:
            assert_never(result)


def check_document(result: CheckResult, title: str = "gradscope check") -> str:
    """The check result's suites, one per report, in a ``<testsuites>`` named ``title``."""
    return _document([_report_suite(r) for r in result.reports], result.baseline, title)


def _document(
    suites: Sequence[_Suite],
    baseline: str | None,
    title: str,
    unchecked: Sequence[tuple[str, str, str]] = (),
) -> str:
    """The suites in a ``<testsuites>`` named ``title``. Each ``(suite, name, why)`` of
    ``unchecked`` is one more test case, ``<skipped>`` with ``why`` as its message, in the
    suite of that name (made if there is none): what was not looked at is never a pass
    (``gradscope run --stop``: the rest of the program)."""
    root = ET.Element("testsuites", name=title)
    elements = {s.name: _suite(root, s, baseline) for s in suites}
    for name, case_name, why in unchecked:
        suite = elements.get(name)
        if suite is None:
            elements[name] = suite = ET.SubElement(root, "testsuite", name=name, file=name)
        case = ET.Element("testcase", classname=_label(name), name=case_name, time="0")
        ET.SubElement(case, "skipped", message=why)
        notes = suite.find("system-out")  # a suite's notes come after its test cases
        suite.insert(len(suite) if notes is None else list(suite).index(notes), case)
        _count(suite)
    return document(root)


def document(root: ET.Element) -> str:
    """``<testsuites>`` with its counts, as an indented UTF-8 document."""
    _count(root)
    ET.indent(root)
    # XML 1.0 cannot hold most control characters even escaped: write them as \x0c.
    body = printable_xml(ET.tostring(root, encoding="unicode"))
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
