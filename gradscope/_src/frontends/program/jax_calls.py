"""One watched JAX gradient call: ``jax.grad``, ``jax.value_and_grad``, ``jax.vjp``.

The program's own call always runs as written and its result goes back unchanged. Beside it,
``jax.make_jaxpr`` of the same function at the same arguments gives the computation JAX
differentiates, and the cut analysis reads it (``engine/jax``): which leaves a path leads
from to the loss, which would get no gradient on TensorFlow (JAX hands them zeros), and the
user's line where each last path was cut. The real gradients' norms say ``ok``, ``zero`` or
``nan``: eagerly at once, inside ``jax.jit`` (Keras' train step) through
``jax.debug.callback`` at each execution.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from gradscope._src.frontends.program import fit, jax_names, sites, trainable
from gradscope._src.frontends.program.analyse import SourceStatic
from gradscope._src.frontends.program.watch import SiteState, Static, StopProgram, Watcher
from gradscope._src.frontends.python import heads, jax_lines
from gradscope._src.results import words
from gradscope._src.results.run import EAGER, FUNCTION

#: Keras' JAX trainer: a gradient call from its own ``train_step`` is ``fit``'s.
_KERAS_TRAINER = ("keras", "src", "backend", "jax", "trainer.py")

_local = threading.local()


@dataclass
class _Request:
    """What the program asked: the function, what it differentiates, and how."""

    api: str  # jax.grad, jax.value_and_grad, jax.vjp
    fun: Callable[..., Any]
    argnums: int | tuple[int, ...]
    has_aux: bool
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    keras_step: bool  # called by Keras' own train step (fit's)
    #: JAX's own transformation (``value_and_grad``, ``vjp``) and the program's other
    #: arguments to it (``holomorphic``, ``allow_int``, ...)
    make: Callable[..., Any] | None = None
    rest: tuple[Any, ...] = ()
    options: dict[str, Any] = dataclasses.field(default_factory=dict)


class JaxCalls:
    """Handles every watched JAX call of one watch (``jax_hooks.install``)."""

    def __init__(self, watcher: Watcher, traces: Any = None) -> None:
        self.watcher = watcher
        #: ``--stop`` asked inside a compiled step (a callback cannot stop the program): raised
        #: at the program's next watched call or Keras step
        self.stop_pending = False
        #: each Keras model's train step: its ``trainable`` flags against compile()'s
        self.traces = traces if traces is not None else trainable.Traces(watcher)
        #: what an optimizer moved in a step whose call is not recorded yet (two host
        #: callbacks of one compiled step arrive in either order): by site, api and step
        self._moved_early: dict[tuple[str, str, int], tuple[set[str], str]] = {}

    # -- the program's calls ----------------------------------------------------------------

    def grad(self, original: Callable[..., Any], request: _Request, returns_value: bool) -> Any:
        """``jax.grad(fun, ...)(*args)`` (``returns_value`` False) or ``jax.value_and_grad``:
        the program's result, the call watched beside it. ``original`` is JAX's own
        ``value_and_grad`` bound to the program's arguments (``jax.grad`` is that, without the
        value)."""
        watcher = self.watcher
        if watcher.busy or _inside_own():
            return _as_asked(original(*request.args, **request.kwargs), request, returns_value)
        self._raise_pending()
        traced = _traced(request.args, request.kwargs)
        state = self._site(request, FUNCTION if traced else EAGER)
        if not traced and (watcher.unwatched(state) or not watcher.before_execution(state)):
            return _as_asked(original(*request.args, **request.kwargs), request, returns_value)
        with watcher.own_work():
            static = self._static(request)
        _local.state = state
        if static is None or request.make is None:  # not traced: the program's call as it was
            result = original(*request.args, **request.kwargs)
        else:  # the program's own transformation of the function it traced once
            result = self._replayed(request, static)
        if static is not None:
            with watcher.own_work():
                self._numbers(state, static, request, result, traced)
        return _as_asked(result, request, returns_value)

    def vjp(self, original: Callable[..., Any], fun: Callable[..., Any], primals: tuple[Any, ...],
            has_aux: bool, kwargs: dict[str, Any]) -> Any:  # fmt: skip
        """``jax.vjp(fun, *primals)``: the program's ``(out, vjp_fn[, aux])``, its ``vjp_fn``
        watched when called (the gradient is computed then)."""
        watcher = self.watcher
        if watcher.busy or _inside_own():
            return original(fun, *primals, has_aux=has_aux, **kwargs)
        argnums = tuple(range(len(primals)))
        request = _Request("jax.vjp", fun, argnums, has_aux, primals, {}, False)
        traced = _traced(primals, {})
        state = self._site(request, FUNCTION if traced else EAGER)
        if not traced and watcher.unwatched(state):
            return original(fun, *primals, has_aux=has_aux, **kwargs)
        with watcher.own_work():
            static = self._static(request, every_output=True)
        if static is None:
            return original(fun, *primals, has_aux=has_aux, **kwargs)
        result = original(_once(static), *primals, has_aux=has_aux, **kwargs)
        out, vjp_fn = result[0], result[1]

        @functools.wraps(vjp_fn)
        def watched(*cotangents: Any) -> Any:
            grads = vjp_fn(*cotangents)
            if not traced and not watcher.before_execution(state):
                return grads
            with watcher.own_work():
                self._measured(state, static, _total(out), list(grads), traced)
            return grads

        return (out, watched, *result[2:])

    def _replayed(self, request: _Request, static: _Static) -> Any:
        """What the program's ``value_and_grad`` returns, computed by JAX's own
        ``value_and_grad`` of the function gradscope traced (its jaxpr, evaluated): the
        program's function runs once, as it would under JAX alone. (Tracing it a second time
        breaks functions that keep state across their one call: Flax NNX's transforms.)"""
        assert request.make is not None
        argnums = 0 if isinstance(request.argnums, int) else tuple(range(len(request.argnums)))
        transformed = request.make(_once(static), argnums, request.has_aux, *request.rest,
                                   **request.options)  # fmt: skip
        return transformed(*static.differentiated)

    # -- where and what ---------------------------------------------------------------------

    def _site(self, request: _Request, mode: str) -> SiteState:
        api = request.api
        if request.keras_step and fit.api():
            api = fit.api()
        state = self.watcher.at(sites.chain(), api, mode)
        return state

    def _static(self, request: _Request, every_output: bool = False) -> _Static | None:
        """The call's sources, analysed from the jaxpr of the function it differentiates."""
        import jax

        from gradscope._src.engine.jax.analysis import analyse

        argnums = request.argnums
        positions = (argnums,) if isinstance(argnums, int) else tuple(argnums)
        differentiated = tuple(request.args[i] for i in positions)
        recorded: list[tuple[Any, Any]] = []

        def only(*values: Any) -> Any:
            full = list(request.args)
            for i, v in zip(positions, values, strict=True):
                full[i] = v
            with _recording_models(recorded):
                out = request.fun(*full, **request.kwargs)
            return out, [o for _, o in recorded[:1]]

        try:
            closed, shape = jax.make_jaxpr(only, return_shape=True)(*differentiated)
        except Exception as exc:  # the program's own call raises it too, as JAX says it
            said = f"{request.api}: gradscope could not trace the differentiated function"
            self.watcher.notes.append(f"{said} ({type(exc).__name__})")
            return None
        flat, _ = jax.tree_util.tree_flatten_with_path(
            differentiated[0] if isinstance(argnums, int) else differentiated
        )
        leaves = [leaf for _, leaf in flat]
        outputs, models = shape
        n_out = len(jax.tree_util.tree_leaves(outputs))
        n_loss = 1 if not every_output else n_out
        if request.has_aux and every_output:
            n_loss = len(jax.tree_util.tree_leaves(outputs[0]))
        n_models = len(jax.tree_util.tree_leaves(models))
        targets = list(range(n_loss))
        others = list(range(n_out, n_out + n_models))
        outer = _outer_stack()

        def locate(stack: list[tuple[str, int, str]], op_type: str) -> tuple[str, bool]:
            return jax_lines.locate(outer + stack, op_type)

        analysed = analyse(closed, list(range(len(leaves))), targets, locate, others)
        found = jax_names.keras_variables(request.fun, leaves, _models()) \
            if isinstance(argnums, int) else None  # fmt: skip
        model, variables = found if found is not None else (None, None)
        if variables is not None:
            names = [sites.variable_name(v) for v in variables]
        else:
            names = jax_names.leaf_names(request.fun, argnums, [p for p, _ in flat])
        statics = []
        for name, leaf, facts in zip(names, leaves, analysed.leaves, strict=True):
            shape_ = tuple(int(d) for d in getattr(leaf, "shape", ()))
            statics.append(SourceStatic(name, shape_, facts.has_gradient, requested=True,
                                        reachable=facts.reachable,
                                        cut_points=list(facts.cut_points)))  # fmt: skip
        target_source = jax_lines.loss_line(analysed, targets, locate)
        if recorded:
            _unread_outputs(statics, analysed, recorded[0], variables, request.keras_step,
                            target_source)  # fmt: skip
        static = Static(statics, target_source)
        if request.keras_step and variables is not None:
            self._flags(model, variables, statics)
        # for the optimizer's step that follows (Keras' stateless_apply, optax.apply_updates)
        _local.last = (static, len(leaves))
        scaled = request.keras_step and type(getattr(model, "optimizer", None)).__name__ == (
            "LossScaleOptimizer"
        )
        return _Static(static, [v is not None for v in (variables or [])], variables, leaves,
                       scaled, closed, jax.tree_util.tree_structure(shape),
                       differentiated)  # fmt: skip

    def _flags(self, model: Any, variables: list[Any], statics: list[SourceStatic]) -> None:
        """Keras' own step of ``model`` is being traced: the variables whose ``trainable``
        flag changed since ``compile()`` get a call at the ``fit()`` line, as on TensorFlow
        (``trainable.py``; Keras' JAX trainer reads the flags at each ``fit()``)."""
        flags = {id(v): (v, bool(v.trainable)) for v in model.variables}
        trained = {id(v): s.has_gradient for v, s in zip(variables, statics, strict=True)}
        trace = trainable.Trace(model, None, sites.text(sites.current()), flags, trained)
        self.traces.since_compile(trace)

    # -- numbers ----------------------------------------------------------------------------

    def _numbers(self, state: SiteState, static: _Static, request: _Request, result: Any,
                 traced: bool) -> None:  # fmt: skip
        import jax

        value, grads = result
        scale = None
        if request.has_aux:
            value, aux = value
            if static.loss_scaled:  # Keras' own step under mixed precision: aux[0] unscaled
                scale = value / aux[0]
        self._measured(state, static, value, jax.tree_util.tree_leaves(grads), traced, scale)

    def _measured(self, state: SiteState, static: _Static, value: Any, grads: list[Any],
                  traced: bool, scale: Any = None) -> None:  # fmt: skip
        """Measure the gradients (of the scaled loss, divided by ``scale``: mixed precision's
        loss scale, reported as TensorFlow's ``LossScaleOptimizer`` gradients are)."""
        import jax
        import jax.numpy as jnp
        import numpy as np

        from gradscope._src.engine.jax import numbers

        kept = [i for i, g in enumerate(grads) if numbers.measurable(g)]
        if scale is not None:
            grads = [g / scale.astype(g.dtype) if numbers.measurable(g) else g for g in grads]
            value = value / scale
        norms, largest = numbers.norms_and_maxima([grads[i] for i in kept])
        total = jnp.stack([numbers.value_of(value), jnp.asarray(1.0 if scale is None else scale,
                                                                jnp.float32)])  # fmt: skip
        extra: tuple[Any, ...] = ()
        if self.watcher.timeline is not None:  # what the timeline records of each
            values = static.values or grads
            extra = numbers.summaries([grads[i] for i in kept], [values[i] for i in kept])
        if not traced:
            self._record(state, static, kept, np.asarray(total), np.asarray(norms),
                         np.asarray(largest), *(np.asarray(e) for e in extra))  # fmt: skip
            return
        self.watcher.trace(state, static.static)
        jax.debug.callback(functools.partial(self._executed, state, static, kept),
                           total, norms, largest, *extra)  # fmt: skip

    def _executed(self, state: SiteState, static: _Static, kept: list[int], total: Any,
                  norms: Any, largest: Any, *extra: Any) -> None:  # fmt: skip
        """One execution of a compiled step (called by ``jax.debug.callback``): never raises
        into XLA; ``--stop`` is raised at the program's next call instead."""
        watcher = self.watcher
        try:
            with watcher.lock:
                state = fit.running(state, lambda s, a, m: watcher.site(s, a, m))
                if not watcher.before_execution(state):
                    return
                self._record(state, static, kept, total, norms, largest, *extra)
        except StopProgram:
            self.stop_pending = True
        except Exception as exc:  # gradscope's failure never stops the step
            note = f"gradscope could not read a step's gradients ({type(exc).__name__}: {exc})"
            if note not in watcher.notes:
                watcher.notes.append(note)

    # -- what only JAX has: an optimizer moving what no gradient reaches ---------------------

    def applied(self, optimizer: Any, old: Sequence[Any], new: Sequence[Any]) -> None:
        """Keras' ``optimizer.stateless_apply`` just stepped the variables the last watched
        call differentiated (``old`` -> ``new``): each with no gradient that moved gets the
        optimizer as its ``moved_by`` (a ``moved-without-gradient`` problem:
        ``analysis/run.py``), and the call a note naming them with the optimizer."""
        import jax
        import jax.numpy as jnp
        import numpy as np

        last = getattr(_local, "last", None)
        _local.last = None
        state = getattr(_local, "state", None)
        if last is None or state is None or last[1] != len(old) or len(old) != len(new):
            return
        static, _ = last
        idle = [i for i, s in enumerate(static.sources) if not s.has_gradient]
        if not idle:
            return
        moved = jnp.stack([jnp.any(new[i] != old[i]) for i in idle])
        names = [static.sources[i].name for i in idle]
        said = _optimizer(optimizer)
        if _traced(tuple(old), {}):
            jax.debug.callback(functools.partial(self._moved, state, names, said), moved)
        else:
            self._moved(state, names, said, np.asarray(moved))

    def updated(self, updates: Any, line: str) -> None:
        """``optax.apply_updates`` just added ``updates`` to the parameters the last watched
        call differentiated (the same leaves, in the same order and shapes): each with no
        gradient whose update is not all zero gets the optax update as its ``moved_by``."""
        import jax
        import jax.numpy as jnp
        import numpy as np

        last = getattr(_local, "last", None)
        state = getattr(_local, "state", None)
        leaves = jax.tree_util.tree_leaves(updates)
        if last is None or state is None or last[1] != len(leaves):
            return
        static, _ = last
        if any(tuple(s.shape) != tuple(int(d) for d in getattr(leaf, "shape", ()))
               for s, leaf in zip(static.sources, leaves, strict=True)):  # fmt: skip
            return
        _local.last = None
        idle = [i for i, s in enumerate(static.sources) if not s.has_gradient]
        if not idle:
            return
        moved = jnp.stack([jnp.any(leaves[i] != 0) for i in idle])
        names = [static.sources[i].name for i in idle]
        said = f"the optax update applied at {line}" if line else "the optax update"
        if _traced(tuple(leaves), {}):
            jax.debug.callback(functools.partial(self._moved, state, names, said), moved)
        else:
            self._moved(state, names, said, np.asarray(moved))

    def _moved(self, state: SiteState, names: list[str], optimizer: str, moved: Any) -> None:
        try:
            which = {n for n, m in zip(names, moved, strict=True) if bool(m)}
            if not which:
                return
            watcher = self.watcher
            with watcher.lock:
                if not self._mark(state, which, optimizer):  # its call is still to come
                    self._moved_early[(state.site, state.api, state.count + 1)] = (which, optimizer)
        except Exception as exc:  # gradscope's failure never stops the step
            said = f"gradscope could not compare the optimizer's step ({type(exc).__name__})"
            if said not in self.watcher.notes:
                self.watcher.notes.append(said)

    def _mark(self, state: SiteState, which: set[str], optimizer: str) -> bool:
        """Mark the sources ``which`` of the call of ``state``'s latest recorded step as
        moved by ``optimizer`` (with the call's note); False when that step's call is not
        recorded yet. Holds the watcher's lock."""
        calls = self.watcher.calls
        for k in range(len(calls) - 1, -1, -1):
            call = calls[k]
            if call.site == state.site and call.api == state.api:
                if call.step != state.count:
                    return False
                sources = tuple(dataclasses.replace(s, moved_by=optimizer) if s.name in which
                                else s for s in call.sources)  # fmt: skip
                named = [s.name for s in sources if s.name in which]
                note = words.moved_without_gradient(optimizer, named)  # the table's
                notes = call.notes if note in call.notes else (*call.notes, note)
                calls[k] = dataclasses.replace(call, sources=sources, notes=notes)
                return True
        return False

    def _record(self, state: SiteState, static: _Static, kept: list[int], total: Any,
                norms: Any, largest: Any, *extra: Any) -> None:  # fmt: skip
        from gradscope._src.results.summary import Summary

        sources = static.static.sources
        stats: list[tuple[float, float] | None] = [None] * len(sources)
        value, scale = float(total[0]), float(total[1])
        for k, i in enumerate(kept):
            stats[i] = (float(norms[k]), float(largest[k]))
        arrays: list[tuple[Summary | None, Summary | None]] | None = None
        if extra:  # the timeline's: each gradient and value reduced (a None gradient: none)
            g_sq, zeros, v_sq = extra
            arrays = [(None, None)] * len(sources)
            for k, i in enumerate(kept):
                shape = tuple(int(d or 0) for d in sources[i].shape)
                grad = Summary(float(g_sq[k]), int(zeros[k]), shape)
                arrays[i] = (grad if sources[i].has_gradient else None,
                             Summary(float(v_sq[k]), 0, shape))  # fmt: skip
        numbers = (value, stats, scale if static.loss_scaled else None)
        self.watcher.record(state, static.static, numbers, arrays)
        with self.watcher.lock:  # what the optimizer's callback said before this one came
            early = self._moved_early.pop((state.site, state.api, state.count), None)
            if early is not None:
                self._mark(state, *early)

    def _raise_pending(self) -> None:
        if self.stop_pending:
            self.stop_pending = False
            from gradscope._src.frontends.program import process

            if process.can_stop():
                self.watcher.refused.append(next(iter(self.watcher.sites.values())).site)
                raise StopProgram


