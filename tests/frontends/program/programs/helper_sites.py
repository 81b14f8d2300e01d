"""Gradient calls that share a line: one helper asked from two places, eagerly and inside a
``tf.function``, and two ``tape.gradient`` calls on one line of a ``tf.function``. Each
second call gets a None for ``v``."""

import tensorflow as tf

w = tf.Variable([1.0, 2.0], name="w")
v = tf.Variable([3.0], name="v")


def grads_of(tape, loss):
    return tape.gradient(loss, [w, v])


def losses():
    with tf.GradientTape(persistent=True) as tape:
        both = tf.reduce_sum(w * w) + tf.reduce_sum(v)
        only_w = tf.reduce_sum(w * 3.0)
    return tape, both, only_w


for step in range(3):
    tape, both, only_w = losses()
    first = grads_of(tape, both)
    second = grads_of(tape, only_w)
    print("eager", step, [g is not None for g in first], [g is not None for g in second])


@tf.function
def traced():
    tape, both, only_w = losses()
    first = grads_of(tape, both)
    second = grads_of(tape, only_w)
    return [g is not None for g in first], [g is not None for g in second]


@tf.function
def one_line():
    tape, both, only_w = losses()
    a, b = tape.gradient(both, [w, v]), tape.gradient(only_w, [w, v])
    return [g is not None for g in a], [g is not None for g in b]


for step in range(2):
    print("function", step, *[[bool(g) for g in r] for r in traced() + one_line()])
