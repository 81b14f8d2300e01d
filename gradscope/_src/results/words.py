"""How gradscope words an explanation: a cut point, a status's meaning, why a gradient is None,
where a NaN first appeared.

The one place these phrases are made: the policy's problem messages, the timeline's records
and every format ask here and never build them again (issue 29); why a gradient is missing is
a cause of ``results/causes.py``, which words itself. Plain strings from plain data: no
TensorFlow, no renderer.

Two styles of a cut point, each for its place:

- :func:`cut_text`, ``frozen (StopGradient) at configs/x.yaml:17``: tables, causes, notes;
- :func:`cut_quoted`, ```frozen` (StopGradient), configs/x.yaml:17``: inside a sentence of a
  problem's message, where the node is code.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from gradscope._src.results.status import Status


class Cut(Protocol):
    """What a cut point is worded from: a ``CutPoint``, the program front-end's cut, a
    ``NanOrigin``."""

    @property
    def node(self) -> str: ...

    @property
    def op(self) -> str: ...

    @property
    def source(self) -> str: ...


def cut_text(cut: Cut, *, node: str | None = None, at: bool = True) -> str:
    """A cut point in a table, a cause or a note.

    Args:
        cut: the cut point.
        node: what to call the node instead of its name (``StopGradient_6 and 18 more``).
        at: end with `` at FILE:LINE`` when the source is known.

    Example:
        >>> cut_text(CutPoint("frozen", "StopGradient", "stopped", "configs/x.yaml:17"))
        'frozen (StopGradient) at configs/x.yaml:17'
    """
    where = f" at {cut.source}" if at and cut.source else ""
    return f"{cut.node if node is None else node} ({cut.op}){where}"


def cuts_text(cuts: Iterable[Cut]) -> str:
    """Several cut points of one pair, ``a (StopGradient) at f.py:3; b (ArgMax) at f.py:9``."""
    return "; ".join(cut_text(c) for c in cuts)


def cut_quoted(cut: Cut, *, at: bool = True) -> str:
    """A cut point inside a sentence: ```frozen` (StopGradient), configs/x.yaml:17``."""
    where = f", {cut.source}" if at and cut.source else ""
    return f"`{cut.node}` ({cut.op}){where}"


def cuts_quoted(cuts: Iterable[Cut]) -> str:
    """Several cut points inside a sentence, joined with ``and``.

    Example:
        >>> cuts_quoted([CutPoint("frozen", "StopGradient", "stopped", "configs/x.yaml:17")])
        '`frozen` (StopGradient), configs/x.yaml:17'
    """
    return " and ".join(cut_quoted(c) for c in cuts)


def cut_names(cuts: Iterable[Cut]) -> str:
    """Cut points by node and op only, in a list: ``a (StopGradient), b (Cast) and c (ArgMax)``."""
    parts = [cut_text(c, at=False) for c in cuts]
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"


def cause(cuts: Iterable[Cut], note: str = "") -> str:
    """Why a gradient is None, as ``gradscope run`` and the timeline record it: ``cut at``
    its cut points, else the front-end's note (``""`` when neither is known)."""
    where = cuts_text(cuts)
    return f"cut at {where}" if where else note


def loss_made_at(site: str) -> str:
    """A loss as a cause or a fix names it: ``the loss made at FILE:LINE`` (its line known),
    else ``the loss``."""
    return f"the loss made at {site}" if site else "the loss"


def cut_names_at(cuts: Sequence[Cut]) -> str:
    """Cut points with their lines in a list: ``a (Mean) at f.py:3 and b (Sum) at f.py:9``."""
    parts = [cut_text(c) for c in cuts]
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"


#: What each status means, in a legend (contract section 2).
MEANING: Mapping[Status, str] = {
    Status.OK: "gradient flows",
    Status.ZERO: "gradient is exactly 0 everywhere",
    Status.NAN: "gradient has NaN or Inf",
    Status.DISCONNECTED: "no path from the variable to the loss",
    Status.STOPPED: "every path crosses a stop_gradient",
    Status.ASSIGN: "reaches the loss only through an assign",
    Status.NONDIFFERENTIABLE: "every path crosses an op with no gradient",
    Status.UNEXPLAINED: "TensorFlow returns None; cause not found",
    Status.EXCLUDED: "outside the loss's vars",
    Status.FROZEN: "not trainable",
    Status.UNKNOWN: "a gradient exists; its value was never computed (never run)",
}


def why_none(status: str, cuts: Iterable[Cut], cause: str = "") -> str:
    """Why a pair has no usable gradient, in one clause of a problem's message; ``cause``:
    why no path leads to the loss, when the front-end knows (:func:`unread_outputs`).

    Example:
        >>> why_none(Status.DISCONNECTED, [])
        'no path leads from it to the loss'
    """
    if status == Status.DISCONNECTED:
        return f"it {cause}" if cause else "no path leads from it to the loss"
    if status == Status.EXCLUDED:
        return "it is outside the loss's `vars`"
    if status == Status.FROZEN:
        return "it is not trainable"
    where = cuts_quoted(cuts)
    if where:
        return f"every path is cut at {where}"
    return "TensorFlow returns no gradient and gradscope found no cause"


