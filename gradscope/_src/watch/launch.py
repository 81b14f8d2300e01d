"""Run a program as ``python SCRIPT ARGS`` (or ``python -m MODULE ARGS``) would, watched.

The program runs in this process, as ``__main__``, with its own ``sys.argv``, the same
working directory and environment, and ``sys.path[0]`` set as Python sets it. Its output
goes where it always goes. A program that cannot start (no such file, a syntax error, no
such module) is a usage error, found before TensorFlow is imported.
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import importlib.util
import os
import runpy
import sys
import traceback
import types
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NoReturn

from gradscope._src.errors import GradscopeError
from gradscope._src.results import run as rr


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
        compile(_decoded(source, path), path, "exec")
    except SyntaxError as exc:
        where = ":".join(str(p) for p in (exc.filename, exc.lineno, exc.offset) if p) or path
        raise ProgramError(f"gradscope run: {where}: SyntaxError: {exc.msg}") from exc
    except (OSError, ValueError) as exc:
        raise ProgramError(f"gradscope run: {path}: {exc}") from exc


def _decoded(source: bytes, path: str) -> str:
    """The source as Python's tokenizer reads a file: in its declared encoding (PEP 263,
    UTF-8 by default), strictly; ``compile`` of bytes lets undecodable comments through.

    Raises:
        SyntaxError: in Python's words, as ``python FILE`` refuses it.
    """
    import io
    import tokenize

    try:
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
        except SyntaxError as exc:  # no cookie and a first line that is not UTF-8, or a bad one
            source.decode("utf-8")
            raise SyntaxError(str(exc).removesuffix(" for None"), (path, 1, 0, "")) from None
        return source.decode(encoding)
    except UnicodeDecodeError as exc:
        line = source[: exc.start].count(b"\n") + 1
        byte = source[exc.start : exc.start + 1]
        raise SyntaxError(f"Non-UTF-8 code starting with '\\x{byte.hex()}' in file {path} on "
                          f"line {line}, but no encoding declared; see "
                          "https://peps.python.org/pep-0263/ for details",
                          (path, line, 0, "")) from None  # fmt: skip
    except LookupError as exc:  # a coding line naming no codec
        raise SyntaxError(str(exc), (path, 1, 0, "")) from None


def execute(program: Program) -> tuple[str, BaseException | None]:
    """Run the program to its end, as ``python`` runs it (``_as_python``); ``(outcome,
    exception)``.

    The outcome is ``finished`` (it returned, or exited with status 0), ``stopped``
    (gradscope stopped it after ``--steps``), ``exited`` (``sys.exit()`` with a nonzero
    status; the ``SystemExit``), ``raised`` (the exception) or ``interrupted`` (Ctrl-C).
    A child the program forked that comes back here ends as Python ends it, and never
    returns (``process.end_child``).

    Afterwards ``sys.stdout``, ``sys.stderr`` and the working directory are gradscope's
    again, as they were before the program ran (``streams.kept``).
    """
    from gradscope._src.watch import streams
    from gradscope._src.watcher import process

    with streams.kept():
        outcome, error = _execute(program)
        if process.in_child():
            _end_child(outcome, error, program)
        return outcome, error


def _execute(program: Program) -> tuple[str, BaseException | None]:
    from gradscope._src.watcher.watch import StopProgram

    main = _main_file(program)
    try:
        with _as_python(program, main):
            if program.module:
                runpy.run_module(program.target, run_name="__main__", alter_sys=True)
            else:
                _run_script(main, directory=os.path.isdir(program.target))
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
    return rr.FINISHED, None


def _main_file(program: Program) -> str:
    """``__main__.__file__`` as Python makes it: absolute, symbolic links kept."""
    if program.module:
        return program.origin
    return os.path.join(os.getcwd(), program.origin)


def _run_script(path: str, directory: bool = False) -> None:
    """Run a script file as ``python FILE`` does (or, ``directory``, a folder's
    ``__main__.py`` as ``python FOLDER`` does): in a fresh ``__main__`` module whose
    ``__file__`` is ``path``, with ``sys.argv`` untouched (``runpy.run_path`` would put the
    absolute path in ``sys.argv[0]``) and no frames of runpy's between it and gradscope."""
    import builtins
    from importlib.machinery import SourceFileLoader

    with open(path, "rb") as f:
        code = compile(_decoded(f.read(), path), path, "exec", dont_inherit=True)
    module = types.ModuleType("__main__")
    spec = importlib.util.spec_from_file_location("__main__", path) if directory else None
    module.__dict__.update(__file__=path, __cached__=spec.cached if spec else None,
                           __builtins__=builtins, __package__="" if spec else None,
                           __loader__=spec.loader if spec else SourceFileLoader("__main__", path),
                           __spec__=spec)  # fmt: skip
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = module
    try:
        exec(code, module.__dict__)
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved
        _ran.append(module)  # as Python keeps __main__ alive for atexit functions


