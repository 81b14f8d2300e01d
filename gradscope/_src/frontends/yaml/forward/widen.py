"""A spec rebuilt in float64 for finite differences (``--numeric``): the same values, wider.

Inputs and variables are generated exactly as the original spec generates them and then cast,
so the float64 model is evaluated at the same point as the float32 one. ``dtype`` attrs and
Keras layers' dtypes become float64; a Keras layer's weights start from the original model's
values when the caller hands them over (``engine/retrace.py``).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator, Mapping
from typing import Any

from gradscope._src.frontends.yaml.forward.model import SpecModel
from gradscope._src.frontends.yaml.model import Node, Spec

#: The floating-point types widened to float64 (and Keras' mixed-precision policies).
NARROW = ("float16", "bfloat16", "float32", "mixed_float16", "mixed_bfloat16")
WIDE = "float64"


def _is_dtype_attr(key: str) -> bool:
    return key == "dtype" or key.endswith("_dtype")


def _widen_attrs(attrs: Mapping[str, Any]) -> dict[str, Any]:
    return {k: WIDE if _is_dtype_attr(k) and v in NARROW else v for k, v in attrs.items()}


def _widen_node(node: Node) -> Node:
    attrs = _widen_attrs(node.attrs)
    if node.target == "gradscope.layer" and isinstance(attrs.get("config"), Mapping):
        attrs["config"] = _widen_attrs(attrs["config"])
    return dataclasses.replace(node, attrs=attrs)


def widen(spec: Spec) -> Spec:
    """The spec with every narrow floating ``dtype`` attr (and layer config dtype) as float64.

    Example:
        >>> spec.node("c").attrs  # {name: c, op: cast, inputs: [x], attrs: {dtype: float32}}
        {'dtype': 'float32'}
        >>> widen(spec).node("c").attrs
        {'dtype': 'float64'}
    """
    return dataclasses.replace(spec, nodes=tuple(_widen_node(n) for n in spec.nodes))


def has_layers(spec: Spec) -> bool:
    """Whether a node creates a Keras layer (whose variables appear during the trace)."""
    return any(n.target == "gradscope.layer" for n in spec.nodes)


class WideSpecModel(SpecModel):
    """A ``SpecModel`` whose floating inputs and variables are the original values in float64."""

    def __init__(self, spec: Spec) -> None:
        super().__init__(widen(spec))

    def _input(self, d: Any) -> Any:
        value = super()._input(d)
        return self.tf.cast(value, self.tf.float64) if value.dtype.is_floating else value

    def _variable(self, d: Any) -> Any:
        variable = super()._variable(d)
        if not variable.dtype.is_floating or variable.dtype == self.tf.float64:
            return variable
        wide = self.tf.cast(variable.read_value(), self.tf.float64)
        return self.tf.Variable(wide, trainable=d.trainable, name=d.name)


@contextlib.contextmanager
def float64_policy() -> Iterator[None]:
    """Keras layers (and ``keras.applications`` models) created inside compute in float64."""
    import keras

    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(WIDE)
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)
