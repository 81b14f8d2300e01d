"""A jaxpr as the data-flow graph the cut analysis reads (``engine/cuts.py``).

Every equation becomes an op, every variable a tensor (an integer id), in the order JAX made
them, so the graph is topological. Bodies are walked into where a gradient could cross them:
a ``jit``/``pjit``, ``closed_call`` or ``remat`` body as if written in place; each branch of a
``cond`` (its outputs joined, as either branch may run); a ``scan`` or ``while`` body copied
once per carry plus one, which is as many steps as a value needs to travel from any carry to
any other. A ``custom_jvp``/``custom_vjp`` call stays one op per output, reading the inputs
its primal body makes that output from: its own rule, not the body's ops, passes the gradient.
Nothing is evaluated: only shapes and dtypes are read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gradscope._src.engine import cuts as flow
from gradscope._src.engine.jax import primitives
from gradscope._src.results.cut import STOP_TYPES

#: Copies of a loop body at most (a body with more carries keeps this many: a value that
#: needs more steps to travel between carries is then not followed further).
MAX_COPIES = 8
#: The op type of a join: one value that is any of its inputs (a ``cond``'s branches).
JOIN = "Join"


@dataclass
class JaxGraph:
    """A flattened jaxpr: the graph, and per op the equation it came from (None for the
    placeholders of the inputs, constants and joins gradscope adds)."""

    graph: flow.Graph
    eqns: list[Any]
    inputs: list[int]  # tensor id of each input leaf of the jaxpr, in order
    outputs: list[int | None]  # tensor id of each output leaf (None: a literal)
    #: per op: the primitive's name (``"dot_general"``; ``""`` for gradscope's own ops)
    primitives: list[str] = field(default_factory=list)
    #: per op: the equations whose bodies hold it, outermost first (a ``jnp`` function's
    #: ``pjit``, a ``cond``): JAX keeps each equation's stack only up to its body's boundary,
    #: so the user's line of an equation inside one is on the stack of the one around it
    outer: list[tuple[Any, ...]] = field(default_factory=list)

    def stack_of(self, index: int) -> list[Any]:
        """The equations whose stacks, outermost first, make op ``index``'s whole stack (its
        own last); empty for gradscope's own ops."""
        eqn = self.eqns[index]
        return [] if eqn is None else [*self.outer[index], eqn]


