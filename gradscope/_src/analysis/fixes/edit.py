"""A fix as a text edit: where a fix is a change at one known line whose text says exactly how,
the lines to replace and their replacement (``results.fix.Edit``), for agents and for
``gradscope fix``.

Only fixes that keep every forward value (where it is finite) are edits, so applying one
changes where gradients flow and nothing else:

- ``remove-stop-gradient``: ``tf.stop_gradient(h)`` becomes ``h`` (a spec's
  ``op: stop_gradient`` becomes ``op: identity``);
- ``straight-through``: ``tf.round(x)`` (``floor``, ``ceil``, ``rint``) becomes
  ``(x + tf.stop_gradient(tf.round(x) - x))``; a cast to an integer read back as a float
  (``tf.cast(n, tf.float32)`` of ``n = tf.cast(x, tf.int32)``) becomes ``(tf.cast(x,
  tf.float32) + tf.stop_gradient(tf.cast(n, tf.float32) - tf.cast(x, tf.float32)))``: the
  same values (a cast truncates, and so does this), with a gradient of 1;
- ``not-floating``: ``tf.Variable(0, dtype=tf.int32)`` (or ``add_weight``) gets
  ``trainable=False``;
- ``keep-tensorflow-ops``: ``np.tanh(h.numpy())`` becomes ``tf.math.tanh(h)``, for NumPy
  functions with a TensorFlow twin that takes the same arguments;
- ``var-list``: ``compute_gradients(loss)`` or ``minimize(loss)`` given no ``var_list`` gets
  ``var_list=`` the trainable variables the loss reads, by their exact names;
- ``divide-no-nan``: the one ``a / b`` of the line becomes ``tf.math.divide_no_nan(a, b)``;
- ``safe-log``: ``tf.math.log(x)`` becomes ``tf.math.log(tf.maximum(x, 1e-7))``;
- ``double-where``: ``tf.sqrt(x)`` of a name becomes ``tf.where(x > 0, tf.sqrt(tf.where(x >
  0, x, 1.0)), 0.0)``;
- ``watch``: ``tape.watch(sources)`` as the first line of the ``with`` block that made
  ``tape``, the sources as the gradient call names them;
- ``move-into-tape``: the line computed just before ``with tf.GradientTape() as tape:``
  becomes that block's first line (the same ops in the same order, now recorded), where
  ``tape`` is the tape the gradient call asks;
- ``stop-gradients-argument``: a gradient call's ``stop_gradients`` that names one tensor
  only goes;
- ``differentiable-op``: ``tf.pad(x, paddings, constant_values=c)`` becomes ``(tf.pad(x,
  paddings) + c * tf.pad(tf.zeros_like(x), paddings, constant_values=1))``.

The code is found with :mod:`ast` on the line the fix names; when the line holds no such
code, or more than one, or an expression the edit would evaluate twice could change (it calls
anything but TensorFlow's math), or the file cannot be read, there is no edit: the fix's text
stays the fix. ``gradscope fix --check`` proves each edit by running the program again.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import itertools
import os
import re
from collections.abc import Callable, Iterator, Sequence

from gradscope._src.location import Location
from gradscope._src.results import causes
from gradscope._src.results.causes import Cause, Context
from gradscope._src.results.fix import Edit, Fix

#: Files larger than this are not read for an edit (a generated module).
MAX_BYTES = 2_000_000
#: The rounding calls a straight-through edit wraps (their last attribute).
ROUNDING = frozenset({"round", "floor", "ceil", "rint"})
_SPEC_STOP = re.compile(r"\bop:\s*stop_gradient\b")
#: Fix kinds whose edit is at the gradient call (the context's site), not at the fix's line.
AT_SITE = frozenset({"stop-gradients-argument"})
#: NumPy functions whose TensorFlow twin takes the same positional arguments and computes the
#: same values, with how many arguments.
NUMPY_TWINS = {
    "tanh": ("math.tanh", 1), "exp": ("exp", 1), "log": ("math.log", 1),
    "log1p": ("math.log1p", 1), "sin": ("sin", 1), "cos": ("cos", 1), "sqrt": ("sqrt", 1),
    "square": ("square", 1), "abs": ("abs", 1), "clip": ("clip_by_value", 3),
    "maximum": ("maximum", 2), "minimum": ("minimum", 2),
}  # fmt: skip
#: Integer and floating dtypes as a cast names them (``tf.int32``, ``"int32"``).
_INT = re.compile(r"^(?:\w+\.)*u?int(?:8|16|32|64)$|^['\"]u?int(?:8|16|32|64)['\"]$")
_FLOAT = re.compile(r"^(?:\w+\.)*(?:b?float(?:16|32|64)|half|double)$"
                    r"|^['\"](?:b?float(?:16|32|64)|half|double)['\"]$")  # fmt: skip
#: Parts of a TensorFlow call's name that make it other than pure math (evaluated twice, it
#: could give another value, or make something).
IMPURE = frozenset({"random", "Variable", "print", "py_function", "numpy_function", "io",
                    "summary", "data", "dropout", "assign", "assign_add", "assign_sub",
                    "experimental", "function", "keras", "saved_model"})  # fmt: skip


def with_edit(fix: Fix | None, cause: Cause | None = None, c: Context | None = None) -> Fix | None:
    """``fix`` with its :class:`Edit` when it is a text edit at a known line (else as is).

    Args:
        fix: the fix a cause gave.
        cause: that cause (its op, its names), when the edit depends on them.
        c: the pair's context (the variables its loss reads, for ``var-list``).
    """
    if fix is None or fix.edit is not None or fix.kind not in _EDITS:
        return fix
    at = Location.parse(c.site if fix.kind in AT_SITE and c is not None else fix.where)
    if at is None or not at.line:
        return fix
    text = _read(at.file)
    if text is None:
        return fix
    found = _EDITS[fix.kind](Site(text, at.line, at.file, cause, c))
    return fix if found is None else dataclasses.replace(fix, edit=found)


@dataclasses.dataclass(frozen=True)
class Site:
    """What an edit is made from: the file's text, the fix's line, the cause and context."""

    text: str
    line: int
    file: str
    cause: Cause | None = None
    context: Context | None = None

    @property
    def tree(self) -> ast.Module | None:
        return _tree(self.text)

    def calls(self, named: Callable[[str], bool]) -> list[ast.Call]:
        """The calls spanning the line whose function's last name ``named`` accepts."""
        tree = self.tree
        if tree is None:
            return []
        return [node for node in ast.walk(tree) if isinstance(node, ast.Call)
                and node.lineno <= self.line <= (node.end_lineno or node.lineno)
                and named(_last_name(node.func) or "")]  # fmt: skip

    def segment(self, node: ast.AST) -> str:
        return ast.get_source_segment(self.text, node) or ""


