"""Keras on JAX, for every door: whether a program runs Keras on JAX, JAX's version and
device for reports, and the user's line of a jaxpr equation. Read without importing Keras or
JAX: a program that never imports them never pays for them."""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any

from gradscope._src.frontends.python import frames

#: ``(stack, op type) -> (FILE:LINE, whether the line names the op)``
Locate = Callable[[list[tuple[str, int, str]], str], tuple[str, bool]]


def wanted(script: str | None = None) -> bool:
    """Whether the gradients to watch are JAX's, so TensorFlow need not be imported: Keras
    runs on JAX (``KERAS_BACKEND=jax``, or Keras, imported or configured in
    ``~/.keras/keras.json``, set to JAX), or the process (or the program ``script``, read as
    text) uses JAX and never names TensorFlow or Keras. Read without importing Keras or JAX.
    """
    if "keras" not in sys.modules and "tensorflow" not in sys.modules and _plain_jax(script):
        return True
    return keras_backend() == "jax"


def keras_backend() -> str:
    """Keras' backend, as Keras will read it: the imported Keras', else ``KERAS_BACKEND``,
    else ``~/.keras/keras.json``'s, else ``tensorflow`` (Keras' default)."""
    import json
    import os

    keras = sys.modules.get("keras")
    if keras is not None:
        with contextlib.suppress(Exception):
            return str(keras.backend.backend())
    backend = os.environ.get("KERAS_BACKEND")
    if backend is None:
        home = os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
        with (contextlib.suppress(OSError, ValueError, AttributeError),
              open(os.path.join(home, "keras.json"), encoding="utf-8") as f):  # fmt: skip
            backend = json.load(f).get("backend")
    return str(backend or "tensorflow")


#: What gradscope says of a Keras backend whose gradients it cannot read (PyTorch: its
#: autograd graph is not read yet; docs/guides/keras-jax.md#pytorch).
REFUSED = {
    "torch": "Keras' torch backend (KERAS_BACKEND=torch) is not supported: gradscope reads "
    "TensorFlow's and JAX's gradients, not PyTorch's autograd; run with "
    "KERAS_BACKEND=tensorflow or KERAS_BACKEND=jax",
}


def refuse() -> None:
    """Refuse, in one line, a program whose Keras runs on a backend gradscope cannot read.

    Raises:
        UsageError: Keras' backend is PyTorch (or another gradscope does not read).
    """
    from gradscope._src.errors import UsageError

    said = REFUSED.get(keras_backend())
    if said is not None:
        raise UsageError(f"gradscope: {said}")


_JAX = re.compile(r"^\s*(?:import|from)\s+(?:jax|flax|optax)\b", re.MULTILINE)
_TENSORFLOW = re.compile(r"\b(?:tensorflow|keras|tf_keras)\b")


def _plain_jax(script: str | None) -> bool:
    """A plain JAX process or program: JAX imported (or the script imports it) and nothing
    names TensorFlow or Keras. A script whose own modules import TensorFlow would be missed,
    so any mention of it in the script keeps TensorFlow watched."""
    if script is None:
        return "jax" in sys.modules
    try:
        with open(script, encoding="utf-8") as f:
            text = f.read(1 << 20)
    except (OSError, UnicodeDecodeError):
        return False
    return bool(_JAX.search(text)) and not _TENSORFLOW.search(text)


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
    ``frontends/program/graphs.visible`` on TensorFlow)."""
    from gradscope._src.frontends.python.model import _OPERATORS

    if site is None:
        return False
    line = site.text()
    if op_type.lower() in line.lower().replace("_", ""):
        return True
    return any(symbol in line for symbol in _OPERATORS.get(op_type, ()))
