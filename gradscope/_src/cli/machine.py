"""Failures as data: with ``--format json`` or ``sarif``, every failure is one JSON object where
the report would be (``failure.py`` says what it holds; ``schema/error-v1.json`` its schema).

The format is read from the command line as given, before (or without) click parsing it, so
a usage error click raises (a missing argument, a bad option value) is data too. Standard error
keeps its one-line messages; the exit code stays the documented one.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any, NamedTuple

import click

from gradscope._src import failure
from gradscope._src.cli.commands import COMMANDS

#: The formats a program reads: a failure in them is a JSON object.
MACHINE = ("json", "sarif")


class Wanted(NamedTuple):
    """What the command line asks for: the command, its format and its ``--output``."""

    command: str
    fmt: str
    output: str | None
    source_root: str | None = None  # SARIF's %SRCROOT% (check --source-root)


def wanted(args: Sequence[str]) -> Wanted | None:
    """The machine format ``args`` (``gradscope``'s arguments) ask for, or None.

    Options are read up to ``--`` and, for ``run``, up to the program (its own ``--format``
    is the program's). An option that takes a value skips it (``--loss --format``).

    Example:
        >>> wanted(["inspect", "m.yaml", "--format", "json"])
        Wanted(command='inspect', fmt='json', output=None)
    """
    words = list(args)
    while words and words[0].startswith("-"):  # the group's own flags (--traceback)
        words.pop(0)
    if not words:
        return None
    command, rest = words[0], words[1:]
    # ``--format`` takes a value even where the command has no such option (``validate``,
    # ``plot``): that usage error is then data too, on standard output (its ``--output``, a
    # picture's, is never a failure's)
    own = _value_options(command)
    takes = own | {"--format"}
    fmt, output, root, i = None, None, None, 0
    while i < len(rest):
        word = rest[i]
        if word == "--":
            break
        name, eq, value = word.partition("=")
        if not word.startswith("-"):
            if command == "run":  # the program and its arguments
                break
            i += 1
            continue
        if not eq and name in takes and i + 1 < len(rest):
            value, i = rest[i + 1], i + 1
        if name == "--format":
            fmt = value
        elif name in ("--output", "-o"):
            output = value
        elif name == "--source-root":
            root = value
        i += 1
    if "--format" not in own:
        output = None
    return Wanted(command, fmt, output, root) if fmt in MACHINE else None


def _value_options(command: str) -> set[str]:
    """The options of ``command`` that take a value (every option name, when unknown)."""
    entry = COMMANDS.get(command)
    if entry is None:
        return {"--format", "--output", "-o"}
    try:
        cmd = getattr(importlib.import_module(entry.module), command)
    except Exception:  # a command that cannot load: its failure is said as any other
        return {"--format", "--output", "-o"}
    return {
        name
        for p in cmd.params
        if isinstance(p, click.Option) and not p.is_flag and not p.count
        for name in p.opts
    }


def render(doc: dict[str, Any], want: Wanted, error: Any = None) -> str:
    """The failure in ``want``'s format: the document itself (json) or a SARIF log holding it
    (a result per located error: ``error``'s, when the exception is at hand)."""
    from gradscope._src.report import failed
    from gradscope._src.report.json import dumps

    if want.fmt == "sarif":
        places = failed.located(error) if error is not None else None
        return dumps(failed.sarif_failure(doc, want.source_root, places))
    return dumps(doc)


def emit(doc: dict[str, Any], want: Wanted, error: Any = None, fd: int | None = None) -> None:
    """Write the failure on the stream the report goes to when it has no file: standard
    output (``run``: standard error, where its report goes), or ``fd`` when given (the stream
    as it was when the command started: a target may have pointed standard output
    elsewhere). A failed command writes ``--output`` only with ``--format sarif``: the SARIF
    log a CI upload step reads, marked unsuccessful; any other file there keeps its previous
    bytes (an earlier report is never lost to a failure), and the exit code says the command
    failed."""
    text = render(doc, want, error)
    text = text if text.endswith("\n") else text + "\n"
    output = want.output if want.output != "-" else None
    if output and want.fmt == "sarif" and doc["error"]["exit_code"] != 130:
        from gradscope._src.cli.output import write_atomic
        from gradscope._src.errors import GradscopeError

        with contextlib.suppress(GradscopeError):
            write_atomic(output, text)  # the SARIF log a CI upload step reads, failed
            return
    if fd is not None:
        with contextlib.suppress(OSError):
            os.write(fd, text.encode("utf-8", "backslashreplace"))
        return
    stream = sys.stderr if _to_stderr(want) else sys.stdout
    stream.write(text)
    stream.flush()


def _to_stderr(want: Wanted) -> bool:
    return want.command == "run" and want.output != "-"


def of_error(error: Any, want: Wanted) -> None:
    """Emit a gradscope error (any ``GradscopeError``) as data."""
    from gradscope._src.cli.wording import error_lines
    from gradscope._src.errors import entries

    found = entries(error)
    for entry, line in zip(found, error_lines(error, want.command), strict=True):
        entry["message"] = line  # as standard error says it
    emit(failure.document(want.command, found, int(error.exit_code)), want, error)


def of_click(exc: click.ClickException, want: Wanted) -> None:
    """Emit a usage error click raised (its message, exit code 2)."""
    message = " ".join(exc.format_message().split())
    said = f"gradscope {want.command}" if want.command in COMMANDS else "gradscope"
    entry = failure.entry("usage", f"{said}: {message}", exc.exit_code)
    emit(failure.document(want.command, [entry], exc.exit_code), want)


def of(kind: str, message: str, code: int, want: Wanted) -> None:
    """Emit one failure of ``kind`` (an internal error, an interrupt)."""
    emit(failure.document(want.command, [failure.entry(kind, message, code)], code), want)


def sink(want: Wanted | None) -> None:
    """Where a failure that ends the process at once goes (``failure.said``): a copy of the
    stream the report goes to, taken now (None: no sink; the copy is closed)."""
    if _FD[0] is not None:
        with contextlib.suppress(OSError):
            os.close(_FD[0])
        _FD[0] = None
    failure.SINK[0] = None
    if want is None:
        return
    try:
        _FD[0] = fd = os.dup(2 if _to_stderr(want) else 1)
    except OSError:  # no such stream: nothing can be said there
        return
    failure.SINK[0] = lambda doc: emit(
        {**doc, "command": doc["command"] or want.command}, want, fd=fd
    )


#: The stream copy the sink writes to.
_FD: list[int | None] = [None]
