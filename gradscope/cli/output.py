"""Output files: written atomically, only as regular files, never half-written on a signal."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import click

from gradscope.errors import UsageError
from gradscope.writable import unwritable

# Imports of heavy standard modules (pathlib, tempfile, shutil) happen inside functions:
# `gradscope --help` must cost little more than importing click.


_INTERRUPTED = [False]


@contextlib.contextmanager
def interrupts_noted() -> Iterator[None]:
    """Remember a Ctrl-C for as long as a command runs, even one a library swallowed.

    Ctrl-C raises ``KeyboardInterrupt`` as usual; the note is for when it lands where some
    code catches and drops it (a finalizer, a callback inside TensorFlow): no output file is
    replaced after a Ctrl-C all the same (``write_atomic_bytes`` checks it).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)

    def note(signum: int, frame: Any) -> None:
        _INTERRUPTED[0] = True
        signal.default_int_handler(signum, frame)

    _INTERRUPTED[0] = False
    signal.signal(signal.SIGINT, note)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        _INTERRUPTED[0] = False


def forget_interrupt() -> None:
    """Forget a Ctrl-C noted so far: it was handled (``run``: the program's, reported as its
    outcome); a later one still keeps output files untouched."""
    _INTERRUPTED[0] = False


def write_atomic(path: str, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename.

    An error or Ctrl-C leaves any previous file untouched.
    """
    write_atomic_bytes(path, text.encode("utf-8"))


def write_atomic_bytes(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically, as ``write_atomic`` does (a PNG picture)."""
    import tempfile

    directory = os.path.dirname(path) or "."
    if not os.path.isdir(directory):
        raise UsageError(f"cannot write {path}: directory {directory} does not exist")
    _check_target(path)
    name = os.path.basename(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        with _signals_end_write():
            _write_replace(fd, tmp, path, data)
    except OSError as exc:  # a full disk, a quota, a read-only file system
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


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

    said = f"{option} {path}"
    try:
        info = os.stat(path)
    except OSError:
        info = None
    if info is not None and directory != stat.S_ISDIR(info.st_mode):
        raise UsageError(f"{said}: " + ("not a directory" if directory else "is a directory; "
                                        "give a file path"))  # fmt: skip
    if info is not None and not directory:
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
    """Only a regular file (or a new one) may be written, and never an input of the command.

    ``os.replace`` onto ``/dev/null`` (as root) or a symlink would replace the node itself
    with a regular file; a report written over its own spec would destroy the spec.
    """
    import stat

    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None
    if stat.S_ISLNK(info.st_mode):
        raise UsageError(f"{option} {path}: is a symbolic link; name the file it points to")
    if not stat.S_ISREG(info.st_mode):
        raise UsageError(f"{option} {path}: not a regular file; {option} writes files only")
    for given in _inputs() if inputs is None else inputs:
        with contextlib.suppress(OSError):
            if os.path.samefile(given, path):
                raise UsageError(f"{option} {path}: is an input of this command ({given})")


def _inputs() -> list[str]:
    """The files the running command reads (its spec, specs, baseline, timeline)."""
    ctx = click.get_current_context(silent=True)
    found: list[str] = []
    while ctx is not None:
        for key in ("spec", "specs", "target", "baseline", "timeline", "file", "script", "program"):
            value = ctx.params.get(key)
            values = value if isinstance(value, (list, tuple)) else [value]
            for v in values:
                if isinstance(v, (str, os.PathLike)):
                    text = str(v)
                    # a Python target path/file.py:function reads path/file.py
                    found += [text, text.rpartition(":")[0]] if ":" in text else [text]
        ctx = ctx.parent
    return found


@contextlib.contextmanager
def _signals_end_write() -> Iterator[None]:
    """While the temporary file exists, SIGTERM and SIGHUP end the process through Python
    (``SystemExit``), so the ``except`` around the write removes the temporary file."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def end(signum: int, _frame: Any) -> None:
        raise SystemExit(128 + signum)

    caught = (signal.SIGTERM, signal.SIGHUP)
    previous = {s: signal.signal(s, end) for s in caught}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _write_replace(fd: int, tmp: str, path: str, data: bytes) -> None:
    os.chmod(tmp, _mode(path))  # mkstemp's 0600 would hide a report from other users
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    if _INTERRUPTED[0]:
        raise KeyboardInterrupt  # Ctrl-C came earlier and was swallowed on its way up
    os.replace(tmp, path)


def _mode(path: str) -> int:
    """The permissions a new file gets (0666 less the umask), or those of the file replaced."""
    try:
        return os.stat(path).st_mode & 0o777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def emit(text: str, output: str | None) -> None:
    """Print the rendered report, or write it to ``output``."""
    if output:
        write_atomic(output, text)
    else:
        click.echo(text, nl=not text.endswith("\n"))
