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
``gradscope run`` is drawn as a check (``run_check.py``: one suite per file holding a call
site, one test case per call and source), its ``<testsuites>`` named by the command.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import PurePath
from typing import TYPE_CHECKING

from gradscope.report import style
from gradscope.report.formats import Format, assert_never, unsupported
from gradscope.report.run_check import as_check, file_of, title
from gradscope.report.table import ending
from gradscope.results import report as m
from gradscope.results import run as rr
from gradscope.results import words
from gradscope.results.check import CheckResult
from gradscope.results.diff import DiffMatrix, DiffReport
from gradscope.results.location import Location

if TYPE_CHECKING:
    from gradscope.report.formats import Result

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
    lines = [f"at: {problem.spec}:{problem.line}", problem.message, f"kind: {problem.kind}"]
    lines += [f"cut at: {words.cut_text(c)}" for c in problem.cut_points]
    lines += [f"fix: {problem.fix.sentence()}"] if problem.fix is not None else []
    failure.text = "\n".join(lines)


def _case(suite: ET.Element, classname: str, name: str) -> ET.Element:
    return ET.SubElement(suite, "testcase", classname=classname, name=name, time="0")


def _at(problem: m.Problem, report: m.Report) -> str:
    """Where a problem points: its own file (a timeline's program, a target's module), which
    need not be the report's."""
    return f"{problem.spec or report.spec}:{problem.line}"


def _source(source: str, spec: str) -> str:
    """A loss's or a variable's ``FILE:LINE`` source as written; line 1 of ``spec`` if none."""
    return str(Location.at(source, spec))


def _pair_text(pair: m.PairResult, where: str) -> str:
    text = f"at: {where}\nstatus: {pair.status}"
    if pair.norm is not None:
        text += f", norm {style.number(pair.norm)}"
    return text + "".join(f"\ncut at: {words.cut_text(c)}" for c in pair.cut_points)


def _suite(parent: ET.Element, report: m.Report, baseline: str | None) -> ET.Element:
    suite = ET.SubElement(parent, "testsuite", name=report.spec, file=report.spec)
    props = ET.SubElement(suite, "properties")
    for key, value in (("name", report.name or ""), ("tensorflow", report.tensorflow),
                       ("device", report.device)):  # fmt: skip
        ET.SubElement(props, "property", name=key, value=value)
    by_pair: dict[tuple[str | None, str | None], m.Problem] = {}
    for p in report.problems:
        by_pair.setdefault((p.loss, p.variable), p)
    label = _label(report.spec)
    placed: set[int] = set()
    for loss, pair in report.pairs():
        problem = by_pair.get((loss.name, pair.variable))
        placed |= {id(problem)} if problem else set()
        where = _at(problem, report) if problem else _source(loss.source, report.spec)
        case = _case(suite, f"{label}.{loss.name}", pair.variable)
        _outcome(case, problem, baseline)
        ET.SubElement(case, "system-out").text = _pair_text(pair, where)
    for v in report.variables:
        if v.trainable:
            case = _case(suite, f"{label}.{ANY_LOSS}", v.name)
            problem = by_pair.get((None, v.name))
            placed |= {id(problem)} if problem else set()
            _outcome(case, problem, baseline)
            ET.SubElement(case, "system-out").text = f"at: {_source(v.source, report.spec)}"
    for p in report.problems:  # a second problem of a pair, or one about a whole loss
        if id(p) not in placed:
            name = f"{p.variable or 'every variable'}: {p.kind}"
            case = _case(suite, f"{label}.{p.loss or ANY_LOSS}", name)
            _outcome(case, p, baseline)
            ET.SubElement(case, "system-out").text = f"at: {_at(p, report)}"
    notes = [f"{f'{loss}: ' if loss else ''}{note}" for loss, note in style.note_rows(report)]
    if notes:  # every note in every format (a JUnit viewer shows a suite's system-out)
        ET.SubElement(suite, "system-out").text = "\n".join(f"note: {n}" for n in notes)
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


#: The test case a run ``--stop`` stopped adds, skipped: the rest of the program.
NOT_RUN = "the rest of the program (not run: stopped by --stop)"


def render(result: Result, *, color: bool = False, width: int = 120) -> str:
    """A check result, or a run drawn as one, as a JUnit XML document (UTF-8, with an XML
    declaration). A run ``--stop`` stopped has one more test case, skipped, in the suite of
    the site where it stopped (what did not run was not watched: never a plain pass)."""
    match result:
        case CheckResult():
            return check_document(result)
        case rr.RunReport():
            unchecked = []
            if result.stop is not None:
                unchecked.append((file_of(result.stop.site), NOT_RUN, ending(result)))
            return check_document(as_check(result), title=title(result), unchecked=unchecked)
        case m.Report() | DiffReport() | DiffMatrix():
            unsupported(Format.JUNIT, result)
        case _:
            assert_never(result)


def check_document(
    result: CheckResult,
    title: str = "gradscope check",
    unchecked: Sequence[tuple[str, str, str]] = (),
) -> str:
    """The check result's suites in a ``<testsuites>`` named ``title``. Each ``(suite, name,
    why)`` of ``unchecked`` is one more test case, ``<skipped>`` with ``why`` as its
    message, in the suite of that name (made if there is none): what was not looked at is
    never a pass (``gradscope run --stop``: the rest of the program)."""
    root = ET.Element("testsuites", name=title)
    suites = {report.spec: _suite(root, report, result.baseline) for report in result.reports}
    for name, case_name, why in unchecked:
        suite = suites.get(name)
        if suite is None:
            suites[name] = suite = ET.SubElement(root, "testsuite", name=name, file=name)
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
