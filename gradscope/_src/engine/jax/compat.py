"""What gradscope reads of JAX's private names (JAX 0.4.30 to 0.10), reached through the
compatibility module (``tfcompat.py``: ``jax_ad``, ``jax_source_info``).

Each function falls back to a safe answer when a JAX release moved the name: no user line
(the cut point then names the op alone), no zero-derivative rule (the primitive then passes
the gradient, as most do).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any

from gradscope._src import tfcompat


def has_zero_derivative(primitive: Any) -> bool:
    """Whether ``primitive``'s JVP rule is JAX's ``zero_jvp`` (``ad.defjvp_zero``)."""
    try:
        ad = tfcompat.get("jax_ad")
    except ImportError:  # pragma: no cover - a JAX that moved its AD module
        return False
    rule = ad.primitive_jvps.get(primitive)
    return isinstance(rule, functools.partial) and rule.func is getattr(ad, "zero_jvp", None)


def frames_of(source_info: Any) -> list[tuple[str, int, str]]:
    """``(file, line, function)`` of each frame an equation was made in, outermost first."""
    traceback = getattr(source_info, "traceback", None)
    if traceback is None:
        return []
    try:
        siu = tfcompat.get("jax_source_info")

        codes, lastis = traceback.raw_frames()
        out = []
        for code, lasti in zip(codes, lastis, strict=False):
            frame = siu.raw_frame_to_frame(code, lasti)
            out.append((frame.file_name, int(frame.start_line), frame.function_name))
        out.reverse()
        return out
    except (ImportError, AttributeError, TypeError, ValueError):
        return []


def name_stack(source_info: Any) -> str:
    """The name scopes an equation was made in (``dense/``, Keras' layer names)."""
    return str(getattr(source_info, "name_stack", "") or "")


#: The name scope that marks the equations of a Keras operation replayed by a functional
#: model with the user's line that wrote it (``frontends/python/keras_ops.py``).
MARK = "gradscope@"


@contextlib.contextmanager
def written_at(filename: str, line: int) -> Iterator[None]:
    """Equations made inside the block carry ``filename:line`` as a name scope (``jax.named_scope``,
    metadata only: what profilers show); :func:`written` reads it back. A name scope, not a
    stack: JAX caches the bodies of its ``jit``-wrapped functions with the stacks of their
    first trace, so a stack set here would follow a ``jnp`` function to its later uses."""
    try:
        import jax

        scope = jax.named_scope(f"{MARK}{filename}:{line}")
    except (ImportError, AttributeError, TypeError, ValueError):  # pragma: no cover
        yield
        return
    with scope:
        yield


def written(source_info: Any) -> tuple[str, int] | None:
    """``(file, line)`` of the outermost :func:`written_at` scope an equation was made in."""
    stack = getattr(getattr(source_info, "name_stack", None), "stack", ())
    for entry in stack:
        name = getattr(entry, "name", "")
        if isinstance(name, str) and name.startswith(MARK):
            filename, _, line = name[len(MARK) :].rpartition(":")
            if line.isdigit():
                return filename, int(line)
    return None


def shown_scopes(source_info: Any) -> str:
    """The name scopes of an equation as a node name shows them (``dense``), without
    :func:`written_at`'s."""
    stack = getattr(getattr(source_info, "name_stack", None), "stack", None)
    if stack is None:
        return name_stack(source_info)
    parts = []
    for entry in stack:
        name = getattr(entry, "name", "")
        if isinstance(name, str) and name and not name.startswith(MARK):
            parts.append(name if type(entry).__name__ == "Scope" else f"{name}()")
    return "/".join(parts)
