"""A TensorFlow 1 ``var_list`` that leaves out a variable its loss reads, which then never
trains (seed 001: per-loss ``var_list``s sliced from ``tf.trainable_variables()`` leave the
shared embedding out of both).

A graph-level gradient call given explicit sources is checked when it is made: the trainable
variables of the graph that its targets read and that it does not ask for. Whether one of
them trains is known only once the program has built its training ops, so the rest is asked
when the call's result is made (after its first ``Session.run``): a variable is left out,
and never trains, when no op of the graph writes it (an optimizer's apply op, an ``assign``,
a checkpoint's restore: its initializer aside) while some variable of the graph is trained by
an optimizer (a graph with no training op, an attack on a fixed model, trains nothing on
purpose). Whether another gradient call asks for it is decided over the whole run
(``analysis/run.problems_of``).
"""

from __future__ import annotations

import ast
import linecache
from collections.abc import Callable, Sequence
from typing import Any

from gradscope._src.frontends.python import frames
from gradscope._src.watcher import sites

#: Op types that only read a variable (or ask about it): every other consumer of a variable's
#: handle writes it (``AssignVariableOp``, ``ResourceApplyAdam``, ``ResourceScatterAdd``...).
_READERS = frozenset({
    "ReadVariableOp", "ResourceGather", "ResourceGatherNd", "VarIsInitializedOp",
    "VariableShape", "IsVariableInitialized", "Identity", "Shape", "Size", "Rank",
    "_ReadVariablesOp", "DestroyResourceOp", "ConsumeMutexLock",
})  # fmt: skip
#: Op types (prefixes) an optimizer trains a variable with.
_TRAINS = ("ResourceApply", "ResourceSparseApply", "Apply", "SparseApply")


def left_out(graph: Any, ys: Sequence[Any], xs: Sequence[Any],
             frame: Any) -> Callable[[], tuple[tuple[str, str], ...]] | None:  # fmt: skip
    """What, once the program has built its training ops, says which trainable variables of
    ``graph`` the targets ``ys`` read that ``xs`` leaves out and nothing trains: ``(name, the
    FILE:LINE that made the var_list)`` each; None when there are none to ask about.

    Args:
        graph: the program's TensorFlow 1 graph.
        ys: the call's targets.
        xs: the sources it asked for.
        frame: a frame at or inside the user's call (its var_list's line is looked up there).
    """
    import tensorflow as tf

    trainable = graph.get_collection(tf.compat.v1.GraphKeys.TRAINABLE_VARIABLES)
    asked = {id(x) for x in xs}
    rest = [v for v in trainable if id(v) not in asked and _handle_op(v) is not None]
    if not rest:
        return None
    ancestors = _ancestors([y.op for y in ys if hasattr(y, "op")])
    read = [v for v in rest if _handle_op(v)._id in ancestors]
    if not read:
        return None
    made = _var_list_line(frame, xs)

    def ask() -> tuple[tuple[str, str], ...]:
        written, training = _written(graph, read)
        if not training:
            return ()
        return tuple((sites.variable_name(v), made) for v in read if id(v) not in written)

    return ask


def _handle_op(variable: Any) -> Any:
    """The op that holds the variable (``VarHandleOp``, or a ref variable's own), or None."""
    handle = getattr(variable, "handle", None)
    op = getattr(handle, "op", None) if handle is not None else getattr(variable, "op", None)
    return op if hasattr(op, "_id") else None


def _ancestors(ops: Sequence[Any]) -> set[int]:
    """Ids of the ops that ``ops`` read, directly or not (data inputs)."""
    seen: set[int] = set()
    todo = list(ops)
    while todo:
        op = todo.pop()
        if op._id in seen:
            continue
        seen.add(op._id)
        todo.extend(t.op for t in op.inputs)
    return seen


def _written(graph: Any, variables: Sequence[Any]) -> tuple[set[int], bool]:
    """Ids of ``variables`` some op of ``graph`` writes (their initializers aside), and
    whether an optimizer trains any variable of the graph."""
    by_handle = {_handle_op(v)._id: v for v in variables}
    initializers = {getattr(getattr(v, "initializer", None), "_id", None) for v in variables}
    written: set[int] = set()
    training = False
    for op in graph.get_operations():
        trains = op.type.startswith(_TRAINS)
        training = training or trains
        if op.type in _READERS or op._id in initializers:
            continue
        for t in op.inputs:
            v = by_handle.get(t.op._id)
            if v is not None:
                written.add(id(v))
    return written, training


def _var_list_line(frame: Any, xs: Sequence[Any]) -> str:
    """``FILE:LINE`` of the assignment that made the var_list the user's call passed: the local
    list (or tuple) holding exactly ``xs``, its last assignment before the call in the same
    function; "" when it cannot be told (a list written in the call itself, a comprehension
    returned by a helper)."""
    user = frames.user_frame(frame)
    if user is None:
        return ""
    ids = [id(x) for x in xs]
    held = [name for name, value in user.f_locals.items()
            if isinstance(value, (list, tuple)) and [id(v) for v in value] == ids]  # fmt: skip
    if len(held) != 1:
        return ""
    filename, line = user.f_code.co_filename, user.f_lineno
    try:
        tree = ast.parse("".join(linecache.getlines(filename)))
    except (SyntaxError, ValueError):
        return ""
    scope = _scope(tree, line)
    assigned = [node.lineno for node in ast.walk(scope)
                if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign))
                and node.lineno <= line and _scope(tree, node.lineno) is scope
                and held[0] in _targets(node)]  # fmt: skip
    if not assigned:
        return ""
    return str(frames.Site(filename, max(assigned)))


def _scope(tree: ast.Module, line: int) -> ast.AST:
    """The innermost function (or the module) whose body holds ``line``."""
    found: ast.AST = tree
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            end = getattr(node, "end_lineno", None) or node.lineno
            if node.lineno <= line <= end and node.lineno >= getattr(found, "lineno", 0):
                found = node
    return found


def _targets(node: ast.AST) -> set[str]:
    """The plain names an assignment binds (``a = b = ...``, ``a, b = ...``)."""
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]  # type: ignore[attr-defined]
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