_ran: list[types.ModuleType] = []


@contextmanager
def _as_python(program: Program, main: str) -> Iterator[None]:
    """While the block runs, the interpreter looks to the program as ``python`` would make
    it: its ``sys.argv``; ``sys.path[0]`` its script's folder, symbolic links resolved (for
    ``-m``, the working directory); the modules gradscope imported that a file beside the
    script would shadow forgotten; the recursion limit raised by the frames gradscope
    stands on; Ctrl-C raising ``KeyboardInterrupt`` as Python's own handler does."""
    saved_argv, saved_path = sys.argv, sys.path[:]  # (gradscope's own list back after)
    sys.argv = program.argv
    if program.module:
        first = os.getcwd()
    elif os.path.isdir(program.target):
        first = os.path.dirname(main)  # the folder as given, made absolute
    else:
        first = os.path.dirname(os.path.realpath(main))
    if sys.path:
        del sys.path[0]  # gradscope's own first entry (its script's folder)
    sys.path.insert(0, first)
    hidden = _shadowed(first, program.module)
    kind = ("module" if program.module else "directory" if os.path.isdir(program.target)
            else "script")  # fmt: skip
    from gradscope._src.frontends.python.frames import shown_from
    from gradscope._src.watcher import process
    from gradscope._src.watcher.watch import StopProgram

    with (_recursion(_extra_depth(kind)), _python_sigint(), shown_from(os.getcwd()),
          process.quiet_stops(StopProgram)):  # fmt: skip
        try:
            yield
        finally:
            sys.argv = saved_argv
            sys.path[:] = saved_path
            sys.modules.update(hidden)


#: Packages the watcher itself runs on while the program does: never forgotten.
_WATCHER_NEEDS = frozenset({"gradscope", "tensorflow", "keras", "tf_keras", "numpy", "absl",
                            "jax", "jaxlib",
                            "google", "ml_dtypes", "wrapt", "opt_einsum"})  # fmt: skip


def _shadowed(folder: str, module: bool) -> dict[str, types.ModuleType]:
    """Forget (and return, to be put back after) the modules gradscope imported that
    ``python`` would not have at start-up and that a module in ``folder`` (the first entry
    of the program's path) shadows: the program's own ``statistics.py`` or ``click.py``
    is the one it imports, as under ``python``."""
    try:
        beside = {name.partition(".")[0] for name in os.listdir(folder)}
    except OSError:
        return {}
    candidates = {name for name in list(sys.modules) if "." not in name and name in beside}
    candidates -= _WATCHER_NEEDS | set(sys.builtin_module_names)
    if not candidates:
        return {}
    candidates -= _startup_modules(module)
    hidden: dict[str, types.ModuleType] = {}
    for name in sorted(candidates):
        spec = importlib.machinery.PathFinder.find_spec(name, [folder])
        if spec is None or spec.loader is None:  # none, or a namespace portion: no shadow
            continue
        for key in [k for k in list(sys.modules) if k == name or k.startswith(name + ".")]:
            hidden[key] = sys.modules.pop(key)
    return hidden


def _startup_modules(module: bool) -> frozenset[str]:
    """The modules ``python`` (with this interpreter's flags and environment) has imported
    before it runs a script (or, ``module``, before ``-m`` runs one)."""
    import subprocess

    if not sys.executable:  # an embedded interpreter: no python to ask
        return frozenset()
    code = "import sys" + (", runpy" if module else "") + "; print(*sys.modules)"
    flags = subprocess._args_from_interpreter_flags()  # type: ignore[attr-defined]
    try:
        done = subprocess.run([sys.executable, *flags, "-c", code], capture_output=True,
                              text=True, timeout=60, check=False)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return frozenset()
    return frozenset(done.stdout.split())


#: The program's first line, against the depth ``_extra_depth`` measures: the runner's
#: frames above ``_execute`` less the probe's own, less what the line has used under
#: ``python`` (CPython 3.11: a script's module frame; for ``-m`` and a directory, runpy's
#: frames too). Checked against ``python`` by tests/cli/test_run_as_python.py.
_OFFSET = {"script": -2, "module": -3, "directory": -5}


def _extra_depth(kind: str) -> int:
    """The recursion depth gradscope stands on at the program's first line, beyond what it
    has used under ``python``: the command line, click and the watcher, measured (a
    change of either is followed), and the runner (``_OFFSET``)."""
    here = sys.getrecursionlimit() - _remaining()
    return max(0, here + _OFFSET[kind])


