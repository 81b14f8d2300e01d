"""gradscope's one exception tree and its exit codes."""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from gradscope._src import failure
from gradscope._src.location import Location


class ExitCode(enum.IntEnum):
    """What the ``gradscope`` process returns; the README has the same table."""

    OK = 0
    """The command did its work (``check``: no unexpected gradients)."""
    PROBLEMS = 1
    """``check`` found unexpected gradients (nan, a contradicted ``expect``, never trained)."""
    USAGE = 2
    """A bad spec, a bad target or a bad command line; or a program or target that computes
    its gradients with PyTorch (gradscope watches TensorFlow and JAX: refused at once)."""
    INTERNAL = 3
    """gradscope itself failed; re-run with ``--traceback`` and report it."""
    PROGRAM_RAISED = 4
    """``run``: the watched program raised; its traceback and the report so far are shown."""
    TARGET_ENDED = 5
    """A Python target's code ended the process (``sys.exit``, ``os._exit``, a
    ``BaseException``, a crash such as a segfault) or left threads running: nothing, or not
    everything, was checked."""
    INTERRUPTED = 130
    """Stopped by Ctrl-C; no output file was touched."""


class GradscopeError(Exception):
    """Base of every error gradscope raises on purpose."""

    exit_code: ExitCode = ExitCode.USAGE
    #: What failed, as ``--format json`` names it (a key of ``failure.KINDS``).
    kind: str = "usage"

    def lines(self) -> list[str]:
        """The one-line messages to print, one per problem."""
        return [str(self)]


def visible(text: str) -> str:
    r"""``text`` with every character that is not printable escaped (``\r``, ``\x1b``, ...):
    a message is one line, and never moves a terminal's cursor or changes its colours.

    Example:
        >>> visible("variables.\r\x1b[31m")
        'variables.\\r\\x1b[31m'
    """
    if text.isprintable():
        return text
    return "".join(
        c if c.isprintable() or c == " " else c.encode("unicode_escape").decode() for c in text
    )


def shorten(text: str, limit: int) -> str:
    """``text``, or its start and end around a count of what was left out when it is longer
    than ``limit`` (a 900 KB op name stays a readable line).

    Example:
        >>> shorten("a" * 1000, 40)
        'aaaaaaaaaaaaaaaaaaaaaaaaaa[... 961 characters ...]aaaaaaaaaaaaa'
    """
    if len(text) <= limit:
        return text
    head, tail = limit * 2 // 3, limit // 3
    return f"{text[:head]}[... {len(text) - head - tail} characters ...]{text[-tail:]}"


class SpecError(GradscopeError):
    """One problem in a spec, at a file, line and column (a :class:`Location`; line 0 is the
    file as a whole: a missing file has no line 1), naming the field.

    The message reads ``FILE:LINE:COLUMN: <field>: <what was expected>, saw <what was there>``
    (``FILE: ...`` for the file as a whole), the location as :class:`Location` writes it.
    """

    kind = "spec"

    def __init__(self, location: Location, field: str, message: str) -> None:
        self.location = location
        self.field = shorten(visible(field), 200)  # keys of the spec: they may hold "\r"
        self.message = shorten(visible(" ".join(message.split())), 600)  # always one line
        prefix = f"{self.field}: " if field else ""
        super().__init__(f"{location}: {prefix}{self.message}")

    @property
    def path(self) -> str:
        return self.location.file

    @property
    def line(self) -> int:
        return self.location.line

    @property
    def column(self) -> int:
        return self.location.column


class SpecErrors(GradscopeError):
    """Every problem found in one or more specs, reported together."""

    def __init__(self, errors: Sequence[SpecError]) -> None:
        if not errors:
            raise ValueError("SpecErrors needs at least one error")
        self.errors = tuple(errors)
        super().__init__("\n".join(str(e) for e in self.errors))

    def lines(self) -> list[str]:
        return [str(e) for e in self.errors]

    @classmethod
    def merge(cls, groups: Iterable[SpecErrors]) -> SpecErrors:
        return cls([e for g in groups for e in g.errors])


class ErrorGroup(GradscopeError):
    """Errors of several targets (specs, Python targets) reported together, one line each."""

    def __init__(self, errors: Sequence[GradscopeError]) -> None:
        if not errors:
            raise ValueError("ErrorGroup needs at least one error")
        self.errors = tuple(errors)
        self.exit_code = max(e.exit_code for e in self.errors)
        super().__init__("\n".join(line for e in self.errors for line in e.lines()))

    def lines(self) -> list[str]:
        return [line for e in self.errors for line in e.lines()]


class BuildError(SpecError):
    """TensorFlow refused a node while building or differentiating a spec."""

    kind = "build"


class TargetError(GradscopeError):
    """A Python target could not be imported, called or understood."""

    kind = "target"

    def __init__(self, message: str, *, cause: BaseException | None = None) -> None:
        self.cause = cause
        super().__init__(" ".join(message.split()))


class UsageError(GradscopeError):
    """A command-line or API argument that makes no sense (an unknown loss name, ...)."""


class ArgumentTypeError(UsageError, TypeError):
    """A public argument of the wrong type: a :class:`UsageError`, and the ``TypeError`` a
    Python function raises for it (``gradscope.keras.Monitor(every="10")``)."""


class ArgumentValueError(UsageError, ValueError):
    """A public argument of the right type and a wrong value: a :class:`UsageError`, and the
    ``ValueError`` a Python function raises for it (``Monitor(every=0)``)."""


class AlreadyWatching(UsageError):
    """No longer raised: a ``gradscope.watch()`` block inside another watch (another block,
    another thread's, ``gradscope run``, ``pytest --gradscope``) joins it. Kept so that a
    program that catches it still imports it."""

    kind = "already-watching"


class InternalError(GradscopeError):
    """gradscope's own failure: never the user's fault."""

    exit_code = ExitCode.INTERNAL
    kind = "internal"


#: ``FILE:LINE[:COLUMN]: `` at the start of a message: where it is, when no field says it.
_PLACED = re.compile(r"^(\S+?):(\d+)(?::(\d+))?: ")


def flat(error: GradscopeError) -> Iterator[GradscopeError]:
    """Every single error in ``error`` (a group, a spec's list, one error), in order."""
    if isinstance(error, SpecErrors | ErrorGroup):
        for each in error.errors:
            yield from flat(each)
    else:
        yield error


def entries(error: GradscopeError) -> list[dict[str, Any]]:
    """``error`` as data: one ``failure.entry`` per message, each with its kind, its place
    (a spec error's location; else a leading ``FILE:LINE`` of its message) and exit code."""
    out = []
    for each in flat(error):
        for line in each.lines():
            line = visible(" ".join(line.split()))
            place: dict[str, Any] | None = None
            if isinstance(each, SpecError):
                at = each.location
                place = {"file": at.file, "line": at.line, "column": at.column}
            elif (found := _PLACED.match(line)) is not None:
                place = {"file": found[1], "line": int(found[2]), "column": int(found[3] or 0)}
            out.append(failure.entry(each.kind, line, int(each.exit_code), place))
    return out
