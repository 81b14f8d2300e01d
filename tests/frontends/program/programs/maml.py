"""MAML's second-order step, eagerly: an outer tape around a loop of tasks, each adapting the
weights with an inner ``tape.gradient`` (recorded by the outer tape), then a later site no
earlier step reached. Prints, as JSON, what bare TensorFlow computed at each execution of each
gradient call: the target's value and the gradients' norms, per site in order of execution.
"""

from __future__ import annotations

import json

import numpy as np
import tensorflow as tf

rng = np.random.default_rng(0)
params = [
    tf.Variable(rng.normal(size=(1, 16)).astype("float32"), name="w1"),
    tf.Variable(np.zeros(16, "float32"), name="b1"),
    tf.Variable((rng.normal(size=(16, 1)) * 0.3).astype("float32"), name="w2"),
    tf.Variable(np.zeros(1, "float32"), name="b2"),
]
opt = tf.keras.optimizers.Adam(0.01)
seen: dict[str, list[dict[str, object]]] = {"inner": [], "outer": [], "later": []}


def forward(x: tf.Tensor, p: list[tf.Tensor]) -> tf.Tensor:
    return tf.nn.relu(x @ p[0] + p[1]) @ p[2] + p[3]


def keep(site: str, value: tf.Tensor, grads: list[tf.Tensor]) -> None:
    seen[site].append({"value": float(value), "norms": [float(tf.norm(g)) for g in grads]})


def tasks(step: int) -> list[tuple[tf.Tensor, ...]]:
    r = np.random.default_rng(step)
    out = []
    for _ in range(2):
        a, phase = r.uniform(0.1, 5.0), r.uniform(0, np.pi)
        xs, xq = (r.uniform(-5, 5, size=(10, 1)).astype("float32") for _ in range(2))
        out.append(tuple(tf.constant(v) for v in
                         (xs, a * np.sin(xs + phase), xq, a * np.sin(xq + phase))))  # fmt: skip
    return out


for step in range(2):
    with tf.GradientTape() as outer:
        total = tf.constant(0.0)
        for xs, ys, xq, yq in tasks(step):
            with tf.GradientTape() as inner:
                inner_loss = tf.reduce_mean(tf.square(forward(xs, params) - ys))
            grads = inner.gradient(inner_loss, params)
            keep("inner", inner_loss, grads)
            fast = [p - 0.01 * g for p, g in zip(params, grads, strict=True)]
            total += tf.reduce_mean(tf.square(forward(xq, fast) - yq))
        loss = total / 2.0
    outer_grads = outer.gradient(loss, params)
    keep("outer", loss, outer_grads)
    opt.apply_gradients(zip(outer_grads, params, strict=True))

for step in range(2):  # a site first reached once the others had their steps
    xs, ys, _, _ = tasks(10 + step)[0]
    with tf.GradientTape() as tape:
        later_loss = tf.reduce_mean(tf.square(forward(xs, params) - ys))
    later_grads = tape.gradient(later_loss, params)
    keep("later", later_loss, later_grads)

print(json.dumps(seen))
