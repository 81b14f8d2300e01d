"""A Python target as the engine's ``Traceable``: its losses called inside the one trace.

Each loss callable runs through autograph, as ``tf.function`` would run it, so Python control
flow on tensors works; only the user's callables are converted, never gradscope's own trace
code. A loss that cannot be traced (it calls ``.numpy()``, ``np.mean`` on a tensor, ...) does
not stop the run: it is recorded in ``failed``, stands in the trace as a constant, and the
the Python front-end answers it from an eager pass instead (``frontends/python/eager.py``).
"""

from __future__ import annotations

import fnmatch
import functools
import re
import types
from collections.abc import Callable, Sequence
from typing import Any

from gradscope._src.engine.messages import tf_message
from gradscope._src.engine.protocol import LossEntry, VariableEntry
from gradscope._src.engine.tf_import import import_tensorflow
from gradscope._src.errors import TargetError
from gradscope._src.frontends import backend
from gradscope._src.frontends.python import frames, heads, isolation, keras_ops, loaded
from gradscope._src.frontends.python import variables as tv
from gradscope._src.frontends.python.ending import TargetEnded
from gradscope._src.frontends.python.resolve import Resolved
from gradscope._src.frontends.python.target import article
from gradscope._src.location import Location
from gradscope._src.results.causes import Cause

_NODE_IN_MESSAGE = re.compile(r"\{\{node ([^}]+)\}\}")

_EMPTY_VARIABLES = (
    "'variables' was empty when the target function returned (a Keras model creates its "
    "weights on its first call), so every trainable variable the losses touch is inspected"
)

#: Operator spellings of comparison ops, for ``visible`` (``x > 0`` makes a ``Greater``).
_OPERATORS = {
    "Greater": (">",),
    "GreaterEqual": (">=",),
    "Less": ("<",),
    "LessEqual": ("<=",),
    "Equal": ("==",),
    "NotEqual": ("!=",),
    "FloorDiv": ("//",),
    "FloorMod": ("%",),
}


def _autograph(fn: Callable[[], Any]) -> Callable[[], Any]:
    """``fn`` as ``tf.function(fn, autograph=True)`` would call it while tracing."""
    try:
        from tensorflow.python.autograph.core import ag_ctx
        from tensorflow.python.eager.polymorphic_function.autograph_util import (
            py_func_from_autograph,
        )
    except ImportError:  # pragma: no cover - a TensorFlow that moved them: trace unconverted
        return fn
    converted = py_func_from_autograph(_own_code(fn))

    def call() -> Any:
        # NOTE: the engine traces with autograph off, which disables conversion for every call
        # inside; tf.function(autograph=True) enables it with this same context.
        with ag_ctx.ControlStatusCtx(status=ag_ctx.Status.ENABLED):
            return converted()

    return call


def _own_code(fn: Callable[[], Any]) -> Callable[[], Any]:
    """``fn`` with a code object equal to no other function's.

    Autograph caches its conversions by code object, and two functions of the same source at
    the same lines of two files have equal code objects (CPython compares no file name): the
    second would run the first's conversion, whose source map names the first file's lines
    (two copies of a model file inspected in one notebook). An unused constant makes the code
    unequal and changes nothing it does.
    """
    if not isinstance(fn, types.FunctionType):
        return fn
    code = fn.__code__.replace(co_consts=(*fn.__code__.co_consts, object()))
    own = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    own.__kwdefaults__ = fn.__kwdefaults__
    return functools.update_wrapper(own, fn)


def _watched(graph: Any) -> list[Any]:
    """Variables the graph has read so far (also those read only under ``stop_gradient``,
    which a GradientTape's ``watched_variables`` leaves out)."""
    # NOTE: FuncGraph keeps them in a private set; `graph.variables` is filled only when the
    # trace ends, after the engine needs the list.
    return list(getattr(graph, "_watched_variables", ()))