def _read(path: str) -> str | None:
    try:
        if os.path.getsize(path) > MAX_BYTES:
            return None
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError, ValueError):
        return None


# -- the edits, one per fix kind ---------------------------------------------------------------


def _remove_stop_gradient(s: Site) -> Edit | None:
    if s.file.endswith((".yaml", ".yml")):
        lines = s.text.splitlines()
        if not 0 < s.line <= len(lines) or len(_SPEC_STOP.findall(lines[s.line - 1])) != 1:
            return None
        old = lines[s.line - 1]
        return Edit(s.file, s.line, s.line, old, _SPEC_STOP.sub("op: identity", old))
    call = _one_call(s, lambda name: name == "stop_gradient", args=1)
    if call is None:
        return None
    return _replace(s, [(call, s.segment(call.args[0]))])


def _straight_through(s: Site) -> Edit | None:
    if isinstance(s.cause, causes.Rounding) and s.cause.op == "Cast":
        return _straight_through_cast(s)
    call = _one_call(s, lambda name: name in ROUNDING, args=1)
    if call is None or not isinstance(call.func, ast.Attribute):
        return None  # a bare `round(x)`: Python's, or an import whose module we cannot name
    root = _root(call.func)
    x, whole = s.segment(call.args[0]), s.segment(call)
    if root is None or "\n" in x or not _pure(call.args[0], _tf(s.tree)):
        return None
    return _replace(s, [(call, f"({x} + {root}.stop_gradient({whole} - {x}))")])


