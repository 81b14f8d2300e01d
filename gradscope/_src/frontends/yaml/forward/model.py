"""A spec as a TensorFlow computation: values, variables, and the forward pass inside a trace."""

from __future__ import annotations

import inspect
import re
import warnings
from typing import Any

import numpy as np

from gradscope._src import watchdog
from gradscope._src.engine.messages import OP_NAME, one_line, tagged_op, tf_message
from gradscope._src.engine.protocol import LossEntry, VariableEntry
from gradscope._src.engine.tf_import import import_tensorflow
from gradscope._src.errors import BuildError
from gradscope._src.frontends.yaml.catalog import dtype_kind
from gradscope._src.frontends.yaml.forward import budget, limits, ops, values
from gradscope._src.frontends.yaml.model import Arg, ListArg, Literal, Loss, Node, Ref, Spec
from gradscope._src.results.expect import Pos

_SCOPE = re.compile(r"^N(\d+)(?:_\d+)?$")
_GRADIENTS = re.compile(r"^gradients(?:_\d+)?/")

__all__ = ["SpecModel", "keras_initializer", "one_line"]


def keras_initializer(keras: Any, name: str, seed: int) -> Any:
    """A Keras initializer by name, seeded when it takes a seed."""
    cls = type(keras.initializers.get(name))
    if "seed" in inspect.signature(cls).parameters:
        return cls(seed=seed)
    return cls()


