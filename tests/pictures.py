"""Shared by the picture tests: seed reports drawn once per session, and bare TensorFlow's
answer to "does this node's output get a gradient from this loss?".

``node_gradients`` runs a spec eagerly under a persistent GradientTape that watches every
node's output and asks ``tape.gradient(loss, output)`` for each, sharing nothing with
gradscope's engine (no tf.function, no tf.gradients, no graph analysis).
"""

from __future__ import annotations

import functools
from typing import Any

from gradscope._src.frontends.yaml import load_spec
from gradscope._src.frontends.yaml.model import Spec
from gradscope._src.results import report as m
from tests.reference import Grad, _call, _resolve, _variables, reference


@functools.cache
def seed_report(config: str) -> m.Report:
    """``configs/<config>.yaml`` inspected with pictures (each config runs once a session)."""
    import gradscope._src.api as api

    return api.inspect(f"configs/{config}.yaml", pictures=True)


@functools.cache
def seed_reference(config: str) -> dict[str, dict[str, Grad]]:
    """Bare TensorFlow's gradients of every loss x variable of a config (``reference.py``)."""
    return reference(load_spec(f"configs/{config}.yaml"))


@functools.cache
def node_gradients(config: str, loss_name: str) -> dict[str, bool]:
    """Per node with a floating tensor output: whether bare TensorFlow gives it a gradient
    from the loss."""
    return _node_gradients(load_spec(f"configs/{config}.yaml"), loss_name)


def _node_gradients(spec: Spec, loss_name: str) -> dict[str, bool]:
    from gradscope._src.engine.tf_import import import_tensorflow
    from gradscope._src.frontends.yaml.forward import values

    tf = import_tensorflow()
    import keras

    loss = next(x for x in spec.losses if x.name == loss_name)
    keras.utils.set_random_seed(spec.seed)
    env: dict[str, Any] = dict(_variables(tf, keras, spec))
    for d in spec.inputs:
        env[d.name] = tf.constant(values.input_array(d, spec.seed), dtype=tf.as_dtype(d.dtype))
    watched: dict[str, Any] = {}
    with tf.GradientTape(persistent=True) as tape:
        for node in spec.nodes:
            args = [_resolve(a, env) for a in node.args]
            kwargs = {k: _resolve(a, env) for k, a in node.kwargs}
            out = _call(tf, keras, node, args, kwargs, {})
            if isinstance(out, tf.Tensor) and out.dtype.is_floating:
                tape.watch(out)
                watched[node.name] = out
            env[node.name] = out
        target = tf.convert_to_tensor(env[loss.node])
    return {name: tape.gradient(target, t) is not None for name, t in watched.items()}


def line(config: str, node: str) -> int:
    """The line of a node in a config, as the spec loader reads it."""
    return load_spec(f"configs/{config}.yaml").node(node).pos.line
