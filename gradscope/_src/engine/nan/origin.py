"""Where a NaN or an infinity first appeared, for every ``nan`` pair (as ``detect_anomaly`` does).

Only a run with a ``nan`` pair pays for this: a second, diagnostic pass rebuilds the model
(``retrace.Rebuild``), differentiates each loss with a ``nan`` pair again, and checks every
floating-point value the pair's gradient depends on: the forward values and the gradient
ops alike. Ops are created in a topological order (an op's inputs exist before it), so the
first op in creation order whose output is non-finite has finite inputs: that op is where
the NaN or Inf appeared. All forward ops come before the gradient ops, so a non-finite
forward value is always reported before the gradient it poisons; a gradient op is named by
the forward op it differentiates (``gradients/N2/Sqrt_grad/SqrtGrad`` belongs to ``N2/Sqrt``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gradscope._src.engine import retrace
from gradscope._src.engine.messages import one_line
from gradscope._src.engine.nan import upstream
from gradscope._src.engine.protocol import LossEntry, Traceable
from gradscope._src.engine.status import pairs_with
from gradscope._src.engine.tf_import import import_tensorflow
from gradscope._src.errors import GradscopeError
from gradscope._src.progress import Progress
from gradscope._src.results.facts import LossFacts, NanOrigin, RunFacts
from gradscope._src.results.report import NAN

Pair = tuple[str, str]

_VALUES = ("nan", "inf", "-inf")
_EAGER = "the loss runs only eagerly, and only traced losses are looked into"


def nan_pairs(facts: RunFacts) -> dict[str, list[str]]:
    """Per loss, the variables whose gradient has a NaN or an infinity."""
    return pairs_with(facts, NAN)


def explain(
    facts: RunFacts,
    rebuild: retrace.Rebuild,
    *,
    device: str | None = None,
    progress: Progress | None = None,
    skip: Sequence[str] = (),
) -> RunFacts:
    """``facts`` with every ``nan`` pair's ``nan_origin`` filled in.

    Costs nothing when no pair is ``nan``. When the diagnostic pass fails or finds every
    value finite (a Python target whose variables changed since), the pair keeps no origin
    and its loss gets a note saying so.

    Args:
        facts: what the main run found.
        rebuild: builds the same model again, with the same values and dtypes.
        device: where the main run ran.
        progress: called with a short phase description.
        skip: losses not to look into (a Python loss that only runs eagerly).
    """
    every = nan_pairs(facts)
    wanted = {k: v for k, v in every.items() if k not in skip}
    eager = {k: v for k, v in every.items() if k in skip}
    if eager:
        facts = dataclasses.replace(
            facts, losses=tuple(_attach(loss, eager, {}, _EAGER) for loss in facts.losses)
        )
    if not wanted:
        return facts
    (progress or (lambda _phase: None))("looking for where NaN/Inf first appeared")
    tf = import_tensorflow()
    try:
        origins = _origins(rebuild.make(), wanted, device)
        failure = None
    except (GradscopeError, tf.errors.OpError, ValueError, TypeError, LookupError) as exc:
        origins, failure = {}, one_line(str(exc) or type(exc).__name__, 200)
    return dataclasses.replace(
        facts, losses=tuple(_attach(loss, wanted, origins, failure) for loss in facts.losses)
    )


def _attach(
    loss: LossFacts,
    wanted: dict[str, list[str]],
    origins: dict[Pair, NanOrigin],
    failure: str | None,
) -> LossFacts:
    names = wanted.get(loss.name)
    if not names:
        return loss
    pairs = tuple(
        dataclasses.replace(p, nan_origin=origins.get((loss.name, p.variable)))
        if p.variable in names
        else p
        for p in loss.pairs
    )
    missing = [n for n in names if (loss.name, n) not in origins]
    notes = loss.notes
    if missing:
        which = ", ".join(f"`{n}`" for n in missing)
        if failure == _EAGER:
            why = failure
        elif failure:
            why = f"the diagnostic pass failed: {failure}"
        else:
            why = "a second run found every value finite"
        notes += (f"where the NaN/Inf in the gradient of {which} first appeared is unknown: {why}",)
    return dataclasses.replace(loss, pairs=pairs, notes=notes)


@dataclass(frozen=True)
class _Wanted:
    """One ``nan`` pair inside the trace: the variable's handle, the loss, the gradient."""

    handle: Any
    target: Any
    gradient: Any


