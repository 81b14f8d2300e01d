"""Spec stage: YAML -> validated frozen dataclasses, with every error located; no TensorFlow."""

from __future__ import annotations

from gradscope.spec.model import (
    DEFAULT_MAX_ELEMENTS,
    SPEC_VERSION,
    Arg,
    Expectation,
    InputDef,
    ListArg,
    Literal,
    Loss,
    Node,
    Pattern,
    Pos,
    Ref,
    Spec,
    VariableDef,
)

__all__ = [
    "DEFAULT_MAX_ELEMENTS",
    "SPEC_VERSION",
    "Arg",
    "Expectation",
    "InputDef",
    "ListArg",
    "Literal",
    "Loss",
    "Node",
    "Pattern",
    "Pos",
    "Ref",
    "Spec",
    "VariableDef",
]
