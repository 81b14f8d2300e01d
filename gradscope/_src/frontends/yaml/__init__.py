"""Spec stage: YAML -> validated frozen dataclasses, with every error located; no TensorFlow."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from gradscope._src.errors import SpecErrors
from gradscope._src.frontends.yaml.model import (
    DEFAULT_MAX_ELEMENTS,
    SPEC_VERSION,
    Arg,
    InputDef,
    ListArg,
    Literal,
    Loss,
    Node,
    Ref,
    Spec,
    VariableDef,
)
from gradscope._src.results.expect import Expectation, Pattern, Pos

if TYPE_CHECKING:
    from gradscope._src.frontends.yaml.ops import OpError, resolve_op
    from gradscope._src.frontends.yaml.schema import spec_schema

# The loader and validator are imported on first use: `gradscope --help` and the commands
# that never read a spec should not pay for them.
_LAZY = {
    "OpError": "gradscope._src.frontends.yaml.ops",
    "resolve_op": "gradscope._src.frontends.yaml.ops",
    "spec_schema": "gradscope._src.frontends.yaml.schema",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'gradscope._src.frontends.yaml' has no attribute {name!r}")


def load_spec(path: str, *, max_elements: int = DEFAULT_MAX_ELEMENTS) -> Spec:
    """Read, parse and validate one spec file.

    Args:
        path: the YAML file; it appears verbatim in every message.
        max_elements: the most elements any input or variable may hold.

    Returns:
        The validated spec.

    Raises:
        SpecErrors: every problem in the file, each ``FILE:LINE:COLUMN: field: message``.
    """
    from gradscope._src.frontends.yaml.loader import load_yaml
    from gradscope._src.frontends.yaml.validate import validate
    from gradscope._src.gcpause import paused

    with paused():
        return validate(load_yaml(path), path, max_elements=max_elements)


def load_specs(paths: Iterable[str], *, max_elements: int = DEFAULT_MAX_ELEMENTS) -> list[Spec]:
    """Load several spec files, reporting the problems of all of them together.

    Args:
        paths: the YAML files, in order.
        max_elements: the most elements any input or variable may hold.

    Returns:
        The validated specs, in the order given.

    Raises:
        SpecErrors: every problem in every file.
    """
    specs: list[Spec] = []
    failures: list[SpecErrors] = []
    for path in paths:
        try:
            specs.append(load_spec(path, max_elements=max_elements))
        except SpecErrors as errors:
            failures.append(errors)
    if failures:
        raise SpecErrors.merge(failures)
    return specs


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
    "OpError",
    "Pattern",
    "Pos",
    "Ref",
    "Spec",
    "VariableDef",
    "load_spec",
    "load_specs",
    "resolve_op",
    "spec_schema",
]