class SpecModel:
    """Builds a spec's inputs and variables eagerly, and its nodes inside a trace.

    Every TensorFlow op a node creates lives under the name scope ``N<index>``, so
    ``node_of(op_name)`` maps any op back to the node the user wrote.
    """

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.tf = import_tensorflow()
        import keras

        self.keras = keras
        keras.utils.set_random_seed(spec.seed)
        self.ctx = ops.Context(self.tf, keras, max_elements=spec.max_elements)
        self.ctx.names = {
            **{d.name: f"input '{d.name}' (line {d.pos.line})" for d in spec.inputs},
            **{n.name: f"node '{n.name}' (line {n.pos.line})" for n in spec.nodes},
        }
        self.inputs = {d.name: self._input(d) for d in spec.inputs}
        for d in spec.variables:
            self.ctx.variables.append(
                ops.BuiltVariable(d.name, self._variable(d), d.trainable, d.pos)
            )
        self.spec_variables = {v.name: v.variable for v in self.ctx.variables}
        self.env: dict[str, Any] = {}
        self._outputs: set[str] = set()
        self.whole_batch = True  # False per replica (distribute): losses see a shard

    def _input(self, d: Any) -> Any:
        tf = self.tf
        return tf.constant(values.input_array(d, self.spec.seed), dtype=tf.as_dtype(d.dtype))

    def _variable(self, d: Any) -> Any:
        tf = self.tf
        dtype = tf.as_dtype(d.dtype)
        try:
            array = values.variable_array(d, self.spec.seed)
            if array is None:
                init = keras_initializer(
                    self.keras, d.init, values.derived_seed(self.spec.seed, d.name)
                )
                initial = init(d.shape, dtype=d.dtype)
            else:
                initial = tf.constant(array, dtype=dtype)
            return tf.Variable(initial, trainable=d.trainable, name=d.name, dtype=dtype)
        except Exception as exc:  # a Keras initializer refusing a shape, a bad dtype, ...
            raise BuildError(
                self.spec.location(d.pos), f"variables.{d.name}", tf_message(str(exc))
            ) from exc

    @property
    def variables(self) -> list[ops.BuiltVariable]:
        return self.ctx.variables

    def forward(self) -> dict[str, Any]:
        """Run every node in order (call inside ``tf.function``); returns name -> value."""
        tf = self.tf
        env: dict[str, Any] = {**self.inputs, **self.spec_variables}
        for index, node in enumerate(self.spec.nodes):
            with tf.name_scope(f"N{index}"):
                env[node.name] = self._run_node(node, env)
        self.env = env
        self._outputs = {
            t.op.name
            for node in self.spec.nodes
            for t in tf.nest.flatten(env[node.name])
            if hasattr(t, "op") and not isinstance(t, tf.Variable)
        }
        return env

    def _run_node(self, node: Node, env: dict[str, Any]) -> Any:
        try:
            args = [self._resolve(a, env) for a in node.args]
            kwargs = {k: self._resolve(a, env) for k, a in node.kwargs}
            # Keras and TensorFlow warn about Python-API style ("do not pass input_dim"),
            # which a spec's author cannot act on; errors are what the user sees.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return ops.call(self.ctx, node, args, kwargs)
        except BuildError:
            raise
        except Exception as exc:
            raise self.node_error(node, exc) from exc

    def node_error(self, node: Node, exc: BaseException) -> BuildError:
        """``FILE:LINE:COLUMN: node 'm' (matmul): <TensorFlow's message in one line>``."""
        message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
        return BuildError(
            self.spec.location(node.pos),
            f"node '{node.name}' ({node.op})",
            tf_message(message, self.op_label),
        )

    def op_label(self, op_name: str) -> str | None:
        """How a user reads a TensorFlow op name: ``N3/MatMul`` is ``node 'h' (MatMul)``."""
        node = self.node_of(op_name)
        if node is None:
            return None
        gradient = _GRADIENTS.match(op_name)
        inner = _GRADIENTS.sub("", op_name).split("/", 1)[-1]
        label = f"node '{node.name}' ({inner})"
        return f"the gradient of {label}" if gradient else label

    def _resolve(self, arg: Arg, env: dict[str, Any]) -> Any:
        if isinstance(arg, Literal):
            return arg.value
        if isinstance(arg, ListArg):
            return [self._resolve(a, env) for a in arg.items]
        assert isinstance(arg, Ref)
        value = env[arg.name]
        return value if arg.index is None else value[arg.index]

    def tensor(self, name: str) -> Any:
        """The value of a name after ``forward``, as a tensor (variables are read)."""
        value = self.env[name]
        if isinstance(value, (list, tuple)):
            raise ValueError(f"{name!r} has several outputs; pick one as {name}[0]")
        return self.tf.convert_to_tensor(value)

    def node_of(self, op_name: str) -> Node | None:
        """The spec node whose name scope holds the TensorFlow op ``op_name`` (or the op whose
        gradient it computes: ``gradients/N3/MatMul_grad/MatMul`` belongs to node 3)."""
        match = _SCOPE.match(_GRADIENTS.sub("", op_name).split("/", 1)[0])
        if match is None:
            return None
        index = int(match.group(1))
        return self.spec.nodes[index] if index < len(self.spec.nodes) else None

    def source(self, pos: Pos) -> str:
        return f"{self.spec.path}:{pos.line}"

    # --- the Traceable protocol (engine/protocol.py) ----------------------------------------

    @property
    def target(self) -> str:
        return self.spec.path

    def trace(self) -> tuple[list[LossEntry], list[VariableEntry]]:
        """Build every node, then hand the engine the losses and variables.

        Raises:
            BuildError: a node failed, or would make a tensor larger than the spec's
                ``max_elements`` (checked here, before anything runs).
        """
        self.forward()
        self._check_sizes()
        losses = [self._loss_entry(loss) for loss in self.spec.losses]
        variables = [
            VariableEntry(v.name, v.variable, v.trainable, self.source(v.pos))
            for v in self.variables
        ]
        return losses, variables

    def _loss_entry(self, loss: Loss) -> LossEntry:
        location = self.spec.location(loss.pos)
        try:
            tensor = self.tensor(loss.node)
            if tensor.dtype.is_complex:
                raise ValueError(
                    f"the loss node '{loss.node}' is {tensor.dtype.name}; a loss must be real "
                    "(take math.real, math.abs or math.square of it)"
                )
            stops = [self.tensor(name) for name in loss.stop_gradients]
            if self.whole_batch:
                _check_grad_loss(loss.grad_loss, tensor.shape)
        except Exception as exc:
            raise BuildError(location, f"losses.{loss.name}", tf_message(str(exc))) from exc
        return LossEntry(
            name=loss.name,
            tensor=tensor,
            location=location,
            grad_ys=loss.grad_loss,
            stop_tensors=stops,
            includes=loss.includes,
        )

    def _check_sizes(self) -> None:
        defined = [("inputs", d) for d in self.spec.inputs]
        for section, d in defined + [("variables", d) for d in self.spec.variables]:
            if 0 in d.shape and dtype_kind(d.dtype) in ("float", "complex"):
                where = f"{section}.{d.name}"
                raise BuildError(self.spec.location(d.pos), where, _empty_message(d.shape))
        operations = self.tf.compat.v1.get_default_graph().get_operations()
        bounds: dict[str, Any] = {}
        found = limits.oversized(operations, self.spec.max_elements, into=bounds)
        empty = limits.first_empty(operations) if found is None else None
        if empty is not None:
            self._refuse(empty[0], _empty_message(empty[1]))
        if found is not None:
            self._refuse(found.op, found.message(self.spec.max_elements))
        shapes = [d.shape for d in self.spec.inputs] + [d.shape for d in self.spec.variables]
        base = sum(int(np.prod(shape)) * 8 for shape in shapes)  # at most 8 bytes an element
        over = budget.check(operations, bounds, len(self.spec.losses), base)
        if over is not None:
            self._refuse(over.op, over.message)
        heavy = self.node_of(getattr(budget.costliest(operations, bounds), "name", ""))
        if heavy is not None:
            watchdog.note_node(f"'{heavy.name}' ({heavy.op}, {self.source(heavy.pos)})")

    def _refuse(self, op: Any, message: str) -> None:
        node = self.node_of(op.name)
        if node is None:
            top = self.spec.location(self.spec.pos)
            raise BuildError(top, "", f"op {op.name}: {message}")
        raise BuildError(self.spec.location(node.pos), f"node '{node.name}' ({node.op})", message)

    def locate(self, op: Any) -> tuple[str, str] | None:
        node = self.node_of(op.name)
        return None if node is None else (node.name, self.source(node.pos))

    def visible(self, op: Any) -> bool:
        return op.name in self._outputs

    def describe(self, op: Any) -> str | None:
        """The op the spec node holding ``op`` names: ``matmul``, ``Dense`` for a layer."""
        node = self.node_of(op.name)
        if node is None:
            return None
        if node.op == "layer":
            return str(node.attrs.get("class", "layer"))
        return node.op.rsplit(".", 1)[-1]

    def display_path(self, filename: str) -> str:
        return filename

    def named_inputs(self) -> list[tuple[str, str, Any]]:
        """The spec's inputs: ``(name, "FILE:LINE", eager tensor)``."""
        return [
            (d.name, self.source(d.pos), self.inputs[d.name])
            for d in self.spec.inputs
            if d.name in self.inputs
        ]

    def trace_error(self, exc: BaseException) -> BaseException:
        """A TensorFlow error, attributed to the node that owns the failing op.

        The op is the error's own (``exc.op``), the one its ``{{node ...}}`` tag names, or
        the first spec op its message mentions. An error TensorFlow raised while running
        with no op to blame is still the spec's: it is located at the top of the file.
        Anything else is returned unchanged (gradscope's own failure).
        """
        cause = getattr(exc, "cause", exc)
        text = str(getattr(cause, "message", None) or cause)
        op = getattr(exc, "op", None)
        names = [getattr(op, "name", None), tagged_op(text), *OP_NAME.findall(text)]
        node = next((n for name in names if name and (n := self.node_of(name))), None)
        if node is not None:
            return self.node_error(node, cause)
        if isinstance(cause, self.tf.errors.OpError):
            return BuildError(
                self.spec.location(self.spec.pos),
                "",
                f"TensorFlow failed running the spec: {tf_message(text, self.op_label)}",
            )
        return exc


def _check_grad_loss(grad_loss: Any, shape: Any) -> None:
    """A ``grad_loss`` must broadcast to the loss's shape, as ``output_gradients`` must."""
    if grad_loss is None or not shape.is_fully_defined():
        return
    given, wanted = np.shape(grad_loss), tuple(shape.as_list())
    try:
        fits = np.broadcast_shapes(given, wanted) == wanted
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(
            f"grad_loss has shape {list(given)}, which does not fit the loss's shape "
            f"{list(wanted)}; give a number or a nested list of that shape"
        )


def _empty_message(dims: Any) -> str:
    shape = "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"
    return (
        f"would make an empty tensor (shape {shape}); TensorFlow's graph optimizer can crash "
        "on empty floating-point tensors, so a spec may not make one"
    )
