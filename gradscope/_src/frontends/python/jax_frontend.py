"""A Python target on Keras' JAX backend as a front-end: ``inspect``, ``check`` and ``diff``.

The target is the same as on TensorFlow (``module:function`` returning losses that are
zero-argument callables, and optionally ``variables`` or a ``model``). Each loss is made a
function of its variables' values, as Keras' own stateless calls are (``StatelessScope``):
``jax.make_jaxpr`` of it gives the computation JAX differentiates, the cut analysis reads it
(``engine/jax``), and ``jax.value_and_grad`` gives the real gradients (``ok``, ``zero``,
``nan``). The facts are the TensorFlow engine's (``RunFacts``), so statuses, problems, fixes
and every format are the pipeline's, unchanged. TensorFlow is not imported.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence
from typing import Any

from gradscope._src.errors import TargetError, UsageError
from gradscope._src.frontends.base import Trace, flat_floats
from gradscope._src.frontends.python import frames, heads, keras_ops
from gradscope._src.frontends.python.precheck import precheck
from gradscope._src.frontends.python.resolve import Resolved, resolve
from gradscope._src.frontends.python.target import article
from gradscope._src.progress import Progress
from gradscope._src.results.causes import Cause
from gradscope._src.results.expect import Expectation, PatternUse
from gradscope._src.results.facts import Comparison, LossFacts, PairFacts, RunFacts, VariableFacts


class JaxPythonFrontend:
    """A Python target whose Keras runs on JAX, for the pipeline."""

    #: what computes the gradients (the pipeline imports no TensorFlow for it)
    backend = "jax"

    def __init__(self, obj: Any) -> None:
        self.obj = obj
        self.notes: list[str] = []
        self._resolved: Resolved | None = None
        self._variables: list[Any] = []
        self._names: list[str] = []
        self._sites: dict[str, str] = {}
        #: id of each Keras variable the target made -> the user's line that made it
        self._sites_of: dict[int, str] = {}
        self._pictures = (False, False)  # (draw each loss's picture, one box per op)

    @property
    def resolved(self) -> Resolved:
        if self._resolved is None:
            raise RuntimeError("JaxPythonFrontend.prepare() was not called")
        return self._resolved

    @property
    def label(self) -> str:
        return self.resolved.label if self._resolved else str(self.obj)

    @property
    def file(self) -> str:
        return self.resolved.file

    @property
    def name(self) -> str | None:
        target = self.resolved.target
        return target.name or getattr(target.model, "name", None)

    def prepare(self, progress: Progress) -> None:
        """Import the target and call its function (the lines of its Keras operations noted)."""
        if isinstance(self.obj, str):
            precheck(self.obj)
        progress("building the target")
        with keras_ops.recording():
            self._resolved = resolve(self.obj, lambda: _created(self._sites_of))

    def loss_names(self) -> list[str]:
        return list(self.resolved.target.losses)

    def loss_sources(self) -> dict[str, str]:
        return {n: self._sites.get(n, "") for n in self.loss_names()}

    def grad_losses(self) -> dict[str, list[float]]:
        given = self.resolved.target.grad_loss or {}
        return {name: flat_floats(value) for name, value in given.items() if value is not None}

    def expectations(self) -> tuple[Expectation, ...]:
        return self.resolved.expectations()

    def patterns(self) -> list[PatternUse]:
        return []

    def untraced(self) -> list[str]:
        return []

    def rebuild(self, wide: bool) -> Any:
        raise UsageError(f"{self.label}: this pass needs TensorFlow; on JAX it is not run")

    # -- the one trace ------------------------------------------------------------------------

    def trace(self, request: Trace) -> RunFacts:
        """Every wanted loss: its jaxpr analysed, its gradients computed."""
        import jax

        from gradscope._src.frontends.python.jax_lines import device, versions

        self._pictures = (request.pictures, request.expand)
        target = self.resolved.target
        if target.stop_gradients:
            self.notes.append("stop_gradients names TensorFlow ops; on JAX it is not applied")
        names = list(request.losses or self.loss_names())
        wanted = set(names) | {n for pair in request.compare for n in pair}
        variables = self._choose([target.losses[n] for n in self.loss_names() if n in wanted])
        self._variables = variables
        self._names = _unique([_name(v) for v in variables])
        site = str(self.resolved.site) if self.resolved.site else self.label
        facts_vars = tuple(
            VariableFacts(n, tuple(int(d) for d in v.shape), str(v.dtype), bool(v.trainable),
                          self._sites_of.get(id(v), site))
            for n, v in zip(self._names, variables, strict=True)
        )  # fmt: skip
        losses: list[LossFacts] = []
        grads: dict[str, dict[str, Any]] = {}
        for index, name in enumerate(n for n in self.loss_names() if n in wanted):
            request.progress(f"differentiating loss {index + 1}: {name}")
            loss, grads[name] = self._loss(name, target.losses[name])
            losses.append(loss)
        comparisons = tuple(_compare(a, b, grads[a], grads[b], self._names)
                            for a, b in request.compare)  # fmt: skip
        return RunFacts(self.label, "", device(), facts_vars, tuple(losses), comparisons,
                        route="jax", jax=versions() or jax.__version__)  # fmt: skip

    def _choose(self, losses: Sequence[Callable[[], Any]]) -> list[Any]:
        """The variables: the target's, else its model's (trainable, and those the user
        froze), else every variable the losses read, in the order first read."""
        target = self.resolved.target
        if target.variables:
            out: list[Any] = []
            for index, value in enumerate(target.variables):
                if not hasattr(value, "path") or not hasattr(value, "trainable"):
                    what = article(type(value).__name__)
                    raise TargetError(f"{self.label}: variables[{index}] is {what}, not a Keras "
                                      "variable")  # fmt: skip
                if all(value is not v for v in out):
                    out.append(value)
            return out
        found: list[Any] = []
        if target.model is not None:
            found = [v for v in target.model.variables if v.trainable or _frozen_by_user(v)]
        for fn in losses:
            for v in _reads(fn):
                if v.trainable and all(v is not f for f in found):
                    found.append(v)
        return found

    def _loss(self, name: str, fn: Callable[[], Any]) -> tuple[LossFacts, dict[str, Any]]:
        import jax
        import jax.numpy as jnp
        import keras
        import numpy as np

        from gradscope._src.engine.jax import numbers
        from gradscope._src.engine.jax.analysis import analyse
        from gradscope._src.frontends.python import jax_lines

        variables = self._variables
        values = [jnp.asarray(v.value) for v in variables]
        site = frames.of_code(fn)
        calls: heads.Calls = []

        def loss_of(*vals: Any) -> Any:
            mapping = list(zip(variables, vals, strict=True))
            with keras.StatelessScope(state_mapping=mapping):
                out = frames.call_user(fn)
            return out

        def traced(*vals: Any) -> Any:
            with heads.recording(calls), keras_ops.recording():  # lines of Keras operations
                out = loss_of(*vals)
            return out, [o for _, o in calls[:1]]

        try:
            closed, (shape, models) = jax.make_jaxpr(traced, return_shape=True)(*values)
        except TargetError:
            raise
        except Exception as exc:
            where = f"{site}: " if site else ""
            raise TargetError(f"{where}{self.label}: loss {name!r} raised "
                              f"{frames.first_message_line(exc)}", cause=exc) from exc  # fmt: skip
        self._check(name, shape, site)
        n_models = len(jax.tree_util.tree_leaves(models))
        others = list(range(1, 1 + n_models))
        locate = jax_lines.locate
        analysed = analyse(closed, list(range(len(values))), [0], locate, others)
        loss_site = jax_lines.loss_line(analysed, [0], locate) or (str(site) if site else "")
        self._sites[name] = str(site) if site else ""
        upstream = (self.resolved.target.grad_loss or {}).get(name)
        value, vjp = jax.vjp(lambda *v: loss_of(*v), *values)
        cotangent = jnp.ones_like(value)
        if upstream is not None:  # grad_loss: the upstream gradient the loss is given
            cotangent = jnp.broadcast_to(jnp.asarray(upstream, value.dtype), value.shape)
        grads = vjp(cotangent)
        kept = [i for i, g in enumerate(grads) if numbers.measurable(g)]
        norms, largest = (np.asarray(a) for a in numbers.norms_and_maxima([grads[i] for i in kept]))
        measured = {i: (float(norms[k]), float(largest[k])) for k, i in enumerate(kept)}
        pairs = []
        by_name: dict[str, Any] = {}
        for i, (var_name, variable, leaf) in enumerate(
            zip(self._names, variables, analysed.leaves, strict=True)
        ):
            if not variable.trainable:
                pairs.append(PairFacts(var_name, requested=False))
                continue
            norm, big = measured.get(i, (None, None))
            finite = big is None or (math.isfinite(big) and norm is not None
                                     and not math.isnan(norm))  # fmt: skip
            zero = finite and big is not None and big <= 0
            cause = None
            if not leaf.has_gradient and not leaf.reachable and calls:
                cause = _unread(leaf, calls[0][0], variable, loss_site)
            if leaf.has_gradient:
                by_name[var_name] = grads[i]
            pairs.append(PairFacts(var_name, True, leaf.has_gradient, leaf.reachable,
                                   norm=norm if leaf.has_gradient and norm is not None
                                   and math.isfinite(norm) else None,
                                   finite=finite, all_zero=bool(zero),
                                   cut_points=tuple(leaf.cut_points), cause=cause))  # fmt: skip
        total = float(np.sum(np.asarray(value, dtype=np.float64)))
        dims = tuple(int(d) for d in getattr(shape, "shape", ()))
        picture = self._picture(name, analysed) if self._pictures[0] else None
        return LossFacts(name, total, dims, tuple(pairs), picture=picture), by_name

    def _picture(self, name: str, analysed: Any) -> Any:
        """The loss's gradient-flow picture, drawn from the jaxpr's graph as a TensorFlow
        graph's is (``engine/picture``): one box per Keras layer (its name scope), the
        red links the report's cuts. (Its links are not checked for NaN on JAX.)"""
        from gradscope._src.engine.picture.draw import Scene, draw

        g = analysed.graph
        ops = g.graph.ops
        mask = sum(1 << i for i, v in enumerate(self._variables) if v.trainable)
        where = analysed.where
        names = [f"{op.name}/{op.type}" for op in ops]

        def located(index: int) -> tuple[str, str] | None:
            found = where.located(index)
            return None if found is None else (names[index], found[1])

        scene = Scene(
            # each op one scope deeper (``dense/MatMul/MatMul``), as TensorFlow's ops are
            # (``dense/MatMul/ReadVariableOp``): a layer's ops then make one box
            loss=name, graph=g.graph, names=names, variables=self._names,
            handle_ops={g.graph.producer[t]: i for i, t in enumerate(g.inputs)},
            all_sets=analysed.vsets, mask=mask, reach=analysed.reach,
            received=analysed.received, cuts=analysed.cuts, stop_ops=set(),
            target_op=analysed.target_op, locate=located, visible=where.visible,
            cut_point=where.point, live=analysed.live,
        )  # fmt: skip
        draft = draw(scene, expand=self._pictures[1])
        return draft.finish([True] * len(draft.checks))

    def _check(self, name: str, shape: Any, site: Any) -> None:
        import numpy as np

        where = f"{site}: " if site else ""
        dtype = getattr(shape, "dtype", None)
        if dtype is None:
            raise TargetError(f"{where}loss {name!r} returned {type(shape).__name__}; a loss "
                              "returns one tensor (add several up)")  # fmt: skip
        if not np.issubdtype(dtype, np.inexact):
            raise TargetError(f"{where}loss {name!r} returned {article(str(dtype))} tensor; "
                              "a loss must be floating-point")  # fmt: skip


