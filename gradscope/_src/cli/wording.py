"""One style for every error a command prints: ``FILE:LINE:COLUMN: ...`` where a spec line is
to blame, ``gradscope COMMAND: ...`` for everything else (a missing file, an unknown loss, a
target that cannot be imported, a file that cannot be written)."""

from __future__ import annotations

import re

from gradscope._src.errors import ExitCode, GradscopeError, SpecError, flat, visible


def error_lines(error: GradscopeError, command: str | None) -> list[str]:
    """The lines to print for ``error``, each one line, in the one style.

    Example:
        >>> from gradscope._src.errors import UsageError
        >>> error_lines(UsageError("configs/x.yaml: unknown loss 'l'"), "diff")
        ["gradscope diff: configs/x.yaml: unknown loss 'l'"]
    """
    prefix = f"gradscope {command}: " if command else "gradscope: "
    placed = re.compile(r"^\S+:\d+:\d+: ")  # a baseline's JSON error is located too
    out = []
    for each in flat(error):
        located = isinstance(each, SpecError) and each.line > 0
        for line in each.lines():
            line = visible(" ".join(line.split()))
            if not (located or placed.match(line) or line.startswith("gradscope")):
                line = prefix + line
            out.append(line)
    return out


#: An exit code's meaning where every command that returns it means the same.
SHARED_EXITS: dict[int, str] = {
    ExitCode.INTERNAL: "gradscope's own failure (re-run with --traceback)",
    ExitCode.TARGET_ENDED: "a Python target's code ended the process (sys.exit, os._exit, a crash)",
    ExitCode.INTERRUPTED: "interrupted (Ctrl-C); no output file was touched",
}


def exit_codes(*rows: int | tuple[int, str]) -> str:
    """The "Exit codes:" section of a command's ``--help``, one row per code: a code alone
    takes its :data:`SHARED_EXITS` meaning, a ``(code, text)`` its command's own (a text's
    further lines are indented under the first).

    Example:
        >>> print(exit_codes((ExitCode.OK, "done"), ExitCode.INTERNAL))
        \b
        Exit codes:
          0    done
          3    gradscope's own failure (re-run with --traceback)
    """
    lines = ["\b", "Exit codes:"]
    for row in rows:
        code, text = (row, SHARED_EXITS[row]) if isinstance(row, int) else row
        first, *more = text.split("\n")
        lines.append(f"  {int(code):<5}{first}")
        lines += [f"{'':7}{line}" for line in more]
    return "\n".join(lines)
