"""Keras on JAX, for every door: JAX's version and device for reports, and the user's line
of a jaxpr equation. Read without importing Keras or JAX: a program that never imports them
never pays for them. (Whether a program's gradients are JAX's is ``frontends/backend.py``'s
question.)"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Sequence
from typing import Any

from gradscope._src.frontends.python import frames

#: ``(stack, op type) -> (FILE:LINE, whether the line names the op)``
Locate = Callable[[list[tuple[str, int, str]], str], tuple[str, bool]]


def versions() -> str:
    """``0.10.2`` (JAX's version), for reports; ``""`` when JAX was never imported."""
    jax = sys.modules.get("jax")
    return str(getattr(jax, "__version__", "")) if jax is not None else ""


def device() -> str:
    """The device a JAX report names: ``GPU:0`` when JAX has one, else ``CPU:0`` (JAX is
    not imported for it when the program never imported it)."""
    jax = sys.modules.get("jax")
    if jax is None:
        return "CPU:0"
    with contextlib.suppress(Exception):
        kind = jax.default_backend()
        return "GPU:0" if kind in ("gpu", "cuda", "rocm") else "TPU:0" if kind == "tpu" else "CPU:0"
    return "CPU:0"


def locate(stack: list[tuple[str, int, str]], op_type: str) -> tuple[str, bool]:
    """The user's line in an equation's stack, and whether it names the op (a cut of a
    gradient that still flows is listed only then, as on TensorFlow)."""
    site = frames.innermost([frames.Site(f, line, fn) for f, line, fn in stack])
    return ("" if site is None else str(site)), _names(op_type, site)


def loss_line(
    analysed: Any,
    targets: Sequence[int],
    locate: Callable[[list[tuple[str, int, str]], str], tuple[str, bool]],
) -> str:
    """The user's line that made the loss: the first target's equation's."""
    from gradscope._src.engine.jax.analysis import stack

    g = analysed.graph
    for i in targets:
        t = g.outputs[i]
        if t is None:
            continue
        frames = stack(g, g.graph.producer[t])
        if frames:
            site, _ = locate(frames, "")
            if site:
                return site
    return ""


def _names(op_type: str, site: frames.Site | None) -> bool:
    """Whether the user's line names the op (``ops.argmax`` for ``ArgMax``, ``>`` for
    ``Greater``): a cut of a gradient that still flows is listed only then (as
    ``watcher/graphs.visible`` on TensorFlow)."""
    from gradscope._src.frontends.python.model import _OPERATORS

    if site is None:
        return False
    line = site.text()
    if op_type.lower() in line.lower().replace("_", ""):
        return True
    return any(symbol in line for symbol in _OPERATORS.get(op_type, ()))
