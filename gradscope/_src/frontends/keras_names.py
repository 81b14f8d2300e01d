"""Keras names as the user's own program gets them, whatever ran before in the process.

Keras 3 names layers and models from a process-wide counter (``dense``, ``dense_1``, ...), and
a variable's ``path`` carries its layer's name. A target built, or a program run, after another
one in the same process (``gradscope.inspect(...)`` then ``gradscope.run(...)``; a notebook that
calls both) would get ``detector_1/dense_7/kernel`` where the user's code, run alone, gets
``detector/dense/kernel``, and the user's ``--allow-none`` and ``expect`` globs stop matching.
``fresh()`` gives the code it wraps the counters of a fresh process, then puts the caller's
back, so the caller's own later names are what they would have been without gradscope.
"""

from __future__ import annotations

import collections
import contextlib
import re
import sys
import weakref
from collections.abc import Iterator, Sequence
from typing import Any

from gradscope._src import tfcompat

_COUNTERS = "object_name_uids"  # keras.src.utils.naming.uniquify's global attribute


@contextlib.contextmanager
def fresh() -> Iterator[None]:
    """Run the block with Keras' name counters as a new process has them."""
    state = _global_state()
    if state is None:
        yield
        return
    saved = state.get_global_attribute(_COUNTERS)
    state.set_global_attribute(_COUNTERS, collections.defaultdict(int))
    try:
        yield
    finally:
        state.set_global_attribute(_COUNTERS, saved)


def _global_state() -> Any | None:
    """Keras 3's global state module, when Keras is imported (never imported here: code that
    imports Keras inside the block starts with fresh counters anyway)."""
    if "keras" not in sys.modules:
        return None
    try:
        global_state = tfcompat.get("keras_global_state")
    except ImportError:  # a Keras without it: names are what they are
        return None
    has = hasattr(global_state, "get_global_attribute") and hasattr(
        global_state, "set_global_attribute"
    )
    return global_state if has else None


#: A model's attributes are followed this many deep (``self.a.b.c...``).
_DEPTH = 8


def attributes(model: Any) -> dict[int, str]:
    """The attribute each variable of ``model`` is reached by in the user's code, by the id
    of the variable (its Keras wrapper and its ``tf.Variable`` alike): ``box_head.kernel``
    for ``self.box_head = Dense(...)``, ``heads[1].kernel``, ``encoder.proj.kernel``,
    ``blocks['a'].bias``, ``scale`` for ``self.scale = self.add_weight(...)``. Keras
    names a layer from a counter (``dense_3``); the attribute is the name the user wrote.

    Only names an attribute adds are kept: a variable whose path already spells it
    (``detector/box_head/kernel``: the layer was given that name) has none. The layers of a
    ``Sequential`` or functional model held by an attribute are reached by their index
    (``backbone.layers[2].kernel``), never those of the model itself (``layers[2]`` says
    less than ``dense_2``). The shortest way to each variable is kept, through the innermost
    layer holding it.
    """
    return _walk(model)[0]


def untracked(model: Any) -> dict[int, str]:
    """The ``tf.Variable``s ``model``'s layers hold where Keras does not track them (a raw
    ``tf.Variable`` attribute, or one in a plain dict or list: Keras 3 tracks only its own
    ``keras.Variable``s), by id, with the attribute that holds them (``proj.w``,
    ``table['scale']``): ``model.trainable_variables`` leaves them out, so an optimizer given
    those never trains them."""
    return _walk(model)[1]


def _walk(model: Any) -> tuple[dict[int, str], dict[int, str]]:
    """``attributes`` and ``untracked`` of ``model``, in one walk of its attributes."""
    raw: dict[int, str] = {}
    found: dict[int, tuple[str, Any]] = {}
    seen: set[int] = set()
    queue: collections.deque[tuple[Any, str]] = collections.deque([(model, "")])
    while queue:
        obj, path = queue.popleft()
        if id(obj) in seen or path.count(".") + path.count("[") >= _DEPTH:
            continue
        seen.add(id(obj))
        children = list(_children(obj, path))
        for name, value in children:
            if _is_variable(value):
                _keep(found, value, name)
            elif _is_raw(value):
                raw.setdefault(id(value), name)
        for variable in _own_variables(obj):
            name = str(getattr(variable, "name", ""))
            if name.isidentifier():
                _keep(found, variable, f"{path}.{name}" if path else name)
        queue.extend((value, name) for name, value in children if _is_layer(value))
    out: dict[int, str] = {}
    own = _is_graph_model(model)  # ``layers[2]`` of the model itself says less than ``dense_2``
    for name, variable in found.values():
        if _spelled(str(getattr(variable, "path", "") or ""), name):
            continue
        if own and name.startswith("layers["):
            continue
        out[id(variable)] = name
        inner = getattr(variable, "_value", None)  # the tf.Variable a Keras variable wraps
        if inner is not None:
            out[id(inner)] = name
    return out, raw


