"""Which ops a value depends on, in a traced graph of TensorFlow ops, and a check for NaN/Inf.

Data edges, plus variable writes: a read of a variable depends on the writes to it made
before the read (TensorFlow orders them with control dependencies, added only when the trace
ends, so creation order stands in for them here, as in ``extract.Extracted``).
"""

from __future__ import annotations

from typing import Any

from gradscope._src.engine.graph import is_write


def nonfinite_flags(tf: Any, t: Any) -> Any:
    """``[any NaN, any +Inf, any -Inf]`` of a floating (or complex) tensor, as 3 bools."""
    parts = [tf.math.real(t), tf.math.imag(t)] if t.dtype.is_complex else [t]
    flags = []
    for x in parts:
        if x.dtype in (tf.float16, tf.bfloat16):
            x = tf.cast(x, tf.float32)
        flags.append(
            tf.stack(
                [
                    tf.reduce_any(tf.math.is_nan(x)),
                    tf.reduce_any(tf.equal(x, float("inf"))),
                    tf.reduce_any(tf.equal(x, float("-inf"))),
                ]
            )
        )
    return flags[0] if len(flags) == 1 else tf.logical_or(flags[0], flags[1])


def writes(ops: list[Any]) -> dict[str, list[int]]:
    """Per resource tensor, the ops that write it (a read sees the last earlier write)."""
    out: dict[str, list[int]] = {}
    for i, op in enumerate(ops):
        if is_write(op.type) and op.inputs:
            out.setdefault(op.inputs[0].name, []).append(i)
    return out


def ancestors(
    ops: list[Any], index: dict[str, int], writes: dict[str, list[int]], start: list[int]
) -> list[int]:
    """Every op whose value flows into ``start`` (data edges and variable writes), sorted."""
    seen = set(start)
    stack = list(start)
    while stack:
        i = stack.pop()
        preds = [index[t.op.name] for t in ops[i].inputs if t.op.name in index]
        for t in ops[i].inputs:
            if t.dtype.name == "resource":
                preds += [w for w in writes.get(t.name, ()) if w < i]
        for p in preds:
            if p not in seen:
                seen.add(p)
                stack.append(p)
    return sorted(seen)


def descendants(ops: list[Any], start: int, writes: dict[str, list[int]]) -> set[int]:
    """Every op among ``ops`` that ``start``'s value flows into (data edges and, through a
    write to a variable, the later reads of it)."""
    reached = {start}
    tensors = {t.name for t in ops[start].outputs}
    written: set[str] = set()
    for i in range(start + 1, len(ops)):
        op = ops[i]
        inputs = [t.name for t in op.inputs]
        values = inputs[1:] if i in writes.get(inputs[0] if inputs else "", ()) else inputs
        if any(t in tensors for t in values) or any(t in written for t in inputs):
            reached.add(i)
            tensors.update(t.name for t in op.outputs)
            if is_write(op.type) and inputs:
                written.add(inputs[0])
    return reached
