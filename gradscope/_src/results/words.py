"""How gradscope words an explanation: a cut point, a status's meaning, why a gradient is None,
where a NaN first appeared.

The one place these phrases are made: the policy's problem messages, ``gradscope run``'s
causes, the timeline's records and every format ask here and never build them again
(issue 29). Plain strings from plain data: no TensorFlow, no renderer.

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


def feeds(ends: Sequence[Cut]) -> str:
    """Where the value of a variable no path leads from to the loss goes instead: the last
    ops it reaches (``it feeds only Mean_1 (Mean) at train.py:9``)."""
    if not ends:
        return "nothing in the graph reads its value"
    return f"it feeds only {cut_names_at(ends)}"


def loss_made_at(site: str) -> str:
    """A loss as a cause or a fix names it: ``the loss made at FILE:LINE`` (its line known),
    else ``the loss``."""
    return f"the loss made at {site}" if site else "the loss"


def cut_names_at(cuts: Sequence[Cut]) -> str:
    """Cut points with their lines in a list: ``a (Mean) at f.py:3 and b (Sum) at f.py:9``."""
    parts = [cut_text(c) for c in cuts]
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"


def no_var_list(api: str, reads: Sequence[str]) -> str:
    """Why a variable a ``compute_gradients``/``minimize`` (``api``) given no ``var_list``
    differentiates gets no gradient: TensorFlow 1 then takes every trainable variable, and
    the loss reads only ``reads`` (tensorflow/tensorflow#1511, seed 000)."""
    shown = ", ".join(reads[:3]) + (f" and {len(reads) - 3} more" if len(reads) > 3 else "")
    wanted = f"a var_list of {shown}" if reads else "a var_list"
    return (
        f"{api}() was given no var_list, so it differentiates every trainable variable, and "
        f"this loss never reads this one; pass {wanted} (the {len(reads)} variables the loss "
        "reads)"
    )


def unread_outputs(heads: Sequence[str], model: str, loss: str = "the loss", *,
                   compiled: bool = False, part: str = "") -> str:  # fmt: skip
    """Why a variable of a Keras model gets no gradient: the outputs it reaches (``heads``,
    each once) are read by no loss. ``compiled``: the model trains with Keras' own step,
    whose loss is ``compile()``'s; ``part``: the call's loss is that compiled loss alone (one
    output's).

    Example:
        >>> unread_outputs(["aux"], "detector", "the loss")
        "reaches only output 'aux' of model 'detector', which the loss does not read"
    """
    named = ", ".join(f"'{h}'" for h in dict.fromkeys(heads))
    outputs = f"output{'s' if len(dict.fromkeys(heads)) > 1 else ''} {named}"
    if part:  # one loss of several: the others read those outputs
        return f"reaches only {outputs}, which loss '{part}' does not read"
    if compiled:
        return f"reaches only {outputs}, which no loss reads (compile() gives it no loss)"
    return f"reaches only {outputs} of model '{model}', which {loss} does not read"


def off_path(model: str) -> str:
    """Why a variable of a Keras model gets no gradient: its layer is on no path from the
    model's inputs to its outputs (a layer ``call`` skips)."""
    return (
        f"reaches no output of model '{model}': its layer is not on the path from the model's "
        "inputs to its outputs"
    )


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


# -- why a watched call's source has no usable gradient (``gradscope run``, ``watch()``) ----

#: A variable a tape does not watch because it is not trainable.
NOT_TRAINABLE = "not trainable: a tape watches only trainable variables"

#: A trainable variable a ``watch_accessed_variables=False`` tape was never told to watch.
UNWATCHED_VARIABLE = (
    "never watched: the tape has watch_accessed_variables=False and no tape.watch() of it"
)

#: A tensor source no tape watched.
UNWATCHED_TENSOR = "never watched: a tensor, which a tape follows only after tape.watch() of it"

#: A source no op an eager tape recorded reads.
UNREAD = (
    "no op the tape recorded reads it (eager code runs only the branch of a tf.cond or an if "
    "that is taken)"
)

#: A None the program handed to ``apply_gradients`` itself.
PASSED_NONE = "the program passed None, not a gradient a watched call returned"

#: An all-zero gradient with float16 values on its path.
UNDERFLOW = (
    "every element is 0: float16 values on its path underflow to 0 (a loss scale, "
    "keras.optimizers.LossScaleOptimizer, keeps them representable)"
)


def also(cause: str, more: str) -> str:
    """A cause with more said after it: ``cause; more`` (``more`` alone when there is no
    cause)."""
    return f"{cause}; {more}" if cause else more


def filled(cause: str) -> str:
    """An all-zero gradient TensorFlow filled in for a missing one
    (``unconnected_gradients=ZERO``), after the cause of the missing path when known."""
    why = f": {cause}" if cause else ""
    return f"no gradient flows{why}; TensorFlow filled zeros (unconnected_gradients=ZERO)"


def outside_tape(line: str, op: str) -> str:
    """A source whose only paths to the target ran while the tape was not recording (before
    the tape, under ``stop_recording``), at the last such op."""
    return f"used only through {line} ({op}), run while the tape was not recording"


def left_tensorflow(line: str, how: str) -> str:
    """A source whose value left TensorFlow at ``line`` (``.numpy()``, ``float()``, ...) and
    came back as a constant."""
    return (
        f"its value left TensorFlow at {line} ({how}): what came back is a new constant the "
        "tape cannot trace to it"
    )


def came_back(line: str, op: str, back: str) -> str:
    """A source whose value left TensorFlow through the buffer protocol (``np.asarray``,
    ``np.array``) at ``line`` and came back as a constant at ``back``."""
    return (
        f"its value left TensorFlow at {line} ({op}, through np.asarray or np.array) and came "
        f"back as a new constant at {back}, which the tape cannot trace to it"
    )


def path_ends(line: str, op: str, *, alone: bool = True) -> str:
    """Where a disconnected source's last path ends: a value made from it that nothing the
    target is made from reads; ``alone`` False: only where, said after another cause."""
    where = f"its last path ends at {line} ({op})"
    if not alone:
        return where
    return f"{where}: that value is computed, then nothing the target is made from reads it"


def never_read(ends: Sequence[Cut]) -> str:
    """A source the loss does not read, and the last ops its value reaches instead."""
    return f"the loss never reads it: {feeds(ends)}"


def untracked(name: str, attribute: str) -> str:
    """A call's note on a ``tf.Variable`` a Keras model holds where Keras does not track it."""
    return (
        f"the loss reads `{name}` (`{attribute}`), a tf.Variable Keras does not track: "
        "model.trainable_variables leaves it out, and this call asks no gradient for it"
    )


def branch_zero(line: str, py_function: bool = False) -> str:
    """An all-zero gradient whose every path crosses the ``tf.cond`` (or the
    ``tf.py_function``) at ``line``."""
    if py_function:
        return (
            f"every element is 0: every path crosses the tf.py_function at {line}, whose "
            "gradient is what the function's own TensorFlow ops give: zero for a value it takes "
            "out of TensorFlow (.numpy(), a numpy function)"
        )
    return (
        f"every element is 0: every path crosses the tf.cond at {line}, and TensorFlow gives "
        "the variables of a branch not taken zeros (eager code, which runs the taken branch "
        "only, gets None)"
    )


def multiplied(status: str, multiplier: Sequence[float], site: str) -> str:
    """A source's note when the call's ``output_gradients`` zeroes or flips its gradient (a
    zero multiplier is where a zero gradient comes from; a negative one turns descent into
    ascent); ``""`` otherwise."""
    if not multiplier or status not in (Status.ZERO, Status.OK):
        return ""
    shown = ", ".join(f"{v:g}" for v in multiplier)
    if status == Status.ZERO and tuple(multiplier) == (0.0,):
        return f"zeroed by output_gradients={shown} at {site}: every gradient of this call is 0"
    if status == Status.OK and multiplier[0] < 0:
        every = "flipped" if multiplier[-1] < 0 else "flipped where its weight is negative"
        return f"{every} by output_gradients={shown} at {site}: an optimizer ascends this loss"
    return ""


#: A graph-mode call the program built and no ``Session.run`` computed.
NEVER_RUN_GRAPH = "never run: the program built this call, but no Session.run computed it"
#: A traced call that never ran.
NEVER_RUN_TRACED = "traced, never run: statuses from the trace, no numbers"


# -- a ``trainable`` flag changed after Keras traced the train step ---------------------------


def changed_after_trace(trained: bool, traced: str, during: bool = False) -> str:
    """Why a variable whose flag changed after the step was traced at ``traced`` is still
    trained (``trained``: frozen since) or left out (made trainable since): ``gradscope run``
    and the Monitor's findings say the same. ``during``: the flag changed while a ``fit()``
    ran (a callback), where only a new trace of the step helps."""
    if during and trained:
        return (
            f"frozen while this fit() ran (a callback), after its train step was traced at "
            f"{traced}, which still updates it: call self.model.make_train_function(force=True) "
            "after changing trainable"
        )
    if during:
        return (
            f"made trainable while this fit() ran (a callback), after its train step was traced "
            f"at {traced}, which leaves it out: end the fit() there and call compile() with a new "
            "optimizer before the next (the built one knows only its first variables)"
        )
    if trained:
        return (
            f"frozen after the train step was traced at {traced}, which still updates it: call "
            "compile() again after changing trainable"
        )
    return (
        f"made trainable after the train step was traced at {traced}, which leaves it out: "
        "call compile() again (with a new optimizer, if you pass one: a built one updates "
        "only its first variables)"
    )


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


def since_compile(line: str, api: str, *, trainable: bool, idle: bool = False) -> str:
    """Why a variable whose flag changed between ``compile()`` at ``line`` and the ``api``
    that traced the step is trained (``trainable`` now) or not; ``idle``: the step then
    trains nothing at all."""
    if trainable:
        return (
            f"made trainable after compile() at {line}: this {api}() trains it (Keras 3 reads "
            "trainable when it traces the step, not at compile())"
        )
    if idle:
        return (
            f"trainable at compile() at {line}, frozen when this {api}() traced the train step, "
            f"which so trains nothing: set trainable = True before this {api}() (Keras 3 reads "
            "it there, not at compile())"
        )
    return (
        f"trainable at compile() at {line}, frozen when this {api}() traced the train step, "
        "which so never trains it (Keras 3 reads trainable there, not at compile())"
    )


# A Python target's notes: a loss inspect could not trace (answered eagerly), or whose value
# left TensorFlow before it returned.

RAN_EAGERLY = (
    "gradscope ran this loss eagerly under a GradientTape, and its statuses and norms come "
    "from there."
)
_CUT_OUTSIDE = (
    " The path is cut outside TensorFlow (the value was converted to {what}), so there is no "
    "op to name: a variable read before that line that gets no gradient is none:unexplained."
)
_FRESH = (
    "it starts again from its initial value at every step and never trains. Create it once, "
    "outside the loss (in the target function, or in a layer's build())."
)


def untraceable(how: str, at: str, message: str, *, cut: bool = False, listed: str = "") -> str:
    """Why a loss could not be traced as a ``tf.function`` (``at``: `` at FILE:LINE`` or
    empty; ``message``: TensorFlow's first line). ``how``: ``numpy`` (``.numpy()``), ``number``
    (``float(t)``), ``variables`` (new variables on each call: ``listed``), ``bool`` (a tensor
    as a Python bool), or anything else; ``cut``: a variable read before it gets no gradient.
    """
    if how == "numpy":
        outside = _CUT_OUTSIDE.format(what="NumPy") if cut else ""
        return (
            f"converts a tensor to NumPy{at}, which a traced tf.function cannot do ({message}); "
            f"{RAN_EAGERLY}{outside}"
        )
    if how == "number":
        outside = _CUT_OUTSIDE.format(what="a Python number") if cut else ""
        return (
            f"turns a tensor into a Python number{at}, which a traced tf.function cannot do "
            f"({message}); {RAN_EAGERLY}{outside}"
        )
    if how == "variables":
        return (
            f"creates a new variable on every call ({listed}): a traced tf.function refuses "
            f"that, and eagerly {_FRESH} {RAN_EAGERLY[:-1]}, without the variables it creates."
        )
    if how == "bool":
        return (
            f"uses a tensor as a Python bool{at}, which a traced tf.function cannot do "
            f"({message}); {RAN_EAGERLY}"
        )
    return f"cannot be traced as a tf.function{at} ({message}); {RAN_EAGERLY}"


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


def per_call_variables(listed: str) -> str:
    """A loss that creates the variables ``listed`` each time it is called."""
    return f"creates a new variable on every call ({listed}): {_FRESH}"


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
