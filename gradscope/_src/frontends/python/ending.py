"""A Python target's code may try to end the process; gradscope says so and never passes.

``inspect``, ``diff``, ``check`` and ``graph`` run a Python target's own code (its import,
its build function, its losses) in gradscope's process, through ``frames.call_user``. Plain
Python would end the program when that code calls ``sys.exit(N)``, ``os._exit(N)`` or raises
a ``BaseException`` that is not an ``Exception``; under gradscope each of these used to end
gradscope with the target's status (``os._exit(0)``: exit 0, no output, a passed CI gate
with nothing checked). Now each is one line naming the target's line and what it called,
and exit code 5 (:attr:`~gradscope._src.errors.ExitCode.TARGET_ENDED`), never 0, 1 or 2:

- ``sys.exit(N)`` and a ``BaseException`` subclass become :class:`TargetEnded` where they
  leave the target's code (Ctrl-C stays ``KeyboardInterrupt``: exit 130);
- ``os._exit(N)`` and ``os.exec*`` from the target's code (not from a child process it
  forked, nor from gradscope itself) print the line and end the process with 5 at once, as
  ``os._exit`` allows nothing after it (an exec would replace gradscope by another program);
- a crash (a segfault) cannot be caught in the process; :func:`gradscope._src.cli.supervise`
  reports it from a parent process.

Whatever the target writes to standard output, from Python, by ``os.write(1, ...)`` or from a
child process, goes to standard error while its code runs (:func:`stdout_to_stderr`), and a
target that points file descriptor 1 elsewhere (``/dev/null``) gets it back after: standard
output carries the report only.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

from gradscope._src import failure
from gradscope._src.errors import ExitCode, TargetError, visible
from gradscope._src.frontends.backend import Refused

_GRADSCOPE = os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
)


class TargetEnded(TargetError):
    """The target's code tried to end the process (``sys.exit``, ``os._exit``, a
    ``BaseException``); nothing after that point was checked."""

    exit_code = ExitCode.TARGET_ENDED
    kind = "target-ended"


def ended(exc: BaseException, where: str = "") -> TargetEnded:
    """The error for ``exc`` leaving the target's code: ``FILE:LINE: the target called
    sys.exit(3), which ends a Python program; nothing was checked``."""
    if isinstance(exc, SystemExit):
        what = f"called sys.exit({exc.code!r})"
    else:
        what = (f"raised {type(exc).__name__}, a BaseException that is not an Exception "
                f"({visible(str(exc))[:120] or 'no message'})")  # fmt: skip
    prefix = f"{where}: " if where else ""
    return TargetEnded(
        f"{prefix}the target {what}, which ends a Python program; gradscope stopped and "
        "checked nothing (exit code 5)",
        cause=exc,
    )


#: ``frames.is_user_code`` and ``frames.display_path``, given by ``frames.call_user`` (this
#: module is below ``frames``: it never imports it).
_FRAMES: list[Callable[[str], Any]] = [lambda _: False, str]


def _site(frame: Any, line: int | None = None) -> str:
    """``FILE:LINE`` of a frame (at ``line``, else where it is now), relative to the current
    directory when below it."""
    return f"{_FRAMES[1](frame.f_code.co_filename)}:{line or frame.f_lineno}"


def _user_frame(frame: Any) -> str:
    """``FILE:LINE`` of the innermost frame of the user's own code from ``frame`` outwards
    ('' when the call came from code autograph generated, or none is the user's)."""
    while frame is not None:
        if _FRAMES[0](frame.f_code.co_filename):
            return _site(frame)
        frame = frame.f_back
    return ""


def _command() -> str:
    """``gradscope inspect`` when a command runs (the prefix of every error line)."""
    click = sys.modules.get("click")
    ctx = click.get_current_context(silent=True) if click is not None else None
    return f"gradscope {ctx.info_name}" if ctx is not None and ctx.parent is not None else (
        "gradscope")  # fmt: skip


def _raised_at(exc: BaseException) -> str:
    """``FILE:LINE`` of the innermost frame of the user's own code ``exc`` passed, or ''."""
    where, tb = "", exc.__traceback__
    while tb is not None:
        if _FRAMES[0](tb.tb_frame.f_code.co_filename):
            where = _site(tb.tb_frame, tb.tb_lineno)
        tb = tb.tb_next
    return where


_real_exit = os._exit
_real_exec: dict[str, Callable[..., NoReturn]] = {"execv": os.execv, "execve": os.execve}
_guards = [0]  # how many call_user frames are active (they nest)


def _last_words(caller: Any, what: str) -> NoReturn:
    """Say that the target's code called ``what`` (at its innermost line), exit code 5."""
    where = _user_frame(caller)
    line = (f"{_command()}: {where + ': ' if where else ''}the target called {what}; "
            "gradscope checked nothing (exit code 5)")  # fmt: skip
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    with contextlib.suppress(OSError):
        os.write(2, visible(line).encode("utf-8", "backslashreplace") + b"\n")
    failure.said(
        "target-ended",
        visible(line),
        int(ExitCode.TARGET_ENDED),
        _command().removeprefix("gradscope").strip(),
    )
    _real_exit(int(ExitCode.TARGET_ENDED))


def _theirs(caller: Any) -> bool:
    """Whether a call comes from the target (this process, not gradscope's own code)."""
    mine = caller.f_code.co_filename.startswith(_GRADSCOPE + os.sep)
    return os.getpid() == _PID[0] and not mine  # a forked child of the target ends as asked


def _exit(status: int) -> NoReturn:
    """``os._exit`` while the target's code runs: said, then exit code 5."""
    caller = _caller(sys._getframe(1))
    if not _theirs(caller):
        _real_exit(status)
    _last_words(caller, f"os._exit({status}), which ends the process")


def _exec(name: str) -> Callable[..., NoReturn]:
    """``os.execv``/``os.execve`` (``execl``, ``execvp``, ... call them) while the target's
    code runs: the process would become another program, its report never written."""
    real = _real_exec[name]

    def exec_(path: Any, *args: Any) -> NoReturn:
        caller = _caller(sys._getframe(1))
        while caller.f_back is not None and caller.f_code.co_filename == os.__file__:
            caller = caller.f_back  # os.execl, os.execvp: the user's call is above
        if not _theirs(caller):
            real(path, *args)
        shown = visible(os.fsdecode(path) if isinstance(path, (str, bytes)) else repr(path))
        _last_words(caller, f"os.exec*({shown!r}, ...), which replaces the process")

    return exec_


_PID = [os.getpid()]


def _replaced_by(function: Callable[..., NoReturn]) -> Callable[[Any], Any]:
    return lambda real: function


def _caller(frame: Any) -> Any:
    from gradscope._src import patching

    return patching.caller(frame)


@contextlib.contextmanager
def guarded(
    is_user_code: Callable[[str], bool], display_path: Callable[[str], str]
) -> Iterator[None]:
    """While the target's code runs: ``sys.exit``, a ``BaseException`` and ``os._exit`` are
    caught as the module docstring says, and standard output goes to standard error.

    Args:
        is_user_code: whether a file name is the user's code (the line an error names).
        display_path: a file name as messages show it.
    """
    from gradscope._src import patching

    _FRAMES[:] = [is_user_code, display_path]
    with patching.LOCK:
        if _guards[0] == 0:
            _PID[0] = os.getpid()
            patches = patching.Patches()  # every thread: the process ends wherever asked
            patches.set("os._exit", _replaced_by(_exit), everywhere=True)
            for name in _real_exec:
                patches.set(f"os.{name}", _replaced_by(_exec(name)), everywhere=True)
            _installed.append(patches)
        _guards[0] += 1
    try:
        with stdout_to_stderr():
            yield
    except (KeyboardInterrupt, GeneratorExit):
        raise
    except (TargetEnded, Refused):  # Refused: JAX or PyTorch gradients (backend.py)
        raise
    except Exception:
        raise
    except BaseException as exc:  # SystemExit and BaseException subclasses
        raise ended(exc, _raised_at(exc)) from None
    finally:
        with patching.LOCK:
            _guards[0] -= 1
            if _guards[0] == 0 and _installed:
                _installed.pop().undo()


_installed: list[Any] = []  # the patches while a guard is active


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Python's ``sys.stdout`` and file descriptor 1 both point at standard error for the
    body; file descriptor 1 is put back after, whatever the body did to it."""
    with contextlib.redirect_stdout(sys.stderr):
        if threading.current_thread() is not threading.main_thread():
            yield  # file descriptors are the process's: only the main thread moves them
            return
        for stream in (sys.__stdout__, sys.stderr):
            with contextlib.suppress(Exception):
                if stream is not None:
                    stream.flush()
        try:
            saved = os.dup(1)
        except OSError:  # no standard output at all
            yield
            return
        try:
            with contextlib.suppress(OSError):  # no standard error: fd 1 stays as it is
                os.dup2(2, 1)
            yield
        finally:
            for stream in (sys.__stdout__, sys.stderr):
                with contextlib.suppress(Exception):
                    if stream is not None:
                        stream.flush()  # what the body left buffered goes where it wrote it
            os.dup2(saved, 1)
            os.close(saved)