@dataclass
class _Static:
    static: Static
    keras: list[bool]
    variables: list[Any] | None
    #: each differentiated leaf's value (the weights a timeline records the norms of)
    values: list[Any] | None = None
    #: Keras' own step of a model whose optimizer scales the loss (mixed precision)
    loss_scaled: bool = False
    #: the differentiated function, traced once (with the outermost model call's outputs
    #: after its own), the structure of its outputs, and the arguments it was traced at
    closed: Any = None
    out_tree: Any = None
    differentiated: tuple[Any, ...] = ()


def _once(static: _Static) -> Callable[..., Any]:
    """The differentiated function as gradscope traced it: its jaxpr, evaluated (the model
    outputs gradscope added to it dropped)."""
    import jax
    from jax.extend.core import jaxpr_as_fun

    run = jaxpr_as_fun(static.closed)

    def once(*values: Any) -> Any:
        outs = run(*jax.tree_util.tree_leaves(values))
        out, _ = jax.tree_util.tree_unflatten(static.out_tree, outs)
        return out

    return once


def _optimizer(optimizer: Any) -> str:
    """``AdamW (weight_decay=0.1)``: the optimizer and what makes it move a weight on a zero
    gradient (weight decay; momentum carried from earlier steps)."""
    inner = getattr(optimizer, "inner_optimizer", None)  # a LossScaleOptimizer's own
    optimizer = inner if inner is not None else optimizer
    parts = []
    for name in ("weight_decay", "momentum", "beta_1"):
        value = getattr(optimizer, name, None)
        if isinstance(value, (int, float)) and value:
            parts.append(f"{name}={value:g}")
    said = type(optimizer).__name__
    return f"{said} ({', '.join(parts)})" if parts else said


