"""Run a program as ``python SCRIPT ARGS`` (or ``python -m MODULE ARGS``) would, watched.

The program runs in this process, as ``__main__``, with its own ``sys.argv``, the same
working directory and environment, and ``sys.path[0]`` set as Python sets it. Its output
goes where it always goes. A program that cannot start (no such file, a syntax error, no
such module) is a usage error, found before TensorFlow is imported.
"""

from __future__ import annotations

import importlib.util
import os
import runpy
import sys
import traceback
import types
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gradscope.errors import GradscopeError
from gradscope.results import run as rr


class ProgramError(GradscopeError):
    """The program cannot be started: ``gradscope run: <why>``, exit code 2."""


class ProgramRaised(GradscopeError):
    """The watched program raised (``gradscope.run``): ``report`` holds what was seen."""

    def __init__(self, report: Any) -> None:
        super().__init__(f"the program raised; {len(report.calls)} watched call(s) reported")
        self.report = report


@dataclass(frozen=True)
class Program:
    """What to run: a script path or a module name, and its arguments."""

    target: str
    args: tuple[str, ...]
    module: bool = False

    @property
    def argv(self) -> list[str]:
        first = self.origin if self.module else self.target
        return [first, *self.args]

    @property
    def origin(self) -> str:
        """The file that runs (the ``__main__`` file of a package or of a directory)."""
        if not self.module:
            if os.path.isdir(self.target):
                return os.path.join(self.target, "__main__.py")
            return self.target
        spec = _module_spec(self.target)
        return str(spec.origin) if spec is not None and spec.origin else self.target


def check(program: Program) -> None:
    """Raise ``ProgramError`` when the program cannot start.

    Raises:
        ProgramError: no such file, a syntax error, or no such module (or, as ``python``
            says, a package or a directory with no ``__main__`` to run).
    """
    if program.module:
        spec = _module_spec(program.target)
        if spec is None or spec.loader is None:
            raise ProgramError(f"gradscope run: {_no_module(program.target)}")
        path = spec.origin or ""
    else:
        path = program.origin
        if os.path.isdir(program.target) and not os.path.isfile(path):
            raise ProgramError(f"gradscope run: can't find '__main__' module in "
                               f"'{os.path.abspath(program.target)}'")  # fmt: skip
        if not os.path.isfile(path):
            raise ProgramError(f"gradscope run: {path}: no such file{_target_hint(path)}")
    if path.endswith(".py") and os.path.isfile(path):
        _compile(path)


def _target_hint(text: str) -> str:
    """``file.py:function`` names a Python target, which ``inspect`` takes, not a script."""
    head, colon, _function = text.rpartition(":")
    if colon and head.endswith(".py") and os.path.isfile(head):
        return (f" ({text} names a Python target: gradscope inspect {text} checks it; "
                f"gradscope run {head} runs the file as a script)")  # fmt: skip
    return ""


def _no_module(name: str) -> str:
    """Why ``python -m name`` cannot run, in Python's words."""
    saved = sys.path[:]
    sys.path.insert(0, os.getcwd())
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        spec = None
    finally:
        sys.path[:] = saved
    if spec is not None and spec.submodule_search_locations is not None:
        return (f"no module named {name}.__main__; '{name}' is a package and cannot be "
                "directly executed")  # fmt: skip
    return f"no module named '{name}'"


def _module_spec(name: str) -> importlib.machinery.ModuleSpec | None:
    """The module as ``python -m`` finds it: the working directory first on the path."""
    saved = sys.path[:]
    sys.path.insert(0, os.getcwd())
    try:
        return _find(name)
    finally:
        sys.path[:] = saved


def _find(name: str) -> importlib.machinery.ModuleSpec | None:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is not None and spec.submodule_search_locations is not None:
        try:
            spec = importlib.util.find_spec(f"{name}.__main__")
        except (ImportError, ValueError):
            return None
    return spec