@contextlib.contextmanager
def _created(into: dict[int, str]) -> Any:
    """While the target is built: the user's line that made each Keras variable (a layer's
    weights: the line that first called the layer), as the TensorFlow front-end records it."""
    import threading

    from gradscope._src import patching

    def make(original: Any) -> Any:
        def noted(self: Any, *args: Any, **kwargs: Any) -> None:
            original(self, *args, **kwargs)
            site = keras_ops._user_site()
            if site is not None:
                into[id(self)] = str(site)

        return noted

    me = threading.get_ident()
    with patching.Patches(when=lambda: threading.get_ident() == me) as patches:
        with contextlib.suppress(ImportError):  # a Keras that moved it: no lines
            patches.set("KerasVariable.__init__", make)
        yield


def _name(variable: Any) -> str:
    path = getattr(variable, "path", None)
    return path if isinstance(path, str) and path else str(getattr(variable, "name", "variable"))


def _unique(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name}_{seen[name] - 1}")
    return out


def _frozen_by_user(variable: Any) -> bool:
    """A weight made trainable whose layer the user froze (not a batch norm's statistics):
    Keras keeps its own ``trainable`` flag on the variable, the layer's on the layer."""
    return bool(getattr(variable, "_trainable", False))


def _reads(fn: Callable[[], Any]) -> list[Any]:
    """The Keras variables ``fn`` reads, in order, found by running it abstractly
    (``jax.eval_shape``) in a stateless scope that notes each read."""
    import jax
    import keras

    seen: list[Any] = []
    scope = keras.StatelessScope()
    own = scope.get_current_value

    def noted(variable: Any) -> Any:
        if all(variable is not s for s in seen):
            seen.append(variable)
        return own(variable)

    scope.get_current_value = noted
    with contextlib.suppress(Exception), scope:  # a loss that fails says so when traced
        jax.eval_shape(lambda: frames.call_user(fn))
    return seen


