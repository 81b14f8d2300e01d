"""The user's ``FILE:LINE`` for a watched call, an op or a tensor, and names for sources."""

from __future__ import annotations

import runpy
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import CodeType
from typing import Any

from gradscope._src import tfcompat
from gradscope._src.frontends.python import frames, keras_ops

_local = threading.local()


def current() -> frames.Site | None:
    """The user's innermost line on the current stack, through autograph's source maps (the
    line the user wrote, not autograph's generated copy); in a thread working for another
    (a replica's, inside ``strategy.run``) with no user line of its own, the other's."""
    return frames.of_traceback(_stack()) or getattr(_local, "outer", None)


def _stack() -> list[Any]:
    """The current stack, outermost first, as TensorFlow reads it (through autograph's source
    maps) once TensorFlow is imported; as Python's own frames before (a JAX program's)."""
    if "tensorflow" not in sys.modules:
        import traceback

        return list(traceback.extract_stack(sys._getframe(2)))
    tf_stack = tfcompat.get("tf_stack")

    return list(tf_stack.extract_stack())


def set_outer(site: frames.Site | None) -> None:
    """The site ``current`` falls back to in this thread (``replicas.inherit``)."""
    _local.outer = site


def source_maps() -> list[Any]:
    """This thread's autograph source maps: what ``current`` reads the user's lines through."""
    tf_stack = tfcompat.get("tf_stack")

    return list(tf_stack._source_mapper_stacks[threading.get_ident()])


@contextmanager
def mapped_as(maps: list[Any] | None) -> Iterator[None]:
    """Read this thread's lines through another thread's source maps while the block runs
    (a replica thread, inside ``strategy.run``, runs the user's function as autograph
    converted it, with no maps of its own); forgotten after."""
    tf_stack = tfcompat.get("tf_stack")

    stacks, key = tf_stack._source_mapper_stacks, threading.get_ident()
    if maps:
        stacks[key] = list(maps)
    try:
        yield
    finally:
        if maps:
            stacks.pop(key, None)


def fast_current() -> frames.Site | None:
    """The user's innermost line on the current stack, cheaply (eager ops: no source maps;
    asked for every eager op recorded, so each code object is classified once and each
    line's ``Site`` made once)."""
    frame = sys._getframe(1)
    fallback = None
    while frame is not None:
        code = frame.f_code
        if code in keras_ops.CALL_CODES:  # a functional model's Keras operation: its line
            site = keras_ops.site_in(frame)
            if site is not None:
                return site
        kind = _FILE_KIND.get(code)
        if kind is None:
            if len(_FILE_KIND) > 100_000:  # code made at run time (exec, autograph)
                _FILE_KIND.clear()
            kind = _FILE_KIND[code] = frames._kind(code.co_filename)
        if kind == 0 or (kind == 1 and fallback is None):
            key = (code, frame.f_lineno)
            site = _SITES.get(key)
            if site is None:
                if len(_SITES) > 100_000:
                    _SITES.clear()
                site = _SITES[key] = frames.Site(code.co_filename, frame.f_lineno, code.co_name)
            if kind == 0:
                return site
            fallback = site
        frame = frame.f_back  # type: ignore[assignment]
    return fallback


#: ``frames._kind`` of each code object's file (0: the user's, 1: a package's, 2: skipped).
_FILE_KIND: dict[CodeType, int] = {}
#: The ``Site`` of each code object's line seen (made once: eager loops repeat their lines).
_SITES: dict[tuple[CodeType, int], frames.Site] = {}


#: Where a trace begins (``tf.function``, Keras' step, ``get_concrete_function``): the frames
#: outside it are whoever made the function trace, not where its body asks for a gradient.
_TRACE = ("func_graph.py", "func_graph_from_py_func")

#: A call's chain: ``(file, line, instruction)`` of each frame of the program's own code on
#: the stack, innermost first.
Chain = tuple[tuple[str, int, int], ...]


def chain() -> Chain:
    """Where the program asked, through its helpers: every frame of its own code on the
    stack, innermost first, each with its instruction (two calls on one line differ, and so
    do two calls of one helper); inside a trace only the frames inside it, autograph's
    generated copies of the user's functions included. Cheap (no source maps, each code
    object classified once; the walk ends where ``runpy`` started the program): asked at
    every watched call, watched or not."""
    frame = sys._getframe(1)
    out = []
    while frame is not None:
        code = frame.f_code
        kind = _CODE.get(code)
        if kind is None:
            kind = _CODE[code] = _code_kind(code)
        if kind == _END:
            break
        if kind == _KEEP:
            out.append((code.co_filename, frame.f_lineno, frame.f_lasti))
        frame = frame.f_back  # type: ignore[assignment]
    return tuple(out)


_KEEP, _SKIP, _END = 0, 1, 2
#: ``runpy``'s file, whose ``_run_code`` runs the program (frozen in Python 3.11+).
_RUNPY = ("<frozen runpy>", runpy.__file__)
#: What ``chain`` does at a frame of each code object: keep it, skip it, or end the walk.
_CODE: dict[CodeType, int] = {}


def _code_kind(code: CodeType) -> int:
    name = code.co_filename
    if code.co_name == _TRACE[1] and name.endswith(_TRACE[0]):
        return _END  # a trace's body is all that counts inside it
    if code.co_name == "_run_code" and name in _RUNPY:
        return _END  # below it is gradscope run itself
    return _KEEP if frames._kind(name) < 2 or frames._AUTOGRAPH_FILE in name else _SKIP


def described() -> tuple[str, tuple[str, ...]]:
    """The site of the call being made (``current``) and, innermost first, the user's lines
    that called it (its helpers' callers, inside the trace when one runs): what tells two
    calls of one helper apart in a report."""
    stack = _stack()
    site = frames.of_traceback(stack) or getattr(_local, "outer", None)
    start = max((i + 1 for i, f in enumerate(stack)
                 if f.name == _TRACE[1] and f.filename.endswith(_TRACE[0])), default=0)  # fmt: skip
    lines = [str(frames.Site(f.filename, f.lineno)) for f in reversed(stack[start:])
             if frames.is_user_code(f.filename)]  # fmt: skip
    here = text(site)
    if lines and lines[0] == here:
        lines = lines[1:]
    return here, tuple(lines)


def text(site: frames.Site | None) -> str:
    return "" if site is None else str(site)


def variable_name(variable: Any) -> str:
    """A variable's name as reports give it: its Keras path, or its name without ``:0``."""
    path = getattr(variable, "path", None)
    if isinstance(path, str) and path:
        return path
    name = str(getattr(variable, "name", "variable"))
    return name[:-2] if name.endswith(":0") else name


def tensor_name(tensor: Any, site: frames.Site | None, local: str | None = None) -> str:
    """A watched graph tensor's name: ``NAME@FILE:LINE`` after the line that made it, NAME
    the ``local`` name the user's code holds it under, else its op's."""
    name = local or tensor.op.name.rsplit("/", 1)[-1] or "tensor"
    return f"{name}@{site}" if site is not None else name


def unique(names: list[str]) -> list[str]:
    """``names`` with repeats told apart (``Variable``, ``Variable#2``): unnamed eager
    variables all share the name ``Variable``."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
    return out