class _Builder:
    def __init__(self) -> None:
        self.ops: list[flow.Op] = []
        self.eqns: list[Any] = []
        self.prims: list[str] = []
        self.outer: list[tuple[Any, ...]] = []
        self.around: tuple[Any, ...] = ()  # the equations whose bodies are being walked
        self.producer: list[int] = []
        self.differentiable: list[bool] = []

    def tensor(self, aval: Any, op: int) -> int:
        self.producer.append(op)
        self.differentiable.append(differentiable(aval))
        return len(self.producer) - 1

    def op(self, name: str, type_: str, inputs: list[int], avals: Sequence[Any], eqn: Any = None,
           primitive: str = "", *, no_gradient: bool = False) -> list[int]:  # fmt: skip
        index = len(self.ops)
        outputs = [self.tensor(a, index) for a in avals]
        self.ops.append(flow.Op(name, type_, inputs, outputs, no_gradient=no_gradient))
        self.eqns.append(eqn)
        self.prims.append(primitive)
        self.outer.append(self.around)
        return outputs

    def placeholder(self, aval: Any, name: str = "input") -> int:
        return self.op(name, "Placeholder", [], [aval])[0]

    # -- walking a jaxpr ---------------------------------------------------------------------

    def walk(self, jaxpr: Any, inputs: Sequence[int]) -> list[int | None]:
        """Add the equations of ``jaxpr`` (an open ``Jaxpr``) reading ``inputs``; its
        ``constvars`` become constants. Returns its outputs' tensor ids (None: a literal)."""
        env: dict[Any, int] = {}
        for var in jaxpr.constvars:
            env[var] = self.placeholder(var.aval, "const")
        for var, t in zip(jaxpr.invars, inputs, strict=True):
            env[var] = t
        for eqn in jaxpr.eqns:
            ins = [self.read(env, v) for v in eqn.invars]
            outs = self.equation(eqn, ins)
            for var, out in zip(eqn.outvars, outs, strict=True):
                if out is not None:
                    env[var] = out
        return [self.read(env, v) for v in jaxpr.outvars]

    def read(self, env: dict[Any, int], var: Any) -> int | None:
        """The tensor of ``var`` (None for a literal, which carries no variable)."""
        if _is_literal(var):
            return None
        found = env.get(var)
        if found is None:  # a dropped variable (``_``) or one made outside: a constant
            found = env[var] = self.placeholder(var.aval, "const")
        return found

    def equation(self, eqn: Any, ins: list[int | None]) -> list[int | None]:
        name = eqn.primitive.name
        params = eqn.params
        if name in primitives.CALLS:
            body = params.get("jaxpr", params.get("call_jaxpr"))
            if body is not None:
                return self.call(body, ins, eqn)
        if name in primitives.CUSTOM:
            body = params.get("call_jaxpr", params.get("fun_jaxpr"))
            if body is not None:
                return self.custom(body, ins, eqn, int(params.get("num_consts", 0)))
        if name == "cond":
            return self.cond(params["branches"], ins, eqn)
        if name == "scan":
            return self.loop(params["jaxpr"], ins, eqn, int(params["num_consts"]),
                             int(params["num_carry"]))  # fmt: skip
        if name == "while":
            return self.while_(eqn, ins)
        return self.primitive(eqn, ins)

    def primitive(self, eqn: Any, ins: list[int | None]) -> list[int | None]:
        name = eqn.primitive.name
        present = [t for t in ins if t is not None]
        avals = [v.aval for v in eqn.outvars]
        type_ = "StopGradient" if name in primitives.STOP else primitives.tf_name(name)
        no_grad = name not in primitives.STOP and primitives.gives_none(eqn.primitive)
        if name in primitives.ONE_TO_ONE and len(ins) == len(avals):
            outs: list[int | None] = []
            for t, aval in zip(ins, avals, strict=True):
                outs += self.op(_node(eqn, type_), type_, [t] if t is not None else [], [aval],
                                eqn, name)  # fmt: skip
            return outs
        return list(self.op(_node(eqn, type_), type_, present, avals, eqn, name,
                            no_gradient=no_grad))  # fmt: skip

    def call(self, body: Any, ins: list[int | None], eqn: Any) -> list[int | None]:
        jaxpr, _ = _open(body)
        inputs = [t if t is not None else self.placeholder(v.aval, "const")
                  for t, v in zip(ins, jaxpr.invars, strict=True)]  # fmt: skip
        around = self.around
        if hasattr(eqn, "primitive"):  # a real equation (a loop body's copy is not)
            self.around = (*around, eqn)
        try:
            outs = self.walk(jaxpr, inputs)
        finally:
            self.around = around
        return [t if t is not None else self.placeholder(v.aval, "const")
                for t, v in zip(outs, eqn.outvars, strict=True)]  # fmt: skip

    def custom(self, body: Any, ins: list[int | None], eqn: Any, consts: int) -> list[int | None]:
        """One op per output, reading the inputs the primal body makes it from."""
        jaxpr, _ = _open(body)
        deps = dependencies(jaxpr)
        name = eqn.primitive.name
        type_ = primitives.tf_name(name)
        outs: list[int | None] = []
        for k, var in enumerate(eqn.outvars):
            reads = [t for i, t in enumerate(ins) if t is not None and deps[k] >> i & 1]
            outs += self.op(_node(eqn, type_), type_, reads, [var.aval], eqn, name)
        return outs

    def cond(self, branches: Sequence[Any], ins: list[int | None], eqn: Any) -> list[int | None]:
        """Every branch in place, reading the operands (not the index); the outputs join
        the branches' (the index only picks one, so it carries no gradient)."""
        operands = ins[1:]
        results: list[list[int | None]] = []
        for branch in branches:
            results.append(self.call(branch, list(operands), eqn))
        return self.join(eqn, results, "If")

    def join(self, eqn: Any, results: Sequence[Sequence[int | None]],
             type_: str) -> list[int | None]:  # fmt: skip
        outs: list[int | None] = []
        for k, var in enumerate(eqn.outvars):
            reads = [t for r in results if (t := r[k]) is not None]
            outs += self.op(_node(eqn, type_), JOIN, reads, [var.aval], eqn, eqn.primitive.name)
        return outs

    def loop(self, body: Any, ins: list[int | None], eqn: Any, n_consts: int,
             n_carry: int) -> list[int | None]:  # fmt: skip
        """A ``scan``: ``consts, carry, xs -> carry, ys``, its body copied ``n_carry + 1``
        times (at most ``MAX_COPIES``), each copy's carry read by the next; the final carry
        and each ``ys`` join every copy's."""
        jaxpr, _ = _open(body)
        consts, carry, xs = (
            ins[:n_consts],
            ins[n_consts : n_consts + n_carry],
            ins[n_consts + n_carry :],
        )
        copies: list[list[int | None]] = []
        for _ in range(min(n_carry + 1, MAX_COPIES)):
            outs = self.call(body, [*consts, *carry, *xs], _Outs(jaxpr.outvars))
            copies.append(outs)
            carry = outs[:n_carry]
        return self.join(eqn, copies, "Scan")

    def while_(self, eqn: Any, ins: list[int | None]) -> list[int | None]:
        """A ``while``: ``cond_consts, body_consts, carry -> carry``; the body copied as a
        scan's is (JAX differentiates no ``while`` in reverse, so a path through one never
        carries a gradient that reached the program)."""
        params = eqn.params
        n_cond, n_body = int(params["cond_nconsts"]), int(params["body_nconsts"])
        body = params["body_jaxpr"]
        jaxpr, _ = _open(body)
        consts, carry = ins[n_cond : n_cond + n_body], ins[n_cond + n_body :]
        copies: list[list[int | None]] = [list(carry)]
        for _ in range(min(len(carry) + 1, MAX_COPIES)):
            outs = self.call(body, [*consts, *carry], _Outs(jaxpr.outvars))
            copies.append(outs)
            carry = outs
        return self.join(eqn, copies, "While")


