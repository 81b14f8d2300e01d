"""One process: the program's eager step with tape.gradient as gradscope patched it, against
the same step calling TensorFlow's own GradientTape.gradient (issue 28). Run it under
``gradscope run bench/unwatched_ab.py`` (or plain python: the noise floor)."""

import time

import tensorflow as tf
from tensorflow.python.eager import backprop

w = tf.Variable(1.0, name="w")
patched = backprop.GradientTape.gradient
orig = getattr(patched, "__wrapped__", patched)


def step(grad):
    with tf.GradientTape() as tape:
        loss = w * w
    return grad(tape, loss, w)


for _ in range(200):
    step(patched)
best = {"orig": [], "patched": []}
for _ in range(15):
    for name, fn in (("orig", orig), ("patched", patched)):
        start = time.perf_counter()
        for _ in range(300):
            step(fn)
        best[name].append((time.perf_counter() - start) / 300)
a, b = min(best["orig"]), min(best["patched"])
print(
    f"AB orig {a * 1e6:.0f} us  patched {b * 1e6:.0f} us  overhead {(b - a) * 1e6:.0f} us/call  "
    f"({a / b:.2f}x of the program's speed)"
)
