# gradflow: fixed
# twin of: tape_gradient_outside_with.py
# change: f(x) computed inside the with block and its result passed to tape.gradient
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)


def f(x):
    return x**2


def grad(x):
    with tf.GradientTape() as t:
        t.watch(x)
        out = f(x)
    result = t.gradient(out, x)
    _truth.record([result], [x])
    return result


x = tf.convert_to_tensor(9.0)
print(grad(x))