def _straight_through_cast(s: Site) -> Edit | None:
    """A cast to an integer type at the line, read back as a float: each ``tf.cast(n,
    FLOAT)`` of it gets the straight-through form, ``x`` computed again (pure math only)."""
    tf = _tf(s.tree)
    casts = [c for c in s.calls(lambda n: n == "cast") if _root(c.func) in tf
             and _cast_to(c, _INT)]  # fmt: skip
    if len(casts) != 1 or not tf or s.tree is None:
        return None
    (inner,) = casts
    x = inner.args[0]
    root = _root(inner.func)
    if not _pure(x, tf) or "\n" in s.segment(x) or root is None:
        return None
    parents = _parents(s.tree)
    uses: list[ast.Call] = []
    outer = parents.get(inner)
    if isinstance(outer, ast.Call) and outer.args and outer.args[0] is inner:
        uses = [outer] if _cast_to(outer, _FLOAT) else []
    else:
        statement = parents.get(inner)
        if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)):  # fmt: skip
            return None
        name = statement.targets[0].id
        later = _later_siblings(statement, parents)
        stored = _stores(later, {name, *_names(x)})
        for node in (n for stmt in later for n in ast.walk(stmt)):
            if (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Name)
                    and node.args[0].id == name and _last_name(node.func) == "cast"
                    and _root(node.func) in tf and _cast_to(node, _FLOAT)):  # fmt: skip
                uses.append(node)
        if not uses or any(line <= max(u.lineno for u in uses) for line in stored):
            return None
    if not uses:
        return None
    x_text = s.segment(x)
    out = []
    for u in uses:
        dtype = s.segment(_dtype_of(u))  # type: ignore[arg-type]
        cast_x = f"{root}.cast({x_text}, {dtype})"
        out.append((u, f"({cast_x} + {root}.stop_gradient({s.segment(u)} - {cast_x}))"))
    return _replace(s, out)


def _not_floating(s: Site) -> Edit | None:
    calls = s.calls(lambda n: n in ("Variable", "add_weight"))
    if len(calls) != 1 or any(k.arg is None for k in calls[0].keywords):
        return None
    (call,) = calls
    given = [k for k in call.keywords if k.arg == "trainable"]
    if given:
        value = given[0].value
        if not (isinstance(value, ast.Constant) and value.value is True):
            return None
        return _replace(s, [(value, "False")])
    most = 1 if _last_name(call.func) == "Variable" else 2  # trainable's own position after
    if len(call.args) > most or not (call.args or call.keywords):
        return None
    last = max([*call.args, *(k.value for k in call.keywords)],
               key=lambda n: (n.end_lineno or 0, n.end_col_offset or 0))  # fmt: skip
    return _insert_after(s, call, last, ", trainable=False")


def _keep_tensorflow_ops(s: Site) -> Edit | None:
    np_names, tf = _modules(s.tree, "numpy"), _tf(s.tree)
    if not np_names or not tf:
        return None
    numpy_calls = [c for c in s.calls(lambda n: True) if _root(c.func) in np_names]
    if len(numpy_calls) != 1:
        return None
    (call,) = numpy_calls
    twin = NUMPY_TWINS.get(_last_name(call.func) or "")
    if (twin is None or call.keywords or len(call.args) != twin[1]
            or not isinstance(call.func, ast.Attribute)
            or not isinstance(call.func.value, ast.Name)):  # fmt: skip
        return None
    leaving = [c for c in s.calls(lambda n: n == "numpy") if not c.args and not c.keywords]
    inside = [a for a in call.args if _is_numpy_call(a)]
    if not inside or len(leaving) != len(inside):
        return None  # the value leaves TensorFlow elsewhere on the line too
    if not _into_tensorflow(s, call, tf):
        return None  # the NumPy array is read where a tensor may not do (`v.mean()`)
    args = ", ".join(s.segment(a.func.value) if _is_numpy_call(a) else s.segment(a)  # type: ignore[attr-defined]
                     for a in call.args)  # fmt: skip
    return _replace(s, [(call, f"{sorted(tf)[0]}.{twin[0]}({args})")])