def why_not(variable: str, loss: str, status: str, cuts: tuple[Cut, ...]) -> str:
    """Why ``loss`` gives ``variable`` no gradient, naming both (``gradscope diff``).

    Example:
        >>> why_not("v", "L", Status.DISCONNECTED, ())
        'no path leads from v to L'
    """
    if status == Status.DISCONNECTED:
        return f"no path leads from {variable} to {loss}"
    if status == Status.EXCLUDED:
        return f"{variable} is outside {loss}'s vars"
    if status == Status.FROZEN:
        return f"{variable} is not trainable"
    if status == Status.UNEXPLAINED or not cuts:
        return f"TensorFlow gives {loss} no gradient for {variable}, and no cause was found"
    names = cut_names(cuts)
    never = f"so {loss} never trains it"
    if status == Status.ASSIGN:
        copies = "copies" if len(cuts) == 1 else "copy"
        return (
            f"{loss} sees {variable} only through {names}, which {copies} it into another "
            f"variable, {never}"
        )
    if status == Status.NONDIFFERENTIABLE:
        has = "has" if len(cuts) == 1 else "have"
        return f"{loss} reaches {variable} only through {names}, which {has} no gradient, {never}"
    return f"{loss} reaches {variable} only through {names}, {never}"


class Origin(Cut, Protocol):
    """Where a NaN or an infinity first appeared (a ``NanOrigin``)."""

    @property
    def where(self) -> str: ...

    @property
    def value(self) -> str: ...


#: Ops that only hand over a value: a NaN there was in an input's or a variable's value.
VALUE_OPS = ("Placeholder", "ReadVariableOp")


def origin_text(origin: Origin, *, quoted: bool = False) -> str:
    """Where a NaN or an infinity first appeared: ``NaN in the forward value of s (Sqrt)``
    in a table; quoted, inside a problem's message, with its line: ``NaN first appears in the
    forward value of `s` (Sqrt), x.yaml:9``."""
    value = {"nan": "NaN", "inf": "Inf", "-inf": "-Inf"}.get(origin.value, origin.value)
    what = "forward value" if origin.where == "forward" else "gradient"
    if not quoted:
        if origin.where == "forward" and origin.op in VALUE_OPS:
            return f"{value} in the value of {origin.node}"
        return f"{value} in the {what} of {cut_text(origin, at=False)}"
    where = f", {origin.source}" if origin.source else ""
    if origin.where == "forward" and origin.op in VALUE_OPS:
        return f"{value} is already in the value of `{origin.node}`{where}"
    return f"{value} first appears in the {what} of {cut_quoted(origin)}"


# -- notes of a watched call (its causes are ``results/causes.py``'s) -----------------------

#: A graph-mode call the program built and no ``Session.run`` computed.
NEVER_RUN_GRAPH = "never run: the program built this call, but no Session.run computed it"
#: A traced call that never ran.
NEVER_RUN_TRACED = "traced, never run: statuses from the trace, no numbers"


def reused_step(api: str, traced: str) -> str:
    """A ``fit()`` (``api``) that reuses a train step traced at ``traced`` before flags
    changed."""
    return (
        f"this {api}() reuses the train step traced at {traced}: Keras reads trainable when it "
        f"traces the step, not at each {api}(), and only compile() makes it trace the step again"
    )


def changed_during(api: str, traced: str) -> str:
    """A call's note: trainable flags changed while this ``api`` ran, its step traced at
    ``traced`` before."""
    return (
        f"trainable flags changed while this {api}() ran, after its train step was traced at "
        f"{traced}: Keras reads trainable when it traces the step, and runs that trace until "
        "compile() or make_train_function(force=True)"
    )


def changed_since_compile(line: str, api: str) -> str:
    """A call's note: flags changed between ``compile()`` at ``line`` and the ``api`` that
    traced the step."""
    return (
        f"trainable flags changed between compile() at {line} and this {api}(), which traced "
        "the train step: Keras 3 follows the flags at the trace"
    )


# A Python target's notes: a loss inspect could not trace (answered eagerly), or whose value
# left TensorFlow before it returned.


def returns_untensor(what: str) -> str:
    """A loss that returned ``what`` (NumPy, a Python number), not a tensor."""
    return (
        f"returns {what}, not a tensor: TensorFlow sees a constant, so the "
        "path from every variable is cut outside TensorFlow (the value was converted to "
        "NumPy or Python before the loss returned)."
    )


def not_scalar(shape: Sequence[int | None]) -> str:
    """A loss of ``shape``, which gradients sum."""
    return (
        f"returns a tensor of shape {list(shape)}, not a scalar: gradscope sums it, as "
        "tf.gradients and GradientTape.gradient do (the value shown is the sum)."
    )


def eager_raised(message: str, at: str) -> str:
    """The eager pass of a traced loss raised ``message`` (``at``: `` at FILE:LINE`` or
    empty)."""
    return (
        f"running this loss eagerly raised {message}{at}; only its traced gradients are reported."
    )


def disagree(traced_only: Sequence[str], eager_only: Sequence[str]) -> str:
    """The trace and the eager pass disagree: ``traced_only`` get a gradient only when
    traced, ``eager_only`` only eagerly (names already quoted)."""

    def subject(names: Sequence[str]) -> str:
        return f"{', '.join(names)} {'gets' if len(names) == 1 else 'get'}"

    parts = []
    if traced_only:
        parts.append(f"{subject(traced_only)} a gradient when traced but None eagerly")
    if eager_only:
        parts.append(f"{subject(eager_only)} a gradient eagerly but None when traced")
    return (
        f"traced and eager gradients disagree: {'; '.join(parts)}. The statuses shown are the "
        "traced ones (what a tf.function training step computes); an eager training loop gets "
        "the other answer. Look for Python code that autograph converts (float(), int(), "
        "if/while on tensors) or state that changes between calls."
    )


def numpy_read(arrays: Sequence[str]) -> str:
    """No variable reaches a loss that reads the NumPy ``arrays``."""
    return (
        f"no variable reaches this loss, and it reads NumPy arrays "
        f"({', '.join(f'`{a}`' for a in arrays)}): if one holds a model output turned "
        "into NumPy (.numpy(), np.asarray), the path was cut outside TensorFlow before "
        "the loss ran; keep it a tensor."
    )
