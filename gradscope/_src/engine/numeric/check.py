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
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gradscope._src.engine import retrace
from gradscope._src.engine.messages import one_line
from gradscope._src.engine.numeric import fd, perturb
from gradscope._src.engine.numeric.causes import Causes
from gradscope._src.engine.protocol import LossEntry
from gradscope._src.engine.status import pairs_with
from gradscope._src.engine.tf_import import import_tensorflow
from gradscope._src.errors import GradscopeError
from gradscope._src.progress import Progress
from gradscope._src.results.facts import CutPoint, LossFacts, NumericCheck, NumericRun, RunFacts
from gradscope._src.results.report import OK

Pair = tuple[str, str]


def ok_pairs(facts: RunFacts) -> dict[str, list[str]]:
    """Per loss, the variables whose gradient is ``ok`` (exists, finite, not all zero)."""
    return pairs_with(facts, OK)


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
        return dataclasses.replace(facts, numeric=NumericRun(rebuild.dtype, coordinates, 0))
    say = progress or (lambda _phase: None)
    checks, run, notes = _attempts(rebuild, wanted, device, coordinates, skip, say)
    losses = tuple(_attach(loss, checks) for loss in facts.losses)
    return dataclasses.replace(facts, losses=losses, numeric=run, notes=facts.notes + notes)


def _attempts(
    rebuild: retrace.Rebuild,
    wanted: dict[str, list[str]],
    device: str | None,
    coordinates: int,
    skip: Sequence[str],
    say: Progress,
) -> tuple[dict[Pair, NumericCheck], NumericRun, tuple[str, ...]]:
    """The pass over ``rebuild``, else over its fallback (with a note saying why)."""
    tf = import_tensorflow()
    say(f"checking gradients against finite differences ({rebuild.dtype or 'own dtypes'})")
    try:
        checks, run = _Pass(rebuild, wanted, device, coordinates, skip, say).run()
        return checks, run, ()
    except (GradscopeError, tf.errors.OpError, ValueError, TypeError) as exc:
        why = one_line(str(exc) or type(exc).__name__, 200)
    if rebuild.fallback is None:
        failed = perturb.skipped(f"the rebuilt model failed: {why}")
        checks = {pair: failed for pair in _all(wanted)}
        return checks, NumericRun(rebuild.dtype, coordinates, 0), ()
    note = f"numeric: the float64 rebuild failed ({why}); checked in the spec's own dtypes instead"
    checks, run, notes = _attempts(rebuild.fallback, wanted, device, coordinates, skip, say)
    return checks, run, (note, *notes)


def _all(wanted: dict[str, list[str]]) -> list[Pair]:
    return [(loss, v) for loss, names in wanted.items() for v in names]


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
        say: Progress,
    ) -> None:
        self.tf = import_tensorflow()
        self.rebuild, self.device, self.count, self.say = rebuild, device, count, say
        self.wanted = wanted
        self.static = _Static(skipped={n: "the loss runs only eagerly" for n in skip})

    def run(self) -> tuple[dict[Pair, NumericCheck], NumericRun]:
        rebuild = self.rebuild
        initial = rebuild.initial() if rebuild.initial is not None else None
        options: dict[str, Any] = {"device": self.device, "scope": rebuild.scope}
        analytic = retrace.trace(rebuild.make(), self._analytic, initial=initial, **options)
        values = retrace.trace(rebuild.make(), self._values, initial=initial, **options)
        every = list(
            {id(v): v for v in perturb.variables(analytic) + perturb.variables(values)}.values()
        )
        with retrace.kept(every):
            grads = {k: np.asarray(t.numpy(), np.float64) for k, t in analytic.function().items()}
        with retrace.kept(every):
            evaluate = perturb.Evaluator(self.tf, values)
            checks = self._checks(evaluate, grads)
        return checks, NumericRun(rebuild.dtype, self.count, evaluate.calls)

    # --- inside the traces ------------------------------------------------------------------

    def _analytic(self, traced: retrace.Traced, losses: list[LossEntry]) -> dict[str, Any]:
        tf, static = self.tf, self.static
        graph = tf.compat.v1.get_default_graph()
        handles = {v.name: graph.capture(retrace.handle(v.variable)) for v in traced.variables}
        causes = Causes(traced.model, graph, handles)
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
        self, evaluate: perturb.Evaluator, grads: dict[str, np.ndarray]
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
        every = list(dict.fromkeys(v for names in self.wanted.values() for v in names))
        for index, variable in enumerate(every):
            self.say(f"finite differences for variable {index + 1} of {len(every)}: {variable}")
            losses = [n for n, names in self.wanted.items() if variable in names]
            out.update(self._variable(evaluate, base, variable, losses, grads))
        return out

    def _variable(
        self,
        evaluate: perturb.Evaluator,
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
                out[(loss, variable)] = perturb.skipped(reason)
            else:
                checked[loss] = grads[key]  # type: ignore[index]
        if not checked:
            return out
        rows = {n: (static.order.index(n), static.dtypes[n]) for n in checked}
        compare = perturb.Comparison(evaluate, variable, base, checked, rows)
        for loss, result in compare.run(self.count).items():
            out[(loss, variable)] = dataclasses.replace(
                result, causes=static.causes.get((loss, variable), ())
            )
        return out


def _why_not(
    evaluate: perturb.Evaluator, variable: str, key: str | None, grads: dict[str, np.ndarray]
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
