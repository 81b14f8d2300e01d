"""Whether TensorFlow throws a trace away: the first trace of a ``tf.function`` that created
variables.

``tf.function`` traces its first call with variable creation allowed. When that trace
created variables (a Keras optimizer builds its slots in its first ``apply_gradients``: a
Keras fit or a custom loop's first step), TensorFlow lifts their initializers out of the
graph, runs them, traces the function a second time with variable creation forbidden and
only ever runs that second trace (``polymorphic_function.Function._call``). Measuring ops
built into the first trace never run; on a large model they are thousands of ops, each
costing the trace ~0.3-1 ms, so they are not built there.

TensorFlow keeps the first trace when an initializer cannot be lifted (it reads a
placeholder: an argument of the function or a captured value) and then runs it once, inside
a ``tf.cond``; the measuring ops are built there as before. An initializer with a stateful
op is taken as one that may not lift (the automatic control dependencies added when the
trace ends can make it read a placeholder), so in doubt the ops are built.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gradscope._src import tfcompat

#: The variable creator ``Function._initialize`` installs for the first trace, and the one
#: forbidding variables in the later ones.
_FIRST = "Function._initialize.<locals>.variable_capturing_scope"
_LATER = "Function._initialize.<locals>.invalid_creator_scope"


def check(graph: Any) -> Callable[[], bool]:
    """Called while a function body is traced into ``graph`` (inside its variable creator
    scope): what says, once the body has run, whether TensorFlow will throw this trace away.
    Where it cannot tell (not TensorFlow's ``tf.function``, a thread without the scope), the
    answer is False: the trace is kept."""
    for _, creator in reversed(getattr(graph, "_variable_creator_stack", ())):
        name = getattr(creator, "__qualname__", "")
        if name == _LATER:
            break
        if name == _FIRST:
            cells = dict(zip(creator.__code__.co_freevars, creator.__closure__ or (),
                             strict=True))  # fmt: skip
            created, initializers = cells.get("created_variables"), cells.get("add_initializers_to")
            if created is None or initializers is None:
                break
            return lambda: _thrown_away(created.cell_contents, initializers.cell_contents)
    return lambda: False


def _thrown_away(created: list[Any], initializers: list[tuple[Any, Any]] | None) -> bool:
    """Whether the trace created variables, every one with an initializer TensorFlow lifts."""
    if not created or initializers is None or len(initializers) < len(created):
        return False
    return all(_liftable(init) for _, init in initializers)


def _liftable(tensor: Any) -> bool:
    """Whether ``tensor`` reads no placeholder and no stateful op (``lift_to_graph`` raises
    ``UnliftableError`` on a placeholder among its inputs, control inputs included)."""
    op_selector = tfcompat.get("op_selector")

    seen: set[Any] = set()
    todo = [getattr(tensor, "op", tensor)]
    while todo:
        op = todo.pop()
        if op in seen:
            continue
        seen.add(op)
        if op.type == "Placeholder" or op._is_stateful:
            return False
        todo.extend(op_selector.graph_inputs(op))
    return True
