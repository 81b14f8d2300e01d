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


def copies(model: Any, variable: tf.Variable) -> list[Any]:
    """The replicas' copies of a variable made by :func:`local_variable`, replica 0 first."""
    strategy = getattr(model, "distribute_strategy", None) or tf.distribute.get_strategy()
    return list(strategy.experimental_local_results(variable))


def dense(value: Any) -> Any:
    """A gradient (``IndexedSlices`` made dense) or a variable's value, as a tensor."""
    variable = getattr(value, "value", None)  # a Keras variable: read its tf.Variable
    if isinstance(variable, tf.Variable):
        value = variable.read_value()
    return tf.convert_to_tensor(value)


def wide(value: Any) -> Any:
    """:func:`dense`, in float64."""
    tensor = dense(value)
    return tensor if tensor.dtype == tf.float64 else tf.cast(tensor, tf.float64)


def summarize(tensors: list[Any], sizes: list[int]) -> Any:
    """``[sum of squares, zero elements]`` in float64 per tensor, shape [len(tensors), 2]; a
    None (no gradient) gives zeros: the reader knows which those are. One pass over each
    tensor for each number (``l2_loss`` is sum(x**2)/2 without a squared copy)."""
    values = [None if t is None else dense(t) for t in tensors]
    zero = tf.constant(0.0, tf.float64)
    halves = tf.stack([zero if d is None else tf.nn.l2_loss(wide(d)) for d in values])
    nonzero = tf.stack(  # counted in the gradient's own dtype: half the bytes of float64
        [tf.constant(0, tf.int64) if d is None else tf.math.count_nonzero(d) for d in values]
    )
    present = [s if d is not None else 0 for d, s in zip(values, sizes, strict=True)]
    zeros = tf.cast(tf.constant(present, tf.int64) - nonzero, tf.float64)
    return tf.stack([2.0 * halves, zeros], 1)


def dots(a: list[Any], b: list[Any]) -> Any:
    """Per variable, the dot product of two losses' float64 gradients (0 where one is None)."""
    zero = tf.constant(0.0, tf.float64)
    return tf.stack([zero if x is None or y is None else tf.reduce_sum(x * y)
                     for x, y in zip(a, b, strict=True)])  # fmt: skip