@dataclass
class _Plan:
    """Inside the trace: which values each pair's gradient depends on, and their checks."""

    ops: list[Any] = field(default_factory=list)
    ancestors: dict[Pair, list[int]] = field(default_factory=dict)  # op indices, sorted
    first_gradient_op: dict[str, int] = field(default_factory=dict)  # per loss
    checked: dict[tuple[int, int], int] = field(default_factory=dict)  # (op, output) -> row


def _origins(
    model: Traceable, wanted: dict[str, list[str]], device: str | None
) -> dict[Pair, NanOrigin]:
    tf = import_tensorflow()
    plan = _Plan()
    grads: dict[Pair, _Wanted] = {}

    def body(traced: retrace.Traced, losses: list[LossEntry]) -> dict[str, Any]:
        graph = tf.compat.v1.get_default_graph()
        handles = {v.name: graph.capture(retrace.handle(v.variable)) for v in traced.variables}
        for loss in losses:
            names = [n for n in wanted.get(loss.name, ()) if n in handles]
            if not names:
                continue
            target = tf.convert_to_tensor(loss.tensor)
            plan.first_gradient_op[loss.name] = len(graph.get_operations())
            found = retrace.gradients(tf, loss, [handles[n] for n in names])
            for name, grad in zip(names, found, strict=True):
                if grad is not None:
                    values = grad.values if isinstance(grad, tf.IndexedSlices) else grad
                    grads[(loss.name, name)] = _Wanted(handles[name], target, values)
        plan.ops = list(graph.get_operations())
        traced.static["handles"] = handles
        return _checks(tf, plan, grads)

    traced = retrace.trace(model, body, device=device)
    if not plan.checked:
        return {}
    with retrace.kept([v.variable for v in traced.variables]):
        flags = traced.function()["flags"].numpy()
    describe = _Describe(model, traced)
    out = {}
    for pair, ancestors in plan.ancestors.items():
        origin = _first(plan, pair, ancestors, flags, describe)
        if origin is not None:
            out[pair] = origin
    return out


def _checks(tf: Any, plan: _Plan, grads: dict[Pair, _Wanted]) -> dict[str, Any]:
    """One row of ``[any NaN, any +Inf, any -Inf]`` per floating value a pair depends on.

    A pair depends on everything its gradient is computed from, and on the forward values on
    its paths from the variable to the loss (``log(0)`` is ``-Inf`` there even where the
    gradient of ``log`` reads only its input).
    """
    index = {op.name: i for i, op in enumerate(plan.ops)}
    writes = upstream.writes(plan.ops)
    rows: list[Any] = []
    for pair, wanted in grads.items():
        found = upstream.ancestors(plan.ops, index, writes, [index[wanted.gradient.op.name]])
        end = plan.first_gradient_op[pair[0]]
        feeding = upstream.ancestors(plan.ops, index, writes, [index[wanted.target.op.name]])
        fed = upstream.descendants(plan.ops[:end], index[wanted.handle.op.name], writes)
        ancestors = sorted(set(found) | (set(feeding) & fed))
        plan.ancestors[pair] = ancestors
        for i in ancestors:
            for t in plan.ops[i].outputs:
                key = (i, t.value_index)
                if key not in plan.checked and (t.dtype.is_floating or t.dtype.is_complex):
                    plan.checked[key] = len(rows)
                    rows.append(upstream.nonfinite_flags(tf, t))
    return {"flags": tf.stack(rows)} if rows else {}


