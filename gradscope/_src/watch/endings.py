"""The endings of the program's process that nothing after them survives, caught first.

A program that returns, raises or calls ``sys.exit`` comes back to gradscope, which then
delivers its report. These do not: ``os._exit(N)`` (no ``finally``, no ``atexit``), an
``os.exec*`` (the process becomes another program), and SIGTERM or SIGHUP (what ``timeout``,
a closed terminal and a cancelled CI job send; Python's default is to die on the spot). For
each, ``last_words`` is called first, in the process gradscope started (never in a child
forked from it: that one ends as Python ends it), and the ending then happens as it would
have: ``os._exit`` with the code ``last_words`` gives, the ``exec``, or, for a signal, an
exit with status 128 + its number, as a shell reports a process the signal ended.

A program that installs its own handler of SIGTERM or SIGHUP keeps it (and ends as it
decides); one started with a signal ignored (``nohup``) keeps ignoring it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, NoReturn

from gradscope._src import patching
from gradscope._src.watcher import process

#: The signals whose default action ends the process and that a report must outlive.
SIGNALS = (signal.SIGTERM, signal.SIGHUP)


@dataclass(frozen=True)
class Ending:
    """How the process is about to end: ``os._exit`` (``status``), ``exec`` (``argv0``,
    the program it becomes) or ``signal`` (``signum``)."""

    kind: str
    status: int = 0
    signum: int = 0
    argv0: str = ""


@contextlib.contextmanager
def caught(last_words: Callable[[Ending], int]) -> Iterator[None]:
    """While the block runs, the endings above call ``last_words(ending)`` first (once);
    for ``os._exit`` and a signal it returns the exit code the process then ends with."""
    real_exit = os._exit
    said: list[Ending] = []

    def say(ending: Ending) -> int | None:
        if said or process.in_child():
            return None
        said.append(ending)
        return last_words(ending)

    def make_exit(original: Any) -> Any:
        def _exit(status: int) -> NoReturn:
            code = None
            try:
                code = say(Ending("os._exit", status=status & 0xFF))
            finally:
                original(status if code is None else code)
            raise AssertionError("os._exit returned")  # pragma: no cover

        return _exit

    def make_execv(original: Any) -> Any:
        def execv(path: Any, argv: Any) -> NoReturn:
            if _runnable(path):
                say(Ending("exec", argv0=os.fsdecode(path)))
            original(path, argv)
            raise AssertionError("os.execv returned")  # pragma: no cover

        return execv

    def make_execve(original: Any) -> Any:
        def execve(path: Any, argv: Any, env: Any) -> NoReturn:
            if _runnable(path):
                say(Ending("exec", argv0=os.fsdecode(path) if not isinstance(path, int) else ""))
            original(path, argv, env)
            raise AssertionError("os.execve returned")  # pragma: no cover

        return execve

    def ended(signum: int, frame: Any) -> None:
        if process.in_child():  # a forked child got gradscope's handler: Python's default
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        code = None
        try:
            code = say(Ending("signal", signum=signum))
        finally:
            real_exit(128 + signum if code is None else code)

    # every thread: the process ends wherever it is asked to (os.exec*p* and execl* call these)
    with patching.Patches() as patches:
        patches.set("os._exit", make_exit, everywhere=True)
        patches.set("os.execv", make_execv, everywhere=True)
        patches.set("os.execve", make_execve, everywhere=True)
        handlers = _install(ended)
        try:
            yield
        finally:
            for signum, (mine, previous) in handlers.items():
                if signal.getsignal(signum) is mine:  # the program did not replace it
                    signal.signal(signum, previous)


def _install(handler: Callable[[int, Any], None]) -> dict[int, tuple[Any, Any]]:
    """``handler`` for each of ``SIGNALS`` left at its default (not one ``nohup`` ignores);
    only the main thread may set handlers."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    installed: dict[int, tuple[Any, Any]] = {}
    for signum in SIGNALS:
        previous = signal.getsignal(signum)
        if previous is signal.SIG_DFL:
            signal.signal(signum, handler)
            installed[signum] = (handler, previous)
    return installed


def _runnable(path: Any) -> bool:
    """Whether an ``exec`` of ``path`` can succeed (``os.execvp`` tries each folder of
    ``PATH`` in turn: only the one that runs ends the process)."""
    if isinstance(path, int):  # fexecve: a file descriptor
        return True
    try:
        return os.path.isfile(path) and os.access(path, os.X_OK)
    except (OSError, ValueError, TypeError):
        return False
