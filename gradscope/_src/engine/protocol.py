"""What the gradient stage needs from a model: its losses and variables inside one trace."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from gradscope._src.location import Location


@dataclass
class VariableEntry:
    """A variable the model exposes for analysis; ``source`` is ``FILE:LINE``."""

    name: str
    variable: Any
    trainable: bool
    source: str
    attribute: str = ""  # the attribute the user's code reaches it by (``box_head.kernel``)


def _everything(_name: str) -> bool:
    return True


@dataclass
class LossEntry:
    """A loss the model exposes: its tensor and how to differentiate it."""

    name: str
    tensor: Any
    location: Location | None = None
    grad_ys: Any = None
    stop_tensors: list[Any] = field(default_factory=list)
    includes: Callable[[str], bool] = _everything
    #: ``"zero"``: a variable the loss does not reach gets zeros, as with
    #: ``unconnected_gradients=tf.UnconnectedGradients.ZERO`` (its cut points still show why).
    unconnected: str = "none"


class Traceable(Protocol):
    """A model gradscope can trace: a spec (``SpecModel``) or a Python target (``PythonModel``).

    Everything the engine asks of a model goes through these methods; the engine never
    imports a front-end.
    """

    @property
    def target(self) -> str:
        """The spec path or ``module:function`` this model came from."""

    def trace(self) -> tuple[list[LossEntry], list[VariableEntry]]:
        """Build the forward pass inside the current trace; return its losses and variables."""

    def locate(self, op: Any) -> tuple[str, str] | None:
        """``(node, "FILE:LINE")`` of the user's code that created ``op``, if known."""

    def visible(self, op: Any) -> bool:
        """Whether ``op`` is one the user wrote (a node's output), not one inside a library
        function (the comparison inside ``sigmoid_cross_entropy_with_logits``)."""

    def trace_error(self, exc: BaseException) -> BaseException:
        """Turn a TensorFlow error into a located gradscope error (or return it unchanged)."""

    def describe(self, op: Any) -> str | None:
        """The op the user named for ``op``, as short as it reads (``matmul``, ``Dense`` for a
        spec's layer node), or None when the front-end has no such name (pictures use it)."""

    def display_path(self, filename: str) -> str:
        """``filename`` as reports show it (relative to the working directory when below it)."""

    def named_inputs(self) -> list[tuple[str, str, Any]]:
        """The model's named data inputs as ``(name, "FILE:LINE", eager tensor)``: a NaN
        found in one is named after it (a spec's ``inputs``; none for a Python target)."""