class _Outs:
    """Stands for an equation whose outputs are a body's own (a loop body's copy)."""

    def __init__(self, outvars: Sequence[Any]) -> None:
        self.outvars = list(outvars)


def build(closed: Any) -> JaxGraph:
    """The graph of a ``ClosedJaxpr`` (``jax.make_jaxpr``'s result): one placeholder per
    input leaf, then every equation."""
    b = _Builder()
    jaxpr, _ = _open(closed)
    inputs = [b.placeholder(v.aval) for v in jaxpr.invars]
    outputs = b.walk(jaxpr, inputs)
    graph = flow.Graph(b.ops, b.producer, b.differentiable)
    return JaxGraph(graph, b.eqns, inputs, outputs, b.prims, b.outer)


def dependencies(jaxpr: Any) -> list[int]:
    """Per output of an open ``jaxpr``, the bitset of its inputs it is made from."""
    b = _Builder()
    inputs = [b.placeholder(v.aval) for v in jaxpr.invars]
    outputs = b.walk(jaxpr, inputs)
    vsets = flow.variable_sets(flow.Graph(b.ops, b.producer, b.differentiable),
                               {t: 1 << i for i, t in enumerate(inputs)})  # fmt: skip
    return [0 if t is None else vsets[b.producer[t]] for t in outputs]


def received(graph: flow.Graph, targets: Sequence[int]) -> set[int]:
    """The tensors a gradient from ``targets`` reaches, as JAX's reverse pass would carry a
    nonzero one: back through every op but a ``stop_gradient`` and a primitive whose
    derivative is zero, into every floating input. (TensorFlow answers this itself, with
    None; JAX answers zeros, so it is read off the graph.)"""
    out = set(targets)
    for index in range(len(graph.ops) - 1, -1, -1):
        op = graph.ops[index]
        if not any(t in out for t in op.outputs):
            continue
        if op.type in STOP_TYPES or op.no_gradient:
            continue
        out.update(t for t in op.inputs if graph.differentiable[t])
    return out


def differentiable(aval: Any) -> bool:
    """Whether a value of ``aval`` can carry a gradient: a floating or complex array."""
    import numpy as np

    dtype = getattr(aval, "dtype", None)
    if dtype is None:
        return False
    try:
        return bool(np.issubdtype(dtype, np.inexact))
    except TypeError:  # an extended dtype (a PRNG key): never differentiable
        return False


def _open(closed: Any) -> tuple[Any, Sequence[Any]]:
    """``(jaxpr, consts)`` of a ``ClosedJaxpr`` or an open ``Jaxpr``."""
    if hasattr(closed, "jaxpr") and hasattr(closed, "consts"):
        return closed.jaxpr, closed.consts
    return closed, ()


def _is_literal(var: Any) -> bool:
    return type(var).__name__ == "Literal"


def _node(eqn: Any, type_: str) -> str:
    """How a cut point names an equation: its name scopes and op type (``head/ArgMax``)."""
    from gradscope._src.engine.jax import compat

    scope = compat.shown_scopes(getattr(eqn, "source_info", None)).strip("/")
    return f"{scope}/{type_}" if scope else type_
