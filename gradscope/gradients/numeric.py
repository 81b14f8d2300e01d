"""``--numeric``: every ``ok`` gradient compared with central finite differences.

The main run is left alone (it stays as fast as without ``--numeric``). This pass rebuilds
the model (``retrace.Rebuild``: a spec in float64 where it allows, a Python target in its own
dtypes) and traces it twice: once differentiated (the analytic gradients, one ``tf.gradients``
per loss as the engine asks it), once as a function of the current variable values that
returns every loss (``sum(grad_loss * loss)``, what the gradient is the gradient of). That
second function is traced once and called for every evaluation; between calls only the
perturbed coordinate changes, and every variable the function writes (``assign`` nodes,
Keras state) is restored, so each evaluation starts from the same point.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gradscope.build.model import one_line
from gradscope.build.tf_import import import_tensorflow
from gradscope.build.traceable import LossEntry
from gradscope.errors import GradscopeError
from gradscope.gradients import fd, flow, retrace
from gradscope.gradients.extract import Extracted, GradientRegistry, is_write
from gradscope.gradients.facts import CutPoint, LossFacts, NumericCheck, NumericRun, RunFacts

Progress = Callable[[str], None]
Pair = tuple[str, str]


def ok_pairs(facts: RunFacts, skip: Sequence[str] = ()) -> dict[str, list[str]]:
    """Per loss, the variables whose gradient is ``ok`` (exists, finite, not all zero)."""
    out = {}
    for loss in facts.losses:
        names = [p.variable for p in loss.pairs if p.has_gradient and p.finite and not p.all_zero]
        if names and loss.name not in skip:
            out[loss.name] = names
    return out


def check(
    facts: RunFacts,
    rebuild: retrace.Rebuild,
    *,
    device: str | None = None,
    progress: Progress | None = None,
    coordinates: int = fd.DEFAULT_COORDINATES,
    skip: Sequence[str] = (),
) -> RunFacts:
    """``facts`` with a ``NumericCheck`` on every ``ok`` pair and the run's ``NumericRun``.

    Args:
        facts: what the main run found.
        rebuild: builds the model again (widened to float64, with a fallback, for a spec).
        device: where the main run ran.
        progress: called with a short phase description.
        coordinates: the most coordinates checked per variable (a larger one is sampled).
        skip: losses not to check (a Python loss that only runs eagerly), with a reason.
    """
    wanted = ok_pairs(facts)
    if not wanted:
        return dataclasses.replace(facts, numeric=NumericRun(None, coordinates, 0))
    say = progress or (lambda _phase: None)
    tf = import_tensorflow()
    notes: list[str] = []
    checks: dict[Pair, NumericCheck] = {}
    attempt: retrace.Rebuild | None = rebuild
    run = NumericRun(None, coordinates, 0)
    while attempt is not None:
        say(f"checking gradients against finite differences ({attempt.dtype or 'own dtypes'})")
        try:
            checks, run = _Pass(attempt, wanted, device, coordinates, skip).run()
            break
        except (GradscopeError, tf.errors.OpError, ValueError, TypeError) as exc:
            why = one_line(str(exc) or type(exc).__name__, 200)
            if attempt.fallback is not None:
                notes.append(f"numeric: the float64 rebuild failed ({why}); checked in the "
                             "spec's own dtypes instead")  # fmt: skip
            else:
                checks = {
                    pair: _skipped(f"the rebuilt model failed: {why}") for pair in _all(wanted)
                }
            attempt = attempt.fallback
    losses = tuple(_attach(loss, checks) for loss in facts.losses)
    return dataclasses.replace(facts, losses=losses, numeric=run, notes=facts.notes + tuple(notes))


def _all(wanted: dict[str, list[str]]) -> list[Pair]:
    return [(loss, v) for loss, names in wanted.items() for v in names]


def _skipped(reason: str, dtype: str = "") -> NumericCheck:
    return NumericCheck(None, 0.0, 0, 0, 0.0, dtype, skipped=reason)


def _attach(loss: LossFacts, checks: dict[Pair, NumericCheck]) -> LossFacts:
    pairs = tuple(
        dataclasses.replace(p, numeric=checks[(loss.name, p.variable)])
        if (loss.name, p.variable) in checks
        else p
        for p in loss.pairs
    )
    return dataclasses.replace(loss, pairs=pairs)


@dataclass
class _Static:
    """What the two traces leave behind."""

    keys: dict[Pair, str] = field(default_factory=dict)  # pair -> output of the analytic pass
    causes: dict[Pair, tuple[CutPoint, ...]] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)  # losses of the objective vector
    dtypes: dict[str, str] = field(default_factory=dict)  # loss -> its dtype
    skipped: dict[str, str] = field(default_factory=dict)  # loss -> why


class _Pass:
    """One numeric pass over one rebuild."""

    def __init__(
        self,
        rebuild: retrace.Rebuild,
        wanted: dict[str, list[str]],
        device: str | None,
        count: int,
        skip: Sequence[str],
    ) -> None:
        self.tf = import_tensorflow()
        self.rebuild, self.device, self.count = rebuild, device, count
        self.wanted = wanted
        self.static = _Static(skipped={n: "the loss runs only eagerly" for n in skip})

    def run(self) -> tuple[dict[Pair, NumericCheck], NumericRun]:
        rebuild = self.rebuild
        initial = rebuild.initial() if rebuild.initial is not None else None
        options: dict[str, Any] = {"device": self.device, "scope": rebuild.scope}
        analytic = retrace.trace(rebuild.make(), self._analytic, initial=initial, **options)
        values = retrace.trace(rebuild.make(), self._values, initial=initial, **options)
        every = list({id(v): v for v in _variables(analytic) + _variables(values)}.values())
        with retrace.kept(every):
            grads = {k: np.asarray(t.numpy(), np.float64) for k, t in analytic.function().items()}
        with retrace.kept(every):
            evaluate = _Evaluator(self.tf, values)
            checks = self._checks(evaluate, grads)
        return checks, NumericRun(rebuild.dtype, self.count, evaluate.calls)

    # --- inside the traces ------------------------------------------------------------------

    def _analytic(self, traced: retrace.Traced, losses: list[LossEntry]) -> dict[str, Any]:
        tf, static = self.tf, self.static
        graph = tf.compat.v1.get_default_graph()
        handles = {v.name: graph.capture(retrace.handle(v.variable)) for v in traced.variables}
        causes = _Causes(traced.model, graph, handles)
        out: dict[str, Any] = {}
        for loss in losses:
            names = [n for n in self.wanted.get(loss.name, ()) if n in handles]
            if not names or loss.name in static.skipped:
                continue
            grads = retrace.gradients(tf, loss, [handles[n] for n in names])
            for name, grad in zip(names, grads, strict=True):
                if grad is None:
                    continue
                key = f"g{len(out)}"
                static.keys[(loss.name, name)] = key
                out[key] = tf.cast(tf.convert_to_tensor(grad), tf.float64)
                static.causes[(loss.name, name)] = causes.of(loss, name)
        return out

    def _values(self, traced: retrace.Traced, losses: list[LossEntry]) -> dict[str, Any]:
        tf, static = self.tf, self.static
        objectives = []
        for loss in losses:
            if loss.name not in self.wanted or loss.name in static.skipped:
                continue
            target = tf.convert_to_tensor(loss.tensor)
            if target.dtype.is_complex:
                static.skipped[loss.name] = "the loss is complex"
                continue
            value = tf.cast(target, tf.float64)
            if loss.grad_ys is not None:
                value *= tf.broadcast_to(tf.constant(loss.grad_ys, tf.float64), tf.shape(value))
            static.order.append(loss.name)
            static.dtypes[loss.name] = target.dtype.name
            objectives.append(tf.reduce_sum(value))
        return {"objective": tf.stack(objectives) if objectives else tf.zeros([0], tf.float64)}

    # --- after the traces -------------------------------------------------------------------

    def _checks(
        self, evaluate: _Evaluator, grads: dict[str, np.ndarray]
    ) -> dict[Pair, NumericCheck]:
        static = self.static
        base = evaluate()
        unstable = [n for n, a, b in zip(static.order, base, evaluate(), strict=True) if a != b]
        for name in unstable:
            static.skipped[name] = (
                "the loss is not deterministic: two evaluations at the same point differ "
                "(random ops, or a device that sums in varying order)"
            )
        for name, value in zip(static.order, base, strict=True):
            if not np.isfinite(value):
                static.skipped[name] = (
                    f"the loss is {value} here: finite differences need a finite loss"
                )
        out: dict[Pair, NumericCheck] = {}
        for variable in dict.fromkeys(v for names in self.wanted.values() for v in names):
            losses = [n for n, names in self.wanted.items() if variable in names]
            out.update(self._variable(evaluate, base, variable, losses, grads))
        return out

    def _variable(
        self,
        evaluate: _Evaluator,
        base: np.ndarray,
        variable: str,
        losses: list[str],
        grads: dict[str, np.ndarray],
    ) -> dict[Pair, NumericCheck]:
        static, out = self.static, {}
        checked: dict[str, np.ndarray] = {}
        for loss in losses:
            key = static.keys.get((loss, variable))
            reason = static.skipped.get(loss) or _why_not(evaluate, variable, key, grads)
            if reason is not None:
                out[(loss, variable)] = _skipped(reason)
            else:
                checked[loss] = grads[key]  # type: ignore[index]
        if not checked:
            return out
        compare = _Comparison(evaluate, variable, base, checked, static)
        for loss, result in compare.run(self.count).items():
            out[(loss, variable)] = dataclasses.replace(
                result, causes=static.causes.get((loss, variable), ())
            )
        return out


def _why_not(
    evaluate: _Evaluator, variable: str, key: str | None, grads: dict[str, np.ndarray]
) -> str | None:
    """Why a pair cannot be checked, or None."""
    if variable not in evaluate.variables:
        return "the variable is not in the rebuilt model"
    if key is None:
        return "the rebuilt model gives the variable no gradient"
    if not evaluate.variables[variable].dtype.is_floating:
        return f"the variable is {evaluate.variables[variable].dtype.name}"
    if not np.isfinite(grads[key]).all():
        return "the rebuilt model's gradient has a NaN or an infinity"
    return None


def _variables(traced: retrace.Traced) -> list[Any]:
    """Every variable a traced function reads or writes (each once)."""
    found: dict[int, Any] = {}
    for v in [e.variable for e in traced.variables] + list(traced.function.graph.variables):
        tfv = retrace.tf_variable(v)
        found.setdefault(id(tfv), tfv)
    return list(found.values())


class _Evaluator:
    """Calls the losses-only function; restores what it writes after every call."""

    def __init__(self, tf: Any, traced: retrace.Traced) -> None:
        self.tf = tf
        self.function = traced.function
        self.variables = {e.name: retrace.tf_variable(e.variable) for e in traced.variables}
        writes = any(is_write(op.type) for op in traced.function.graph.get_operations())
        self.dirty = [(v, v.read_value()) for v in _variables(traced)] if writes else []
        self.calls = 0

    def __call__(self) -> np.ndarray:
        out = np.asarray(self.function()["objective"].numpy(), np.float64)
        for variable, value in self.dirty:
            variable.assign(value)
        self.calls += 1
        return out

    def at(self, name: str, index: tuple[int, ...], value: Any, original: Any) -> np.ndarray:
        """The losses with one coordinate of ``name`` set to ``value``."""
        variable = self.variables[name]
        self._set(variable, index, value)
        try:
            return self()
        finally:
            self._set(variable, index, original)

    def _set(self, variable: Any, index: tuple[int, ...], value: Any) -> None:
        tf = self.tf
        if not index:
            variable.assign(tf.constant(value, variable.dtype))
        else:
            variable.scatter_nd_update([list(index)], tf.constant([value], variable.dtype))


class _Comparison:
    """One variable: its coordinates perturbed, against every loss that checks it."""

    def __init__(
        self,
        evaluate: _Evaluator,
        variable: str,
        base: np.ndarray,
        grads: dict[str, np.ndarray],
        static: _Static,
    ) -> None:
        self.evaluate, self.variable, self.base = evaluate, variable, base
        self.grads = grads
        self.rows = [static.order.index(loss) for loss in grads]
        tf_variable = evaluate.variables[variable]
        self.dtype = tf_variable.dtype.name
        self.numpy_dtype = tf_variable.dtype.as_numpy_dtype
        self.values = tf_variable.numpy()
        # the check is as precise as the coarser of the variable and the loss
        narrowest = [self.dtype, *(static.dtypes[loss] for loss in grads)]
        self.check_dtype = max(narrowest, key=lambda d: fd.EPS.get(d, fd.EPS["float32"]))
        self.scale = {loss: float(np.max(np.abs(g))) for loss, g in grads.items()}

    def run(self, count: int) -> dict[str, NumericCheck]:
        importance = sum(np.abs(g) / max(self.scale[n], 1e-300) for n, g in self.grads.items())
        coords = fd.coordinates(np.asarray(importance), count, self.variable)
        if not coords:
            return {loss: _skipped("the variable has no elements") for loss in self.grads}
        tolerance = fd.tolerance(self.check_dtype)
        worst: dict[str, tuple[float, tuple[int, ...], float, float]] = {
            loss: (0.0, coords[0], 0.0, 0.0) for loss in self.grads
        }
        for index in coords:
            errors = self._errors(index, 1.0)
            for factor in fd.RETRY_STEPS:
                if all(e[0] <= tolerance for e in errors.values()):
                    break
                retry = self._errors(index, factor)
                errors = {n: min(errors[n], retry[n], key=lambda e: e[0]) for n in errors}
            for loss, (err, analytic, numeric) in errors.items():
                if err >= worst[loss][0]:
                    worst[loss] = (err, index, analytic, numeric)
        return {
            loss: NumericCheck(
                max_rel_error=err,
                tolerance=tolerance,
                coordinates=len(coords),
                size=int(self.values.size),
                step=fd.step(self.check_dtype),
                dtype=self.check_dtype,
                worst=index,
                analytic=analytic,
                numeric=numeric,
            )
            for loss, (err, index, analytic, numeric) in worst.items()
        }

    def _errors(
        self, index: tuple[int, ...], factor: float
    ) -> dict[str, tuple[float, float, float]]:
        """Per loss: ``(error, analytic, numeric)`` at one coordinate with ``factor`` x the step."""
        x = self.values[index] if index else self.values
        h = fd.step(self.check_dtype) * factor * max(1.0, abs(float(x)))
        plus = self.numpy_dtype(float(x) + h)
        minus = self.numpy_dtype(float(x) - h)
        f_plus = self.evaluate.at(self.variable, index, plus, x)
        f_minus = self.evaluate.at(self.variable, index, minus, x)
        width = float(plus) - float(minus)
        out = {}
        for loss, row in zip(self.grads, self.rows, strict=True):
            numeric = fd.central(f_plus[row], f_minus[row], float(plus), float(minus))
            analytic = float(self.grads[loss][index] if index else self.grads[loss])
            values = [self.base[row], f_plus[row], f_minus[row]]
            floor = fd.floor(self.check_dtype, values, width, self.scale[loss])
            out[loss] = (fd.error(analytic, numeric, floor), analytic, numeric)
        return out


class _Causes:
    """Why a pair's gradient may differ from finite differences on purpose, beyond its cut
    points: ops with a gradient of their own (``tf.custom_gradient``) on its paths, and
    ``assign`` ops that overwrite the variable."""

    def __init__(self, model: Any, graph: Any, handles: dict[str, Any]) -> None:
        self.model = model
        self.x = Extracted(graph.get_operations(), GradientRegistry())
        self.bits = {name: k for k, name in enumerate(handles)}
        ids = {name: self.x.tensor_id(h) for name, h in handles.items()}
        sources = {t: 1 << self.bits[name] for name, t in ids.items() if t is not None}
        self.vsets = flow.variable_sets(self.x.graph, sources)
        self.custom = [i for i, op in enumerate(self.x.tf_ops) if _has_own_gradient(op)]
        self.writes: dict[str, list[int]] = {}
        for i, node in enumerate(self.x.graph.ops):
            if node.write and node.inputs:
                for name, t in ids.items():
                    if t == node.inputs[0]:
                        self.writes.setdefault(name, []).append(i)
        self.reach: dict[str, list[bool]] = {}

    def of(self, loss: LossEntry, variable: str) -> tuple[CutPoint, ...]:
        out = [self._point(i, "assigned") for i in self.writes.get(variable, ())]
        reach = self._reach(loss) if self.custom else None
        bit = self.bits[variable]
        for i in self.custom:
            if reach is not None and reach[i] and self.vsets[i] >> bit & 1:
                out.append(self._point(i, "custom-gradient"))
        return tuple(dict.fromkeys(out))

    def _reach(self, loss: LossEntry) -> list[bool] | None:
        if loss.name not in self.reach:
            op = getattr(loss.tensor, "op", None)
            target = self.x.op_index.get(op.name) if op is not None else None
            if target is None:
                return None
            self.reach[loss.name] = flow.reaching(self.x.graph, target)
        return self.reach[loss.name]

    def _point(self, index: int, kind: str) -> CutPoint:
        op = self.x.tf_ops[index]
        if kind == "custom-gradient":
            named = _custom_gradient_function(op)
            if named is not None:
                return CutPoint(named[0], op.type, kind, named[1])
        node, source = self.model.locate(op) or (op.name, "")
        return CutPoint(node, op.type, kind, source)


def _has_own_gradient(op: Any) -> bool:
    """``tf.custom_gradient`` (and ``gradient_override_map``) mark the op with its gradient."""
    return "_gradient_op_type" in op.node_def.attr


def _custom_gradient_function(op: Any) -> tuple[str, str] | None:
    """``(name, "FILE:LINE")`` of the user's gradient function behind a ``tf.custom_gradient``
    op: TensorFlow registers a wrapper under the op's ``_gradient_op_type``, holding the
    user's function in its closure (best effort; None when it is not found)."""
    try:
        from tensorflow.python.framework import ops as tf_ops

        wrapper = tf_ops._gradient_registry.lookup(op.get_attr("_gradient_op_type").decode())
    except (LookupError, ValueError, AttributeError, TypeError):
        return None
    seen: set[int] = set()
    stack = [wrapper]
    while stack:
        fn = stack.pop()
        if id(fn) in seen or len(seen) > 50:
            continue
        seen.add(id(fn))
        module = getattr(fn, "__module__", "") or ""
        code = getattr(fn, "__code__", None)
        if code is not None and not module.startswith(("tensorflow", "keras")):
            from gradscope.targets.frames import display_path

            name = fn.__qualname__.split(".<locals>")[0]
            return name, f"{display_path(code.co_filename)}:{code.co_firstlineno}"
        for cell in getattr(fn, "__closure__", None) or ():
            try:
                value = cell.cell_contents
            except ValueError:
                continue
            if callable(value):
                stack.append(value)
    return None
