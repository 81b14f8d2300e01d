"""SARIF 2.1.0 for code-scanning views (GitHub code scanning, VS Code's SARIF viewer).

One run for the whole check. ``tool.driver.rules`` has one rule per problem kind, always all
of the command's kinds in the same order, each with the description and help text of the
registry of kinds (``results/kinds.py``). Each finding (``results/finding.py``: every
result gives its problems as findings) is one result:
``ruleId`` its kind, ``level`` ``error`` (a problem the baseline holds is ``note``, with
``baselineState`` ``unchanged``; new ones are ``new`` when a baseline was given), the message,
and a physical location at the spec line the problem points at (the ``expect`` pattern it
contradicts, or the variable's line). URIs are relative to the source root (``--source-root``;
by default the git repository around the current directory, else the current directory), with
forward slashes, against ``%SRCROOT%``, which ``originalUriBaseIds`` maps to the root's
absolute ``file:`` URI: run from a subfolder, an alert still lands on the repository's file.
``partialFingerprints`` identify a finding by spec, loss, variable and kind, so alerts survive
edits around them.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from gradscope._src.analysis.baseline import spec_key
from gradscope._src.location import Location
from gradscope._src.report import style
from gradscope._src.report.formats import Format, assert_never, unsupported
from gradscope._src.report.json import dumps
from gradscope._src.report.table import ending
from gradscope._src.results import kinds
from gradscope._src.results import report as m
from gradscope._src.results import run as rr
from gradscope._src.results.check import CheckResult
from gradscope._src.results.diff import DiffMatrix, DiffReport
from gradscope._src.results.finding import Finding
from gradscope._src.results.fix import Fix
from gradscope._src.version import __version__

if TYPE_CHECKING:
    from gradscope._src.report.formats import Result

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
VERSION = "2.1.0"

#: Every rule's help ends with where the fix is: in each result (``analysis/fixes.py``).
FIX_HELP = (
    "Each result's message ends with the fix for the pattern gradscope found, at the line to "
    "change (also its related location); where the evidence does not single out one fix, it "
    "lists the candidates."
)


def source_root(start: str | None = None) -> str:
    """The default source root: the nearest folder from ``start`` (the current directory) up
    that holds ``.git`` (a folder, or a file in a worktree), else ``start`` itself."""
    here = Path(start or os.getcwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return str(folder)
    return str(here)


def uri(spec: str, root: str | None = None) -> str:
    """A spec path as a SARIF URI: relative to ``root`` (default: the current directory),
    forward slashes, quoted; an absolute ``file:`` URI when the spec lies outside the root.

    Example:
        >>> uri("./configs/my spec.yaml")
        'configs/my%20spec.yaml'
    """
    path = Path(spec).resolve()  # both sides resolved: a symlinked checkout still matches
    try:
        relative = PurePath(os.path.relpath(path, Path(root or os.getcwd()).resolve()))
    except ValueError:  # another drive on Windows
        return path.resolve().as_uri()
    if relative.parts and relative.parts[0] == "..":  # outside the source root: absolute
        return path.resolve().as_uri()
    return quote(relative.as_posix(), safe="/")


def artifact(spec: str, root: str | None = None) -> dict[str, str]:
    """A SARIF artifactLocation: relative to ``%SRCROOT%``, or an absolute ``file:`` URI."""
    found = uri(spec, root)
    return {"uri": found} if found.startswith("file:") else {"uri": found, "uriBaseId": "%SRCROOT%"}


def base_ids(root: str) -> dict[str, Any]:
    """``originalUriBaseIds``: ``%SRCROOT%`` as the root's absolute ``file:`` URI."""
    return {"%SRCROOT%": {"uri": Path(root).resolve().as_uri().rstrip("/") + "/",
                          "description": {"text": "The source root (--source-root)."}}}  # fmt: skip


def driver(rules: list[dict[str, Any]]) -> dict[str, Any]:
    """``tool.driver``: gradscope, its version, the rules."""
    return {"name": "gradscope", "version": __version__, "semanticVersion": __version__,
            "rules": rules}  # fmt: skip