def _into_tensorflow(s: Site, call: ast.Call, tf: set[str]) -> bool:
    """Whether the NumPy call's result is read only where a tensor does as well: as an
    argument of a TensorFlow call, through arithmetic and indexing on the way there, or as a
    name whose every later read in its block is such."""
    tree = s.tree
    if tree is None:
        return False
    parents = _parents(tree)

    def read_well(node: ast.AST) -> bool:
        while True:
            parent = parents.get(node)
            if isinstance(parent, ast.Call):
                return node is not parent.func and _root(parent.func) in tf
            if isinstance(parent, ast.keyword):
                node = parent
                continue
            if isinstance(parent, (ast.BinOp, ast.UnaryOp)) or (
                isinstance(parent, ast.Subscript) and node is parent.value
            ):
                node = parent
                continue
            if isinstance(parent, ast.Assign) and len(parent.targets) == 1:
                target = parent.targets[0]
                if not isinstance(target, ast.Name):
                    return False
                later = _later_siblings(parent, parents)
                reads = [n for stmt in later for n in ast.walk(stmt) if isinstance(n, ast.Name)
                         and n.id == target.id and isinstance(n.ctx, ast.Load)]  # fmt: skip
                stores = _stores(later, {target.id})
                first = min(stores, default=None)
                kept = [r for r in reads if first is None or r.lineno < first]
                return bool(kept) and all(read_well(r) for r in kept)
            return False

    return read_well(call)


def _var_list(s: Site) -> Edit | None:
    c = s.context
    names = s.cause.names if isinstance(s.cause, causes.NoVarList) else ()
    if not names and c is not None and c.api in causes.EVERY_VARIABLE:
        names = c.reads
    v1, tf = _modules(s.tree, "tensorflow.compat.v1"), _modules(s.tree, "tensorflow")
    listing = (f"{sorted(v1)[0]}.trainable_variables" if v1 else
               f"{sorted(tf)[0]}.compat.v1.trainable_variables" if tf else "")  # fmt: skip
    if not names or not listing:
        return None
    calls = s.calls(lambda n: n in causes.EVERY_VARIABLE)
    if len(calls) != 1:
        return None
    (call,) = calls
    most = 2 if _last_name(call.func) == "minimize" else 1  # var_list's own position after
    if (len(call.args) > most or not call.args or any(k.arg in (None, "var_list")
                                                       for k in call.keywords)):  # fmt: skip
        return None
    last = max([*call.args, *(k.value for k in call.keywords)],
               key=lambda n: (n.end_lineno or 0, n.end_col_offset or 0))  # fmt: skip
    chosen = repr(tuple(dict.fromkeys(names)))
    chosen_list = f"[v for v in {listing}() if v.op.name in {chosen}]"
    return _insert_after(s, call, last, f", var_list={chosen_list}")


def _divide_no_nan(s: Site) -> Edit | None:
    tf = _tf(s.tree)
    if not tf or not (isinstance(s.cause, causes.NanDivide) and s.cause.op in ("RealDiv", "Div")):
        return None
    tree = s.tree
    divisions = [n for n in ast.walk(tree) if isinstance(n, ast.BinOp)
                 and isinstance(n.op, ast.Div) and n.lineno <= s.line <= (n.end_lineno or 0)
                 ] if tree is not None else []  # fmt: skip
    calls = s.calls(lambda n: n in ("divide", "truediv", "realdiv", "div"))
    root = sorted(tf)[0]
    if len(divisions) == 1 and not calls:
        (d,) = divisions
        a, b = s.segment(d.left), s.segment(d.right)
        return _replace(s, [(d, f"{root}.math.divide_no_nan({a}, {b})")])
    if len(calls) == 1 and not divisions and _root(calls[0].func) in tf:
        (call,) = calls
        if len(call.args) == 2 and not call.keywords:
            a, b = (s.segment(x) for x in call.args)
            return _replace(s, [(call, f"{root}.math.divide_no_nan({a}, {b})")])
    return None


