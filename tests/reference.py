"""Bare TensorFlow computing what a spec describes: eager, one GradientTape per loss.

This is the reference golden tests hold gradscope to. It shares nothing with gradscope's engine
(no tf.function, no tf.gradients, no graph analysis): it runs each node eagerly under a tape and
asks ``tape.gradient`` for every variable, as a user would.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from gradscope._src.engine.tf_import import import_tensorflow
from gradscope._src.frontends.yaml.forward import values
from gradscope._src.frontends.yaml.forward.model import keras_initializer
from gradscope._src.frontends.yaml.model import ListArg, Literal, Ref, Spec


@dataclass(frozen=True)
class Grad:
    """What TensorFlow returned for one loss x variable."""

    none: bool
    norm: float | None = None
    sparse: bool = False
    finite: bool = True
    zero: bool = False


def _resolve(arg: Any, env: dict[str, Any]) -> Any:
    if isinstance(arg, Literal):
        return arg.value
    if isinstance(arg, ListArg):
        return [_resolve(a, env) for a in arg.items]
    assert isinstance(arg, Ref)
    value = env[arg.name]
    return value if arg.index is None else value[arg.index]


def _call(tf: Any, keras: Any, node: Any, args: list, kwargs: dict, layers: dict) -> Any:
    if node.target == "gradscope.stop_gradient":
        (x,) = args + list(kwargs.values())
        return tf.stop_gradient(x)
    if node.target == "gradscope.assign":
        ref, value = kwargs.get("ref", args[0] if args else None), kwargs.get("value")
        if value is None:
            value = args[1]
        value = tf.convert_to_tensor(value, dtype=ref.dtype)
        begin = node.attrs.get("begin")
        if begin is None:
            ref.assign(value)
        else:
            index = tuple(
                slice(b, b + s) for b, s in zip(begin, value.shape.as_list(), strict=True)
            )
            ref[index].assign(value)
        return ref
    if node.target == "gradscope.layer":
        cls = getattr(keras.layers, node.attrs["class"], None)
        config = dict(node.attrs.get("config") or {})
        if cls is None:
            cls = getattr(keras.applications, node.attrs["class"])
            config["weights"] = None
        layer = layers[node.name] = cls(**config)
        return layer(*args, **kwargs, **dict(node.attrs.get("call") or {}))
    attrs = {
        k: tf.as_dtype(v) if (k == "dtype" or k.endswith("_dtype")) and isinstance(v, str) else v
        for k, v in node.attrs.items()
    }
    fn = functools.reduce(getattr, node.target.split("."), tf)
    return fn(*args, **kwargs, **attrs)


def _variables(tf: Any, keras: Any, spec: Spec) -> dict[str, Any]:
    out = {}
    for d in spec.variables:
        array = values.variable_array(d, spec.seed)
        if array is None:
            init = keras_initializer(keras, d.init, values.derived_seed(spec.seed, d.name))
            array = init(d.shape, dtype=d.dtype)
        out[d.name] = tf.Variable(array, trainable=d.trainable, dtype=tf.as_dtype(d.dtype))
    return out


def reference(spec: Spec) -> dict[str, dict[str, Grad]]:
    """Per loss, per requested variable: what ``tape.gradient`` returns."""
    tf = import_tensorflow()
    return {
        loss: {n: _grad(tf, g) for n, g in grads.items()} for loss, grads in gradients(spec).items()
    }


def gradients(
    spec: Spec, loss_values: dict[str, float] | None = None, shard: tuple[int, int] | None = None
) -> dict[str, dict[str, Any]]:
    """Per loss, per requested variable: the gradient itself (a tensor, IndexedSlices or None).

    With ``loss_values``, each loss's value (summed, as TensorFlow sums a non-scalar loss) is put
    there too. With ``shard=(index, count)``, every input with a first axis is cut into
    ``count`` consecutive slices along it (``numpy.array_split``, as a distributed dataset
    splits a batch) and only slice ``index`` is used; a ``grad_loss`` that no longer fits the
    loss is cut the same way.
    """
    tf = import_tensorflow()
    import keras

    out: dict[str, dict[str, Any]] = {}
    for loss in spec.losses:
        keras.utils.set_random_seed(spec.seed)
        variables = _variables(tf, keras, spec)
        inputs = {
            d.name: tf.constant(_part(values.input_array(d, spec.seed), shard),
                                dtype=tf.as_dtype(d.dtype))
            for d in spec.inputs
        }  # fmt: skip
        env: dict[str, Any] = {**inputs, **variables}
        layers: dict[str, Any] = {}
        with tf.GradientTape(persistent=True) as tape:
            for node in spec.nodes:
                args = [_resolve(a, env) for a in node.args]
                kwargs = {k: _resolve(a, env) for k, a in node.kwargs}
                env[node.name] = _call(tf, keras, node, args, kwargs, layers)
                if node.name in loss.stop_gradients:
                    env[node.name] = tf.stop_gradient(env[node.name])
            target = tf.convert_to_tensor(env[loss.node])
        if loss_values is not None:
            loss_values[loss.name] = float(tf.reduce_sum(tf.cast(target, tf.float64)))
        named = dict(variables)
        for node_name, layer in layers.items():
            for w in layer.weights:
                path = (
                    w.path[len(layer.name) + 1 :] if w.path.startswith(layer.name + "/") else w.path
                )
                named[f"{node_name}/{path}"] = w
        wanted = {n: v for n, v in named.items() if v.trainable and loss.includes(n)}
        upstream = None
        if loss.grad_loss is not None:
            given = np.asarray(loss.grad_loss)
            if shard is not None and not _fits(given.shape, tuple(target.shape)):
                given = _part(given, shard)
            upstream = tf.broadcast_to(tf.constant(given, target.dtype), tf.shape(target))
        grads = tape.gradient(target, list(wanted.values()), output_gradients=upstream)
        out[loss.name] = dict(zip(wanted, grads, strict=True))
    return out


def _part(array: Any, shard: tuple[int, int] | None) -> Any:
    array = np.asarray(array)
    if shard is None or array.ndim == 0:
        return array
    return np.array_split(array, shard[1], axis=0)[shard[0]]


def _fits(given: tuple[int, ...], shape: tuple[int, ...]) -> bool:
    try:
        return tuple(np.broadcast_shapes(given, shape)) == shape
    except ValueError:
        return False


def _grad(tf: Any, g: Any) -> Grad:
    if g is None:
        return Grad(none=True)
    sparse = isinstance(g, tf.IndexedSlices)
    dense = tf.convert_to_tensor(g)
    finite = bool(tf.reduce_all(tf.math.is_finite(dense)))
    zero = bool(tf.reduce_all(tf.equal(dense, 0)))
    return Grad(False, float(tf.norm(dense)), sparse, finite, zero)
