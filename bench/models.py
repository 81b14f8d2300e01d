"""The benchmark models: each as a gradscope spec and as plain TensorFlow scripts.

Every model is written three ways, computing the same per-loss gradients:
- ``spec``: the YAML gradscope inspects;
- ``bare``: the fastest plain way (one ``tf.function``, one forward pass under a persistent
  tape, one ``tape.gradient`` per loss, the norms fetched);
- ``naive``: the way many users write it (an eager loop: a new tape and a new forward pass
  per loss);
- ``limit``: the physical limit's compute, measured: the bare function run a second time
  (one forward pass and one backward pass per loss, already traced and optimized), printing
  its seconds; the limit is ``import tensorflow`` plus that.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Shared prelude of the plain scripts: the same quiet TensorFlow import gradscope uses, so
# neither side pays for printing banners.
PRELUDE = """\
import os, sys
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import tensorflow as tf
import keras
tf.get_logger().setLevel("ERROR")
rng = np.random.default_rng(0)
"""

BARE_TAIL = """\
@tf.function
def grads():
    with tf.GradientTape(persistent=True) as tape:
        losses = forward()
    out = []
    for loss in losses:
        gs = tape.gradient(loss, variables)
        out.append([tf.norm(tf.convert_to_tensor(g)) for g in gs if g is not None])
    return losses, out

losses, norms = grads()
print(len(losses), sum(len(n) for n in norms), float(sum(float(x) for n in norms for x in n)))
"""

NAIVE_TAIL = """\
count = 0
for k in range(NUM_LOSSES):
    with tf.GradientTape() as tape:
        loss = forward()[k]
    gs = tape.gradient(loss, variables)
    count += len([float(tf.norm(tf.convert_to_tensor(g))) for g in gs if g is not None])
print(NUM_LOSSES, count)
"""

LIMIT_TAIL = (
    BARE_TAIL
    + """\
