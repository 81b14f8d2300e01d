"""The real gradients' numbers: each leaf's L2 norm and largest magnitude (``ok``, ``zero``,
``nan``), computed as TensorFlow's are (``engine/norms.py``: in the gradient's own dtype,
float16 and bfloat16 widened to float32, complex as magnitudes), so a norm reads the same on
both backends. Works on traced values (inside ``jax.jit``: the numbers leave through
``jax.debug.callback``) and on concrete ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def measurable(grad: Any) -> bool:
    """Whether a gradient leaf has numbers (not ``float0``, the gradient of an integer)."""
    import numpy as np

    dtype = getattr(grad, "dtype", None)
    try:
        return dtype is not None and bool(np.issubdtype(dtype, np.inexact))
    except TypeError:
        return False


def norms_and_maxima(grads: Sequence[Any]) -> tuple[Any, Any]:
    """Two float32 (float64 when any gradient is) vectors, in the order of ``grads``: each
    gradient's L2 norm and ``max |g|`` (``-inf`` for an empty one, as TensorFlow's)."""
    import jax.numpy as jnp

    flats = []
    for g in grads:
        f = jnp.abs(g) if jnp.iscomplexobj(g) else g
        if f.dtype in (jnp.float16, jnp.bfloat16):
            f = f.astype(jnp.float32)
        flats.append(jnp.reshape(f, (-1,)))
    wide = any(f.dtype == jnp.float64 for f in flats)
    dtype = jnp.float64 if wide else jnp.float32
    norms = [jnp.sqrt(jnp.sum(jnp.square(f))).astype(dtype) for f in flats]
    largest = [jnp.max(jnp.abs(f), initial=-jnp.inf).astype(dtype) for f in flats]
    if not flats:
        return jnp.zeros((0,), dtype), jnp.zeros((0,), dtype)
    return jnp.stack(norms), jnp.stack(largest)


def value_of(loss: Any) -> Any:
    """A loss as one number (summed when it is not a scalar, as TensorFlow's targets are)."""
    import jax.numpy as jnp

    value = jnp.real(loss) if jnp.iscomplexobj(loss) else loss
    return jnp.sum(value.astype(jnp.float32) if value.dtype != jnp.float64 else value)


def summaries(grads: Sequence[Any], values: Sequence[Any]) -> tuple[Any, Any, Any]:
    """What a timeline records of each gradient and its variable, reduced where they live:
    the gradient's sum of squares and count of exact zeros, the value's sum of squares
    (float32 vectors, float64 when any gradient is; ``results/summary.py``)."""
    import jax.numpy as jnp

    def squares(x: Any) -> Any:
        f = jnp.abs(x) if jnp.iscomplexobj(x) else x
        f = f.astype(jnp.float32) if f.dtype in (jnp.float16, jnp.bfloat16) else f
        return jnp.sum(jnp.square(f))

    wide = any(g.dtype == jnp.float64 for g in grads)
    dtype = jnp.float64 if wide else jnp.float32
    if not grads:
        empty = jnp.zeros((0,), dtype)
        return empty, jnp.zeros((0,), jnp.int32), empty
    g_sq = jnp.stack([squares(g).astype(dtype) for g in grads])
    zeros = jnp.stack([jnp.sum(g == 0).astype(jnp.int32) for g in grads])
    v_sq = jnp.stack([squares(v).astype(dtype) for v in values])
    return g_sq, zeros, v_sq