def _unread(leaf: Any, model: Any, variable: Any, loss_site: str) -> Cause | None:
    """Why a variable of the model the loss called has no path to it: the outputs it reaches
    no loss reads, or its layer is on no path (``heads.no_path``, as on TensorFlow)."""
    names = list(getattr(model, "output_names", None) or [])
    if len(names) != len(leaf.outputs):
        names = [f"output {k}" for k in range(len(leaf.outputs))]
    reached = [n for n, hit in zip(names, leaf.outputs, strict=True) if hit]
    if reached:
        return heads.no_path(reached, model.name, loss_site)
    if any(variable is v for v in getattr(model, "variables", ())):
        return heads.no_path([], model.name, "")
    return None


def _compare(a: str, b: str, ga: dict[str, Any], gb: dict[str, Any],
             names: Sequence[str]) -> Comparison:  # fmt: skip
    """Two losses' gradients on the variables both reach, in float64 (as TensorFlow's)."""
    import numpy as np

    shared = [n for n in names if n in ga and n in gb]
    dots, signs, squares_a, squares_b = {}, {}, {}, {}
    for n in shared:
        x = np.asarray(ga[n], dtype=np.float64).ravel()
        y = np.asarray(gb[n], dtype=np.float64).ravel()
        dots[n] = float(np.dot(x, y))
        signs[n] = float(np.mean(np.sign(x) == np.sign(y))) if x.size else 1.0
        squares_a[n], squares_b[n] = float(np.dot(x, x)), float(np.dot(y, y))
    return Comparison(a, b, dots, signs, squares_a, squares_b)
