"""One style for every error a command prints: ``FILE:LINE:COLUMN: ...`` where a spec line is
to blame, ``gradscope COMMAND: ...`` for everything else (a missing file, an unknown loss, a
target that cannot be imported, a file that cannot be written)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from gradscope.errors import ErrorGroup, GradscopeError, SpecError, SpecErrors, visible


def error_lines(error: GradscopeError, command: str | None) -> list[str]:
    """The lines to print for ``error``, each one line, in the one style.

    Example:
        >>> from gradscope.errors import UsageError
        >>> error_lines(UsageError("configs/x.yaml: unknown loss 'l'"), "diff")
        ["gradscope diff: configs/x.yaml: unknown loss 'l'"]
    """
    prefix = f"gradscope {command}: " if command else "gradscope: "
    placed = re.compile(r"^\S+:\d+:\d+: ")  # a baseline's JSON error is located too
    out = []
    for each in _flat(error):
        located = isinstance(each, SpecError) and each.line > 0
        for line in each.lines():
            line = visible(" ".join(line.split()))
            if not (located or placed.match(line) or line.startswith("gradscope")):
                line = prefix + line
            out.append(line)
    return out


def _flat(error: GradscopeError) -> Iterator[GradscopeError]:
    if isinstance(error, SpecErrors | ErrorGroup):
        for each in error.errors:
            yield from _flat(each)
    else:
        yield error
