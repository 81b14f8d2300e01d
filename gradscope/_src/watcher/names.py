"""How a watched call names its sources and its target: variables by their names, watched
tensors ``NAME@FILE:LINE`` after the line that made them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gradscope._src.frontends import keras_names
from gradscope._src.frontends.python import frames
from gradscope._src.results import causes
from gradscope._src.watcher import copies, sites
from gradscope._src.watcher.analyse import SourceStatic
from gradscope._src.watcher.eager import EagerCall


def statics(flat_s: list[Any], grads: list[Any], call: Any,
            created: dict[int, frames.Site | None],
            held: dict[int, str] | None = None) -> list[SourceStatic]:  # fmt: skip
    """One ``SourceStatic`` per source, named and shaped, with whether a gradient came back.

    Args:
        flat_s: the sources, flattened.
        grads: the program's gradients, in the same order.
        call: the call's ``GraphCall`` or ``EagerCall``.
        created: eager variable handle id (or eager constant id) -> the line that made it.
        held: id of a tensor source -> the name the user's code holds it under
            (:func:`held_as`).
    """
    import tensorflow as tf

    named = sites.unique([source_name(s, call, created, held or {}) for s in flat_s])
    attributes = keras_names.attributes_of(flat_s)
    out = []
    for name, s, g, attribute in zip(named, flat_s, grads, attributes, strict=True):
        shape = tuple(s.shape.as_list()) if s.shape.rank is not None else ()
        out.append(SourceStatic(name, shape, g is not None,
                                sparse=isinstance(g, tf.IndexedSlices),
                                attribute=attribute,
                                copy_of=copies.copy_of(s),
                                cause=_not_floating(s, g, name, created)))  # fmt: skip
    return out


def _not_floating(source: Any, grad: Any, name: str,
                  created: dict[int, frames.Site | None]) -> causes.NotFloating | None:  # fmt: skip
    """Why a variable that holds integers (or bools, strings) gets no gradient, with the line
    that made it: the cause whatever its paths cross (TensorFlow differentiates only
    floating-point values)."""
    import tensorflow as tf

    dtype = getattr(source, "dtype", None)
    if grad is not None or dtype is None or not (isinstance(source, tf.Variable)
                                                 or hasattr(source, "path")):  # fmt: skip
        return None
    dtype = tf.as_dtype(dtype)
    if dtype.is_floating or dtype.is_complex:
        return None
    made = created.get(getattr(getattr(source, "handle", None), "_id", -1))
    return causes.NotFloating(line=str(made) if made is not None else "", names=(name,),
                              dtype=dtype.name)  # fmt: skip


def source_name(source: Any, call: Any, created: dict[int, frames.Site | None],
                held: dict[int, str] | None = None) -> str:  # fmt: skip
    """A variable's name (an unnamed eager one with its line); a tensor's NAME@FILE:LINE,
    NAME the one the user's code holds it under (``held``), else its op's."""
    import tensorflow as tf

    if isinstance(source, tf.Variable) or hasattr(source, "path"):
        name = sites.variable_name(source)
        handle = getattr(source, "handle", None)
        made = created.get(getattr(handle, "_id", -1))
        # an eager variable nobody named: where it was made tells it apart
        return f"{name}@{made}" if name == "Variable" and made is not None else name
    local = (held or {}).get(id(source))
    if isinstance(call, EagerCall):
        t = call.tensors.get(getattr(source, "_id", -1))
        if t is None:
            return local or "tensor"
        index = call.problem.graph.producer[t]
        site, kind = call.sites[index], call.ops[index].type
        if site is None and kind == "Source":  # made by no op recorded: an eager constant
            site, kind = created.get(source._id), "Const"
        return f"{local or kind}@{site}" if site is not None else local or kind
    return sites.tensor_name(source, frames.of_op(source.op), local)


def held_as(flat_s: list[Any], frame: Any) -> dict[int, str]:
    """id of each tensor source -> the local name the user's code holds it under where it
    asked for the gradient (``interpolated`` in ``tape.gradient(pred, [interpolated])``,
    also inside a ``tf.function``), when exactly one name holds it; variables keep their own
    names, and a placeholder the name it was given."""
    import tensorflow as tf

    wanted = {id(s) for s in flat_s if tf.is_tensor(s) and not isinstance(s, tf.Variable)
              and getattr(getattr(s, "op", None), "type", "") != "Placeholder"}  # fmt: skip
    if not wanted:
        return {}
    names: dict[int, list[str]] = {}
    for name, value in frames.user_locals(frame).items():
        if id(value) in wanted and name.isidentifier() and not name.startswith(("ag__", "_")):
            names.setdefault(id(value), []).append(name)
    return {i: found[0] for i, found in names.items() if len(found) == 1}


def target_source(call: Any, flat_t: list[Any], eager: bool,
                  created: dict[int, frames.Site | None] | None = None) -> str:  # fmt: skip
    """The user's line that made the (first) target (an eager constant, ``convert_to_tensor``
    of a value rebuilt in numpy: the line that made it, from ``created``)."""
    if not flat_t:
        return ""
    if eager:
        made = getattr(flat_t[0], "_id", -1)
        t = call.tensors.get(made)
        site = call.sites[call.problem.graph.producer[t]] if t is not None else None
        if site is None and created is not None:
            site = created.get(made)
        return sites.text(site)
    return sites.text(frames.of_op(flat_t[0].op))


def watching(tape: Any, flat_s: list[Any]) -> list[bool | None]:
    """Per source: whether ``tape`` watches it (None: a tensor, not a variable)."""
    import tensorflow as tf

    watched = {_handle_id(v) for v in tape.watched_variables()}
    return [_handle_id(s) in watched if isinstance(s, tf.Variable) or hasattr(s, "path")
            else None for s in flat_s]  # fmt: skip


def tensors_watched(tape: Any, flat_s: list[Any]) -> list[bool | None]:
    """Per source: whether ``tape`` (or a tape around it) watches it, for a tensor; None for
    a variable, or when it cannot be told. Asked before ``tape.gradient`` runs: a
    non-persistent tape forgets what it watched once it has answered."""
    import tensorflow as tf

    from gradscope._src import tfcompat

    pywrap_tfe, tape_lib = tfcompat.get("pywrap_tfe"), tfcompat.get("tape")

    out: list[bool | None] = [None] * len(flat_s)
    variable = [isinstance(s, tf.Variable) or hasattr(s, "path") for s in flat_s]
    tensors = [i for i, s in enumerate(flat_s) if not variable[i] and tf.is_tensor(s)]
    inner = getattr(tape, "_tape", None)
    if not tensors or inner is None:
        return out
    pushed = not getattr(tape, "_recording", True)  # a tape asked after its block: push it
    try:
        if pushed:
            tape_lib.push_tape(inner)
        try:
            for i in tensors:
                out[i] = bool(pywrap_tfe.TFE_Py_TapeSetShouldRecordBackprop([flat_s[i]]))
        finally:
            if pushed:
                tape_lib.pop_tape(inner)
    except Exception:
        return [None] * len(flat_s)
    return out


def _handle_id(variable: Any) -> int | None:
    return getattr(getattr(variable, "handle", None), "_id", None)


def read_variables(tape: Any) -> list[Any]:
    """The variables ``tape`` watched (read while it recorded); ``[]`` when it cannot say."""
    try:
        return list(tape.watched_variables())
    except Exception:  # a tape TensorFlow changed: nothing to say
        return []


def unasked(read: Sequence[Any], flat_s: Sequence[Any], call: Any,
            created: dict[int, frames.Site | None]) -> tuple[tuple[str, str], ...]:  # fmt: skip
    """``(name, attribute)`` of each trainable variable the tape read, asked no gradient for,
    that a Keras model holds where Keras does not track it (``keras_names.untracked``): what
    ``model.trainable_variables`` leaves out."""
    asked = {id(s) for s in flat_s} | {id(getattr(s, "_value", None)) for s in flat_s}
    rest = [v for v in read if id(v) not in asked and getattr(v, "trainable", False)]
    held = keras_names.untracked_of(rest)
    return tuple((source_name(v, call, created), attribute)
                 for v, attribute in zip(rest, held, strict=True) if attribute)  # fmt: skip


def key(variable: Any) -> int:
    """One key for a variable, a Keras variable and the TensorFlow variable under it alike."""
    inner = getattr(variable, "_value", None)
    return id(variable if inner is None else inner)


def others(read: Sequence[Any], flat_s: Sequence[Any]) -> list[Any]:
    """The trainable floating-point variables the tape read that the call does not ask for,
    each once (an integer one would make TensorFlow warn when asked)."""
    asked = {key(s) for s in flat_s}
    seen: dict[int, Any] = {}
    for v in read:
        floating = getattr(getattr(v, "dtype", None), "is_floating", False)
        if getattr(v, "trainable", False) and floating and key(v) not in asked:
            seen.setdefault(key(v), v)
    return list(seen.values())


def holder_of(variables: Sequence[Any], frame: Any) -> str:
    """The name the user's code holds the model (layer, module) under whose trainable
    variables are exactly ``variables`` (``main_nn``, ``self.q_net``): looked for in the
    locals of the user's frame, the attributes of its ``self``, then its globals; "" when no
    one name holds them."""
    wanted = {key(v) for v in variables}
    if not wanted:
        return ""
    user = frames.user_frame(frame)
    scopes: list[tuple[str, dict[str, Any]]] = [("", frames.user_locals(frame))]
    me = scopes[0][1].get("self")
    if me is not None:
        scopes.append(("self.", dict(getattr(me, "__dict__", {}))))
    if user is not None:
        scopes.append(("", dict(user.f_globals)))
    for prefix, scope in scopes:
        found = [f"{prefix}{name}" for name, value in scope.items()
                 if not name.startswith("_") and _trains(value, wanted)]  # fmt: skip
        if len(found) == 1:
            return found[0]
    return ""


def _trains(value: Any, wanted: set[int]) -> bool:
    if isinstance(value, type) or not hasattr(type(value), "trainable_variables"):
        return False
    try:
        held = {key(v) for v in value.trainable_variables}
    except Exception:  # a property that fails on this object: not a model
        return False
    return held == wanted


def asked_text(site: str) -> str:
    """The sources as the user's line ``site`` wrote them: the second argument of its
    ``.gradient(...)`` call (``model_target.trainable_variables``); "" when the line cannot
    be read alone."""
    import ast
    import linecache

    from gradscope._src.location import Location

    place = Location.parse(site)
    if place is None or place.line < 1:
        return ""
    text = linecache.getline(place.file, place.line).strip()
    try:
        tree = ast.parse(text)
    except SyntaxError:  # a line of a longer statement
        return ""
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "gradient" and len(node.args) >= 2):  # fmt: skip
            return ast.unparse(node.args[1])
    return ""


def shape(variable: Any) -> tuple[int, ...]:
    """A variable's shape as a tuple (``()`` when unknown)."""
    known = getattr(variable, "shape", None)
    try:
        return tuple(int(d) for d in known) if known is not None else ()
    except (TypeError, ValueError):  # an unknown dimension
        return ()
