"""SARIF 2.1.0 for code-scanning views (GitHub code scanning, VS Code's SARIF viewer).

One run for the whole check. ``tool.driver.rules`` has one rule per problem kind, always all
of the command's kinds in the same order, each with the description and help text of the
registry of kinds (``results/kinds.py``). Each problem is one result:
``ruleId`` its kind, ``level`` ``error`` (a problem the baseline holds is ``note``, with
``baselineState`` ``unchanged``; new ones are ``new`` when a baseline was given), the message,
and a physical location at the spec line the problem points at (the ``expect`` pattern it
contradicts, or the variable's line). URIs are relative to the source root (``--source-root``;
by default the git repository around the current directory, else the current directory), with
forward slashes, against ``%SRCROOT%``, which ``originalUriBaseIds`` maps to the root's
absolute ``file:`` URI: run from a subfolder, an alert still lands on the repository's file.
``partialFingerprints`` identify a problem by spec, loss, variable and kind, so alerts survive
edits around them.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from gradscope.analysis.baseline import key_of
from gradscope.report import style
from gradscope.report.formats import Format, assert_never, unsupported
from gradscope.report.json import dumps
from gradscope.report.run_check import as_check, title
from gradscope.report.table import ending
from gradscope.results import kinds
from gradscope.results import report as m
from gradscope.results import run as rr
from gradscope.results.check import CheckResult
from gradscope.results.diff import DiffMatrix, DiffReport
from gradscope.results.location import Location
from gradscope.version import __version__

if TYPE_CHECKING:
    from gradscope.report.formats import Result

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


def _kinds(result: CheckResult, listed: Sequence[str]) -> list[str]:
    """Every kind ``listed`` (the command's), then the other kinds the result holds (a
    timeline's), in the registry's order."""
    found = {str(p.kind) for p in result.problems}
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


def _result(
    p: m.Problem, spec: str, with_baseline: bool, root: str, kinds: list[str]
) -> dict[str, Any]:
    location = {
        "physicalLocation": {
            "artifactLocation": artifact(p.spec, root),
            "region": {"startLine": max(p.line, 1)},
        }
    }
    out: dict[str, Any] = {
        "ruleId": p.kind,
        "ruleIndex": kinds.index(p.kind),
        "level": "note" if p.known else "error",
        "message": {"text": p.message if p.fix is None else f"{p.message} Fix: {p.fix.sentence()}"},
        "locations": [location],
        "partialFingerprints": {"gradscopeProblem/v1": _fingerprint(p, spec)},
        "properties": {
            "loss": p.loss,
            "variable": p.variable,
            "cutPoints": [c.to_dict() for c in p.cut_points],
            "fix": None if p.fix is None else p.fix.to_dict(),
        },
    }
    fix_at = _fix_location(p, root)
    if fix_at is not None:
        out["relatedLocations"] = [fix_at]
    if with_baseline:
        out["baselineState"] = "unchanged" if p.known else "new"
    return out


def _fix_location(p: m.Problem, root: str) -> dict[str, Any] | None:
    """The line the fix changes, when it names one (a related location, labelled)."""
    at = Location.parse(p.fix.where) if p.fix is not None else None
    if p.fix is None or at is None:
        return None
    return {
        "id": 0,
        "physicalLocation": {"artifactLocation": artifact(at.file, root),
                             "region": {"startLine": max(at.line, 1)}},
        "message": {"text": f"fix ({p.fix.kind}) here"},
    }  # fmt: skip


def _fingerprint(p: m.Problem, spec: str) -> str:
    text = "\0".join(str(part) for part in key_of(p, spec))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def to_sarif(
    result: CheckResult,
    root: str | None = None,
    *,
    listed: Sequence[str] = kinds.CHECK,
    automation: str = "gradscope/check/",
) -> dict[str, Any]:
    """The SARIF log as a dictionary; URIs relative to ``root`` (default: ``source_root()``).

    Args:
        result: the check (or a run drawn as one, ``render``).
        root: the source root.
        listed: the kinds whose rules are always listed, in order (the command's: check's
            by default); their words are the registry's (``results/kinds.py``).
        automation: ``automationDetails.id``, which tells code scanning the analyses apart.
    """
    root = root or source_root()
    first = result.reports[0] if result.reports else None
    ids = _kinds(result, listed)
    run: dict[str, Any] = {
        "tool": {"driver": driver(_rules(ids))},
        "automationDetails": {"id": automation},
        "columnKind": "unicodeCodePoints",
        "originalUriBaseIds": base_ids(root),
        "invocations": [
            {
                "executionSuccessful": True,
                "exitCode": int(result.exit_code),
                # every note in every format: SARIF's place for what a tool wants read
                "toolExecutionNotifications": _notifications(result),
            }
        ],
        "artifacts": [{"location": artifact(r.spec, root)} for r in result.reports],
        "results": [
            _result(p, r.spec, result.baseline is not None, root, ids)
            for r in result.reports
            for p in r.problems
        ],
        "properties": {"tensorflow": first.tensorflow if first else None},
    }
    return {"$schema": SCHEMA, "version": VERSION, "runs": [run]}


def _notifications(result: CheckResult) -> list[dict[str, Any]]:
    return [
        {
            "level": "note",
            "message": {"text": f"{r.spec}: {f'{loss}: ' if loss else ''}{note}"},
        }
        for r in result.reports
        for loss, note in style.note_rows(r)
    ]


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
    """The run, drawn as a check: one result per problem at its call site's line, the rules
    of the kinds ``run`` reports, the command line as the invocation's; a run ``--stop``
    stopped says so in a warning, the invocation's first notification."""
    log = to_sarif(as_check(report), source_root, listed=kinds.RUN,
                   automation="gradscope/run/")  # fmt: skip
    (run,) = log["runs"]
    invocation = run["invocations"][0]
    invocation["commandLine"] = title(report)
    if report.stop is not None:  # what did not run was not watched: never a quiet pass
        invocation["toolExecutionNotifications"].insert(0, {
            "level": "warning",
            "descriptor": {"id": "stopped"},
            "message": {"text": f"gradscope run: {ending(report)}"},
        })  # fmt: skip
    run["automationDetails"]["description"] = {"text": title(report)}
    return dumps(log)