def _first(
    plan: _Plan, pair: Pair, ancestors: list[int], flags: Any, describe: _Describe
) -> NanOrigin | None:
    """The first op (in creation order) among ``ancestors`` with a non-finite output."""
    gradient_from = plan.first_gradient_op.get(pair[0], len(plan.ops))
    for i in ancestors:
        op = plan.ops[i]
        for t in op.outputs:
            row = plan.checked.get((i, t.value_index))
            if row is None or not flags[row].any():
                continue
            value = _VALUES[int(flags[row].argmax())]
            if i >= gradient_from:
                return describe.gradient(op, value)
            return describe.forward(op, value)
    return None


class _Describe:
    """Names an op for a report: its node and line, a variable or input by name."""

    def __init__(self, model: Traceable, traced: retrace.Traced) -> None:
        self.model = model
        graph = traced.function.graph
        self.forward_ops = {op.name: op for op in graph.get_operations()}
        self.captured: dict[str, tuple[str, str]] = {}  # placeholder op -> (name, source)
        for v in traced.variables:
            internal = traced.static["handles"][v.name]
            self.captured[internal.op.name] = (v.name, v.source)
        self.inputs = _spec_inputs(model)
        by_id = {id(tensor): (name, source) for name, source, tensor in self.inputs}
        for external, internal in graph.captures:
            found = by_id.get(id(external))
            if found is not None:
                self.captured[internal.op.name] = found

    def forward(self, op: Any, value: str) -> NanOrigin:
        if op.type == "Placeholder" and op.name in self.captured:
            name, source = self.captured[op.name]
            return NanOrigin(name, op.type, source, "forward", value, op.name)
        if op.type == "ReadVariableOp" and op.inputs:
            variable = self.captured.get(op.inputs[0].op.name)
            if variable is not None:
                return NanOrigin(variable[0], op.type, variable[1], "forward", value, op.name)
        if op.type == "Const":
            found = self._input_constant(op)
            if found is not None:
                return NanOrigin(found[0], "Placeholder", found[1], "forward", value, op.name)
        node, source = self._where(op)
        return NanOrigin(node, op.type, source, "forward", value, op.name)

    def _input_constant(self, op: Any) -> tuple[str, str] | None:
        """The spec input a constant holds: TensorFlow captures small eager tensors by value,
        so an input with a NaN may appear as a ``Const`` inside the node that reads it."""
        import numpy as np

        tf = import_tensorflow()
        value = tf.get_static_value(op.outputs[0])
        if value is None:
            return None
        for name, source, tensor in self.inputs:
            array = tensor.numpy()
            same = array.shape == value.shape and array.dtype == value.dtype
            if same and np.array_equal(array, value, equal_nan=array.dtype.kind in "fc"):
                return name, source
        return None

    def gradient(self, op: Any, value: str) -> NanOrigin:
        forward = self._forward_of(op.name)
        if forward is None:
            node, source = self._where(op)
            return NanOrigin(node, op.type, source, "gradient", value, op.name)
        node, source = self._where(forward)
        return NanOrigin(node, forward.type, source, "gradient", value, op.name)

    def _where(self, op: Any) -> tuple[str, str]:
        found = self.model.locate(op)
        return found if found is not None else (op.name, "")

    def _forward_of(self, name: str) -> Any:
        """The forward op a gradient op belongs to: ``gradients/N2/Sqrt_grad/SqrtGrad`` ->
        ``N2/Sqrt`` (TensorFlow builds each op's gradient under ``<op name>_grad``)."""
        parts = name.split("/")[1:]
        for k in range(len(parts), 0, -1):
            scope = "/".join(parts[:k])
            if scope.endswith("_grad") and scope[: -len("_grad")] in self.forward_ops:
                return self.forward_ops[scope[: -len("_grad")]]
        return None


def _spec_inputs(model: Traceable) -> list[tuple[str, str, Any]]:
    """The model's named inputs: ``(name, "FILE:LINE", eager tensor)``."""
    return model.named_inputs()
