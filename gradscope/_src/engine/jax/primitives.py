"""How each JAX primitive passes a gradient, and what reports call it.

The data the jaxpr walk reads: which primitives cut a gradient on purpose (``stop_gradient``),
which give their inputs none (a derivative that is zero wherever it exists: ``floor``,
``round``, ``sign``, the comparisons: read from JAX's own registry, ``ad.defjvp_zero``), which
hold a body to walk into, and the name a cut point shows: TensorFlow's op type where the two
mean the same (``ArgMax``, ``Cast``, ``StopGradient``), so a cut reads, and is fixed, the same
on every backend; the primitive's own name otherwise.
"""

from __future__ import annotations

import functools
from typing import Any

#: JAX primitive -> the TensorFlow op type of the same meaning (cut points, fixes, NaN origins).
TF_NAMES: dict[str, str] = {
    "stop_gradient": "StopGradient",
    "argmax": "ArgMax",
    "argmin": "ArgMin",
    "convert_element_type": "Cast",
    "round": "Round",
    "floor": "Floor",
    "ceil": "Ceil",
    "sign": "Sign",
    "is_finite": "IsFinite",
    "eq": "Equal",
    "ne": "NotEqual",
    "gt": "Greater",
    "ge": "GreaterEqual",
    "lt": "Less",
    "le": "LessEqual",
    "and": "LogicalAnd",
    "or": "LogicalOr",
    "not": "LogicalNot",
    "log": "Log",
    "log1p": "Log1p",
    "sqrt": "Sqrt",
    "rsqrt": "Rsqrt",
    "pow": "Pow",
    "div": "RealDiv",
    "acos": "Acos",
    "asin": "Asin",
    "atanh": "Atanh",
    "digamma": "Digamma",
    "lgamma": "Lgamma",
    "exp": "Exp",
    "dot_general": "MatMul",
    "add": "AddV2",
    "add_any": "AddV2",
    "sub": "Sub",
    "mul": "Mul",
    "neg": "Neg",
    "square": "Square",
    "integer_pow": "Pow",
    "reduce_sum": "Sum",
    "reduce_max": "Max",
    "reduce_min": "Min",
    "reduce_prod": "Prod",
    "max": "Maximum",
    "min": "Minimum",
    "tanh": "Tanh",
    "logistic": "Sigmoid",
    "abs": "Abs",
    "reshape": "Reshape",
    "broadcast_in_dim": "BroadcastTo",
    "concatenate": "ConcatV2",
    "transpose": "Transpose",
    "select_n": "SelectV2",
    "dynamic_slice": "Slice",
    "slice": "Slice",
    "gather": "GatherV2",
    "conv_general_dilated": "Conv2D",
    "clamp": "ClipByValue",
    "custom_jvp_call": "CustomJvp",
    "custom_vjp_call": "CustomVjp",
    "cond": "If",
    "while": "While",
    "scan": "Scan",
}

#: Primitives that stop a gradient on purpose.
STOP = frozenset({"stop_gradient"})

#: Primitives that call a body with their own operands, one to one, and return its results:
#: walked into as if their body were written in place.
CALLS = frozenset(
    {"jit", "pjit", "closed_call", "core_call", "remat", "remat2", "checkpoint", "custom_lin",
     "xla_call", "named_call", "shard_map", "smap"}
)  # fmt: skip

#: Primitives with a gradient rule of the user's (or a library's) own: the primal body says
#: which inputs each output is made from, the rule passes the gradient to all of them.
CUSTOM = frozenset({"custom_jvp_call", "custom_vjp_call", "custom_vjp_call_jaxpr"})

#: Primitives whose outputs are their inputs one to one (output ``k`` made from input ``k``).
ONE_TO_ONE = frozenset({"optimization_barrier", "device_put", "copy", "copy_p"})


def tf_name(primitive: str) -> str:
    """The op type a cut point shows for ``primitive``."""
    return TF_NAMES.get(primitive, primitive)


@functools.cache
def gives_none(primitive: Any) -> bool:
    """Whether JAX's derivative of ``primitive`` is zero for every input (``ad.defjvp_zero``:
    ``floor``, ``round``, ``sign``, ``argmax``, the comparisons), read from JAX's own registry
    so a new JAX's primitives are classified as JAX classifies them."""
    from gradscope._src.engine.jax import compat

    return compat.has_zero_derivative(primitive)
