"""How gradients are computed: eagerly, traced by ``tf.function``, or traced and XLA-compiled.

``function`` is what a ``tf.function`` training step computes (and ``model.fit`` with its
defaults on CPU); ``xla`` compiles the same function with ``jit_compile=True`` (Keras turns
XLA on by default where it can); ``eager`` answers from a ``GradientTape`` run eagerly, as an
eager training loop would. The mode in force is a context variable, so a run of any front-end
picks it up without every layer passing it on.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

EAGER = "eager"
FUNCTION = "function"
XLA = "xla"
MODES = (EAGER, FUNCTION, XLA)

_current: ContextVar[str] = ContextVar("gradscope_mode", default=FUNCTION)


@contextlib.contextmanager
def using(mode: str) -> Iterator[None]:
    """Compute gradients in ``mode`` inside the block."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; expected one of {', '.join(MODES)}")
    token = _current.set(mode)
    try:
        yield
    finally:
        _current.reset(token)


def current() -> str:
    """The mode in force (``function`` unless ``using`` said otherwise)."""
    return _current.get()


def jit_compile() -> bool | None:
    """``tf.function``'s ``jit_compile`` for the mode in force (None: TensorFlow's default)."""
    return True if current() == XLA else None
