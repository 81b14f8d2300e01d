"""The eager route: a forward-only trace for the cut analysis, one tape for every number.

The traced route (``trace.Engine``) builds a backward graph per loss with ``tf.gradients``,
then optimizes and runs the whole function once. Here the model's forward pass is traced
without a backward graph (cheap, and it still checks every tensor's size before anything
runs); which tensors get a gradient is derived from the registry (``passing``), and the cut
analysis is the traced route's own (``cuts.find_cuts``, ``PairBuilder.fill_pairs``). The
numbers come from running the model eagerly once under one persistent ``GradientTape``: one
``tape.gradient`` per loss with ``unconnected_gradients=NONE``, so every ``None`` is
TensorFlow's. A run the static answer may not match (``passing.refusal``, random ops, writes,
``stop_gradients``) is refused before anything runs, and one whose tape disagrees with the
static answer after it; the engine then takes the traced route.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gradscope._src.engine import bodies, norms, passing, retrace
from gradscope._src.engine import cuts as flow
from gradscope._src.engine.graph import Extracted, GradientRegistry, is_write
from gradscope._src.engine.pairs import LossStatic, PairBuilder
from gradscope._src.engine.protocol import LossEntry, Traceable, VariableEntry
from gradscope._src.progress import Progress
from gradscope._src.results.facts import LossFacts


class Refused(Exception):
    """The static answer may not be TensorFlow's: the traced route answers this run."""


@dataclass
class Plan:
    """One loss after the forward-only trace: what TensorFlow will answer, and the cuts."""

    name: str
    requested: list[int]
    expected: dict[int, bool]  # requested variable -> whether it gets a gradient
    static: LossStatic  # the pairs and their cut points; gradients filled in by the run


@dataclass(frozen=True)
class Asked:
    """What the engine asks of a run (``trace.Engine``'s own settings)."""

    tf: Any
    model: Traceable
    only: set[str] | None
    device: str | None
    progress: Progress
    autograph: bool
    create_variable: Callable[..., Any]


@dataclass
class Planned:
    """The forward-only trace: the variables, the builder and every loss's plan."""

    variables: list[VariableEntry] = field(default_factory=list)
    builder: PairBuilder | None = None
    plans: list[Plan] = field(default_factory=list)


def answer(engine: Asked) -> tuple[list[VariableEntry], list[LossFacts]] | None:
    """The variables and every loss's facts from the eager route, or None when it refused.

    The engine's model is traced forward once (variables a trace creates are made eagerly,
    as the traced route makes them) and then run eagerly; a refused run has changed no
    variable, so the traced route can trace the same model.
    """
    tf = engine.tf
    planned = Planned()
    body = _forward(engine, planned)
    engine.progress("tracing the forward pass")
    # NOTE: a failure is the traced route's to report, in its words: it traces again. A
    # spec's node that fails while tracing raises the same BuildError either way.
    try:
        tf.function(body, autograph=engine.autograph).get_concrete_function()
    except (Refused, tf.errors.OpError, ValueError) as exc:
        _refused(engine, exc)
        return None
    engine.progress("running the forward pass eagerly")
    try:
        return planned.variables, _run(engine, planned)
    except Exception as exc:  # failing only when run (an index out of range): see NOTE
        _refused(engine, exc)
        return None


def _refused(engine: Asked, exc: BaseException) -> None:
    said = (str(exc).strip().splitlines() or [""])[0][:100]
    engine.progress(f"the traced route answers ({type(exc).__name__}: {said})")


def _forward(engine: Asked, planned: Planned) -> Callable[[], dict[str, Any]]:
    tf = engine.tf

    def body() -> dict[str, Any]:
        with (
            retrace.placement(tf, engine.device),
            tf.variable_creator_scope(engine.create_variable),
        ):
            losses, variables = engine.model.trace()
            graph = tf.compat.v1.get_default_graph()
            ops = graph.get_operations()
            if why := passing.any_random(ops) or _writes(ops):
                raise Refused(why)
            handles = [graph.capture(retrace.handle(v.variable)) for v in variables]
            x = Extracted(graph.get_operations(), GradientRegistry())
            builder = PairBuilder(tf, engine.model, x, variables, handles)
            planned.variables, planned.builder = list(variables), builder
            planned.plans = [_plan(tf, builder, loss) for loss in _wanted(engine, losses)]
        return {}

    return body


def _wanted(engine: Asked, losses: list[LossEntry]) -> list[LossEntry]:
    return [loss for loss in losses if engine.only is None or loss.name in engine.only]