#: Each log the safe-log edit guards, with the bound its input is clipped to.
_LOG_BOUNDS = {"Log": ("log", "1e-7"), "Log1p": ("log1p", "1e-7 - 1.0")}


def _safe_log(s: Site) -> Edit | None:
    tf = _tf(s.tree)
    op = s.cause.op if isinstance(s.cause, causes.NanLog) else ""
    if op not in _LOG_BOUNDS or not tf:
        return None
    name, bound = _LOG_BOUNDS[op]
    call = _one_call(s, lambda n: n == name, args=1)
    if call is None or _root(call.func) not in tf:
        return None
    x = call.args[0]
    return _replace(s, [(x, f"{_root(call.func)}.maximum({s.segment(x)}, {bound})")])


def _double_where(s: Site) -> Edit | None:
    tf = _tf(s.tree)
    if not (isinstance(s.cause, causes.NanRoot) and s.cause.op == "Sqrt") or not tf:
        return None
    call = _one_call(s, lambda n: n == "sqrt", args=1)
    if (
        call is None
        or _root(call.func) not in tf
        or not isinstance(call.args[0], (ast.Name, ast.Attribute))
    ):
        return None
    x, root, fn = s.segment(call.args[0]), _root(call.func), s.segment(call.func)
    return _replace(
        s, [(call, f"{root}.where({x} > 0, {fn}({root}.where({x} > 0, {x}, 1.0)), 0.0)")]
    )


def _watch(s: Site) -> Edit | None:
    """``tape.watch(sources)`` first in the ``with`` block that made ``tape``: the sources as
    the gradient call names them (names bound before that block, not rebound in it)."""
    calls = s.calls(lambda n: n == "gradient")
    tree = s.tree
    if len(calls) != 1 or tree is None:
        return None
    (call,) = calls
    if not isinstance(call.func, ast.Attribute) or not isinstance(call.func.value, ast.Name):
        return None
    tape = call.func.value.id
    sources = call.args[1] if len(call.args) > 1 else next(
        (k.value for k in call.keywords if k.arg == "sources"), None)  # fmt: skip
    items = sources.elts if isinstance(sources, (ast.List, ast.Tuple)) else [sources]
    if sources is None or not items or not all(isinstance(n, ast.Name) for n in items):
        return None
    blocks = [
        w
        for w in ast.walk(tree)
        if isinstance(w, ast.With) and w.lineno < call.lineno and _binds_tape(w, tape)
    ]
    if not blocks:
        return None
    block = max(blocks, key=lambda w: w.lineno)
    first = block.body[0]
    header_end = max((i.context_expr.end_lineno or 0) for i in block.items)
    names = {n.id for n in items if isinstance(n, ast.Name)}
    if first.lineno <= header_end or _stores(block.body, names):
        return None
    bound = _bound_before(tree, block)
    between = [
        n.lineno
        for n in ast.walk(tree)
        if isinstance(n, ast.Name)
        and n.id in names
        and isinstance(n.ctx, ast.Store)
        and block.lineno <= n.lineno <= call.lineno
    ]
    if not names <= bound or between:
        return None  # unbound, or bound again before the gradient call reads them
    lines = s.text.splitlines()
    old = lines[first.lineno - 1]
    indent = old[: len(old) - len(old.lstrip())]
    return Edit(s.file, first.lineno, first.lineno, old,
                f"{indent}{tape}.watch({s.segment(sources)})\n{old}")  # fmt: skip