def _first_use(graph: Any, variables: list[Any]) -> list[Any]:
    """``variables`` in the order the graph first reads them (a stable, readable order)."""
    by_handle = {id(v.handle): v for v in variables}
    placeholders = {}
    for external, internal in graph.captures:
        v = by_handle.get(id(external))
        if v is not None:
            placeholders[internal.op.name] = v
    order: dict[Any, Any] = {}
    for op in graph.get_operations():
        for t in op.inputs:
            v = placeholders.get(t.op.name)
            if v is not None:
                order.setdefault(v.ref(), v)
    rest = sorted((v for v in variables if v.ref() not in order), key=lambda v: str(v.name))
    return list(order.values()) + rest


class PythonModel:
    """Calls a target's losses inside the engine's trace and locates ops in the user's code."""

    def __init__(
        self,
        resolved: Resolved,
        registry: tv.Registry,
        wanted: set[str] | None,
        also_read: Sequence[Any] = (),
    ):
        self.tf = import_tensorflow()
        # Variables an untraceable loss reads after the point where its trace failed (found
        # by running it eagerly): the trace alone never sees them.
        self.also_read = list(also_read)
        self.resolved = resolved
        self.registry = registry
        self.wanted = wanted
        self.graph: Any = None
        self.failed: dict[str, BaseException] = {}
        self.returned: dict[str, str] = {}  # loss -> what it returned instead of a tensor
        self.created: dict[str, list[tuple[Any, str]]] = {}
        self.loss_ops: dict[str, list[Any]] = {}  # ops each loss's call created
        self.chosen: list[tv.Chosen] = []
        self.notes: list[str] = []  # about the whole target, for the report
        self.touched: list[Any] = []  # every variable the traced losses read or wrote
        self.model_calls: dict[str, heads.Calls] = {}  # Keras model calls each loss made
        self.loss_tensors: dict[str, Any] = {}  # each traced loss's tensor

    @property
    def target(self) -> str:
        return self.resolved.label

    def loss_site(self, name: str) -> frames.Site | None:
        """Where the user wrote the loss; None for one gradscope wrote (``keras.targets``)."""
        site = frames.of_code(self.resolved.target.losses[name])
        return None if site is None or frames.is_ours(site.filename) else site

    def trace(self) -> tuple[list[LossEntry], list[VariableEntry]]:
        """Call every wanted loss; the variables are chosen from what they read."""
        self.graph = self.tf.compat.v1.get_default_graph()
        entries = []
        touched: dict[Any, Any] = {v.ref(): v for v in self.also_read}
        snapshots = isolation.Snapshots(self.tf)
        for name, fn in self.resolved.target.losses.items():
            if self.wanted is not None and name not in self.wanted:
                continue
            first = len(self.graph.get_operations())
            calls: heads.Calls = []
            with self.registry.collect() as created, heads.recording(calls), keras_ops.recording():
                value = self._call(name, fn)
            self.model_calls[name] = calls
            self.created[name] = created
            self.loss_ops[name] = self.graph.get_operations()[first:]
            for v in _watched(self.graph):
                touched.setdefault(v.ref(), v)
            entries.append(self._entry(name, value))
            new_ops = self.graph.get_operations()[first:]
            # Each loss starts from the state before the run (isolation.py).
            snapshots.restore(isolation.written(self.graph, new_ops, touched.values()))
        self.touched = list(touched.values())
        self.chosen = self._choose(list(touched.values()))
        return entries, [
            VariableEntry(c.name, c.variable, c.trainable, c.source, c.attribute)
            for c in self.chosen
        ]

    def causes(self) -> dict[str, dict[str, Cause]]:
        """Per traced loss, the cause of each variable of a Keras model it called that it
        does not read (``heads.py``): an output no loss reads, a layer ``call`` skips."""
        names = {heads.handle_id(c.variable): c.name for c in self.chosen}
        out = {}
        for name, calls in self.model_calls.items():
            tensor = self.loss_tensors.get(name)
            if tensor is None or not calls or name in self.failed:
                continue
            # the line that made the loss's value, as `gradscope run` names it; else its def
            site = frames.of_op(tensor.op) or self.loss_site(name)
            out[name] = heads.causes(self.graph, calls, tensor, names, str(site) if site else "")
        return out

    def _call(self, name: str, fn: Callable[[], Any]) -> Any:
        """Call one loss inside the trace; a failure is answered eagerly (module docstring)."""
        try:
            with isolation.no_strategy_run(self.tf):
                return frames.call_user(_autograph(fn))
        except TargetEnded:
            raise
        except Exception as exc:
            strategy = isolation.strategy_run(exc)
            if strategy is not None:
                site = self.loss_site(name)
                raise TargetError(
                    f"{site or self.target}: loss {name!r} calls {strategy}.run; gradscope "
                    "cannot yet analyse a loss computed through a distribution strategy: "
                    "return the loss of one replica (the function given to run) instead"
                ) from None
            self.failed[name] = exc
            return None

    def _entry(self, name: str, value: Any) -> LossEntry:
        site = self.loss_site(name)
        location = Location(frames.display_path(site.filename), site.line, 1) if site else None
        if name in self.failed:  # a stand-in, replaced by the eager answer
            return LossEntry(name, self.tf.constant(0.0), location)
        target = self.resolved.target
        tensor = self.loss_tensors[name] = self._tensor(name, value, site)
        return LossEntry(
            name,
            tensor,
            location,
            grad_ys=(target.grad_loss or {}).get(name),
            stop_tensors=self._stopped(name, (target.stop_gradients or {}).get(name, ())),
            unconnected=target.unconnected_gradients,
        )

    def _stopped(self, name: str, patterns: Sequence[str]) -> list[Any]:
        """Outputs of the ops loss ``name`` made whose names match ``patterns``
        (``stop_gradients``). A name TensorFlow made unique (``scaled_1``: a second loss
        built the same op) matches as written, too (``scaled``)."""
        if not patterns:
            return []
        return [
            t
            for op in self.loss_ops.get(name, ())
            if any(fnmatch.fnmatchcase(n, p) for p in patterns for n in (op.name, _plain(op.name)))
            for t in op.outputs
            if t.dtype.is_floating or t.dtype.is_complex
        ]

    def _tensor(self, name: str, value: Any, site: frames.Site | None) -> Any:
        tf = self.tf
        where = f"{site}: " if site else ""
        if value is None or isinstance(value, (list, tuple, dict)):
            what = "None" if value is None else f"a {type(value).__name__}"
            raise TargetError(
                f"{where}loss {name!r} returned {what}; a loss returns one tensor "
                "(add several up, e.g. tf.add_n([...]))"
            )
        backend.check_values([value], f"the target {self.target}", f"its loss {name!r} returns")
        if not (tf.is_tensor(value) or tv.tf_variable(tf, value) is not None):
            self.returned[name] = describe(value)
        try:
            tensor = tf.convert_to_tensor(value)
        except (TypeError, ValueError) as exc:
            raise TargetError(
                f"{where}loss {name!r} returned a {type(value).__name__}, not a tensor: "
                f"{tf_message(str(exc))}"
            ) from exc
        if not (tensor.dtype.is_floating or tensor.dtype.is_complex):
            raise TargetError(
                f"{where}loss {name!r} returned {article(tensor.dtype.name)} tensor; a loss "
                "must be floating-point (TensorFlow gives integers no gradient)"
            )
        return tensor

    def _choose(self, touched: list[Any]) -> list[tv.Chosen]:
        tf, target, label = self.tf, self.resolved.target, self.resolved.label
        self.registry.scan(target.losses.values())
        if target.variables:
            chosen = tv.explicit(tf, self.registry, target.variables, label)
        else:  # an empty list: most likely a Keras model that builds on its first call
            self.notes += [_EMPTY_VARIABLES] if target.variables is not None else []
            model = target.model
            chosen = tv.of_model(tf, self.registry, model, label) if model is not None else []
            known = {v.ref() for v in chosen}
            chosen += [
                v for v in _first_use(self.graph, touched) if v.trainable and v.ref() not in known
            ]
        fallback = str(self.resolved.site) if self.resolved.site else label
        out = tv.choose(self.registry, chosen, fallback)
        if not target.variables and self.registry.wrappers:
            raw = [c for c in out if not self.registry.tracked(c.variable)]
            restored = [c for c in raw if c.variable.ref() in self.registry.restored]
            self.notes += [
                _untracked(c) for c in raw if c.variable.ref() not in self.registry.restored
            ]
            self.notes += loaded.restored_notes(restored)
        if not target.variables and target.model is not None:
            self.notes += loaded.notes(tf, self.registry, target.model, out)
        return out

    # --- the Traceable protocol -------------------------------------------------------------

    def locate(self, op: Any) -> tuple[str, str] | None:
        """``(op name, "FILE:LINE")`` of the user's line that created ``op``."""
        site = frames.of_op(op)
        return None if site is None else (op.name, str(site))

    def visible(self, op: Any) -> bool:
        """Whether the user wrote ``op`` themselves: the line of their code that created it
        names it (``tf.argmax(...)`` for ``ArgMax``, ``tf.cast`` for ``Cast``, ``>`` for
        ``Greater``). An op made inside a library function called on that line (the
        comparison inside ``sigmoid_cross_entropy_with_logits``) is not."""
        site = frames.of_op(op)
        if site is None:
            return False
        text = site.text()
        squashed = text.lower().replace("_", "")
        if op.type.lower() in squashed:
            return True
        return any(symbol in text for symbol in _OPERATORS.get(op.type, ()))

    def describe(self, op: Any) -> str | None:
        return None

    def display_path(self, filename: str) -> str:
        return frames.display_path(filename)

    def named_inputs(self) -> list[tuple[str, str, Any]]:
        return []

    def trace_error(self, exc: BaseException) -> BaseException:
        """A TensorFlow error as one line naming the op and the user's line that made it."""
        op = getattr(exc, "op", None)
        match = _NODE_IN_MESSAGE.search(str(exc))
        if op is None and match and self.graph is not None:
            try:
                op = self.graph.get_operation_by_name(match.group(1))
            except (KeyError, ValueError):
                op = None
        cause = getattr(exc, "cause", exc)
        message = tf_message(getattr(cause, "message", None) or str(cause))
        if op is None:
            return TargetError(f"{self.target}: TensorFlow failed: {message}", cause=cause)
        site = frames.of_op(op)
        where = f"{site}: " if site else ""
        return TargetError(
            f"{where}{self.target}: op '{op.name}' ({op.type}): {message}", cause=cause
        )


_UNIQUE_SUFFIX = re.compile(r"_\d+(?=/|$)")


def _plain(op_name: str) -> str:
    """``dense_1/scaled_2`` -> ``dense/scaled``: an op name without TensorFlow's suffixes."""
    return _UNIQUE_SUFFIX.sub("", op_name)


def _untracked(chosen: tv.Chosen) -> str:
    return (
        f"`{chosen.name}` (made at {chosen.source}) is a raw tf.Variable that no Keras model or "
        "layer tracks: the losses read it, so it is inspected, but model.fit and an optimizer "
        "given model.trainable_variables never update it. Create it with layer.add_weight() "
        "(or keras.Variable) so Keras trains it."
    )


def describe(value: Any) -> str:
    """``a NumPy value (float32)`` / ``a Python float``: what a loss returned instead."""
    module = type(value).__module__.split(".")[0]
    if module == "numpy":
        return f"a NumPy value ({getattr(value, 'dtype', type(value).__name__)})"
    return f"a Python {type(value).__name__}"