def _remaining() -> int:
    """How many more nested calls fit under the recursion limit from the caller's frame."""

    def down(n: int) -> int:
        try:
            return down(n + 1)
        except RecursionError:
            return n

    return down(1)


@contextmanager
def _recursion(extra: int) -> Iterator[None]:
    """The program's recursion limit counts its own frames, as under ``python``, where its
    module's frame is the first: the limit it sees and sets is raised by the ``extra``
    frames gradscope's start stands on."""
    from gradscope._src import patching

    get, set_ = sys.getrecursionlimit, sys.setrecursionlimit
    saved = get()

    def getting(get: Any) -> Any:
        def getrecursionlimit() -> int:
            return int(get()) - extra

        return getrecursionlimit

    def setting(set_: Any) -> Any:
        def setrecursionlimit(limit: int) -> None:
            if not isinstance(limit, int) or limit < 1:
                set_(limit)  # Python's own error
            set_(limit + extra)

        return setrecursionlimit

    set_(saved + extra)
    try:
        with patching.Patches() as patches:  # the limit is the interpreter's: every thread
            patches.set("sys.getrecursionlimit", getting, everywhere=True)
            patches.set("sys.setrecursionlimit", setting, everywhere=True)
            yield
    finally:
        set_(saved)


@contextmanager
def _python_sigint() -> Iterator[None]:
    """Ctrl-C is the program's while it runs: Python's own handler, which it may replace;
    gradscope's (``cli.output.interrupts_noted``) is put back after."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = signal.getsignal(signal.SIGINT)
    if saved not in (signal.SIG_IGN, None):
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, saved if saved is not None else signal.SIG_DFL)


def _end_child(outcome: str, error: BaseException | None, program: Program) -> NoReturn:
    """A forked child at its end: Python's last words for how it ended, and its status."""
    from gradscope._src.watcher import process

    def say() -> None:
        if error is not None:
            print_failure(error, program)

    if outcome == rr.INTERRUPTED:
        import signal

        def say_and_die() -> None:  # as Python ends on an uncaught KeyboardInterrupt
            say()
            sys.stderr.flush()
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)

        process.end_child(130, say_and_die)
    status = exit_status(error) if outcome == rr.EXITED else (1 if outcome == rr.RAISED else 0)
    process.end_child(status or 0, say)


def print_failure(exc: BaseException, program: Program, file: Any = None) -> None:
    """The program's exception as Python prints it (to ``file``, standard error by default):
    from the program's own first frame, and without gradscope's frames (the watched calls it
    passed through); through the program's own ``sys.excepthook`` when it set one."""
    file = sys.stderr if file is None else file
    if isinstance(exc, SystemExit):
        if exc.code is not None and not isinstance(exc.code, int):
            print(exc.code, file=file)
        return
    tb = exc.__traceback__
    while tb is not None and not _is_program_frame(tb, program):
        tb = tb.tb_next
    if sys.excepthook is not sys.__excepthook__:  # the program's own, as Python calls it
        with contextlib.redirect_stderr(file):
            sys.excepthook(type(exc), exc, tb or exc.__traceback__)
        return
    shown = traceback.TracebackException(type(exc), exc, tb or exc.__traceback__)
    _drop_own_frames(shown, set())
    print("".join(shown.format()), end="", file=file)


def _drop_own_frames(shown: traceback.TracebackException, seen: set[int]) -> None:
    if id(shown) in seen:
        return
    seen.add(id(shown))
    own = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    frames = [f for f in shown.stack if not _absolute(f.filename).startswith(own + os.sep)]
    shown.stack = traceback.StackSummary.from_list(frames)
    for chained in (shown.__cause__, shown.__context__):
        if chained is not None:
            _drop_own_frames(chained, seen)


def _is_program_frame(tb: types.TracebackType, program: Program) -> bool:
    name = tb.tb_frame.f_code.co_filename
    return _absolute(name) == _absolute(program.origin)


def _absolute(path: str) -> str:
    """``path`` made absolute; as it is when the working directory is gone (the program
    removed it), where only absolute names still mean a file."""
    try:
        return os.path.abspath(path)
    except OSError:
        return path


def exit_status(exc: BaseException | None) -> int | None:
    """The status the process exits with after ``exc``, a ``SystemExit``, as the operating
    system gives it to the parent: ``sys.exit(N)``: N's low 8 bits (``sys.exit(256)`` is 0,
    ``sys.exit(-1)`` 255; beyond a C long, 255), ``sys.exit()``: 0, ``sys.exit("message")``:
    1, the message printed; else None."""
    if not isinstance(exc, SystemExit):
        return None
    if exc.code is None:
        return 0
    if not isinstance(exc.code, int):
        return 1
    code = int(exc.code)
    return (code if -(2**63) <= code < 2**63 else -1) & 0xFF