def _move_into_tape(s: Site) -> Edit | None:
    """The one-line statement right before the ``with`` block of the tape the gradient call
    (the context's site) asks, moved to be that block's first statement."""
    tree, site = s.tree, Location.parse(s.context.site) if s.context else None
    if tree is None or site is None or site.file != s.file:
        return None
    asking = [
        c
        for c in ast.walk(tree)
        if isinstance(c, ast.Call)
        and c.lineno <= site.line <= (c.end_lineno or 0)
        and _last_name(c.func) == "gradient"
        and isinstance(c.func, ast.Attribute)
        and isinstance(c.func.value, ast.Name)
    ]
    if len(asking) != 1:
        return None
    tape = asking[0].func.value.id  # type: ignore[attr-defined]
    parents = _parents(tree)
    moved = [n for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.Expr, ast.AugAssign))
             and n.lineno == s.line == n.end_lineno]  # fmt: skip
    if len(moved) != 1:
        return None
    (statement,) = moved
    later = _later_siblings(statement, parents)
    block = later[0] if later else None
    if not isinstance(block, ast.With) or block.lineno != statement.lineno + 1:
        return None  # the block must follow at once: nothing runs between
    header_reads = {n for i in block.items for n in _names(i)}
    if (not _binds_tape(block, tape) or block.body[0].lineno <= _header_end(block)
            or _names(statement) & header_reads):  # fmt: skip
        return None
    lines = s.text.splitlines()
    header = lines[block.lineno - 1 : _header_end(block)]
    line = lines[statement.lineno - 1]
    body = lines[block.body[0].lineno - 1]
    indent = body[: len(body) - len(body.lstrip())]
    old, new = "\n".join([line, *header]), "\n".join([*header, indent + line.lstrip()])
    return Edit(s.file, statement.lineno, _header_end(block), old, new)


def _binds_tape(block: ast.With, tape: str) -> bool:
    """Whether the block's header makes ``tape`` a ``GradientTape``."""
    return any(
        isinstance(i.optional_vars, ast.Name)
        and i.optional_vars.id == tape
        and isinstance(i.context_expr, ast.Call)
        and _last_name(i.context_expr.func) == "GradientTape"
        for i in block.items
    )


def _header_end(block: ast.With) -> int:
    """The last line of a ``with`` statement's header."""
    ends = [(i.context_expr.end_lineno or 0, getattr(i.optional_vars, "end_lineno", 0) or 0)
            for i in block.items]  # fmt: skip
    return max(max(pair) for pair in ends)


def _stop_gradients_argument(s: Site) -> Edit | None:
    """The gradient call's ``stop_gradients`` keyword, when it names one tensor (the one the
    cut is at): gone."""
    calls = [c for c in s.calls(lambda n: n == "gradients")
             if any(k.arg == "stop_gradients" for k in c.keywords)]  # fmt: skip
    if len(calls) != 1:
        return None
    (call,) = calls
    (given,) = [k for k in call.keywords if k.arg == "stop_gradients"]
    value = given.value
    one = isinstance(value, ast.Name) or (
        isinstance(value, (ast.List, ast.Tuple)) and len(value.elts) == 1
        and isinstance(value.elts[0], ast.Name))  # fmt: skip
    if not one or not isinstance(call.func, (ast.Attribute, ast.Name)):
        return None
    kept = [s.segment(a) for a in call.args]
    kept += [s.segment(k) for k in call.keywords if k is not given]
    if any("\n" in k for k in kept):
        return None
    return _replace(s, [(call, f"{s.segment(call.func)}({', '.join(kept)})")])


def _differentiable_op(s: Site) -> Edit | None:
    """``tf.pad(x, paddings, constant_values=c)``: the value padded in through a constant
    mask, which gives ``c`` its gradient and the same values."""
    if not (isinstance(s.cause, causes.NoneInput) and s.cause.op == "PadV2"):
        return None
    tf = _tf(s.tree)
    calls = [c for c in s.calls(lambda n: n == "pad") if _root(c.func) in tf]
    if len(calls) != 1:
        return None
    (call,) = calls
    words = {k.arg: k.value for k in call.keywords}
    mode = words.pop("mode", None)
    if (len(call.args) != 2 or set(words) != {"constant_values"}
            or (mode is not None and not (isinstance(mode, ast.Constant)
                                          and str(mode.value).upper() == "CONSTANT"))):  # fmt: skip
        return None
    x, paddings = call.args
    if not (_pure(x, tf) and _pure(paddings, tf)):
        return None
    fn, root = s.segment(call.func), _root(call.func)
    xs, ps, cs = s.segment(x), s.segment(paddings), s.segment(words["constant_values"])
    if re.search(r"inf|nan", cs, re.IGNORECASE):
        return None  # an infinite pad value times the mask's 0 is a NaN
    return _replace(s, [(call, f"({fn}({xs}, {ps}) + {cs} * {fn}({root}.zeros_like({xs}), {ps}, "
                               "constant_values=1))")])  # fmt: skip


