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
_parity: ContextVar[bool] = ContextVar("gradscope_parity", default=False)


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


@contextlib.contextmanager
def comparing() -> Iterator[None]:
    """Inside the block, modes are being compared (``--mode`` given twice or more): each
    mode computes its own way, so ``function`` is the traced function, never the eager route."""
    token = _parity.set(True)
    try:
        yield
    finally:
        _parity.reset(token)


def one_tape_allowed() -> bool:
    """Whether a run may take the eager route (``engine/onetape.py``): in ``function`` mode
    (it computes what the traced function does) and no parity check is comparing modes."""
    return current() == FUNCTION and not _parity.get()
