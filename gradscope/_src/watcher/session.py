"""TensorFlow 1 graphs: a gradient call's numbers come from the program's own ``Session.run``.

A run that computes a watched call's gradients (it fetches them, or an op that needs them,
such as ``minimize``'s train op) also fetches the target and the gradients, with the same
feeds, in the same run: nothing is computed twice and no op is added to the graph.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gradscope._src.watcher import values
from gradscope._src.watcher.watch import SiteState, Static, Watcher


@dataclass
class GraphSite:
    """A watched call built in a TensorFlow 1 graph."""

    graph: Any
    state: SiteState
    static: Static
    targets: list[Any]
    grads: list[Any]


class Sessions:
    """The watched calls of TensorFlow 1 graphs and the runs that compute them."""

    def __init__(self, watcher: Watcher) -> None:
        self.watcher = watcher
        self.calls: list[GraphSite] = []
        self._ancestors: dict[tuple[int, int, tuple[str, ...]], set[str]] = {}

    def add(self, graph: Any, state: SiteState, static: Static, targets: list[Any],
            grads: list[Any]) -> None:  # fmt: skip
        self.calls.append(GraphSite(graph, state, static, targets, grads))

    def run(self, orig: Callable[..., Any], sess: Any, fetches: Any, *args: Any,
            **kwargs: Any) -> Any:  # fmt: skip
        """``Session.run``, fetching the numbers of the watched calls it computes."""
        if not self.calls or self.watcher.busy:
            return orig(sess, fetches, *args, **kwargs)
        try:
            computed = self._computed(sess.graph, fetches)
        except Exception:  # fetches gradscope cannot read: run as written
            computed = []
        active = [c for c in computed if self.watcher.before_execution(c.state)]
        if not active:
            return orig(sess, fetches, *args, **kwargs)
        extra = [[*c.targets, *[g for g in c.grads if g is not None]] for c in active]
        with self.watcher.own_work():
            try:
                out, got = orig(sess, (fetches, extra), *args, **kwargs)
            except Exception:  # e.g. a feed only the watched fetches need
                return orig(sess, fetches, *args, **kwargs)
        for c, numbers in zip(active, got, strict=True):
            present = iter(numbers[len(c.targets) :])
            grads = [None if g is None else next(present) for g in c.grads]
            arrays = None if self.watcher.timeline is None else [(g, None) for g in grads]
            self.watcher.record(c.state, c.static, values.of_arrays(numbers[: len(c.targets)],
                                                                    grads), arrays)  # fmt: skip
        return out

    def _computed(self, graph: Any, fetches: Any) -> list[GraphSite]:
        """The watched calls of ``graph`` whose gradients the run computes."""
        calls = [c for c in self.calls if c.graph is graph]
        if not calls:
            return []
        names = _fetch_names(graph, fetches)
        if names is None:
            return []
        key = (id(graph), int(graph.version), names)
        if key not in self._ancestors:
            self._ancestors[key] = _ancestors(graph, names)
        needed = self._ancestors[key]
        return [c for c in calls if any(_op_name(g) in needed for g in c.grads if g is not None)]


def _op_name(grad: Any) -> str:
    tensor = getattr(grad, "values", None)
    return str((tensor if tensor is not None else grad).op.name)


def _fetch_names(graph: Any, fetches: Any) -> tuple[str, ...] | None:
    import tensorflow as tf

    names = []
    try:
        for f in tf.nest.flatten(fetches, expand_composites=True):
            element = graph.as_graph_element(f) if isinstance(f, str) else f
            op = getattr(element, "op", element)
            names.append(str(op.name))
    except (TypeError, ValueError, KeyError, AttributeError):
        return None
    return tuple(names)


def _ancestors(graph: Any, names: tuple[str, ...]) -> set[str]:
    """Names of every op a run of ``names`` executes (inputs and control inputs)."""
    seen: set[str] = set()
    stack = [graph.get_operation_by_name(n) for n in names]
    while stack:
        op = stack.pop()
        if op.name in seen:
            continue
        seen.add(op.name)
        stack.extend(t.op for t in op.inputs)
        stack.extend(op.control_inputs)
    return seen
