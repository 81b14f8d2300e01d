"""The private JAX names gradscope reads, in one place (JAX 0.4.30 to 0.10).

Each function falls back to a safe answer when a JAX release moved the name: no user line
(the cut point then names the op alone), no zero-derivative rule (the primitive then passes
the gradient, as most do).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any


def has_zero_derivative(primitive: Any) -> bool:
    """Whether ``primitive``'s JVP rule is JAX's ``zero_jvp`` (``ad.defjvp_zero``)."""
    try:
        from jax._src.interpreters import ad
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
        from jax._src import source_info_util as siu

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


def traceback_now() -> Any:
    """JAX's record of the Python stack here (what an equation made now would keep), or None."""
    try:
        from jax._src.lib import xla_client

        return xla_client.Traceback.get_traceback()
    except (ImportError, AttributeError):  # pragma: no cover - a JAX that moved it
        return None


@contextlib.contextmanager
def made_at(traceback: Any) -> Iterator[None]:
    """Equations made inside the block keep ``traceback`` as the stack they were made in: a
    Keras operation of a functional model, replayed by Keras, at the line that wrote it.

    Only the traceback JAX keeps changes (what its errors and HLO metadata cite), and only
    for equations made inside; nothing computed, and no exception, is touched (JAX's own
    ``user_context`` would also rewrite the exceptions raised inside)."""
    try:
        from jax._src import source_info_util as siu

        local = siu._source_info_context
        previous = local.context
    except (ImportError, AttributeError):  # pragma: no cover - a JAX that moved it
        yield
        return
    local.context = previous.replace(traceback=traceback)
    try:
        yield
    finally:
        local.context = previous
