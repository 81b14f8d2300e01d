"""The cut-point analysis on hand-made graphs: no TensorFlow needed."""

from __future__ import annotations

from gradscope._src.engine import cuts as flow
from gradscope._src.engine.status import kind_of


class G:
    """A tiny builder: each op has one output tensor (id == op index) unless told otherwise."""

    def __init__(self) -> None:
        self.ops: list[flow.Op] = []
        self.producer: list[int] = []
        self.diff: list[bool] = []

    def op(self, name: str, type_: str, *inputs: int, float_out: bool = True, **kw: object) -> int:
        index = len(self.ops)
        t = len(self.producer)
        self.producer.append(index)
        self.diff.append(float_out)
        self.ops.append(flow.Op(name, type_, list(inputs), [t], **kw))  # type: ignore[arg-type]
        return t

    def graph(self) -> flow.Graph:
        return flow.Graph(self.ops, self.producer, self.diff)


def analyse(
    g: G, sources: dict[int, int], loss: int, grads: set[int], stop: frozenset[int] = frozenset()
):
    graph = g.graph()
    vsets = flow.variable_sets(graph, sources)
    reach = flow.reaching(graph, g.producer[loss])
    return flow.find_cuts(graph, vsets, reach, grads | {loss}, set(stop)), vsets, reach


def test_flow_stop_gradient_is_a_stopped_cut() -> None:
    g = G()
    v = g.op("v", "Placeholder")
    r = g.op("read", "ReadVariableOp", v)
    s = g.op("sg", "StopGradient", r)
    loss = g.op("loss", "Sum", s)
    cuts, _, reach = analyse(g, {v: 1}, loss, grads={s})
    assert [(c.op, c.kind, c.variables) for c in cuts] == [(2, flow.STOPPED, 1)]
    assert all(reach[: loss + 1])


def test_flow_straight_through_is_a_partial_cut() -> None:
    # y = x + stop_gradient(round(x) - x): gradient reaches x through the add only
    g = G()
    v = g.op("v", "Placeholder")
    x = g.op("x", "ReadVariableOp", v)
    r = g.op("round", "Round", x, no_gradient=True)
    d = g.op("sub", "Sub", r, x)
    s = g.op("sg", "StopGradient", d)
    y = g.op("y", "AddV2", x, s)
    loss = g.op("loss", "Sum", y)
    cuts, _, _ = analyse(g, {v: 1}, loss, grads={v, x, s, y})
    assert [(g.ops[c.op].name, c.kind) for c in cuts] == [("sg", flow.STOPPED)]


def test_flow_integer_path_blames_the_op_that_made_the_integer() -> None:
    # gather(table, argmax(x)): the cut is the argmax, not the gather that consumed it
    g = G()
    v = g.op("v", "Placeholder")
    x = g.op("x", "ReadVariableOp", v)
    am = g.op("argmax", "ArgMax", x, float_out=False)
    table = g.op("table", "Const")
    gathered = g.op("gather", "GatherV2", table, am)
    loss = g.op("loss", "Sum", gathered)
    cuts, _, _ = analyse(g, {v: 1}, loss, grads={gathered, table})
    assert [(g.ops[c.op].name, c.kind, c.variables) for c in cuts] == [
        ("argmax", flow.NONDIFFERENTIABLE, 1)
    ]


def test_flow_assign_edge_carries_value_but_is_cut() -> None:
    # x[...].assign(patch); loss = sum(read(x)): patch reaches the loss only through the write
    g = G()
    hx = g.op("x", "Placeholder")
    hp = g.op("patch", "Placeholder")
    p = g.op("read_patch", "ReadVariableOp", hp)
    w = len(g.ops)
    g.op("assign", "AssignVariableOp", hx, p, write=True)
    rx = g.op("read_x", "ReadVariableOp", hx, assign_preds=[w])
    loss = g.op("loss", "Sum", rx)
    cuts, vsets, _ = analyse(g, {hx: 1, hp: 2}, loss, grads={hx, rx})
    assert vsets[g.producer[loss]] == 3  # both variables have a forward path
    assert [(g.ops[c.op].name, c.kind, c.variables) for c in cuts] == [("assign", flow.ASSIGN, 2)]


def test_flow_disconnected_variable_has_no_path_and_no_cut() -> None:
    g = G()
    a = g.op("a", "Placeholder")
    b = g.op("b", "Placeholder")
    ra = g.op("ra", "ReadVariableOp", a)
    g.op("rb", "ReadVariableOp", b)
    loss = g.op("loss", "Sum", ra)
    cuts, vsets, _ = analyse(g, {a: 1, b: 2}, loss, grads={a, ra})
    assert vsets[g.producer[loss]] == 1
    assert cuts == []


def test_flow_kind_of_prefers_stopped_then_assign() -> None:
    assert kind_of([flow.NONDIFFERENTIABLE, flow.ASSIGN]) == flow.ASSIGN
    assert kind_of([flow.NONDIFFERENTIABLE, flow.STOPPED, flow.ASSIGN]) == flow.STOPPED
    assert kind_of([]) is None


def _diamonds(n: int) -> tuple[G, int, int]:
    # each step: b = a * 1.01 + stop_gradient(a): two branches, one of them stopped
    g = G()
    v = g.op("v", "Placeholder")
    prev = g.op("x", "ReadVariableOp", v)
    grads = {v, prev}
    for i in range(n):
        c = g.op(f"c{i}", "Const")
        m = g.op(f"m{i}", "Mul", prev, c)
        s = g.op(f"s{i}", "StopGradient", prev)
        prev = g.op(f"b{i}", "AddV2", m, s)
        grads |= {m, s, prev}
    return g, v, prev


def test_flow_diamond_chain_finds_every_stopped_branch() -> None:
    # 2**2000 paths: enumerating them would never finish; the analysis visits each op once.
    # (Its speed is measured in bench/, not here.)
    g, v, loss = _diamonds(2000)
    cuts, _, _ = analyse(g, {v: 1}, loss, grads=set(range(len(g.producer))))
    assert len(cuts) == 2000
    assert {c.kind for c in cuts} == {flow.STOPPED}
