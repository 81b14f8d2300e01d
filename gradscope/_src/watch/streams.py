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
    """``sys.stdout`` and ``sys.stderr`` as they are now, with their file descriptors; with
    ``keep_descriptors``, duplicates of those descriptors, made now: the program may point
    fd 1 or 2 elsewhere (``os.dup2`` of /dev/null, a common way to silence TensorFlow's C++
    logs) and ``stream`` still writes where gradscope's own output went at start."""

    def __init__(self, keep_descriptors: bool = False) -> None:
        self.saved = {name: (getattr(sys, name), _fileno(getattr(sys, name)))
                      for name in ("stdout", "stderr")}  # fmt: skip
        self.copies: dict[str, int] = {}
        for name, (_, fd) in self.saved.items():
            if keep_descriptors and fd is not None:
                with contextlib.suppress(OSError):
                    self.copies[name] = os.dup(fd)  # not inherited by children or an exec
        self._opened: dict[str, TextIO] = {}

    def stream(self, name: str) -> TextIO:
        """The held ``stdout`` or ``stderr``, usable though the program closed it (or, kept,
        on the duplicate of its descriptor)."""
        stream, fd = self.saved[name]
        if name not in self.copies:
            return usable(stream, fd)
        if name not in self._opened:
            self._opened[name] = _text(stream, self.copies[name], closefd=True)
        return self._opened[name]

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
    return _text(stream, fd)


def _text(stream: Any, fd: int, closefd: bool = False) -> TextIO:
    """A text stream on ``fd`` that encodes as ``stream`` did."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    errors = getattr(stream, "errors", None) or "backslashreplace"
    raw = io.BufferedWriter(io.FileIO(fd, "w", closefd=closefd))
    return io.TextIOWrapper(raw, encoding=encoding, errors=errors, line_buffering=True)


def _fileno(stream: Any) -> int | None:
    try:
        return int(stream.fileno())
    except (AttributeError, OSError, ValueError):  # not a file (a test's StringIO)
        return None