_EDITS: dict[str, Callable[[Site], Edit | None]] = {
    "remove-stop-gradient": _remove_stop_gradient,
    "straight-through": _straight_through,
    "not-floating": _not_floating,
    "keep-tensorflow-ops": _keep_tensorflow_ops,
    "var-list": _var_list,
    "divide-no-nan": _divide_no_nan,
    "safe-log": _safe_log,
    "double-where": _double_where,
    "watch": _watch,
    "move-into-tape": _move_into_tape,
    "stop-gradients-argument": _stop_gradients_argument,
    "differentiable-op": _differentiable_op,
}


# -- reading the code --------------------------------------------------------------------------


def _one_call(s: Site, named: Callable[[str], bool], args: int) -> ast.Call | None:
    """The one call on the line whose function's last name ``named`` accepts, with ``args``
    positional arguments and no keywords; None when there is none or more than one."""
    found = [node for node in s.calls(named) if len(node.args) == args and not node.keywords
             and not isinstance(node.args[0], ast.Starred)]  # fmt: skip
    return found[0] if len(found) == 1 else None


@functools.lru_cache(maxsize=8)
def _tree(text: str) -> ast.Module | None:
    """The module's tree, parsed once for the many pairs one line cuts."""
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


def _parents(tree: ast.Module) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _last_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else None


def _root(func: ast.expr) -> str | None:
    """The name a dotted call starts from (``tf`` of ``tf.math.round``)."""
    while isinstance(func, ast.Attribute):
        func = func.value
    return func.id if isinstance(func, ast.Name) else None


def _attributes(func: ast.expr) -> Iterator[str]:
    while isinstance(func, ast.Attribute):
        yield func.attr
        func = func.value


def _tf(tree: ast.Module | None) -> set[str]:
    """The names the file binds to TensorFlow (``tf``), its ``compat.v1`` or ``compat.v2``
    included: each has the ops an edit writes."""
    return (_modules(tree, "tensorflow") | _modules(tree, "tensorflow.compat.v1")
            | _modules(tree, "tensorflow.compat.v2"))  # fmt: skip


def _modules(tree: ast.Module | None, module: str) -> set[str]:
    """The names the file binds to ``module`` (``import tensorflow as tf``: ``tf``)."""
    if tree is None:
        return set()
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == module:
                    found.add(alias.asname or module.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                if f"{node.module}.{alias.name}" == module:
                    found.add(alias.asname or alias.name)
    if "." in module:  # ``import tensorflow.compat.v1`` binds ``tensorflow``: not the module
        found.discard(module.split(".")[0])
    return found


def _pure(node: ast.expr, tf: set[str]) -> bool:
    """Whether evaluating ``node`` again gives the same value: names, constants, arithmetic,
    and calls of TensorFlow's math only (no random ops, no variables made, no layers)."""
    for sub in ast.walk(node):
        if isinstance(sub, (ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr, ast.Lambda)):
            return False
        if isinstance(sub, ast.Call) and (
            _root(sub.func) not in tf or IMPURE & set(_attributes(sub.func))
        ):
            return False
    return True


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _dtype_of(call: ast.Call) -> ast.expr | None:
    """The dtype a ``cast(x, dtype)`` call names (positional or keyword; no other keyword)."""
    if len(call.args) == 2 and not call.keywords:
        return call.args[1]
    if len(call.args) == 1 and [k.arg for k in call.keywords] == ["dtype"]:
        return call.keywords[0].value
    return None


def _cast_to(call: ast.Call, dtype: re.Pattern[str]) -> bool:
    """A ``cast(x, DTYPE)`` call whose dtype matches ``dtype``."""
    given = _dtype_of(call)
    return given is not None and bool(dtype.match(ast.unparse(given)))


def _later_siblings(statement: ast.stmt, parents: dict[ast.AST, ast.AST]) -> list[ast.stmt]:
    """The statements after ``statement`` in its own block."""
    parent = parents.get(statement)
    for field in ("body", "orelse", "finalbody"):
        block = getattr(parent, field, None)
        if isinstance(block, list) and statement in block:
            return block[block.index(statement) + 1 :]
    return []


def _stores(statements: Sequence[ast.AST], names: set[str]) -> list[int]:
    """The lines where ``statements`` bind any of ``names``."""
    return [n.lineno for stmt in statements for n in ast.walk(stmt)
            if isinstance(n, ast.Name) and n.id in names
            and isinstance(n.ctx, (ast.Store, ast.Del))]  # fmt: skip


def _bound_before(tree: ast.Module, block: ast.With) -> set[str]:
    """The names bound in ``block``'s own scope before it starts (assignments, parameters,
    imports, loop targets)."""
    parents = _parents(tree)
    scope: ast.AST = parents.get(block, tree)
    while not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
        scope = parents.get(scope, tree)
    bound: set[str] = set()
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        a = scope.args
        bound |= {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]}
    for node in ast.walk(scope):
        if getattr(node, "lineno", block.lineno) >= block.lineno:
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return bound