def _compile(path: str) -> None:
    try:
        with open(path, "rb") as f:
            source = f.read()
        compile(source, path, "exec")
    except SyntaxError as exc:
        where = f"{exc.filename}:{exc.lineno}:{exc.offset}" if exc.lineno else path
        raise ProgramError(f"gradscope run: {where}: SyntaxError: {exc.msg}") from exc
    except (OSError, ValueError) as exc:
        raise ProgramError(f"gradscope run: {path}: {exc}") from exc


def execute(program: Program) -> tuple[str, BaseException | None]:
    """Run the program to its end; ``(outcome, exception)``.

    The outcome is ``finished`` (it returned, or exited with status 0), ``stopped``
    (gradscope stopped it after ``--steps``), ``exited`` (``sys.exit()`` with a nonzero
    status; the ``SystemExit``), ``raised`` (the exception) or ``interrupted`` (Ctrl-C).

    Afterwards ``sys.stdout``, ``sys.stderr`` and the working directory are gradscope's
    again, as they were before the program ran (``streams.kept``).
    """
    from gradscope.frontends.program import streams

    with streams.kept():
        return _execute(program)


def _execute(program: Program) -> tuple[str, BaseException | None]:
    from gradscope.frontends.program.watch import StopProgram

    saved_argv, saved_path0 = sys.argv[:], sys.path[0] if sys.path else None
    sys.argv = program.argv
    # as Python sets sys.path[0]: the script's folder, or the working directory for -m
    first = os.getcwd() if program.module else os.path.dirname(os.path.abspath(program.origin))
    if sys.path:
        sys.path[0] = first
    else:
        sys.path.append(first)
    try:
        if program.module:
            runpy.run_module(program.target, run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(program.target, run_name="__main__")
    except StopProgram:
        return rr.STOPPED, None
    except KeyboardInterrupt as exc:
        return rr.INTERRUPTED, exc
    except SystemExit as exc:
        if exit_status(exc) == 0:
            return rr.FINISHED, None
        return rr.EXITED, exc
    except BaseException as exc:
        return rr.RAISED, exc
    finally:
        sys.argv = saved_argv
        if saved_path0 is not None and sys.path:
            sys.path[0] = saved_path0
    return rr.FINISHED, None


def print_failure(exc: BaseException, program: Program, file: Any = None) -> None:
    """The program's exception as Python prints it (to ``file``, standard error by default):
    from the program's own first frame, and without gradscope's frames (the watched calls it
    passed through)."""
    file = sys.stderr if file is None else file
    if isinstance(exc, SystemExit):
        if exc.code is not None and not isinstance(exc.code, int):
            print(exc.code, file=file)
        return
    tb = exc.__traceback__
    while tb is not None and not _is_program_frame(tb, program):
        tb = tb.tb_next
    shown = traceback.TracebackException(type(exc), exc, tb or exc.__traceback__)
    _drop_own_frames(shown, set())
    print("".join(shown.format()), end="", file=file)


def _drop_own_frames(shown: traceback.TracebackException, seen: set[int]) -> None:
    if id(shown) in seen:
        return
    seen.add(id(shown))
    own = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    frames = [f for f in shown.stack if not os.path.abspath(f.filename).startswith(own + os.sep)]
    shown.stack = traceback.StackSummary.from_list(frames)
    for chained in (shown.__cause__, shown.__context__):
        if chained is not None:
            _drop_own_frames(chained, seen)


def _is_program_frame(tb: types.TracebackType, program: Program) -> bool:
    name = tb.tb_frame.f_code.co_filename
    return os.path.abspath(name) == os.path.abspath(program.origin)


def exit_status(exc: BaseException | None) -> int | None:
    """The status Python exits with after ``exc``, a ``SystemExit`` (``sys.exit(N)``: N,
    ``sys.exit()``: 0, ``sys.exit("message")``: 1, the message printed); else None."""
    if not isinstance(exc, SystemExit):
        return None
    if exc.code is None:
        return 0
    return int(exc.code) if isinstance(exc.code, int) else 1


def argv_of(program: Program) -> Sequence[str]:
    return program.argv
