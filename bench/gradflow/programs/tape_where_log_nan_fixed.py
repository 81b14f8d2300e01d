# gradflow: fixed
# twin of: tape_where_log_nan.py
# change: log taken of a safe input (tf.where(x > 0, x, 1)), the workaround in the report
import numpy as np
import tensorflow as tf

import _truth

rng = np.random.default_rng(0)

x = tf.convert_to_tensor(rng.normal(size=100).astype("float32"))
alpha = tf.Variable(1.0, name="alpha")
with tf.GradientTape() as t:
    safe_x = tf.where(x > 0, x, tf.ones_like(x))
    s = tf.where(x >= 0, alpha * tf.math.log(safe_x), tf.zeros_like(x))
gradients = t.gradient(s, [alpha])
_truth.record(gradients, [alpha])
print(gradients)
