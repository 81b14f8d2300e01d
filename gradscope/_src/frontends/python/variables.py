"""The variables of a Python target: which ones, their names, and where the user made them.

TensorFlow hands gradscope ``tf.Variable`` objects (the graph reads them; a tape watches
them). Keras 3 wraps each in a ``keras.Variable`` whose ``path`` (``encoder/dense/kernel``)
is the name users know; the ``tf.Variable``'s own name can be shorter and clash between
layers. The ``Registry`` remembers, for every variable created while gradscope runs the
user's code, its Keras wrapper and the user's line that created it (the layer, or the
``add_weight`` call); variables made earlier are matched to wrappers found on the model or in
the loss functions' closures.
"""

from __future__ import annotations

import contextlib
import inspect
import re
import sys
import types
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from gradscope._src.errors import TargetError
from gradscope._src.frontends import keras_names
from gradscope._src.frontends.python import frames
from gradscope._src.frontends.python.target import article

_DEVICE_SUFFIX = re.compile(r":\d+$")
_WRAPPER_DEPTH = 12
_SAVED_MODEL_LOAD = "/".join(
    ("tensorflow", "python", "saved_model", "load.py")
)  # frames between keras.Variable._initialize and a variable creator


def tf_variable(tf: Any, value: Any) -> Any | None:
    """The ``tf.Variable`` behind a TensorFlow or Keras variable; None for anything else."""
    if isinstance(value, tf.Variable):
        return value
    inner = getattr(value, "_value", None)  # keras.Variable (TensorFlow backend)
    return inner if isinstance(inner, tf.Variable) else None


def _is_keras_variable(value: Any) -> bool:
    keras = sys.modules.get("keras")
    cls = getattr(keras, "Variable", None)
    return cls is not None and isinstance(value, cls)


def _is_keras_model(value: Any) -> bool:
    keras = sys.modules.get("keras")
    cls = getattr(keras, "Model", None)
    return cls is not None and isinstance(value, cls)


@dataclass
class Chosen:
    """A variable to inspect: the ``tf.Variable``, its report name, and what is known of it."""

    variable: Any
    name: str
    trainable: bool
    source: str
    attribute: str = ""  # the attribute the user's code reaches it by (``box_head.kernel``)


class Registry:
    """Keras wrappers and creation sites of variables, keyed by ``tf.Variable.ref()``."""

    def __init__(self, tf: Any) -> None:
        self.tf = tf
        self.wrappers: dict[Any, Any] = {}
        self.sources: dict[Any, str] = {}
        # variable -> (how many variables it has, name) of the innermost Keras model holding it
        self.owners: dict[Any, tuple[int, str]] = {}
        # variable -> (how many variables its model has, the attribute it is reached by in the
        # largest model holding it: ``box_head.kernel``; ``keras_names.attributes``)
        self.attributes: dict[Any, tuple[int, str]] = {}
        # variables a front-end knows to be frozen whatever their flags say (a Keras model's
        # weights outside its trainable_variables; a SavedModel's non_trainable_variables)
        self.frozen: set[Any] = set()
        # variables tf.saved_model.load restored (a SavedModel's, which no Keras object holds)
        self.restored: set[Any] = set()
        self._sinks: list[list[tuple[Any, str]]] = []

    @contextlib.contextmanager
    def recording(self) -> Iterator[None]:
        """Record every variable created inside the block (variable creator scope)."""
        with self.tf.variable_creator_scope(self._creator):
            yield

    @contextlib.contextmanager
    def collect(self) -> Iterator[list[tuple[Any, str]]]:
        """Like ``recording``, and also yield the list of ``(variable, source)`` created."""
        sink: list[tuple[Any, str]] = []
        self._sinks.append(sink)
        try:
            with self.recording():
                yield sink
        finally:
            self._sinks.remove(sink)

    def _creator(self, next_creator: Callable[..., Any], **kwargs: Any) -> Any:
        from tensorflow.python.util import tf_stack

        variable = next_creator(**kwargs)
        stack = tf_stack.extract_stack()
        site = frames.of_traceback(stack)
        if any(str(getattr(f, "filename", "")).endswith(_SAVED_MODEL_LOAD) for f in stack):
            self.restored.add(variable.ref())
        key = variable.ref()
        if site is not None:
            self.sources.setdefault(key, str(site))
        wrapper = _creating_wrapper()
        if wrapper is not None:
            self.wrappers.setdefault(key, wrapper)
        for sink in self._sinks:
            sink.append((variable, str(site) if site else ""))
        return variable

    def add(self, values: Iterable[Any]) -> None:
        """Remember the Keras wrappers among ``values`` (variables of a model, a list)."""
        for value in values:
            inner = tf_variable(self.tf, value)
            if inner is not None and _is_keras_variable(value):
                self.wrappers[inner.ref()] = value

    def add_model(self, model: Any) -> None:
        """Remember a Keras model's variables and that they are its (the innermost model
        holding a variable names it when several models share a target)."""
        weights = list(model.variables)
        self.add(weights)
        size = len(weights)
        for value in weights:
            inner = tf_variable(self.tf, value)
            if inner is None:
                continue
            known = self.owners.get(inner.ref())
            if known is None or size < known[0]:
                self.owners[inner.ref()] = (size, str(model.name))
        with contextlib.suppress(Exception):  # a half-built model: no attribute names
            named = keras_names.attributes(model)
            for value in weights:
                inner = tf_variable(self.tf, value)
                name = named.get(id(value))
                held = self.attributes.get(inner.ref()) if inner is not None else None
                if inner is not None and name and (held is None or size > held[0]):
                    self.attributes[inner.ref()] = (size, name)

    def attribute(self, variable: Any) -> str:
        """The attribute the user's code reaches ``variable`` by, or ``""``."""
        return self.attributes.get(variable.ref(), (0, ""))[1]

    def tracked(self, variable: Any) -> bool:
        """Whether a Keras model or layer holds ``variable`` (so its train step updates it)."""
        return variable.ref() in self.wrappers

    def scan(self, functions: Iterable[Any]) -> None:
        """Find Keras layers the loss functions refer to, and remember their variables."""
        for fn in functions:
            for value in _referenced(fn):
                if hasattr(value, "variables") and hasattr(value, "trainable_variables"):
                    with contextlib.suppress(Exception):  # a half-built layer, a property raising
                        if _is_keras_model(value):
                            self.add_model(value)
                        else:
                            self.add(value.variables)

    def name(self, variable: Any) -> str:
        wrapper = self.wrappers.get(variable.ref())
        path = getattr(wrapper, "path", None)
        if path:
            return str(path)
        return _DEVICE_SUFFIX.sub("", str(variable.name))

    def trainable(self, variable: Any) -> bool:
        """Keras' flag when known: ``layer.trainable = False`` leaves the tf.Variable's set."""
        if variable.ref() in self.frozen:
            return False
        wrapper = self.wrappers.get(variable.ref())
        return bool(wrapper.trainable if wrapper is not None else variable.trainable)


