"""The line that wrote each Keras operation of a functional model, in its ops' stacks.

``keras.ops.stop_gradient(h)`` written at ``model.py:8`` becomes an operation of a functional
model; the model runs it each time it is called, and the TensorFlow op it makes then has a
stack that ends in Keras' code and in the line that called the model (or ``fit``): never in
``model.py:8``, the line a cut point must name (contract section 3).

While :func:`recording` is on (or after :func:`install`), each Keras operation that is not a
layer notes the user's line when it is applied to symbolic tensors (a functional model's
definition); when it runs later, TensorFlow's own stack mapper (the one autograph uses to show
a converted function's lines) shows the lines of the operation's ``call`` as that user's line.
``frames.of_op`` then finds it like any user frame: the same answer for ``run``, ``inspect``,
``watch()`` and the Monitor. On JAX the equations an operation makes when it runs carry its
line as a name scope (``engine/jax/compat.written_at``), which the jaxpr walk reads. Layers
are left alone: their ops already have their own names and a custom layer's ``call`` is the
user's code. Nothing computed changes: the wrappers pass their
arguments, results and exceptions through.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import sys
import weakref
from collections.abc import Iterator
from types import CodeType, FrameType
from typing import Any

from gradscope._src import patching
from gradscope._src.frontends.python import frames

#: Operation -> where the user applied it to symbolic tensors.
_SITES: weakref.WeakKeyDictionary[Any, frames.Site] = weakref.WeakKeyDictionary()
#: Operation class -> (file, first line, last line) of its ``call``; None when unknown.
_CALLS: dict[type, tuple[str, int, int] | None] = {}
#: The code of those ``call``s: an eager op's line is read from Python's own frames
#: (``watcher/sites.fast_current``), which asks :func:`site_in` at these.
CALL_CODES: set[CodeType] = set()
_depth = [0]
_installed: list[patching.Patches] = []


def install() -> None:
    """Record until the matching :func:`uninstall` (blocks nest; a Keras not yet imported is
    patched once the program imports it)."""
    with patching.LOCK:
        _depth[0] += 1
        if _depth[0] == 1:
            patches = patching.Patches()
            _installed.append(patches)
            patches.wait_for(("keras",), lambda: _patch(patches))


@functools.cache
def for_good() -> None:
    """Record for the rest of the process, once: a program that uses the Monitor (its model
    is often built before the Monitor is made, so importing ``gradscope.keras.Monitor`` asks
    for it; Keras is patched when the program imports it, if it has not yet)."""
    install()


@contextlib.contextmanager
def recording() -> Iterator[None]:
    """Record while the block runs; Keras is restored when the last block ends."""
    install()
    try:
        yield
    finally:
        uninstall()


def uninstall() -> None:
    """Undo one :func:`install`; Keras is restored when none is left."""
    with patching.LOCK:
        _depth[0] -= 1
        if _depth[0] == 0 and _installed:
            _installed.pop().undo()


def _patch(patches: patching.Patches) -> None:
    try:
        from gradscope._src import tfcompat

        layer = tfcompat.get("keras.layers.Layer")
    except ImportError:  # pragma: no cover - a Keras that moved it: no lines, as before
        return

    def noting(symbolic_call: Any) -> Any:
        def noted_symbolic_call(self: Any, *args: Any, **kwargs: Any) -> Any:
            if not isinstance(self, layer):
                site = _user_site()
                if site is not None:
                    with contextlib.suppress(TypeError):
                        _SITES[self] = site
            return symbolic_call(self, *args, **kwargs)

        return noted_symbolic_call

    def mapping(call: Any) -> Any:
        def mapped_call(self: Any, *args: Any, **kwargs: Any) -> Any:
            site = _SITES.get(self) if not isinstance(self, layer) else None
            if site is not None and _on_jax():  # JAX: the line read off a name scope
                with _jax_compat().written_at(site.filename, site.line):
                    return call(self, *args, **kwargs)
            lines = _call_lines(type(self)) if site is not None else None
            if site is None or lines is None:
                return call(self, *args, **kwargs)
            with _mapper(lines, site):
                return call(self, *args, **kwargs)

        return mapped_call

    # every thread: a model may be defined anywhere; the wrappers only pass calls through
    patches.set("keras.Operation.symbolic_call", noting, everywhere=True)
    patches.set("keras.Operation.__call__", mapping, everywhere=True)


def _on_jax() -> bool:
    """Whether Keras runs on JAX (``frontends/backend.py``; Keras is imported by now)."""
    from gradscope._src.frontends.backend import keras_backend

    return keras_backend() == "jax"


def _jax_compat() -> Any:
    from gradscope._src.engine.jax import compat

    return compat


def _user_site() -> frames.Site | None:
    """The innermost frame of the user's code on this thread's stack."""
    sites = []
    frame: Any = sys._getframe(2)
    while frame is not None:
        code = frame.f_code
        sites.append(frames.Site(code.co_filename, frame.f_lineno, code.co_name))
        frame = frame.f_back
    sites.reverse()
    site = frames.innermost(sites)
    return site if site is not None and frames.is_user_code(site.filename) else None


def site_in(frame: FrameType) -> frames.Site | None:
    """The user's line of the operation whose ``call`` runs in ``frame`` (one of
    ``CALL_CODES``), if it was noted."""
    op = frame.f_locals.get("self")
    try:
        return _SITES.get(op) if op is not None else None
    except TypeError:  # an operation that cannot be a weak key
        return None


def _call_lines(cls: type) -> tuple[str, int, int] | None:
    if cls not in _CALLS:
        try:
            method = inspect.unwrap(cls.call)  # type: ignore[attr-defined]
            source, first = inspect.getsourcelines(method)
            _CALLS[cls] = (inspect.getsourcefile(method) or "", first, first + len(source) - 1)
            CALL_CODES.add(method.__code__)
        except (AttributeError, OSError, TypeError):
            _CALLS[cls] = None
    return _CALLS[cls]


@functools.cache
def _mapper_class() -> Any:
    """TensorFlow's stack mapper, made to read one operation's ``call`` lines as the user's
    line on top of whatever mapping is already on (autograph's included)."""
    from gradscope._src import tfcompat

    tf_stack = tfcompat.get("tf_stack")

    class Mapper(tf_stack.StackTraceMapper):  # type: ignore[misc,name-defined]
        def __init__(self, lines: tuple[str, int, int], site: frames.Site) -> None:
            super().__init__()
            filename, first, last = lines
            shown = (site.filename, site.line, site.function or "<keras op>")
            self.own = {(filename, line): shown for line in range(first, last + 1)}

        def get_effective_source_map(self) -> dict[Any, Any]:
            return {**self.parent.get_effective_source_map(), **self.own}

    return Mapper


def _mapper(lines: tuple[str, int, int], site: frames.Site) -> Any:
    try:
        return _mapper_class()(lines, site)
    except ImportError:  # pragma: no cover - a TensorFlow that moved it: no lines, as before
        return contextlib.nullcontext()
