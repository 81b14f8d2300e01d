"""The ops a due step of the Keras ``Monitor`` builds: gradients and weights reduced to a few
float64 numbers per variable, and the variables that hold them (a copy per replica)."""

from __future__ import annotations

from typing import Any

import tensorflow as tf


def local_variable(shape: Any, dtype: Any, name: str) -> tf.Variable:
    """A variable of zeros outside the model that each replica writes its own copy of
    (under a ``tf.distribute`` strategy; a plain variable without one), made eagerly."""
    with tf.init_scope():
        if tf.distribute.get_strategy().num_replicas_in_sync == 1:
            return tf.Variable(tf.zeros(shape, dtype), trainable=False, name=name)
        return tf.Variable(
            tf.zeros(shape, dtype),
            trainable=False,
            name=name,
            synchronization=tf.VariableSynchronization.ON_READ,
            aggregation=tf.VariableAggregation.NONE,
        )


def due(step: Any, every: int) -> Any:
    """Whether the Monitor records ``step`` (a tensor, from 1): the first step and every
    ``every``-th, as ``gradscope run --every`` does."""
    return tf.logical_or(tf.equal(step % every, 0), tf.equal(step, 1))


def copies(model: Any, variable: tf.Variable) -> list[Any]:
    """The replicas' copies of a variable made by :func:`local_variable`, replica 0 first."""
    strategy = getattr(model, "distribute_strategy", None) or tf.distribute.get_strategy()
    return list(strategy.experimental_local_results(variable))


def dense(value: Any) -> Any:
    """A gradient (``IndexedSlices`` made dense) or a variable's value, as a tensor (one
    read, no copy: a Keras variable is read through its ``tf.Variable``)."""
    variable = getattr(value, "value", None)  # a Keras variable: its tf.Variable
    return tf.convert_to_tensor(variable if isinstance(variable, tf.Variable) else value)


def wide(value: Any) -> Any:
    """:func:`dense`, in float64."""
    tensor = dense(value)
    return tensor if tensor.dtype == tf.float64 else tf.cast(tensor, tf.float64)


def square_sums(tensors: list[Any]) -> Any:
    """Per tensor, the float64 sum of its squares, shape [len(tensors)]; 0 for a None.
    (``l2_loss`` is sum(x**2)/2 in one pass, without a squared copy.)"""
    zero = tf.constant(0.0, tf.float64)
    halves = [zero if t is None else tf.nn.l2_loss(wide(t)) for t in tensors]
    return 2.0 * tf.stack(halves)


def summarize(tensors: list[Any], sizes: list[int]) -> Any:
    """``[sum of squares, zero elements]`` in float64 per tensor, shape [len(tensors), 2]; a
    None (no gradient) gives zeros: the reader knows which those are.

    Tracing costs by the op (a few hundred microseconds each, again when the graph is
    optimized), so the constants are shared: three ops per tensor count its non-zeros."""
    values = [None if t is None else dense(t) for t in tensors]
    # Counted in int32 (half the bytes int64 writes: the count is a due step's largest
    # cost), unless a tensor has 2**31 elements or more.
    sized = [d.shape.num_elements() for d in values if d is not None]
    big = any(n is None or n >= 2**31 for n in sized)
    count_type = tf.int64 if big else tf.int32
    zeros: dict[Any, Any] = {}  # dtype -> its 0
    axes: dict[int, Any] = {}  # rank -> all its axes
    nonzero = []
    for d in values:
        if d is None:
            if "count" not in zeros:
                zeros["count"] = tf.constant(0, count_type)
            nonzero.append(zeros["count"])
            continue
        zero = zeros.get(d.dtype)
        if zero is None:
            zero = zeros[d.dtype] = tf.constant(0, d.dtype)
        rank = d.shape.rank
        if rank is not None and rank not in axes:
            axes[rank] = tf.constant(list(range(rank)), tf.int32)
        every = None if rank is None else axes[rank]  # None: all axes, found when it runs
        nonzero.append(tf.reduce_sum(tf.cast(tf.not_equal(d, zero), count_type), every))
    present = [s if d is not None else 0 for d, s in zip(values, sizes, strict=True)]
    counts = tf.constant(present, tf.float64) - tf.cast(tf.stack(nonzero), tf.float64)
    return tf.stack([square_sums(values), counts], 1)


def dots(a: list[Any], b: list[Any]) -> Any:
    """Per variable, the dot product of two losses' float64 gradients (0 where one is None)."""
    zero = tf.constant(0.0, tf.float64)
    return tf.stack([zero if x is None or y is None else tf.reduce_sum(x * y)
                     for x, y in zip(a, b, strict=True)])  # fmt: skip