def _models() -> list[Any]:
    """The Keras model ``fit()`` (or ``train_on_batch()``) trains now, if any."""
    model = getattr(fit._local, "model", None) if fit.active() else None
    return [model] if model is not None else []


def _as_asked(result: Any, request: _Request, returns_value: bool) -> Any:
    """``value_and_grad``'s result as the program's call returns it: unchanged, or without
    the value for ``jax.grad`` (``(grads, aux)`` with ``has_aux``)."""
    if returns_value:
        return result
    value, grads = result
    return (grads, value[1]) if request.has_aux else grads


def _traced(args: Sequence[Any], kwargs: dict[str, Any]) -> bool:
    import jax

    leaves = jax.tree_util.tree_leaves((tuple(args), kwargs))
    return any(isinstance(leaf, jax.core.Tracer) for leaf in leaves)


def _total(out: Any) -> Any:
    import jax
    import jax.numpy as jnp

    leaves = [x for x in jax.tree_util.tree_leaves(out) if jnp.issubdtype(x.dtype, jnp.inexact)]
    return sum((jnp.sum(x) for x in leaves), jnp.zeros(()))


def called_by_keras_step(frame: Any) -> bool:
    """Whether ``frame`` (the caller of the JAX API) is Keras' own JAX ``train_step``."""
    if frame is None:
        return False
    name = str(frame.f_code.co_filename).replace("\\", "/")
    return bool(frame.f_code.co_name == "train_step") and name.endswith("/".join(_KERAS_TRAINER))


