"""Every loss of a Python target is answered from the same variable state.

All losses are called inside one trace, in order, and TensorFlow runs their stateful ops in
that order: a loss that writes a variable (an explicit ``assign``, BatchNormalization's moving
statistics in training mode, an optimizer step) would change what every later loss reads, so
a pair's status would depend on which other losses were inspected. After each loss, every
variable it wrote is assigned back its value from before the run (read eagerly while
tracing, when nothing has run yet), so the next loss, and the state after the run, start
from the same values.

A loss computed through ``strategy.run`` is refused: per-replica values and mirrored
variables need their own analysis (``--strategy``), and read through one trace they report
variables and statuses bare TensorFlow does not give.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import Any

#: Op types that write a resource variable's value.
_WRITE_PREFIXES = ("AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp",
                   "ResourceScatter", "ResourceApply", "ResourceSparseApply",
                   "ResourceStridedSliceAssign")  # fmt: skip


class StrategyRun(RuntimeError):
    """A loss called ``strategy.run`` while gradscope traced it."""


def strategy_run(exc: BaseException) -> str | None:
    """The strategy's class name when ``exc`` is (or wraps) ``StrategyRun``, else None.

    Autograph re-raises an error from converted code as a ``StagingError`` naming it.
    """
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, StrategyRun):
            return str(seen)
        seen = seen.__cause__ or seen.__context__
    marker = "StrategyRun: "
    text = str(exc)
    if marker in text:
        return text.split(marker, 1)[1].split()[0].rstrip(")")
    return None


def is_write(op: Any) -> bool:
    """Whether ``op`` writes the value of the resource variable it takes first."""
    return bool(op.type.startswith(_WRITE_PREFIXES))


def written(graph: Any, new_ops: Iterable[Any], variables: Iterable[Any]) -> list[Any]:
    """The variables (of ``variables``) that the ops in ``new_ops`` write, in first-write order."""
    by_handle = {id(v.handle): v for v in variables if hasattr(v, "handle")}
    internal_to_variable = {
        internal.op.name: by_handle[id(external)]
        for external, internal in graph.captures
        if id(external) in by_handle
    }
    found: dict[Any, Any] = {}
    for op in new_ops:
        if is_write(op) and op.inputs:
            variable = internal_to_variable.get(op.inputs[0].op.name)
            if variable is not None:
                found.setdefault(variable.ref(), variable)
    return list(found.values())


class Snapshots:
    """Values of variables before the run, taken the first time a loss writes each one."""

    def __init__(self, tf: Any) -> None:
        self.tf = tf
        self.values: dict[Any, Any] = {}

    def restore(self, variables: Iterable[Any]) -> None:
        """Inside the trace: assign each variable its value from before the run."""
        tf = self.tf
        for variable in variables:
            key = variable.ref()
            if key not in self.values:
                with tf.init_scope():  # eager: no traced function has run yet
                    self.values[key] = tf.identity(variable.read_value())
            variable.assign(self.values[key])


@contextlib.contextmanager
def kept(tf: Any, variables: Iterable[Any]) -> Iterator[None]:
    """Eagerly: whatever the body writes into ``variables`` is undone when it ends."""
    saved = []
    for variable in {v.ref(): v for v in variables}.values():
        with contextlib.suppress(Exception):  # a variable that cannot be read has no state
            saved.append((variable, tf.identity(variable.read_value())))
    try:
        yield
    finally:
        for variable, value in saved:
            variable.assign(value)


@contextlib.contextmanager
def no_strategy_run(tf: Any) -> Iterator[None]:
    """While active, ``strategy.run`` raises ``StrategyRun`` (a loss being traced)."""
    from gradscope._src import patching

    def make(original: Any) -> Any:
        def refuse(self: Any, fn: Any, *args: Any, **kwargs: Any) -> Any:
            raise StrategyRun(type(self).__name__)

        return refuse

    with patching.Patches() as patches:
        with contextlib.suppress(ImportError):  # pragma: no cover - a TensorFlow that moved it
            patches.set("StrategyBase.run", make, everywhere=True)
        yield