def _kinds(findings: Sequence[Finding], listed: Sequence[str]) -> list[str]:
    """Every kind ``listed`` (the command's), then the other kinds the findings hold (a
    timeline's), in the registry's order."""
    found = {str(f.kind) for f in findings}
    return [*listed, *(k for k in kinds.KINDS if k in found and k not in listed)]


def _rules(listed: list[str]) -> list[dict[str, Any]]:
    out = []
    for kind_id in listed:
        kind = kinds.kind(kind_id)
        text = f"{kind.help} {FIX_HELP}"
        out.append({
            "id": kind.id,
            "name": kind.rule,
            "shortDescription": {"text": kind.short},
            "fullDescription": {"text": f"{kind.short} {text}"},
            "help": {"text": text, "markdown": text},
            "defaultConfiguration": {"level": "error"},
            "properties": {"tags": ["gradients", "tensorflow"], "precision": "very-high"},
        })  # fmt: skip
    return out


def _result(f: Finding, with_baseline: bool, root: str, kinds: list[str]) -> dict[str, Any]:
    location = {
        "physicalLocation": {
            "artifactLocation": artifact(f.file, root),
            "region": {"startLine": f.line},
        }
    }
    out: dict[str, Any] = {
        "ruleId": f.kind,
        "ruleIndex": kinds.index(f.kind),
        "level": "note" if f.known else "error",
        "message": {"text": f.with_fix()},
        "locations": [location],
        "partialFingerprints": {"gradscopeProblem/v1": _fingerprint(f)},
        "properties": {
            "loss": f.loss,
            "variable": f.variable,
            "cutPoints": [c.to_dict() for c in f.cut_points],
            "fix": None if f.fix is None else f.fix.to_dict(),
        },
    }
    fix_at = _fix_location(f, root)
    if fix_at is not None:
        out["relatedLocations"] = [fix_at]
    if f.fix is not None and f.fix.edit is not None:
        out["fixes"] = [_fix(f.fix, root)]
    if with_baseline:
        out["baselineState"] = "unchanged" if f.known else "new"
    return out


def _fix_location(f: Finding, root: str) -> dict[str, Any] | None:
    """The line the fix changes, when it names one (a related location, labelled)."""
    at = Location.parse(f.fix.where) if f.fix is not None else None
    if f.fix is None or at is None:
        return None
    return {
        "id": 0,
        "physicalLocation": {"artifactLocation": artifact(at.file, root),
                             "region": {"startLine": max(at.line, 1)}},
        "message": {"text": f"fix ({f.fix.kind}) here"},
    }  # fmt: skip


def _fix(fix: Fix, root: str) -> dict[str, Any]:
    """A fix that is a text edit as SARIF's ``fix``: replace the edit's whole lines (a region
    without columns is whole lines, their last newline kept) by its new text."""
    assert fix.edit is not None
    edit = fix.edit
    region = {"startLine": edit.start_line, "endLine": edit.end_line}
    return {
        "description": {"text": fix.text},
        "artifactChanges": [{
            "artifactLocation": artifact(edit.file, root),
            "replacements": [{"deletedRegion": region, "insertedContent": {"text": edit.new}}],
        }],
    }  # fmt: skip


