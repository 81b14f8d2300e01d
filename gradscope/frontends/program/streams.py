"""gradscope's own standard streams and working directory, kept from before the program ran.

A program may close ``sys.stdout``, point ``sys.stderr`` at its log, or ``chdir``; what
gradscope writes after it (the report, its errors) still goes to the streams gradscope was
started with, and its relative paths still mean what they meant then.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO


class Held:
    """``sys.stdout`` and ``sys.stderr`` as they are now, with their file descriptors."""

    def __init__(self) -> None:
        self.saved = {name: (getattr(sys, name), _fileno(getattr(sys, name)))
                      for name in ("stdout", "stderr")}  # fmt: skip

    def stream(self, name: str) -> TextIO:
        """The held ``stdout`` or ``stderr``, usable though the program closed it."""
        return usable(*self.saved[name])

    def restore(self) -> None:
        for name in self.saved:
            setattr(sys, name, self.stream(name))


@contextmanager
def kept() -> Iterator[None]:
    """Run the block (the program); then give back ``sys.stdout``, ``sys.stderr`` and the
    working directory as they were before it, a stream the program closed reopened on its
    file descriptor."""
    held, cwd = Held(), os.getcwd()
    try:
        yield
    finally:
        held.restore()
        with contextlib.suppress(OSError):  # removed: gradscope's paths were made absolute
            os.chdir(cwd)


def usable(stream: Any, fd: int | None) -> TextIO:
    """``stream``, or when it was closed a new text stream on its descriptor ``fd``."""
    if not getattr(stream, "closed", False) or fd is None:
        return stream  # type: ignore[no-any-return]
    encoding = getattr(stream, "encoding", None) or "utf-8"
    errors = getattr(stream, "errors", None) or "backslashreplace"
    raw = io.FileIO(fd, "w", closefd=False)
    return io.TextIOWrapper(raw, encoding=encoding, errors=errors, line_buffering=True)


def _fileno(stream: Any) -> int | None:
    try:
        return int(stream.fileno())
    except (AttributeError, OSError, ValueError):  # not a file (a test's StringIO)
        return None
