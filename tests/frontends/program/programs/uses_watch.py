"""A notebook exported to a script: it watches a block of its own with gradscope.watch()."""

import tensorflow as tf

import gradscope

w = tf.Variable([1.0, 2.0], name="w")
v = tf.Variable([3.0], name="v")
with tf.GradientTape() as tape:
    loss = tf.reduce_sum(v * v)
print("before", tape.gradient(loss, v).numpy().tolist())
with gradscope.watch() as block:
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(w * w)
    grad = tape.gradient(loss, w)
print("grad", grad.numpy().tolist())
print("block", [[(s.name, str(s.status)) for s in c.sources] for c in block.report.calls])
print("end")
