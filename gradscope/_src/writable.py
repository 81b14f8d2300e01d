"""gradscope's one writer of files: reports, pictures, baselines and timelines.

Every file gradscope writes (``--output``, ``--write-baseline``, ``graph -o``, ``plot -o``,
``run --timeline``, ``gradscope.keras.Monitor(timeline=...)``) goes through :func:`write`,
with one set of refusals and one set of permissions:

- Only a regular file, or a new one, is written. A symbolic link, a device node
  (``/dev/null``), a FIFO, a socket or a directory is refused, never replaced: the file is
  written beside its target and renamed over it, and a rename onto ``/dev/null`` (as root)
  or onto a link would replace the node itself with a regular file. Writing *through* a
  device was the other choice; it is not taken because the same path would then mean "a
  file" for a regular file and "a stream" for a FIFO, and a rename-free write can be left
  half-done. ``--output -`` (``run``) or no ``--output`` writes to standard output.
- An input of the command (its spec, Python target file, baseline, timeline, program) is
  never written over.
- A new file gets ``0666`` less the umask, as ``open()`` and the shell's ``>`` give it; a
  replaced file keeps its permissions.
- The write is atomic: a temporary file beside the target, ``fsync``, a rename. An error, a
  full disk, Ctrl-C, SIGTERM or SIGHUP leaves the previous file byte for byte and no
  temporary file behind.

:func:`unwritable` asks, before long work starts, whether a directory can be written at all.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import threading
from collections.abc import Iterable, Iterator
from typing import Any

#: Set by the command line when a Ctrl-C was seen (and maybe swallowed on its way up): no
#: file is replaced after it (``cli.output.interrupts_noted``).
INTERRUPTED = [False]


class Unwritable(OSError):
    """A path gradscope will not or cannot write; ``str()`` is one line, ``PATH: why``."""

    def __init__(self, path: str, why: str, *, refused: bool = False) -> None:
        super().__init__(f"{path}: {why}")
        self.path = path
        self.why = why
        self.refused = refused  # refused by :func:`refusal`, not a failed write

    def __str__(self) -> str:
        return f"{self.path}: {self.why}"


def refusal(path: str, inputs: Iterable[str] = ()) -> str | None:
    """Why ``path`` may not be written (its kind, or that it is one of ``inputs``), or None.

    A missing path is fine (it will be made); its directory is not looked at here.
    """
    try:
        info = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):  # a new file (its directory is asked later)
        return None
    except OSError as exc:
        return f"cannot look at it ({exc.strerror or exc})"
    if stat.S_ISLNK(info.st_mode):
        return "is a symbolic link; name the file it points to"
    if stat.S_ISDIR(info.st_mode):
        return "is a directory; give a file path"
    if not stat.S_ISREG(info.st_mode):
        kind = "a FIFO" if stat.S_ISFIFO(info.st_mode) else "a device or special file"
        return f"not a regular file ({kind}); gradscope writes regular files only"
    for given in inputs:
        with contextlib.suppress(OSError, ValueError):
            if os.path.samefile(given, path):
                return f"is an input of this command ({given}); it is never written over"
    return None


def mode_for(path: str) -> int:
    """The permissions ``path`` gets: those of the file it replaces, else ``0666`` less the
    umask (what ``open(path, "w")`` gives a new file)."""
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        return 0o666 & ~_umask()


def _umask() -> int:
    """The process's umask, read without changing it where Linux says it
    (``/proc/self/status``); else by setting and restoring it."""
    with contextlib.suppress(OSError, ValueError), open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    umask = os.umask(0o022)
    os.umask(umask)
    return umask


def write(path: str, data: bytes, *, inputs: Iterable[str] = (), parents: bool = False) -> None:
    """Write ``data`` to ``path`` atomically, refusing what :func:`refusal` refuses.

    Args:
        path: the file to write.
        data: its whole content.
        inputs: files the command reads, never written over.
        parents: make missing parent directories (else the directory must exist).

    Raises:
        Unwritable: ``path`` is refused, its directory is missing, or the write failed (a
            full disk, a quota, a read-only file system); the previous file is untouched
            and no temporary file is left.
        KeyboardInterrupt: Ctrl-C came before the rename (the previous file is untouched).
    """
    why = refusal(path, inputs)
    if why is not None:
        raise Unwritable(path, why, refused=True)
    directory = os.path.dirname(os.path.abspath(path))
    if parents:
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError as exc:
            raise Unwritable(path, f"cannot make its directory ({exc.strerror or exc})") from None
    elif not os.path.isdir(directory):
        shown = os.path.dirname(path) or "."
        raise Unwritable(path, f"directory {shown} does not exist")
    import tempfile  # here, not above: `gradscope --help` must stay cheap

    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp",
                                   dir=directory)  # fmt: skip
    except OSError as exc:
        raise Unwritable(path, exc.strerror or str(exc)) from None
    try:
        with _signals_end_write():
            _write_replace(fd, tmp, path, data)
    except OSError as exc:  # a full disk, a quota, a read-only file system
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, Unwritable):
            raise
        raise Unwritable(path, exc.strerror or str(exc)) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _write_replace(fd: int, tmp: str, path: str, data: bytes) -> None:
    with os.fdopen(fd, "wb") as handle:
        os.fchmod(handle.fileno(), mode_for(path))  # mkstemp's 0600 would hide the file
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    if INTERRUPTED[0]:
        raise KeyboardInterrupt  # Ctrl-C came earlier and was swallowed on its way up
    why = refusal(path)  # made a link or a device meanwhile: still never replaced
    if why is not None:
        raise Unwritable(path, why, refused=True)
    os.replace(tmp, path)


@contextlib.contextmanager
def _signals_end_write() -> Iterator[None]:
    """While the temporary file exists, SIGTERM and SIGHUP end the process through Python
    (``SystemExit(128 + N)``), so the ``except`` around the write removes the temporary file.
    A handler the program installed itself (a Monitor inside a training script) is left be."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def end(signum: int, _frame: Any) -> None:
        raise SystemExit(128 + signum)

    previous = {}
    for s in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(s) in (signal.SIG_DFL, None):
            previous[s] = signal.signal(s, end)
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def unwritable(where: str) -> tuple[str, OSError] | None:
    """None when ``where`` (a directory to write in, or to make) exists or can be made and
    this process may write into it; else its nearest existing ancestor and why not.

    A file is made there and removed, which catches what permission bits do not: a read-only
    file system, ``/proc``, a full disk, running as root.
    """
    import tempfile

    existing = os.path.abspath(where)
    while not os.path.exists(existing) and os.path.dirname(existing) != existing:
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        return existing, NotADirectoryError(f"{existing} is a file, not a directory")
    try:
        fd, probe = tempfile.mkstemp(prefix=".gradscope-probe-", dir=existing)
    except OSError as exc:
        return existing, exc
    os.close(fd)
    os.unlink(probe)
    return None
