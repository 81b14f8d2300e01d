"""Finite differences of a traced losses function: one coordinate perturbed at a time.

``Evaluator`` calls the function traced once by ``check.py`` and restores what it writes;
``Comparison`` checks one variable's sampled coordinates against every loss that reaches it,
retrying a coordinate that disagrees with other steps (``fd.RETRY_STEPS``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gradscope._src.engine import retrace
from gradscope._src.engine.graph import is_write
from gradscope._src.engine.numeric import fd
from gradscope._src.results.facts import NumericCheck


def variables(traced: retrace.Traced) -> list[Any]:
    """Every variable a traced function reads or writes (each once)."""
    found: dict[int, Any] = {}
    for v in [e.variable for e in traced.variables] + list(traced.function.graph.variables):
        tfv = retrace.tf_variable(v)
        found.setdefault(id(tfv), tfv)
    return list(found.values())


def skipped(reason: str, dtype: str = "") -> NumericCheck:
    """A check that did not run, and why."""
    return NumericCheck(None, 0.0, 0, 0, 0.0, dtype, skipped=reason)


class Evaluator:
    """Calls the losses-only function; restores what it writes after every call."""

    def __init__(self, tf: Any, traced: retrace.Traced) -> None:
        self.tf = tf
        self.function = traced.function
        self.variables = {e.name: retrace.tf_variable(e.variable) for e in traced.variables}
        writes = any(is_write(op.type) for op in traced.function.graph.get_operations())
        self.dirty = [(v, v.read_value()) for v in variables(traced)] if writes else []
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


class Comparison:
    """One variable: its coordinates perturbed, against every loss that checks it."""

    def __init__(
        self,
        evaluate: Evaluator,
        variable: str,
        base: np.ndarray,
        grads: dict[str, np.ndarray],
        losses: dict[str, tuple[int, str]],
    ) -> None:
        """``base`` holds every loss's value at the point; ``grads`` the analytic gradient
        per loss; ``losses`` each loss's row in ``base`` and its dtype."""
        self.evaluate, self.variable, self.base = evaluate, variable, base
        self.grads = grads
        self.rows = [losses[loss][0] for loss in grads]
        tf_variable = evaluate.variables[variable]
        self.dtype = tf_variable.dtype.name
        self.numpy_dtype = tf_variable.dtype.as_numpy_dtype
        self.values = tf_variable.numpy()
        # the check is as precise as the coarser of the variable and the loss
        narrowest = [self.dtype, *(losses[loss][1] for loss in grads)]
        self.check_dtype = max(narrowest, key=lambda d: fd.EPS.get(d, fd.EPS["float32"]))
        self.scale = {loss: float(np.max(np.abs(g))) for loss, g in grads.items()}

    def run(self, count: int) -> dict[str, NumericCheck]:
        importance = sum(np.abs(g) / max(self.scale[n], 1e-300) for n, g in self.grads.items())
        coords = fd.coordinates(np.asarray(importance), count, self.variable)
        if not coords:
            return {loss: skipped("the variable has no elements") for loss in self.grads}
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