import time
start = time.perf_counter()
losses, norms = grads()
float(sum(float(x) for n in norms for x in n))
print(time.perf_counter() - start)
"""
)


@dataclass(frozen=True)
class Model:
    """One benchmark model, written three ways."""

    name: str
    spec: str  # YAML text
    body: str  # Python defining `variables`, `forward()` (returns the list of losses), NUM_LOSSES
    what: str

    def write(self, directory: Path) -> dict[str, Path]:
        directory.mkdir(parents=True, exist_ok=True)
        paths = {
            "spec": directory / f"{self.name}.yaml",
            "bare": directory / f"{self.name}_bare.py",
            "naive": directory / f"{self.name}_naive.py",
            "limit": directory / f"{self.name}_limit.py",
        }
        paths["spec"].write_text(self.spec)
        paths["bare"].write_text(PRELUDE + self.body + BARE_TAIL)
        paths["naive"].write_text(PRELUDE + self.body + NAIVE_TAIL)
        paths["limit"].write_text(PRELUDE + self.body + LIMIT_TAIL)
        return paths


def multitask() -> Model:
    spec = (ROOT / "configs" / "multitask.yaml").read_text()
    body = textwrap.dedent(
        """\
        x = tf.constant(rng.standard_normal((8, 4)), tf.float32)
        labels = tf.constant(rng.integers(0, 3, 8), tf.int32)
        g = keras.initializers.GlorotUniform(seed=1)
        variables = [tf.Variable(g((4, 16))), tf.Variable(tf.zeros([16])),
                     tf.Variable(g((16, 3))), tf.Variable(tf.zeros([3])),
                     tf.Variable(g((16, 3))), tf.Variable(tf.zeros([3]))]
        bw, bb, w1, b1, w2, b2 = variables
        NUM_LOSSES = 3
        def forward():
            h = tf.nn.relu(tf.matmul(x, bw) + bb)
            l1 = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=labels, logits=tf.matmul(h, w1) + b1))
            l2 = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=labels, logits=tf.matmul(h, w2) + b2))
            return [l1, l2, l1]
        """
    )
    return Model("multitask", spec, body, "configs/multitask.yaml (3 losses, 6 variables)")


def mlp(
    layers: int = 100, width: int = 256, batch: int = 32, heads: int = 4, name: str = "mlp100"
) -> Model:
    lines = [
        "gradscope: 1",
        f"name: mlp-{layers}x{width}",
        "inputs:",
        f"  x: {{shape: [{batch}, {width}]}}",
        "variables:",
    ]
    lines += [
        f"  l{i}/w: {{shape: [{width}, {width}], init: glorot_uniform}}" for i in range(layers)
    ]
    lines.append("nodes:")
    previous = "x"
    for i in range(layers):
        lines.append(f"  - {{name: h{i}, op: matmul, inputs: [{previous}, l{i}/w]}}")
        lines.append(f"  - {{name: a{i}, op: tanh, inputs: [h{i}]}}")
        previous = f"a{i}"
    taps = [layers - 1 - k * (layers // heads) for k in range(heads)]
    for k, tap in enumerate(taps):
        lines.append(f"  - {{name: out{k}, op: reduce_mean, inputs: [a{tap}]}}")
    lines.append("losses:")
    lines += [f"  loss{k}: out{k}" for k in range(heads)]
    body = textwrap.dedent(
        f"""\
        x = tf.constant(rng.standard_normal(({batch}, {width})), tf.float32)
        g = keras.initializers.GlorotUniform(seed=1)
        variables = [tf.Variable(g(({width}, {width}))) for _ in range({layers})]
        TAPS = {taps}
        NUM_LOSSES = {heads}
        def forward():
            h, acts = x, []
            for w in variables:
                h = tf.tanh(tf.matmul(h, w))
                acts.append(h)
            return [tf.reduce_mean(acts[t]) for t in TAPS]
        """
    )
    return Model(
        name,
        "\n".join(lines) + "\n",
        body,
        f"{layers}-layer, width-{width} MLP, batch {batch}, {heads} losses at different depths",
    )


def resnet50(batch: int = 8, size: int = 224) -> Model:
    spec = textwrap.dedent(
        f"""\
        gradscope: 1
        name: resnet50-two-heads
        inputs:
          x: {{shape: [{batch}, {size}, {size}, 3]}}
          labels: {{shape: [{batch}], dtype: int32, range: [0, 10]}}
          target: {{shape: [{batch}, 1]}}
        nodes:
          - {{name: backbone, op: layer, inputs: [x], attrs: {{class: ResNet50,
              config: {{weights: null, include_top: false, input_shape: [{size}, {size}, 3], pooling: avg}}}}}}
          - {{name: head1, op: layer, inputs: [backbone], attrs: {{class: Dense, config: {{units: 10}}}}}}
          - {{name: head2, op: layer, inputs: [backbone], attrs: {{class: Dense, config: {{units: 1}}}}}}
          - {{name: ce, op: nn.sparse_softmax_cross_entropy_with_logits, inputs: {{labels: labels, logits: head1}}}}
          - {{name: loss1, op: reduce_mean, inputs: [ce]}}
          - {{name: err, op: squared_difference, inputs: [head2, target]}}
          - {{name: loss2, op: reduce_mean, inputs: [err]}}
        losses:
          classify: loss1
          regress: loss2
        """
    )
    body = textwrap.dedent(
        f"""\
        x = tf.constant(rng.standard_normal(({batch}, {size}, {size}, 3)), tf.float32)
        labels = tf.constant(rng.integers(0, 10, {batch}), tf.int32)
        target = tf.constant(rng.standard_normal(({batch}, 1)), tf.float32)
        backbone = keras.applications.ResNet50(
            weights=None, include_top=False, input_shape=({size}, {size}, 3), pooling="avg")
        head1, head2 = keras.layers.Dense(10), keras.layers.Dense(1)
        head1.build((None, 2048)); head2.build((None, 2048))
        variables = backbone.trainable_variables + head1.trainable_variables + head2.trainable_variables
        NUM_LOSSES = 2
        def forward():
            features = backbone(x)
            l1 = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=labels, logits=head1(features)))
            l2 = tf.reduce_mean(tf.math.squared_difference(head2(features), target))
            return [l1, l2]
        """
    )
    return Model(
        "resnet50",
        spec,
        body,
        f"keras.applications.ResNet50 (weights: null), two heads, batch {batch} at {size}x{size}",
    )


def chain(nodes: int, every: int = 100, width: int = 16) -> Model:
    """``nodes`` elementwise nodes in a chain, a variable mixed in every ``every`` nodes."""
    count = max(1, nodes // every)
    lines = ["gradscope: 1", f"name: chain-{nodes}", "inputs:", f"  x: {{shape: [{width}]}}"]
    lines.append("variables:")
    lines += [f"  v{i}: {{shape: [{width}], init: uniform}}" for i in range(count)]
    lines.append("nodes:")
    previous, made = "x", 0
    ops = ["sin", "cos", "tanh"]
    while made < nodes - 1:
        name = f"n{made}"
        if made % every == 0 and made // every < count:
            lines.append(
                f"  - {{name: {name}, op: multiply, inputs: [{previous}, v{made // every}]}}"
            )
        else:
            lines.append(f"  - {{name: {name}, op: {ops[made % 3]}, inputs: [{previous}]}}")
        previous, made = name, made + 1
    lines.append(f"  - {{name: total, op: reduce_sum, inputs: [{previous}]}}")
    lines += ["losses:", "  total: total"]
    body = textwrap.dedent(
        f"""\
        x = tf.constant(rng.standard_normal({width}), tf.float32)
        variables = [tf.Variable(rng.uniform(size={width}).astype("float32")) for _ in range({count})]
        OPS = [tf.sin, tf.cos, tf.tanh]
        NUM_LOSSES = 1
        def forward():
            h = x
            for i in range({nodes - 1}):
                if i % {every} == 0 and i // {every} < {count}:
                    h = h * variables[i // {every}]
                else:
                    h = OPS[i % 3](h)
            return [tf.reduce_sum(h)]
        """
    )
    return Model(
        f"chain{nodes}",
        "\n".join(lines) + "\n",
        body,
        f"a chain of {nodes} nodes, {count} variables",
    )


def many(variables: int = 1000, losses: int = 50, width: int = 16) -> Model:
    """A chain mixing in a new variable at every other node, a loss tapped every
    ``variables // losses`` variables: many variables x many losses."""
    every = variables // losses
    lines = ["gradscope: 1", f"name: many-{variables}x{losses}", "inputs:"]
    lines += [f"  x: {{shape: [{width}]}}", "variables:"]
    lines += [f"  v{i}: {{shape: [{width}], init: uniform}}" for i in range(variables)]
    lines.append("nodes:")
    previous, taps = "x", []
    for i in range(variables):
        lines.append(f"  - {{name: m{i}, op: multiply, inputs: [{previous}, v{i}]}}")
        lines.append(f"  - {{name: s{i}, op: sin, inputs: [m{i}]}}")
        previous = f"s{i}"
        if (i + 1) % every == 0:
            lines.append(f"  - {{name: out{len(taps)}, op: reduce_sum, inputs: [s{i}]}}")
            taps.append(i)
    lines.append("losses:")
    lines += [f"  loss{k}: out{k}" for k in range(len(taps))]
    body = textwrap.dedent(
        f"""\
        x = tf.constant(rng.standard_normal({width}), tf.float32)
        variables = [tf.Variable(rng.uniform(size={width}).astype("float32"))
                     for _ in range({variables})]
        TAPS = {taps}
        NUM_LOSSES = {len(taps)}
        def forward():
            h, outs = x, []
            for i, v in enumerate(variables):
                h = tf.sin(h * v)
                outs.append(h)
            return [tf.reduce_sum(outs[t]) for t in TAPS]
        """
    )
    return Model(
        f"many{variables}x{losses}",
        "\n".join(lines) + "\n",
        body,
        f"a chain of {2 * variables} nodes, {variables} variables, {len(taps)} losses",
    )


def all_models() -> list[Model]:
    return [
        multitask(),
        mlp(),
        mlp(batch=256, name="mlp100b256"),
        resnet50(),
        chain(1000),
        chain(10_000),
        many(100, 50),
        many(1000, 50),
    ]
