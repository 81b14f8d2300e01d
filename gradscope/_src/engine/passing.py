"""Which tensors of a forward-only trace receive a gradient, where that is TensorFlow's answer.

The traced route asks ``tf.gradients`` which tensors get a gradient from a loss. Without a
backward graph, ``bodies.static_received`` derives it from the gradient registry's rules; that
is TensorFlow's own answer wherever gradient arrives only at ops whose gradient functions give
every floating input a gradient (``PASSES``: reviewed from TensorFlow's ``*_grad.py``), cut
every input (``stop_gradient``, an op TensorFlow declares not differentiable), or have only
non-floating outputs (gradient never arrives: ``argmax``, a comparison). ``refusal`` names the
first op on a path where that is not known (a custom gradient, a nested function, an op with
no gradient registered, an op not reviewed): the run then takes the traced route.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gradscope._src import tfcompat
from gradscope._src.engine import bodies
from gradscope._src.engine import cuts as flow
from gradscope._src.engine import graph as graph_tables
from gradscope._src.engine.graph import NONE_GRADIENT_TYPES, Extracted


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: Op types whose registered gradient gives every floating input a gradient (a tensor,
#: zeros included); integer inputs (shapes, axes, indices, labels) get None, which is no
#: cut (``cuts.crossing``: such an input carries no gradient). Reviewed from TensorFlow's
#: ``math_grad.py``, ``nn_grad.py``, ``array_grad.py`` and ``resource_variable_ops.py``, and
#: checked against ``tf.gradients`` by ``tests/engine/test_passing.py``. Not ``Snapshot``:
#: TensorFlow registers no gradient for it (``tf.gradients`` raises ``LookupError``), so
#: ``refusal`` names it as an op with no gradient.
PASSES = _names(
    """Identity ReadVariableOp ResourceGather Cast Neg Abs Sign Square Sqrt Rsqrt
    Reciprocal Inv Exp Expm1 Log Log1p Sin Cos Tan Asin Acos Atan Sinh Cosh Asinh Acosh Atanh
    Tanh Sigmoid Relu Relu6 Elu Selu LeakyRelu Softplus Softsign Erf Erfc Lgamma Digamma
    Real Imag Conj ComplexAbs Complex
    AddV2 Add Sub Mul RealDiv Div DivNoNan MulNoNan Maximum Minimum Pow SquaredDifference
    Atan2 Xdivy Xlogy AddN BiasAdd BiasAddV1 MatMul BatchMatMul BatchMatMulV2 BatchMatMulV3
    Einsum Sum Mean Prod Max Min EuclideanNorm Cumsum L2Loss
    Reshape Transpose ExpandDims Squeeze ConcatV2 Concat Pack Unpack Split SplitV Slice
    StridedSlice Tile Pad PadV2 MirrorPad BroadcastTo GatherV2 ReverseV2 Select SelectV2
    Conv2D Conv3D DepthwiseConv2dNative MaxPool MaxPoolV2 AvgPool AvgPool3D MaxPool3D
    Softmax LogSoftmax SoftmaxCrossEntropyWithLogits SparseSoftmaxCrossEntropyWithLogits
    FusedBatchNorm FusedBatchNormV2 FusedBatchNormV3"""
)

#: Floating inputs a ``PASSES`` op's gradient leaves without one (the batch norm's mean and
#: variance, ``PadV2``'s constant): a path from an analysed variable through them is refused.
#: The one table is ``graph.NONE_INPUTS``; these are its ops the eager route reviewed.
NONE_INPUTS = {k: v for k, v in graph_tables.NONE_INPUTS.items() if k in PASSES}

#: Ops that stop every input's gradient, exactly as ``tf.gradients`` does (``PreventGradient``
#: is not one: differentiating through it is an error).
STOPS = frozenset({"StopGradient"})


def random(op_type: str) -> bool:
    """Whether an op draws random numbers (a run draws different ones from a trace's)."""
    return op_type.startswith(("Random", "StatelessRandom", "StatelessTruncated", "Truncated",
                               "StatelessParameterized", "ParameterizedTruncated",
                               "Multinomial", "StatelessMultinomial"))  # fmt: skip


def refusal(x: Extracted, vsets: Sequence[int], reach: Sequence[bool], received: set[int]) -> str:
    """Why the static answer may not be TensorFlow's for this loss ("" when it is).

    Args:
        x: the forward-only trace.
        vsets: per op, the analysed variables (of this loss) with a path to it.
        reach: per op, whether it has a path to the loss.
        received: ``bodies.static_received`` from the loss.
    """
    tf_ops = tfcompat.get("ops")

    graph = x.graph
    for index, node in enumerate(graph.ops):
        if not (reach[index] and vsets[index]) or not any(t in received for t in node.outputs):
            continue
        op = x.tf_ops[index]
        if bodies.has_bodies(op) or node.type in ("IdentityN", "PreventGradient"):
            return f"{op.name} ({node.type})"
        if node.type in STOPS or node.type in NONE_GRADIENT_TYPES:
            continue
        if node.no_gradient:
            try:
                tf_ops.get_gradient_function(op)
            except LookupError:  # tf.gradients refuses it: the traced route says so
                return f"{op.name} ({node.type}: no gradient)"
            continue
        if node.type not in PASSES:
            return f"{op.name} ({node.type})"
        for k, t in enumerate(op.inputs):
            tid = x.tensor_id(t)
            if tid is None or not graph.differentiable[tid] or not vsets[graph.producer[tid]]:
                continue
            if k in NONE_INPUTS.get(node.type, ()):
                return f"{op.name} ({node.type} input {k})"
    return ""


def received_from(x: Extracted, target: int) -> set[int]:
    """Tensor ids that get a gradient from tensor ``target``, by the registry's rules."""
    return bodies.static_received(x.graph, {target})


def any_random(ops: Sequence[Any]) -> str:
    """The first op that draws random numbers, "" when none does."""
    for op in ops:
        if random(op.type):
            return f"{op.name} ({op.type})"
    return ""


__all__ = ["PASSES", "flow", "received_from", "refusal"]