@contextlib.contextmanager
def _own() -> Iterator[None]:
    _local.own = getattr(_local, "own", 0) + 1
    try:
        yield
    finally:
        _local.own -= 1


def _inside_own() -> bool:
    """Whether gradscope's own trace of a watched function is running in this thread (a
    ``jax.grad`` inside the function the program differentiates is then part of it)."""
    return bool(getattr(_local, "own", 0))


@contextlib.contextmanager
def _recording_models(into: list[tuple[Any, Any]]) -> Iterator[None]:
    """While gradscope traces a watched function: the outermost Keras model call's outputs
    (``stateless_call`` or ``__call__``) go into ``into`` (``jax_hooks`` reads
    :func:`recording`)."""
    before = getattr(_local, "models", None)
    _local.models = into
    try:
        with _own():
            yield
    finally:
        _local.models = before


def model_called(model: Any, outputs: Any) -> None:
    """A Keras model's outermost call returned ``outputs`` (``jax_hooks``' patches)."""
    into = getattr(_local, "models", None)
    if into is not None and not into:
        into.append((model, outputs))


def _outer_stack() -> list[tuple[str, int, str]]:
    """The Python stack of the watched call, outermost first: what an equation's own stack
    continues. JAX keeps an equation's stack only up to the nearest call from compiled code
    (a ``jax.jit`` boundary), so Keras' train step, traced inside ``fit``'s compiled
    function, would otherwise have no user line at all: the line is then the ``fit()``'s,
    as on TensorFlow."""
    import traceback

    return [(f.filename, f.lineno or 0, f.name) for f in traceback.extract_stack(sys._getframe(2))]