#: Keras models a watched program called (``gradscope run``): their attributes name variables.
_SEEN: weakref.WeakSet[Any] = weakref.WeakSet()
#: A seen model's ``_walk``, with how many variables it had when it was walked.
_READ: weakref.WeakKeyDictionary[Any, tuple[int, tuple[dict[int, str], dict[int, str]]]] = (
    weakref.WeakKeyDictionary()
)


def saw(model: Any) -> None:
    """A watched program called ``model`` (or its ``fit``): its attributes can name the
    variables of later gradient calls."""
    with contextlib.suppress(TypeError):  # an object that takes no weak reference
        _SEEN.add(model)


def attributes_of(variables: Sequence[Any]) -> list[str]:
    """Per variable, its attribute in the largest model ``saw`` was told of that holds it
    (``generator.dense.kernel`` in a GAN model holding its generator), or ``""``."""
    walked = _seen_walks()
    return [next((w[0][id(v)] for w in walked if id(v) in w[0]), "") for v in variables]


def untracked_of(variables: Sequence[Any]) -> list[str]:
    """Per variable, the attribute that holds it where Keras does not track it, in a model
    ``saw`` was told of (``untracked``), or ``""``."""
    walked = _seen_walks()
    return [next((w[1][id(v)] for w in walked if id(v) in w[1]), "") for v in variables]


def _seen_walks() -> list[tuple[dict[int, str], dict[int, str]]]:
    """The walks of the models seen, the largest model first."""
    models = []
    for model in list(_SEEN):
        with contextlib.suppress(Exception):  # a half-built model: no attribute names
            count = len(model.variables)
            known = _READ.get(model)
            if known is None or known[0] != count:
                known = _READ[model] = (count, _walk(model))
            models.append(known)
    models.sort(key=lambda known: -known[0])
    return [walked for _, walked in models]


def _keep(found: dict[int, tuple[str, Any]], variable: Any, name: str) -> None:
    found.setdefault(id(variable), (name, variable))


def _spelled(path: str, name: str) -> bool:
    """Whether the variable's path already ends in what its attribute says (``box_head.kernel``
    for ``detector/box_head/kernel``)."""
    parts = re.split(r"[.\[\]'\"]+", name)
    words = [p for p in parts if p]
    return path.split("/")[-len(words) :] == words


def _children(obj: Any, path: str) -> Iterator[tuple[str, Any]]:
    """``(attribute, value)`` of the layers and variables ``obj`` holds in its public
    attributes, lists and dicts (``heads[1]``, ``blocks['a']``); a ``Sequential`` or
    functional model held by an attribute, its layers by index."""
    for key, value in list(vars(obj).items()) if hasattr(obj, "__dict__") else ():
        if key.startswith("_") or (callable(value) and not _is_layer(value)):
            continue
        name = f"{path}.{key}" if path else key
        yield from _within(name, value, 0)
    if _is_graph_model(obj):  # the model's own: ``layers[2]``, named only under an attribute
        for index, layer in enumerate(getattr(obj, "layers", ())):
            yield f"{path}.layers[{index}]" if path else f"layers[{index}]", layer


def _within(name: str, value: Any, depth: int) -> Iterator[tuple[str, Any]]:
    if _is_layer(value) or _is_variable(value) or _is_raw(value):
        yield name, value
    elif depth < 2 and isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from _within(f"{name}[{index}]", item, depth + 1)
    elif depth < 2 and isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, (str, int)):
                yield from _within(f"{name}[{key!r}]", item, depth + 1)


def _own_variables(layer: Any) -> list[Any]:
    """The variables a layer made itself (its sublayers' are theirs): Keras 3 keeps them in
    ``_trainable_variables`` and ``_non_trainable_variables``."""
    own = (
        getattr(layer, "_trainable_variables", None),
        getattr(layer, "_non_trainable_variables", None),
    )
    return [v for group in own if isinstance(group, (list, tuple)) for v in group]


def _keras_class(name: str) -> Any:
    keras = sys.modules.get("keras")
    return getattr(keras, name, None)


def _is_layer(value: Any) -> bool:
    cls = _keras_class("Layer")
    return cls is not None and isinstance(value, cls)


def _is_variable(value: Any) -> bool:
    cls = _keras_class("Variable")
    return cls is not None and isinstance(value, cls)


def _is_raw(value: Any) -> bool:
    """A ``tf.Variable`` no ``keras.Variable`` wraps (Keras 3 does not track it)."""
    tf = sys.modules.get("tensorflow")
    return tf is not None and isinstance(value, tf.Variable) and not _is_variable(value)


def _is_graph_model(value: Any) -> bool:
    """A ``Sequential`` or functional model: its layers are not attributes of it."""
    try:
        Functional = tfcompat.get("Functional")
    except ImportError:  # pragma: no cover - Keras ships with TensorFlow
        return False
    sequential = _keras_class("Sequential")
    return isinstance(value, Functional) or (
        sequential is not None and isinstance(value, sequential)
    )
