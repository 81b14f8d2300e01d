"""The process model of ``gradscope run``: where the watcher watches, and where it stays out.

One process and one thread are watched: the process gradscope started and the thread that
runs the program (with ``MirroredStrategy``'s replica threads, which work for it,
``watching`` too). Everywhere else the program runs exactly as ``python`` runs it:

- a child forked from the program (``os.fork``, ``multiprocessing``) is unwatched, writes no
  report or timeline, and ends as Python ends it (``end_child``);
- a thread the program starts is unwatched: its gradient calls run as written, and the report
  notes that they were not watched (op callbacks and tapes are per thread);
- ``StopProgram`` is raised only where it can end the program: in the watched thread and
  outside a finalizer (``__del__``, a weakref callback), where Python would swallow it and
  print its traceback; a call there runs unwatched (``can_stop``).

How the program's process ends is ``endings.py``'s question.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
import types
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

#: Thread ident watched (the program's thread, a thread in a ``watch()`` block, an adopted
#: replica thread) -> the threads it is watched for, innermost last (a replica thread works
#: for the thread that started it; blocks nest); empty: no watch.
_watched: dict[int, list[int]] = {}
#: True in a child forked from the watched process.
_child = [False]


def _forked() -> None:
    _child[0] = True
    _watched.clear()


os.register_at_fork(after_in_child=_forked)


def watched_here() -> bool:
    """Whether gradient calls made here (this process, this thread) are watched."""
    return threading.get_ident() in _watched


def in_child() -> bool:
    """Whether this is a child forked from the watched process."""
    return _child[0]


def owner_here() -> int:
    """The thread whose watch a call made here belongs to: this one, or for a replica
    thread the thread that started it (its calls are reported in that thread's block)."""
    me = threading.get_ident()
    owners = _watched.get(me)
    return owners[-1] if owners else me


@contextlib.contextmanager
def watching(owner: int | None = None) -> Iterator[None]:
    """Watch this thread while the block runs: the program's thread, a thread in a
    ``watch()`` block, or a replica thread ``strategy.run`` started from one, doing its work
    (``owner``: the thread it works for). Blocks nest."""
    if _child[0]:
        yield
        return
    me = threading.get_ident()
    _watched.setdefault(me, []).append(me if owner is None else owner)
    try:
        yield
    finally:
        owners = _watched.get(me, [])
        if owners:
            owners.pop()
        if not owners:
            _watched.pop(me, None)


def can_stop() -> bool:
    """Whether ``StopProgram`` raised here would end the program: in the watched thread (a
    replica thread's is re-raised in it), and not inside a finalizer, whose exceptions
    Python prints and ignores."""
    if not watched_here():
        return False
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "__del__":
            return False
        frame = frame.f_back
    return True


def unwatched_thread_note(site: str) -> str:
    """The report's note for a gradient call made in a thread the program started."""
    name = threading.current_thread().name
    return (f"{site}: gradient calls in thread {name!r} are not watched (only the program's "
            "main thread is); they ran as written")  # fmt: skip


@contextlib.contextmanager
def quiet_stops(stop: type[BaseException]) -> Iterator[None]:
    """While the block runs, a ``stop`` that reached a place Python ignores exceptions in
    (a weakref callback, a finalizer run by the garbage collector) is dropped silently:
    its traceback would be gradscope's, not the program's."""
    from gradscope._src import patching

    def make(previous: Any) -> Any:
        def hook(unraisable: Any) -> None:
            if isinstance(unraisable.exc_value, stop):
                return
            previous(unraisable)

        return hook

    with patching.Patches() as patches:
        patches.set("sys.unraisablehook", make, everywhere=True)  # a finalizer's thread
        yield


def end_child(status: int, say: Callable[[], None]) -> NoReturn:
    """End a forked child as Python ends a process: ``say()`` (its traceback or ``sys.exit``
    message), non-daemon threads joined, ``atexit`` functions run, its streams flushed, exit
    ``status``; without the static destructors of TensorFlow's C++ runtime, whose thread
    pools were started by the parent and hang the child at exit."""
    with contextlib.suppress(BaseException):
        say()
    with contextlib.suppress(BaseException):
        threading._shutdown()  # type: ignore[attr-defined]
    with contextlib.suppress(BaseException):
        atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        with contextlib.suppress(BaseException):
            if stream is not None:
                stream.flush()
    os._exit(status)