def _writes(ops: list[Any]) -> str:
    """The first op writing a variable, "" when none does (a write changes what a second
    forward pass would read)."""
    for op in ops:
        if is_write(op.type):
            return f"{op.name} ({op.type})"
    return ""


def _plan(tf: Any, builder: PairBuilder, loss: LossEntry) -> Plan:
    """What TensorFlow will answer for ``loss``, and its cut points, without a backward pass."""
    if loss.stop_tensors or loss.unconnected != "none":
        raise Refused("stop_gradients or unconnected_gradients")
    target = tf.convert_to_tensor(loss.tensor)
    if not target.dtype.is_floating:  # the traced route refuses it with its own message
        raise Refused("a loss that is not floating")
    x = builder.x
    target_id = x.tensor_id(target)
    if target_id is None:
        raise Refused("a loss made outside the trace")
    target_op = x.graph.producer[target_id]
    requested = [
        i for i, v in enumerate(builder.variables) if v.trainable and loss.includes(v.name)
    ]
    mask = sum(1 << i for i in requested)
    reach = flow.reaching(x.graph, target_op)
    vsets = [bits & mask for bits in builder.vsets]
    received = passing.received_from(x, target_id)
    why = passing.refusal(x, vsets, reach, received)
    if why:
        raise Refused(why)
    cuts = flow.find_cuts(x.graph, vsets, reach, received, set())
    expected = {i: builder.handle_ids[i] in received for i in requested}
    dims = tuple(target.shape.as_list()) if target.shape.rank is not None else (None,)
    static = LossStatic(loss.name, dims, [], None)
    # the cut points are named now, while the model's ops are the traced ones (a spec's
    # ``visible`` reads the last forward pass); the gradients are the run's
    flowing = {i: _FLOWS if expected[i] else None for i in requested}
    located = bodies.located(x, cuts, {})
    builder.fill_pairs(static, requested, flowing, located, target_op, set())
    return Plan(loss.name, requested, expected, static)


def _run(engine: Asked, planned: Planned) -> list[LossFacts]:
    """Run the model eagerly under one persistent tape; one ``tape.gradient`` per loss."""
    tf = engine.tf
    builder = planned.builder
    assert builder is not None
    with retrace.placement(tf, engine.device):
        with tf.GradientTape(persistent=True) as tape:
            losses, variables = engine.model.trace()
        if [v.name for v in variables] != [v.name for v in planned.variables]:
            raise Refused("the eager pass made other variables")
        by_name = {loss.name: loss for loss in losses}
        out = []
        for index, plan in enumerate(planned.plans):
            engine.progress(f"gradients for loss {index + 1} of {len(planned.plans)}: {plan.name}")
            loss = by_name[plan.name]
            out.append(_loss(tf, tape, builder, plan, loss, variables, f"l{index}"))
        del tape
    return out


def _loss(
    tf: Any,
    tape: Any,
    builder: PairBuilder,
    plan: Plan,
    loss: LossEntry,
    variables: list[VariableEntry],
    prefix: str,
) -> LossFacts:
    target = tf.convert_to_tensor(loss.tensor)
    upstream = None
    if loss.grad_ys is not None:
        upstream = tf.broadcast_to(tf.constant(loss.grad_ys, target.dtype), tf.shape(target))
    sources = [retrace.tf_variable(variables[i].variable) for i in plan.requested]
    grads = tape.gradient(
        target, sources, upstream, unconnected_gradients=tf.UnconnectedGradients.NONE
    )
    var_grads = dict(zip(plan.requested, grads, strict=True))
    if any((var_grads[i] is not None) != plan.expected[i] for i in plan.requested):
        raise Refused("the tape disagrees with the static answer")
    static = plan.static
    index_of = {variables[i].name: i for i in plan.requested}
    for pair in static.pairs:
        if pair.slot is not None:
            grad = var_grads[index_of[pair.variable]]
            pair.sparse = isinstance(grad, tf.IndexedSlices)
            static.grads[pair.variable] = grad
    numbers = {f"{prefix}/value": builder.value_of(target).numpy()}
    slotted = [static.grads[p.variable] for p in static.pairs if p.slot is not None]
    if slotted:
        numbers[f"{prefix}/norm"], numbers[f"{prefix}/max"] = norms.grouped(tf, slotted)
    return static.facts(numbers, prefix)


#: Stands for a gradient the plan expects to flow (``fill_pairs`` only asks whether it is None).
_FLOWS = object()