def _fingerprint(f: Finding) -> str:
    """What identifies a finding across edits around it: its report (as baselines compare
    it), loss, variable and kind."""
    report, loss, variable, kind = f.key()
    text = "\0".join(str(part) for part in (spec_key(report), loss, variable, kind))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def to_sarif(
    result: CheckResult,
    root: str | None = None,
    *,
    listed: Sequence[str] = kinds.CHECK,
    automation: str = "gradscope/check/",
) -> dict[str, Any]:
    """The check's SARIF log as a dictionary; URIs relative to ``root`` (default:
    ``source_root()``).

    Args:
        result: the check.
        root: the source root.
        listed: the kinds whose rules are always listed, in order (the command's: check's
            by default); their words are the registry's (``results/kinds.py``).
        automation: ``automationDetails.id``, which tells code scanning the analyses apart.
    """
    first = result.reports[0] if result.reports else None
    notes = [
        f"{r.spec}: {f'{loss}: ' if loss else ''}{note}"
        for r in result.reports
        for loss, note in style.note_rows(r)
    ]
    return log(
        result.findings(),
        [r.spec for r in result.reports],
        notes,
        exit_code=int(result.exit_code),
        tensorflow=first.tensorflow if first else None,
        baseline=result.baseline is not None,
        root=root,
        listed=listed,
        automation=automation,
    )


def log(
    findings: Sequence[Finding],
    files: Sequence[str],
    notes: Sequence[str],
    *,
    exit_code: int,
    tensorflow: str | None,
    baseline: bool = False,
    root: str | None = None,
    listed: Sequence[str] = kinds.CHECK,
    automation: str = "gradscope/check/",
) -> dict[str, Any]:
    """A SARIF log of any result, from its findings: one run, one result per finding, the
    ``files`` it covers as artifacts, every note a notification (``to_sarif`` for the
    arguments; ``baseline``: the findings were held to one)."""
    root = root or source_root()
    ids = _kinds(findings, listed)
    run: dict[str, Any] = {
        "tool": {"driver": driver(_rules(ids))},
        "automationDetails": {"id": automation},
        "columnKind": "unicodeCodePoints",
        "originalUriBaseIds": base_ids(root),
        "invocations": [
            {
                "executionSuccessful": True,
                "exitCode": exit_code,
                # every note in every format: SARIF's place for what a tool wants read
                "toolExecutionNotifications": [
                    {"level": "note", "message": {"text": text}} for text in notes
                ],
            }
        ],
        "artifacts": [{"location": artifact(path, root)} for path in files],
        "results": [_result(f, baseline, root, ids) for f in findings],
        "properties": {"tensorflow": tensorflow},
    }
    return {"$schema": SCHEMA, "version": VERSION, "runs": [run]}


def render(
    result: Result, *, color: bool = False, width: int = 120, source_root: str | None = None
) -> str:
    """A check result, or a run drawn as one, as a SARIF 2.1.0 log (JSON), URIs relative to
    ``source_root``."""
    match result:
        case CheckResult():
            return dumps(to_sarif(result, source_root))
        case rr.RunReport():
            return _run(result, source_root)
        case m.Report() | DiffReport() | DiffMatrix():
            unsupported(Format.SARIF, result)
        case _:
            assert_never(result)


def _run(report: rr.RunReport, source_root: str | None) -> str:
    """The run from its findings: one result per problem at its call site's line, the rules
    of the kinds ``run`` reports, one artifact per file holding a call site, the command line
    and exit code as the invocation's; a run ``--stop`` stopped says so in a warning, the
    invocation's first notification."""
    files = report.files()
    notes = [f"{path}: {c.label}: {note}" for path, calls in files.items() for c in calls
             for note in c.notes]  # fmt: skip
    found = report.findings()
    # the code gradscope run returns: 4 when the program raised, 130 interrupted, not only
    # the findings' 0 or 1 (a pipeline reading the log sees how the run ended)
    sarif = log(found, list(files), notes, exit_code=report.exit_code,
                tensorflow=report.tensorflow if files else None, root=source_root,
                listed=kinds.RUN, automation="gradscope/run/")  # fmt: skip
    (run,) = sarif["runs"]
    invocation = run["invocations"][0]
    invocation["commandLine"] = report.title()
    if report.stop is not None:  # what did not run was not watched: never a quiet pass
        invocation["toolExecutionNotifications"].insert(0, {
            "level": "warning",
            "descriptor": {"id": "stopped"},
            "message": {"text": f"gradscope run: {ending(report)}"},
        })  # fmt: skip
    run["automationDetails"]["description"] = {"text": report.title()}
    return dumps(sarif)