def _creating_wrapper() -> Any | None:
    """The ``keras.Variable`` whose initialisation is creating a tf.Variable right now."""
    frame: types.FrameType | None = sys._getframe(2)
    for _ in range(_WRAPPER_DEPTH):
        if frame is None:
            return None
        candidate = frame.f_locals.get("self")
        if candidate is not None and _is_keras_variable(candidate):
            return candidate
        frame = frame.f_back
    return None


def _referenced(fn: Any) -> list[Any]:
    """Objects a callable refers to: closure cells, globals it names, a bound ``self``."""
    out: list[Any] = []
    target = getattr(fn, "__func__", fn)
    bound = getattr(fn, "__self__", None)
    if bound is not None:
        out.append(bound)
        out.extend(vars(bound).values() if hasattr(bound, "__dict__") else ())
    if inspect.isfunction(target):
        with contextlib.suppress(Exception):
            found = inspect.getclosurevars(target)
            out.extend(found.nonlocals.values())
            out.extend(found.globals.values())
    for name in ("func", "args", "keywords"):  # functools.partial
        value = getattr(fn, name, None)
        if isinstance(value, dict):
            out.extend(value.values())
        elif isinstance(value, tuple):
            out.extend(value)
    return out


def explicit(tf: Any, registry: Registry, values: Sequence[Any], origin: str) -> list[Any]:
    """The ``tf.Variable``s of a target's ``variables`` list, in order, without repeats."""
    out: dict[Any, Any] = {}
    for index, value in enumerate(values):
        inner = tf_variable(tf, value)
        if inner is None:
            raise TargetError(
                f"{origin}: variables[{index}] is {article(type(value).__name__)}, not a variable"
            )
        out.setdefault(inner.ref(), inner)
    registry.add(values)
    return list(out.values())


def of_model(tf: Any, registry: Registry, model: Any, origin: str) -> list[Any]:
    """A Keras model's trainable variables, and the weights of layers the user froze.

    Weights created non-trainable (batch-norm statistics, seed state) are left out.
    """
    weights = getattr(model, "variables", None)
    if weights is None:
        raise TargetError(
            f"{origin}: 'model' is {article(type(model).__name__)}, not a Keras model"
        )
    registry.add_model(model)
    out = []
    for value in weights:
        inner = tf_variable(tf, value)
        if inner is not None and (getattr(value, "trainable", False) or inner.trainable):
            out.append(inner)
    return out


def unique_names(names: Sequence[str]) -> list[str]:
    """Names with clashes suffixed ``_1``, ``_2``, ... (never a silent merge)."""
    taken = set(names)
    seen: set[str] = set()
    out = []
    for name in names:
        final = name
        if name in seen:
            n = 1
            while f"{name}_{n}" in taken or f"{name}_{n}" in seen:
                n += 1
            final = f"{name}_{n}"
        seen.add(final)
        out.append(final)
    return out


def choose(registry: Registry, variables: Sequence[Any], fallback_source: str) -> list[Chosen]:
    """Report names, trainability and sources for the variables to inspect."""
    names = unique_names(_prefixed(registry, variables))
    return [
        Chosen(
            v,
            name,
            registry.trainable(v),
            registry.sources.get(v.ref(), fallback_source),
            registry.attribute(v),
        )
        for v, name in zip(variables, names, strict=True)
    ]


def _prefixed(registry: Registry, variables: Sequence[Any]) -> list[str]:
    """Report names; when the variables come from several Keras models, each prefixed with
    its model's name where its path lacks it (a functional model's paths start at the layer:
    ``conv2d/kernel`` of the generator and of the discriminator could not be told apart)."""
    names = [registry.name(v) for v in variables]
    owners = [registry.owners.get(v.ref()) for v in variables]
    if len({o[1] for o in owners if o is not None}) < 2:
        return names
    return [
        name if o is None or name.startswith(f"{o[1]}/") else f"{o[1]}/{name}"
        for name, o in zip(names, owners, strict=True)
    ]