def _unread_outputs(statics: Sequence[SourceStatic], analysed: Any, called: tuple[Any, Any],
                    variables: list[Any] | None, compiled: bool,
                    target_source: str) -> None:  # fmt: skip
    """The cause of each source with no path to the loss that a Keras model holds: the
    outputs it reaches no loss reads, or its layer is on no path to an output (as
    ``frontends/program/fit.py`` says on TensorFlow)."""
    model, _ = called
    names = list(getattr(model, "output_names", None) or [])
    n_outputs = len(analysed.leaves[0].outputs) if analysed.leaves else 0
    if len(names) != n_outputs:
        names = [f"output {k}" for k in range(n_outputs)]
    own = {id(v) for v in getattr(model, "variables", ())}
    for i, (static, facts) in enumerate(zip(statics, analysed.leaves, strict=True)):
        if static.has_gradient or static.reachable or static.cause is not None:
            continue
        reached = [n for n, hit in zip(names, facts.outputs, strict=True) if hit]
        if reached:
            static.cause = heads.no_path(
                reached,
                model.name,
                target_source,
                compiled=compiled,
                compiled_at=fit.compile_line(model) if compiled else "",
            )
        elif variables is not None and id(variables[i]) in own:
            static.cause = heads.no_path([], model.name, "")


def caller_frame() -> Any:
    """The frame that called the patched JAX API (two up from the patch)."""
    return sys._getframe(2)
