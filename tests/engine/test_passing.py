"""The eager route's reviewed op lists (``passing.PASSES``, ``NONE_INPUTS``, ``STOPS``) agree
with what ``tf.gradients`` gives each op's floating inputs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.framework import ops as tf_ops

from gradscope._src.engine import graph as graph_tables
from gradscope._src.engine import passing
from gradscope._src.engine.graph import GradientRegistry
from gradscope._src.engine.graph import _carries_gradient as _floating  # what gradscope follows

pytestmark = pytest.mark.tf

#: Builds one or more instances of an op type in the default graph; returns their outputs.
Builder = Callable[[], Any]

_S1, _S4, _S5 = [1, 1, 1, 1], [1, 2, 2, 1], [1, 2, 2, 2, 1]


def _x(*shape: int, low: float = 0.2) -> Any:
    """A fresh float32 constant of ``shape`` with distinct values in ``[low, low + 0.6)``."""
    size = int(np.prod(shape))
    values = low + 0.6 * np.arange(size, dtype=np.float64).reshape(shape) / max(size, 1)
    return tf.constant(values, dtype=tf.float32)


def _c(*shape: int) -> Any:
    """A fresh complex64 constant of ``shape``."""
    return tf.complex(_x(*shape), _x(*shape, low=-0.4))


def _words(text: str) -> list[str]:
    return text.split()


def _i(values: Any) -> Any:
    return tf.constant(values, dtype=tf.int32)


def _unary(name: str, arg: str = "x", low: float = 0.2, **attrs: Any) -> Builder:
    return lambda: getattr(tf.raw_ops, name)(**{arg: _x(2, 3, low=low)}, **attrs)


def _binary(name: str) -> Builder:  # broadcasting: y's gradient is summed back to its shape
    return lambda: getattr(tf.raw_ops, name)(x=_x(2, 3), y=_x(3, low=0.3))


def _reduce(name: str) -> Builder:
    return lambda: getattr(tf.raw_ops, name)(input=_x(2, 3), axis=_i([1]))


def _batch_norm(name: str) -> Builder:
    """Inference (``is_training=False``) and training instances."""

    def build() -> Any:
        return [
            getattr(tf.raw_ops, name)(
                x=_x(1, 2, 2, 3), scale=_x(3), offset=_x(3, low=-0.3), mean=_x(3),
                variance=_x(3, low=0.5), is_training=training,
            )
            for training in (False, True)
        ]  # fmt: skip

    return build


def _variable() -> Any:
    return tf.Variable([[0.5, -1.0], [2.0, 0.25], [1.0, 3.0]]).handle


_UNARY_X = _words(
    """Neg Abs Sign Square Sqrt Rsqrt Reciprocal Inv Exp Expm1 Log Log1p Sin Cos Tan Asin
    Acos Atan Sinh Cosh Asinh Atanh Tanh Sigmoid Erf Erfc Lgamma Digamma"""
)
_UNARY_FEATURES = _words("Relu Relu6 Elu Selu LeakyRelu Softplus Softsign")
_BINARY = _words(
    """AddV2 Add Sub Mul RealDiv Div DivNoNan MulNoNan Maximum Minimum Pow SquaredDifference
    Atan2 Xdivy Xlogy"""
)

ELEMENTWISE: dict[str, Builder] = {
    **{name: _unary(name) for name in _UNARY_X},
    "Acosh": _unary("Acosh", low=1.2),
    **{name: _unary(name, "features") for name in _UNARY_FEATURES},
    **{name: _binary(name) for name in _BINARY},
    "AddN": lambda: tf.raw_ops.AddN(inputs=[_x(2, 3), _x(2, 3), _x(2, 3)]),
    "Cast": lambda: tf.raw_ops.Cast(x=_x(2, 3), DstT=tf.float64),
    "Select": lambda: tf.raw_ops.Select(condition=[True, False], x=_x(2, 3), y=_x(2, 3)),
    "SelectV2": lambda: tf.raw_ops.SelectV2(condition=[True, False, True], t=_x(2, 3), e=_x(2, 3)),
}

COMPLEX: dict[str, Builder] = {
    "Real": lambda: tf.raw_ops.Real(input=_c(2, 3), Tout=tf.float32),
    "Imag": lambda: tf.raw_ops.Imag(input=_c(2, 3), Tout=tf.float32),
    "Conj": lambda: tf.raw_ops.Conj(input=_c(2, 3)),
    "ComplexAbs": lambda: tf.raw_ops.ComplexAbs(x=_c(2, 3), Tout=tf.float32),
    "Complex": lambda: tf.raw_ops.Complex(real=_x(2, 3), imag=_x(2, 3), Tout=tf.complex64),
}

REDUCTIONS: dict[str, Builder] = {
    **{name: _reduce(name) for name in _words("Sum Mean Prod Max Min EuclideanNorm")},
    "Cumsum": lambda: tf.raw_ops.Cumsum(x=_x(2, 3), axis=_i(1)),
    "L2Loss": lambda: tf.raw_ops.L2Loss(t=_x(2, 3)),
}

PRODUCTS: dict[str, Builder] = {
    "MatMul": lambda: tf.raw_ops.MatMul(a=_x(2, 3), b=_x(3, 4)),
    "BatchMatMul": lambda: tf.raw_ops.BatchMatMul(x=_x(2, 2, 3), y=_x(2, 3, 4)),
    "BatchMatMulV2": lambda: tf.raw_ops.BatchMatMulV2(x=_x(2, 2, 3), y=_x(3, 4)),
    "BatchMatMulV3": lambda: tf.raw_ops.BatchMatMulV3(x=_x(2, 2, 3), y=_x(3, 4), Tout=tf.float32),
    "Einsum": lambda: tf.raw_ops.Einsum(inputs=[_x(2, 3), _x(3, 4)], equation="ij,jk->ik"),
    "BiasAdd": lambda: tf.raw_ops.BiasAdd(value=_x(2, 3), bias=_x(3)),
    "BiasAddV1": lambda: tf.raw_ops.BiasAddV1(value=_x(2, 3), bias=_x(3)),
}

SHAPES: dict[str, Builder] = {
    "Identity": _unary("Identity", "input"),
    "Reshape": lambda: tf.raw_ops.Reshape(tensor=_x(2, 3), shape=_i([3, 2])),
    "Transpose": lambda: tf.raw_ops.Transpose(x=_x(2, 3), perm=_i([1, 0])),
    "ExpandDims": lambda: tf.raw_ops.ExpandDims(input=_x(2, 3), axis=_i(0)),
    "Squeeze": lambda: tf.raw_ops.Squeeze(input=_x(2, 1, 3), axis=[1]),
    "ConcatV2": lambda: tf.raw_ops.ConcatV2(values=[_x(2, 3), _x(1, 3)], axis=_i(0)),
    "Concat": lambda: tf.raw_ops.Concat(concat_dim=_i(0), values=[_x(2, 3), _x(1, 3)]),
    "Pack": lambda: tf.raw_ops.Pack(values=[_x(2, 3), _x(2, 3)], axis=0),
    "Unpack": lambda: tf.raw_ops.Unpack(value=_x(3, 2), num=3, axis=0),
    "Split": lambda: tf.raw_ops.Split(axis=_i(1), value=_x(2, 4), num_split=2),
    "SplitV": lambda: tf.raw_ops.SplitV(
        value=_x(2, 3), size_splits=_i([1, 2]), axis=_i(1), num_split=2
    ),
    "Slice": lambda: tf.raw_ops.Slice(input=_x(3, 3), begin=_i([1, 0]), size=_i([2, 2])),
    "StridedSlice": lambda: tf.raw_ops.StridedSlice(
        input=_x(4, 3), begin=_i([0, 1]), end=_i([4, 3]), strides=_i([2, 1])
    ),
    "Tile": lambda: tf.raw_ops.Tile(input=_x(2, 3), multiples=_i([2, 1])),
    "Pad": lambda: tf.raw_ops.Pad(input=_x(2, 3), paddings=_i([[1, 0], [0, 2]])),
    "PadV2": lambda: tf.raw_ops.PadV2(
        input=_x(2, 3), paddings=_i([[1, 0], [0, 2]]), constant_values=_x()
    ),
    "MirrorPad": lambda: tf.raw_ops.MirrorPad(
        input=_x(3, 3), paddings=_i([[1, 1], [0, 1]]), mode="REFLECT"
    ),
    "BroadcastTo": lambda: tf.raw_ops.BroadcastTo(input=_x(3), shape=_i([2, 3])),
    "GatherV2": lambda: tf.raw_ops.GatherV2(params=_x(3, 2), indices=_i([2, 0]), axis=_i(0)),
    "ReverseV2": lambda: tf.raw_ops.ReverseV2(tensor=_x(2, 3), axis=_i([1])),
}

VARIABLES: dict[str, Builder] = {
    "ReadVariableOp": lambda: tf.raw_ops.ReadVariableOp(resource=_variable(), dtype=tf.float32),
    "ResourceGather": lambda: tf.raw_ops.ResourceGather(
        resource=_variable(), indices=_i([2, 0]), dtype=tf.float32
    ),
}

NN: dict[str, Builder] = {
    "Conv2D": lambda: tf.raw_ops.Conv2D(
        input=_x(1, 4, 4, 2), filter=_x(3, 3, 2, 3), strides=_S1, padding="SAME"
    ),
    "Conv3D": lambda: tf.raw_ops.Conv3D(
        input=_x(1, 3, 3, 3, 2), filter=_x(1, 1, 1, 2, 2), strides=[1] * 5, padding="VALID"
    ),
    "DepthwiseConv2dNative": lambda: tf.raw_ops.DepthwiseConv2dNative(
        input=_x(1, 4, 4, 2), filter=_x(3, 3, 2, 1), strides=_S1, padding="SAME"
    ),
    "MaxPool": lambda: tf.raw_ops.MaxPool(
        input=_x(1, 4, 4, 2), ksize=_S4, strides=_S4, padding="VALID"
    ),
    "MaxPoolV2": lambda: tf.raw_ops.MaxPoolV2(
        input=_x(1, 4, 4, 2), ksize=_i(_S4), strides=_i(_S4), padding="VALID"
    ),
    "AvgPool": lambda: tf.raw_ops.AvgPool(
        value=_x(1, 4, 4, 2), ksize=_S4, strides=_S4, padding="VALID"
    ),
    "MaxPool3D": lambda: tf.raw_ops.MaxPool3D(
        input=_x(1, 4, 4, 4, 2), ksize=_S5, strides=_S5, padding="VALID"
    ),
    "AvgPool3D": lambda: tf.raw_ops.AvgPool3D(
        input=_x(1, 4, 4, 4, 2), ksize=_S5, strides=_S5, padding="VALID"
    ),
    "Softmax": lambda: tf.raw_ops.Softmax(logits=_x(2, 3)),
    "LogSoftmax": lambda: tf.raw_ops.LogSoftmax(logits=_x(2, 3)),
    "SoftmaxCrossEntropyWithLogits": lambda: tf.raw_ops.SoftmaxCrossEntropyWithLogits(
        features=_x(2, 3), labels=tf.constant([[0.0, 1.0, 0.0], [0.5, 0.0, 0.5]])
    ),
    "SparseSoftmaxCrossEntropyWithLogits": (
        lambda: tf.raw_ops.SparseSoftmaxCrossEntropyWithLogits(
            features=_x(2, 3), labels=tf.constant([2, 0], dtype=tf.int64)
        )
    ),
    **{
        name: _batch_norm(name)
        for name in _words("FusedBatchNorm FusedBatchNormV2 FusedBatchNormV3")
    },
}

BUILDERS: dict[str, Builder] = {
    **ELEMENTWISE, **COMPLEX, **REDUCTIONS, **PRODUCTS, **SHAPES, **VARIABLES, **NN,
}  # fmt: skip

STOP_BUILDERS: dict[str, Builder] = {"StopGradient": _unary("StopGradient", "input")}


def _built(builder: Builder) -> list[Any]:
    """The distinct ops whose outputs ``builder`` returned, in order."""
    found: dict[str, Any] = {}
    for tensor in tf.nest.flatten(builder()):
        found.setdefault(tensor.op.name, tensor.op)
    return list(found.values())


def _sum(tensors: list[Any]) -> Any:
    """A float32 loss: the sum of ``tensors`` (the real part of complex ones)."""
    parts = []
    for t in tensors:
        if t.dtype.is_complex:
            t = tf.math.real(t)
        parts.append(tf.reduce_sum(tf.cast(t, tf.float32)))
    return tf.add_n(parts)


def _none_inputs(op: Any, outputs: list[Any]) -> set[int]:
    """Which of ``op``'s floating inputs ``tf.gradients`` of ``outputs``' sum leaves None."""
    floating = [k for k, t in enumerate(op.inputs) if _floating(t.dtype)]
    grads = tf.gradients(
        _sum(outputs),
        [op.inputs[k] for k in floating],
        unconnected_gradients=tf.UnconnectedGradients.NONE,
    )
    return {k for k, grad in zip(floating, grads, strict=True) if grad is None}


def test_builders_cover_exactly_the_reviewed_lists() -> None:
    assert sorted(BUILDERS) == sorted(passing.PASSES)
    assert sorted(STOP_BUILDERS) == sorted(passing.STOPS)
    assert set(passing.NONE_INPUTS) <= passing.PASSES


@pytest.mark.parametrize("name", sorted(passing.PASSES))
def test_passes_gives_every_floating_input_a_gradient(name: str) -> None:
    expected = set(passing.NONE_INPUTS.get(name, ()))
    with tf.Graph().as_default():
        for op in _built(BUILDERS[name]):
            assert op.type == name
            floating = {k for k, t in enumerate(op.inputs) if _floating(t.dtype)}
            assert expected < floating  # the loss reaches the op: some input gets a gradient
            outputs = [t for t in op.outputs if _floating(t.dtype)]
            assert _none_inputs(op, outputs) == expected, "loss: the sum of every output"
            if len(outputs) > 1:  # gradient may reach one output only: TF fills the rest
                for t in outputs:
                    assert _none_inputs(op, [t]) == expected, f"loss: {t.name} alone"


@pytest.mark.parametrize("name", sorted(passing.PASSES))
def test_passes_has_a_registered_gradient(name: str) -> None:
    with tf.Graph().as_default():
        for op in _built(BUILDERS[name]):
            assert tf_ops.get_gradient_function(op) is not None
            assert not GradientRegistry().no_gradient(op)


def test_snapshot_has_no_gradient_so_it_is_not_in_passes() -> None:
    with tf.Graph().as_default():
        (op,) = _built(_unary("Snapshot", "input"))
        with pytest.raises(LookupError, match="no entry for: Snapshot"):
            tf_ops.get_gradient_function(op)
        assert GradientRegistry().no_gradient(op)  # refusal() names it: the traced route runs
    assert "Snapshot" not in passing.PASSES


@pytest.mark.parametrize("name", sorted(passing.STOPS))
def test_stops_gives_no_input_a_gradient(name: str) -> None:
    with tf.Graph().as_default():
        for op in _built(STOP_BUILDERS[name]):
            assert op.type == name
            floating = {k for k, t in enumerate(op.inputs) if _floating(t.dtype)}
            assert floating and _none_inputs(op, list(op.outputs)) == floating


#: An op of each type in ``graph.NONE_INPUTS`` the eager route does not review (``PASSES``):
#: the analysis of a path a tape never recorded reads the table (``analyse._unrecorded``).
_MORE_NONE_INPUTS: dict[str, Builder] = {
    "Betainc": lambda: tf.math.betainc(_f32([0.5, 0.7]), _f32([1.5, 2.0]), _f32([0.3, 0.4])),
    "Polygamma": lambda: tf.math.polygamma(_f32([1.0, 2.0]), _f32([0.3, 0.4])),
    "Zeta": lambda: tf.math.zeta(_f32([2.5, 3.0]), _f32([0.3, 0.4])),
    "QuantizeAndDequantizeV2": lambda: tf.raw_ops.QuantizeAndDequantizeV2(
        input=_f32([0.3, 0.4]), input_min=_f32(0.0), input_max=_f32(1.0), range_given=True
    ),
    "QuantizeAndDequantizeV3": lambda: tf.raw_ops.QuantizeAndDequantizeV3(
        input=_f32([0.3, 0.4]),
        input_min=_f32(0.0),
        input_max=_f32(1.0),
        num_bits=tf.constant(8),
        range_given=True,
    ),
}


def _f32(value: Any) -> Any:
    return tf.constant(value, tf.float32)


def test_none_inputs_table_covers_the_other_ops_checked() -> None:
    assert set(graph_tables.NONE_INPUTS) == set(passing.NONE_INPUTS) | set(_MORE_NONE_INPUTS)


@pytest.mark.parametrize("name", sorted(_MORE_NONE_INPUTS))
def test_none_inputs_are_the_inputs_tf_gradients_leaves_none(name: str) -> None:
    with tf.Graph().as_default():
        (op,) = _built(_MORE_NONE_INPUTS[name])
        assert op.type == name
        outputs = [t for t in op.outputs if _floating(t.dtype)]
        assert _none_inputs(op, outputs) == set(graph_tables.NONE_INPUTS[name])
