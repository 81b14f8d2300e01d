"""A loop whose bare ``except:`` swallows whatever its gradient call raises, and goes on."""

import tensorflow as tf

w = tf.Variable([1.0, 2.0], name="w")
v = tf.Variable([3.0], name="v")
results = []
for _step in range(3):
    try:
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(w * w)
        results.append(tape.gradient(loss, [w, v]))
    except:  # noqa: E722  a bare except, as some programs have
        results.append("raised")
print("got", ["raised" if r == "raised" else [g is not None for g in r] for r in results])
