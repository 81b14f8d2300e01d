"""Output files of the command line, written by :mod:`gradscope._src.writable` (the one writer)."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import click

from gradscope._src.errors import UsageError
from gradscope._src.writable import INTERRUPTED, Unwritable, refusal, unwritable, write

# Imports of heavy standard modules (pathlib, tempfile, shutil) happen inside functions:
# `gradscope --help` must cost little more than importing click.


@contextlib.contextmanager
def interrupts_noted() -> Iterator[None]:
    """Remember a Ctrl-C for as long as a command runs, even one a library swallowed.

    Ctrl-C raises ``KeyboardInterrupt`` as usual; the note is for when it lands where some
    code catches and drops it (a finalizer, a callback inside TensorFlow): no output file is
    replaced after a Ctrl-C all the same (``writable.write`` checks it).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)

    def note(signum: int, frame: Any) -> None:
        INTERRUPTED[0] = True
        signal.default_int_handler(signum, frame)

    INTERRUPTED[0] = False
    signal.signal(signal.SIGINT, note)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        INTERRUPTED[0] = False


def forget_interrupt() -> None:
    """Forget a Ctrl-C noted so far: it was handled (``run``: the program's, reported as its
    outcome); a later one still keeps output files untouched."""
    INTERRUPTED[0] = False


def write_atomic(path: str, text: str, option: str = "--output") -> None:
    """Write ``text`` to ``path`` through :func:`gradscope._src.writable.write` (atomic, regular
    files only, never an input of the command).

    Raises:
        UsageError: ``OPTION PATH: why`` (a refused path, a missing directory, a full disk).
    """
    write_atomic_bytes(path, text.encode("utf-8", "backslashreplace"), option)


def write_atomic_bytes(path: str, data: bytes, option: str = "--output") -> None:
    """Write ``data`` to ``path`` atomically, as ``write_atomic`` does (a PNG picture)."""
    try:
        write(path, data, inputs=_inputs())
    except Unwritable as exc:
        said = f"{option} {path}" if exc.refused else f"cannot write {path}"
        raise UsageError(f"{said}: {exc.why}") from None


class OutputPath(click.ParamType):  # type: ignore[type-arg]  # generic from click 8.5 on
    """A path a command writes (a report, a baseline, a picture, a timeline, a TensorBoard
    directory): every one is checked, each with :func:`check_writable`, before the command
    does any work (:class:`OutputsFirst`); a run of an hour never ends on a path it could
    have refused at once.

    Args:
        directory: the path is a directory to write files into (made if missing).
        parents: missing parent directories will be made.
        dash: ``-`` means standard output.
    """

    name = "file"

    def __init__(self, *, directory: bool = False, parents: bool = False,
                 dash: bool = False) -> None:  # fmt: skip
        self.directory, self.parents, self.dash = directory, parents, dash

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:  # fmt: skip
        return value if value is None else str(value)


class OutputsFirst(click.Command):
    """A command whose :class:`OutputPath` options are all checked before its body runs:
    each can be written, and no two name the same file (``OPTION PATH: why``, exit 2)."""

    def invoke(self, ctx: click.Context) -> Any:
        check_outputs(ctx)
        return super().invoke(ctx)


def check_outputs(ctx: click.Context) -> None:
    """Every :class:`OutputPath` option of ``ctx``'s command that was given: writable, none
    an input of the command, no two the same file.

    Raises:
        UsageError: ``OPTION PATH: why`` for the first that is not.
    """
    seen: list[tuple[str, str]] = []
    for param in ctx.command.params:
        kind, value = param.type, ctx.params.get(param.name or "")
        if not isinstance(kind, OutputPath) or value is None:
            continue
        option = max(param.opts, key=len)
        if value == "-":
            if kind.dash:
                continue
            raise UsageError(f"{option} -: give a {'directory' if kind.directory else 'file'} "
                             "path (this option does not write to standard output)")  # fmt: skip
        check_writable(option, value, directory=kind.directory, parents=kind.parents)
        for other, path in seen:
            if _same_file(path, value):
                raise UsageError(f"{option} {value}: is also {other}; name two files")
        seen.append((option, value))


