"""Reports for a ``check`` that stopped on bad input (exit 2): the errors, in the report's place.

A CI job that uploads ``gradscope.sarif`` or publishes ``junit.xml`` after the check step
otherwise finds no file at all and fails on that, hiding the reason. These reports carry
every error at its ``FILE:LINE:COLUMN`` (a SARIF result per located error, a JUnit
``<error>`` per error), and say the run did not complete.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from gradscope._src import failure
from gradscope._src.errors import ErrorGroup, GradscopeError, SpecError, SpecErrors
from gradscope._src.report.formats import Format, assert_never

#: The SARIF rule of a spec error.
RULE = {
    "id": "spec-error",
    "name": "InvalidSpec",
    "shortDescription": {"text": "The spec or target could not be read, so nothing was checked."},
    "help": {"text": "Fix the error at this line; gradscope validate lists every one."},
    "defaultConfiguration": {"level": "error"},
}


class Located(NamedTuple):
    """One error: its place when it has one (``path`` None otherwise) and its message."""

    path: str | None
    line: int
    column: int
    message: str


def located(error: GradscopeError) -> list[Located]:
    """Every error in ``error`` (a group, a spec's list, one error), with its place."""
    if isinstance(error, SpecErrors | ErrorGroup):
        return [found for e in error.errors for found in located(e)]
    if isinstance(error, SpecError):
        message = f"{error.field}: {error.message}" if error.field else error.message
        return [Located(error.path, max(error.line, 1), max(error.column, 1), message)]
    return [Located(None, 0, 0, line) for line in error.lines()]


def _sarif_result(error: Located, root: str) -> dict[str, Any]:
    place = {
        "artifactLocation": artifact_of(error.path or "", root),
        "region": {"startLine": error.line, "startColumn": error.column},
    }
    return {
        "ruleId": RULE["id"],
        "ruleIndex": 0,
        "level": "error",
        "message": {"text": error.message},
        "locations": [{"physicalLocation": place}],
    }


def artifact_of(path: str, root: str) -> dict[str, str]:
    from gradscope._src.report.sarif import artifact

    return artifact(path, root)


def sarif(
    error: GradscopeError, source_root: str | None = None, command: str = "check"
) -> dict[str, Any]:
    """A SARIF log with one ``spec-error`` result per located error, the run unsuccessful,
    and the failure as data (``schema/error-v1.json``) in the log's ``properties``."""
    from gradscope._src.errors import entries

    doc = failure.document(command, entries(error), int(error.exit_code))
    return sarif_failure(doc, source_root, located(error))


def sarif_failure(
    doc: dict[str, Any], source_root: str | None = None, errors: list[Located] | None = None
) -> dict[str, Any]:
    """A failure document (``failure.document``) as a SARIF log: a notification per error, a
    result per located one (``errors``: their places and messages, when the exceptions are at
    hand), the run unsuccessful with the process's exit code, ``doc`` in ``properties``."""
    from gradscope._src.report.sarif import SCHEMA, VERSION, base_ids, driver
    from gradscope._src.report.sarif import source_root as default_root

    root = source_root or default_root()
    if errors is None:
        errors = []
        for e in doc["errors"]:
            at = e["location"] or {}
            errors.append(Located(at.get("file"), max(at.get("line", 0), 1),
                                  max(at.get("column", 0), 1), e["message"]))  # fmt: skip
    notes = [
        {"level": "error", "message": {"text": e["message"]}, "descriptor": {"id": e["kind"]}}
        for e in doc["errors"]
    ]
    invocation = {
        "executionSuccessful": False,
        "exitCode": int(doc["error"]["exit_code"]),
        "toolExecutionNotifications": notes,
    }
    run = {
        "tool": {"driver": driver([RULE])},
        "automationDetails": {"id": f"gradscope/{doc['command'] or 'gradscope'}/"},
        "columnKind": "unicodeCodePoints",
        "originalUriBaseIds": base_ids(root),
        "invocations": [invocation],
        "results": [_sarif_result(e, root) for e in errors if e.path is not None],
    }
    return {"$schema": SCHEMA, "version": VERSION, "runs": [run], "properties": doc}


def render(
    error: GradscopeError, fmt: Format | str, *, source_root: str | None = None
) -> str | None:
    """The error report in ``fmt`` (``sarif`` or ``junit``); None for other formats."""
    chosen = Format(fmt)
    match chosen:
        case Format.SARIF:
            from gradscope._src.report.json import dumps

            return dumps(sarif(error, source_root))
        case Format.JUNIT:
            from gradscope._src.report.junit import spec_errors

            return spec_errors(located(error))
        case Format.TABLE | Format.JSON | Format.MARKDOWN | Format.HTML | Format.GITHUB:
            return None
        case _:
            assert_never(chosen)
