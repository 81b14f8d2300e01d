# gradflow: buggy
# title: the function is evaluated inside the tape.gradient call, after the with block ended
# source: https://github.com/tensorflow/tensorflow/issues/27660
# shrunk: the report's snippet (f(x) = x ** 2 at x = 9) unchanged
# kind: tape
# effect: none
# cause: outside-tape
# line: 26
# fix: move-into-tape
# twin: tape_gradient_outside_with_fixed.py
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)


def f(x):
    return x**2


def grad(x):
    with tf.GradientTape() as t:
        t.watch(x)
    result = t.gradient(f(x), x)
    _truth.record([result], [x])
    return result


x = tf.convert_to_tensor(9.0)
print(grad(x))