def _is_numpy_call(node: ast.expr) -> bool:
    """``x.numpy()``: where a tensor's value leaves TensorFlow."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "numpy" and not node.args and not node.keywords)  # fmt: skip


# -- writing the edit --------------------------------------------------------------------------


def _offset(lines: list[bytes], line: int, column: int) -> int:
    """A byte offset in the file from ast's line (from 1) and byte column."""
    return sum(len(x) for x in lines[: line - 1]) + column


def _replace(s: Site, changes: Sequence[tuple[ast.AST, str]]) -> Edit | None:
    """The whole lines the ``changes`` span, each node's text replaced by its new text (the
    nodes do not overlap)."""
    if not changes or any(not text for _, text in changes):
        return None
    raw = s.text.encode()
    lines = raw.splitlines(keepends=True)
    spans: list[tuple[int, int, str, int, int]] = []
    for node, text in changes:
        first_line, first_col = getattr(node, "lineno", None), getattr(node, "col_offset", None)
        end_line, end_col = getattr(node, "end_lineno", None), getattr(node, "end_col_offset", None)
        if first_line is None or first_col is None or end_line is None or end_col is None:
            return None
        start, end = _offset(lines, first_line, first_col), _offset(lines, end_line, end_col)
        spans.append((start, end, text, first_line, end_line))
    spans.sort()
    if any(a[1] > b[0] for a, b in itertools.pairwise(spans)):
        return None
    first, last = min(x[3] for x in spans), max(x[4] for x in spans)
    begin = _offset(lines, first, 0)
    stop = _offset(lines, last + 1, 0) if last < len(lines) else len(raw)
    made = b""
    at = begin
    for start, end, text, _, _ in spans:
        made += raw[at:start] + text.encode()
        at = end
    made += raw[at:stop]
    return Edit(s.file, first, last, _whole_lines(raw[begin:stop]), _whole_lines(made))


def _whole_lines(data: bytes) -> str:
    """Whole lines as an edit holds them: without the last line's end."""
    return data.decode().removesuffix("\n").removesuffix("\r")


def _insert_after(s: Site, call: ast.Call, last: ast.expr, text: str) -> Edit | None:
    """``call`` with ``text`` written right after its argument ``last``."""
    whole = s.segment(call)
    raw = s.text.encode()
    lines = raw.splitlines(keepends=True)
    if last.end_lineno is None or last.end_col_offset is None or call.end_lineno is None:
        return None
    start = _offset(lines, call.lineno, call.col_offset)
    cut = _offset(lines, last.end_lineno, last.end_col_offset) - start
    body = whole.encode()
    return _replace(s, [(call, (body[:cut] + text.encode() + body[cut:]).decode())])