def _same_file(a: str, b: str) -> bool:
    """Whether two paths name one file (the same path, or two names of an existing file)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def check_writable(option: str, path: str, *, directory: bool = False, parents: bool = True,
                   inputs: Sequence[str] | None = None) -> None:  # fmt: skip
    """Refuse, before any work, an output path that cannot be written: ``OPTION PATH: why``.

    Args:
        option: the option that named the path (``--timeline``), for the message.
        path: the file to write, or with ``directory`` the directory to write files into.
        directory: ``path`` is a directory (made if missing).
        parents: missing parent directories will be made; else the parent must exist.
        inputs: the files the command reads, never to be written over (default: those its
            parameters name).

    Raises:
        UsageError: ``path`` is of the wrong kind, is an input of the command, or lies in
            (or under) a file or a directory that cannot be written.
    """
    import stat

    if not path:  # `-o ''`: os.path.abspath('') is the working directory, never a file
        noun = "a directory" if directory else "a file"
        raise UsageError(f"{option} '': an empty path names no file; give {noun} path")
    said = f"{option} {path}"
    try:
        info = os.stat(path)
    except OSError:
        info = None
    if info is not None and directory != stat.S_ISDIR(info.st_mode):
        raise UsageError(f"{said}: " + ("not a directory" if directory else "is a directory; "
                                        "give a file path"))  # fmt: skip
    if not directory:
        _check_target(path, option, inputs)
    where = path if directory else (os.path.dirname(path) or ".")
    if not parents and not os.path.exists(where):
        raise UsageError(f"{said}: directory {where} does not exist")
    _check_place(said, where)


def _check_place(said: str, where: str) -> None:
    """``where`` (a directory to write in or to make) exists or can be made and written into."""
    found = unwritable(where)
    if found is None:
        return
    existing, error = found
    shown = os.path.relpath(existing) if not os.path.isabs(where) else existing
    if isinstance(error, NotADirectoryError):
        raise UsageError(f"{said}: {shown} is a file, not a directory")
    raise UsageError(f"{said}: cannot write into {shown} ({error.strerror or error})")


def _check_target(path: str, option: str = "--output", inputs: Sequence[str] | None = None) -> None:
    """Only a regular file (or a new one) may be written, and never an input of the command
    (:func:`gradscope._src.writable.refusal`)."""
    why = refusal(path, _inputs() if inputs is None else inputs)
    if why is not None:
        raise UsageError(f"{option} {path}: {why}")


def _inputs() -> list[str]:
    """The files the running command reads (its spec, specs, baseline, timeline): never a
    parameter the command writes (``run --timeline`` is an output, ``check --timeline`` an
    input)."""
    ctx = click.get_current_context(silent=True)
    found: list[str] = []
    while ctx is not None:
        written = {p.name for p in ctx.command.params if isinstance(p.type, OutputPath)}
        for key in (
            "spec",
            "specs",
            "target",
            "baseline",
            "timeline",
            "timelines",
            "file",
            "script",
            "program",
        ):
            if key in written:
                continue
            value = ctx.params.get(key)
            values = value if isinstance(value, (list, tuple)) else [value]
            for v in values:
                if isinstance(v, (str, os.PathLike)):
                    text = str(v)
                    # a Python target path/file.py:function reads path/file.py
                    found += [text, text.rpartition(":")[0]] if ":" in text else [text]
        ctx = ctx.parent
    return found


def emit(text: str, output: str | None) -> None:
    """Print the rendered report, or write it to ``output``."""
    if output:
        write_atomic(output, text)
    else:
        click.echo(text, nl=not text.endswith("\n"))
