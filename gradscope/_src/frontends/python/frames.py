"""Which stack frames are the user's own code, and ``FILE:LINE`` for them.

A cut point of a Python target names the line of the user's code that created the op
(contract section 3). TensorFlow keeps each op's creation stack in graph mode
(``op.traceback``); the line we want is its innermost frame that is neither TensorFlow, Keras,
gradscope, autograph's generated code nor Python's own library. When the op was made
entirely inside some other installed library (a model zoo in site-packages), the innermost
frame outside the libraries above is the next best answer.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import linecache
import os
import re
import sys
import sysconfig
import traceback
import types
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

#: Packages whose frames are never the user's code.
_OWN_LIBRARIES = ("tensorflow", "keras", "tf_keras", "gradscope", "numpy", "absl", "jax",
                  "jaxlib", "optax", "flax")  # fmt: skip
_AUTOGRAPH_FILE = "__autograph_generated_file"
T = TypeVar("T")
_MESSAGE_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


@dataclass(frozen=True)
class Site:
    """A line of source: an absolute file name and a 1-based line."""

    filename: str
    line: int
    function: str = ""

    def __str__(self) -> str:
        return f"{display_path(self.filename)}:{self.line}"

    def text(self) -> str:
        """The source line itself, stripped ('' when the file cannot be read)."""
        return linecache.getline(self.filename, self.line).strip()


def display_path(filename: str) -> str:
    """``filename`` relative to the current directory (``shown_from``'s while it is set)
    when below it, else as it is; a notebook or IPython cell as IPython names it
    (``In[3]``)."""
    cell = _cell(filename)
    if cell is not None:
        return cell
    try:
        path = Path(filename).resolve()
        return str(path.relative_to(Path(_SHOWN_FROM[-1] if _SHOWN_FROM else Path.cwd()).resolve()))
    except (ValueError, OSError):
        return filename


_SHOWN_FROM: list[str] = []


@contextlib.contextmanager
def shown_from(directory: str) -> Iterator[None]:
    """Show file names relative to ``directory`` while the block runs, wherever the working
    directory goes (a program run by ``gradscope run`` may ``chdir``, or remove its own)."""
    _SHOWN_FROM.append(directory)
    try:
        yield
    finally:
        _SHOWN_FROM.pop()


def _prefix(path: str) -> str:
    return str(Path(path).resolve()) + os.sep


@functools.lru_cache(maxsize=1)
def _roots() -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """Directory prefixes of ``(skipped packages, installed packages, Python's library)``."""
    packages = []
    for name in _OWN_LIBRARIES:
        try:
            spec = importlib.util.find_spec(name)  # finds the package without importing it
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.origin:
            packages.append(_prefix(str(Path(spec.origin).parent)))
    paths = sysconfig.get_paths()
    installed = {_prefix(paths["purelib"]), _prefix(paths["platlib"])}
    stdlib = {_prefix(paths["stdlib"]), _prefix(paths["platstdlib"])}
    return tuple(packages), tuple(installed), tuple(stdlib)


#: The name IPython's terminal gives a cell's code (a notebook kernel's is a temporary file).
_IPYTHON_INPUT = re.compile(r"^<ipython-input-(\d+)-[0-9a-f]+>$")


def _cell(filename: str) -> str | None:
    """``In[N]`` for the code of IPython's (or a notebook's) cell N, else None: asked of
    IPython each time, never kept (a notebook kernel names a cell's file after its text, so
    the same text run again as another cell is that cell now, in IPython's tracebacks too)."""
    match = _IPYTHON_INPUT.match(filename)
    number = int(match.group(1)) if match else None
    if number is None and "IPython" in sys.modules:
        shell = sys.modules["IPython"].get_ipython()
        names = getattr(getattr(shell, "compile", None), "_filename_map", None)
        number = names.get(filename) if isinstance(names, dict) else None
    return None if number is None else f"In[{number}]"


@functools.lru_cache(maxsize=4096)
def _kind(filename: str) -> int:
    """0: the user's code; 1: another installed package; 2: a frame to skip."""
    if _IPYTHON_INPUT.match(filename):
        return 0  # a cell of IPython's terminal
    if not filename or filename.startswith("<") or _AUTOGRAPH_FILE in filename:
        return 2
    try:
        resolved = str(Path(filename).resolve())
    except OSError:  # a relative name, and the working directory was removed
        return 2
    packages, installed, stdlib = _roots()
    if resolved.startswith(packages):
        return 2
    if resolved.startswith(installed):
        return 1
    return 2 if resolved.startswith(stdlib) else 0


def is_ours(filename: str) -> bool:
    """Whether ``filename`` is TensorFlow's, Keras', gradscope's or numpy's own code (a loss
    gradscope wrote itself: ``gradscope.keras.targets``, a saved model's)."""
    if not filename or filename.startswith("<"):
        return False
    try:
        return str(Path(filename).resolve()).startswith(_roots()[0])
    except OSError:
        return False


def is_user_code(filename: str) -> bool:
    """Whether frames of ``filename`` belong to the user (not TF, Keras, gradscope, stdlib)."""
    return _kind(filename) == 0


def user_locals(frame: Any) -> dict[str, Any]:
    """The local names of the innermost frame from ``frame`` outwards that runs the user's
    code, or autograph's converted copy of it (which keeps the user's names); ``{}`` if none."""
    while frame is not None:
        filename = frame.f_code.co_filename
        if _AUTOGRAPH_FILE in filename or _kind(filename) == 0:
            return dict(frame.f_locals)
        frame = frame.f_back
    return {}


def user_frame(frame: Any) -> Any:
    """The innermost frame from ``frame`` outwards that runs the user's own file (not
    autograph's copy), or None."""
    while frame is not None:
        if _kind(frame.f_code.co_filename) == 0:
            return frame
        frame = frame.f_back
    return None


def call_user(fn: Callable[[], T]) -> T:
    """Call the user's function; stacks are read only below this frame (``innermost``).

    Whatever the user's code prints goes to stderr: stdout carries the report only, so a
    ``print`` in a loss cannot corrupt ``--format json``; ``sys.exit``, ``os._exit`` and a
    ``BaseException`` become ``TargetEnded`` (``ending.py`` says how and why).
    """
    from gradscope._src.frontends.python.ending import guarded

    with guarded(is_user_code, display_path):
        return fn()


def _is_boundary(site: Site) -> bool:
    return site.function == "call_user" and site.filename == __file__


def innermost(sites: Sequence[Site]) -> Site | None:
    """The innermost user site of a stack listed outermost first (see the module docstring).

    Only frames called from ``call_user`` count when it is on the stack: the code that
    called gradscope (a test, a notebook cell) is never where an op was made.
    """
    start = max((i + 1 for i, s in enumerate(sites) if _is_boundary(s)), default=0)
    fallback = None
    for site in reversed(sites[start:]):
        kind = _kind(site.filename)
        if kind == 0:
            return site
        if kind == 1 and fallback is None:
            fallback = site
    return fallback


def of_traceback(frames: Iterable[object]) -> Site | None:
    """The user's site in a TensorFlow stack (``op.traceback``, ``tf_stack.extract_stack()``)."""
    sites = [
        Site(
            str(getattr(f, "filename", "")),
            int(getattr(f, "lineno", 0) or 0),
            str(getattr(f, "name", "")),
        )
        for f in frames
    ]
    return innermost(sites)


def of_op(op: object) -> Site | None:
    """Where the user's code created a graph op; None when TensorFlow kept no stack, or when
    gradscope made the op itself (a gradient op of its own ``tf.gradients``): the innermost
    frame that is not a library's (nor ``gradscope run``'s wrapper around the program's own
    calls) is then gradscope's, not the user's model or program."""
    try:
        frames = list(getattr(op, "traceback", None) or ())
    except (TypeError, ValueError):
        return None
    own = str(Path(__file__).resolve().parents[3]) + os.sep
    # `gradscope run` wraps the program's own calls (a traced function, a tape); a target's
    # Keras model calls (heads.py) and Keras operations (keras_ops.py) are wrapped too, and
    # so are the train step the Keras Monitor watches (timeline/) and a model's fit inside
    # `watch()` (watch/), and each patched attribute passes through the registry's switch
    # (patching.py): their frames stand between the user's line and TensorFlow, and say
    # nothing of who made the op
    wrappers = (os.path.join(own, "_src", "watcher") + os.sep,
                os.path.join(own, "_src", "patching.py"),
                os.path.join(own, "_src", "watch", "block.py"),
                os.path.join(own, "_src", "frontends", "python", "heads.py"),
                os.path.join(own, "_src", "frontends", "python", "keras_ops.py"),
                os.path.join(own, "_src", "timeline") + os.sep,
                os.path.join(own, "_src", "watch") + os.sep)  # fmt: skip
    for frame in reversed(frames):  # innermost first
        name = str(getattr(frame, "filename", ""))
        if name.startswith(wrappers):
            continue
        if name.startswith(own):
            if getattr(frame, "name", "") == "call_user" and name == __file__:
                break  # gradscope calling the user's loss: the op is the user's
            return None
        if is_user_code(name):
            break
    try:
        return of_traceback(frames)
    except (TypeError, ValueError):
        return None


def of_exception(exc: BaseException) -> Site | None:
    """The user's line an exception was raised from.

    Autograph rewrites the user's functions into generated files; it lists the original
    frames in the message instead (``File "train.py", line 12``), which we prefer.
    """
    from_message = [
        Site(name, int(line)) for name, line in _MESSAGE_FRAME.findall(str(exc)) if name
    ]
    site = innermost(from_message) if from_message else None
    if site is not None and _kind(site.filename) == 0:
        return site
    frames: list[Site] = []
    tb: types.TracebackType | None = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        frames.append(Site(code.co_filename, tb.tb_lineno, code.co_name))
        tb = tb.tb_next
    return innermost(frames) or site


def of_code(fn: object) -> Site | None:
    """Where a function (or a callable object's ``__call__``) is defined, when that is the
    user's code (or another installed package's); a function gradscope made for the user
    (``made_for``) is at the line that asked for it; None for TensorFlow's, Keras', gradscope's
    or Python's own (a ``keras.losses`` object): never a library's line as the user's."""
    try:
        made = _MADE_FOR.get(fn)
    except TypeError:  # not weakly referenceable
        made = None
    if made is not None:
        return made
    target = getattr(fn, "__func__", fn)
    code = getattr(target, "__code__", None)
    if code is None:
        method = vars(type(fn)).get("__call__")  # a callable object: its __call__
        code = getattr(method, "__code__", None)
    if code is None or _kind(code.co_filename) == 2:
        return None
    return Site(code.co_filename, code.co_firstlineno)


#: Functions gradscope made for the user (a Keras target's losses) -> the user's line that
#: asked for them.
_MADE_FOR: weakref.WeakKeyDictionary[Any, Site] = weakref.WeakKeyDictionary()


def made_for(fn: T) -> T:
    """``fn``, made by gradscope for the user's call on the current stack: ``of_code`` names
    that call's line for it (the ``gradscope.keras.targets(...)`` line), not gradscope's."""
    site = innermost([Site(f.filename, f.lineno or 0, f.name) for f in traceback.extract_stack()])
    if site is not None:
        _MADE_FOR[fn] = site
    return fn


def first_message_line(exc: BaseException, limit: int = 300) -> str:
    """``Type: message`` of an exception on one line, without autograph's stack listing."""
    text = str(exc)
    if "in user code:" in text:  # autograph: the original message follows the frames
        text = text.strip().splitlines()[-1]
    text = " ".join(text.split())
    prefix = f"{type(exc).__name__}: "
    if text.startswith(prefix):
        text = text[len(prefix) :]
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
