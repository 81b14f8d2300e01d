"""A failure as data: the one JSON object a machine-readable command prints instead of its report.

With ``--format json`` (or ``sarif``) a consumer (a CI step, a coding agent) parses standard
output; a failure that only printed a line on standard error would leave it nothing to parse.
Every failure, usage errors included, is then one object valid against ``schema/error-v1.json``:

```json
{"gradscope": 1, "command": "inspect",
 "error": {"kind": "spec", "message": "...", "location": {"file": "m.yaml", "line": 3,
           "column": 7}, "exit_code": 2},
 "errors": [ ...every error, the first being "error"... ]}
```

The exit code stays the documented one; the one-line messages still go to standard error.
Most failures are exceptions the command line catches (``cli/__init__.py``); the few that end
the process from a thread or a signal (``--timeout``, a target calling ``os._exit``) call
:func:`said`, which hands the document to the :data:`SINK` the command line set. This module
sits below every layer and imports nothing of gradscope.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

#: Kinds of failure, each with its exit code (``schema/error-v1.json`` lists the same).
KINDS: dict[str, int] = {
    "usage": 2,  # a bad command line or argument
    "spec": 2,  # an error in a spec, at its line
    "build": 2,  # TensorFlow refused a spec's node
    "target": 2,  # a Python target or program that cannot be imported, called or started
    "timeout": 2,  # --timeout ran out
    "already-watching": 2,  # a second watcher in one process
    "internal": 3,  # gradscope's own failure
    "target-ended": 5,  # a Python target ended the process (sys.exit, os._exit, a crash)
    "interrupted": 130,  # Ctrl-C
}

#: Where a failure said by :func:`said` goes: set by the command line when a machine format is
#: asked for (it renders and writes the document); None: plain lines on standard error only.
SINK: list[Callable[[dict[str, Any]], None] | None] = [None]


def entry(
    kind: str, message: str, exit_code: int, location: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One error: its kind (a key of :data:`KINDS`), its one-line message as printed, where it
    is (``{"file", "line", "column"}``, line and column from 1, 0 when unknown; None when no
    file is to blame) and the process's exit code."""
    return {"kind": kind, "message": message, "location": location, "exit_code": exit_code}


def document(command: str, errors: list[dict[str, Any]], exit_code: int) -> dict[str, Any]:
    """The failure object: the first error as ``error`` (with the process's exit code: a
    group of errors exits with the gravest), every one in ``errors``."""
    return {"gradscope": 1, "command": command, "error": {**errors[0], "exit_code": exit_code},
            "errors": errors}  # fmt: skip


def said(kind: str, message: str, exit_code: int, command: str = "") -> None:
    """Hand a failure that ends the process right away to the command line's :data:`SINK`
    (nothing when no machine format was asked for). Never raises."""
    sink = SINK[0]
    if sink is None:
        return
    with contextlib.suppress(Exception):  # the process is ending: its exit code says it
        sink(document(command, [entry(kind, message, exit_code)], exit_code))
