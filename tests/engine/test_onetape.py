"""The eager route (issue 20): one forward pass under one tape gives TensorFlow's own answers,
the same cut points as the traced route, and refuses what it cannot answer exactly."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gradscope._src.engine import modes
from gradscope._src.results.facts import RunFacts

pytestmark = pytest.mark.tf

X = [[1.0, 2.0], [3.0, -1.0]]
W = [[0.5, -1.0], [2.0, 0.25]]
U = [1.5, -0.5]

#: w reaches loss ``a`` along two paths, one cut by a stop_gradient (``ok`` with a cut
#: point); ``frozen`` sees w only through it; u's argmax path is cut; spare reaches nothing.
MIXED = f"""\
gradscope: 1
inputs:
  x: {{values: {X}}}
variables:
  w: {{values: {W}}}
  u: {{values: {U}}}
  spare: {{values: [1.0, 1.0]}}
nodes:
  - {{name: h, op: matmul, inputs: [x, w]}}
  - {{name: frozen, op: stop_gradient, inputs: [h]}}
  - {{name: both, op: add, inputs: [h, frozen]}}
  - {{name: t, op: tanh, inputs: [both]}}
  - {{name: scaled, op: multiply, inputs: [t, u]}}
  - {{name: loss_a, op: reduce_sum, inputs: [scaled]}}
  - {{name: only_frozen, op: reduce_sum, inputs: [frozen]}}
  - {{name: best, op: argmax, inputs: [u]}}
  - {{name: picked, op: gather, inputs: [x, best]}}
  - {{name: by_argmax, op: reduce_sum, inputs: [picked]}}
losses:
  a: loss_a
  frozen: only_frozen
  argmax: by_argmax
"""


def _bare() -> dict[str, dict[str, Any]]:
    """Each loss's gradients as bare TensorFlow computes them, by variable name."""
    import tensorflow as tf

    x = tf.constant(X)
    w, u, spare = tf.Variable(W), tf.Variable(U), tf.Variable([1.0, 1.0])
    with tf.GradientTape(persistent=True) as tape:
        h = tf.matmul(x, w)
        frozen = tf.stop_gradient(h)
        losses = {
            "a": tf.reduce_sum(tf.tanh(h + frozen) * u),
            "frozen": tf.reduce_sum(frozen),
            "argmax": tf.reduce_sum(tf.gather(x, tf.argmax(u))),
        }
    return {
        name: dict(zip(["w", "u", "spare"], tape.gradient(loss, [w, u, spare]), strict=True))
        for name, loss in losses.items()
    }


def _engine(path: str, one_tape: bool) -> tuple[Any, RunFacts]:
    from gradscope._src.engine.trace import Engine
    from gradscope._src.frontends.yaml import load_spec
    from gradscope._src.frontends.yaml.forward.model import SpecModel

    engine = Engine(SpecModel(load_spec(path)), one_tape=one_tape)
    return engine, engine.run()


def _write(directory: Path, name: str, text: str) -> str:
    path = directory / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, RunFacts, RunFacts]:
    """The spec run both ways: (the eager-route engine, its facts, the traced facts)."""
    path = _write(tmp_path_factory.mktemp("onetape"), "mixed.yaml", MIXED)
    engine, eager = _engine(path, one_tape=True)
    _, traced = _engine(path, one_tape=False)
    return engine, eager, traced


def test_mixed_spec_takes_the_eager_route(mixed: tuple[Any, RunFacts, RunFacts]) -> None:
    engine, _, _ = mixed
    assert engine.route == "one-tape"


def test_eager_route_answers_what_tensorflow_returns(
    mixed: tuple[Any, RunFacts, RunFacts],
) -> None:
    _, facts, _ = mixed
    bare = _bare()
    for loss in facts.losses:
        for pair in loss.pairs:
            grad = bare[loss.name][pair.variable]
            assert pair.has_gradient == (grad is not None), (loss.name, pair.variable)
            if grad is not None:
                expected = float(np.linalg.norm(np.asarray(tf_dense(grad))))
                assert pair.norm == pytest.approx(expected, rel=1e-5)
    assert facts.loss("a").value == pytest.approx(
        float(np.sum(np.tanh(2 * np.asarray(X) @ np.asarray(W)) * np.asarray(U))), rel=1e-5
    )


def tf_dense(grad: Any) -> Any:
    import tensorflow as tf

    return tf.convert_to_tensor(grad).numpy()


def test_eager_route_finds_the_traced_routes_cut_points(
    mixed: tuple[Any, RunFacts, RunFacts],
) -> None:
    _, eager, traced = mixed
    assert [v.name for v in eager.variables] == [v.name for v in traced.variables]
    for mine, theirs in zip(eager.losses, traced.losses, strict=True):
        assert mine.name == theirs.name
        for a, b in zip(mine.pairs, theirs.pairs, strict=True):
            assert (a.variable, a.requested, a.has_gradient, a.reachable, a.sparse) == (
                b.variable, b.requested, b.has_gradient, b.reachable, b.sparse
            )  # fmt: skip
            assert a.cut_points == b.cut_points
            assert (a.norm is None) == (b.norm is None)
            if a.norm is not None and b.norm is not None:
                assert math.isclose(a.norm, b.norm, rel_tol=1e-5)
    a_w = eager.loss("a").pairs[0]
    assert a_w.has_gradient and [c.op for c in a_w.cut_points] == ["StopGradient"]
    assert [c.op for c in eager.loss("argmax").pairs[1].cut_points] == ["ArgMax"]


REFUSED = {
    # a loss with stop_gradients: a tape has no such argument
    "stop-gradients": """\
        gradscope: 1
        variables:
          w: {values: [1.0, 2.0]}
        nodes:
          - {name: h, op: multiply, inputs: [w, 3.0]}
          - {name: o, op: reduce_sum, inputs: [h]}
        losses:
          o: {node: o, stop_gradients: [h]}
        """,
    # a write: the eager forward pass would change what the traced one reads
    "assign": """\
        gradscope: 1
        variables:
          w: {values: [1.0, 2.0]}
          v: {values: [0.0, 0.0]}
        nodes:
          - {name: write, op: assign, inputs: {ref: v, value: w}}
          - {name: o, op: reduce_sum, inputs: [v]}
        losses:
          o: o
        """,
    # a random op: an eager pass would draw other numbers than the traced function
    "random": """\
        gradscope: 1
        variables:
          w: {values: [1.0, 2.0, 3.0, 4.0]}
        nodes:
          - {name: d, op: nn.dropout, inputs: [w], attrs: {rate: 0.5, seed: 1}}
          - {name: o, op: reduce_sum, inputs: [d]}
        losses:
          o: o
        """,
    # an op no review says passes every floating input a gradient
    "unreviewed-op": """\
        gradscope: 1
        variables:
          w: {values: [3.0, 1.0, 2.0]}
        nodes:
          - {name: top, op: math.top_k, inputs: [w], attrs: {k: 2}}
          - {name: o, op: reduce_sum, inputs: ["top[0]"]}
        losses:
          o: o
        """,
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_runs_take_the_traced_route(tmp_path: Path, name: str) -> None:
    path = _write(tmp_path, f"{name}.yaml", REFUSED[name])
    engine, facts = _engine(path, one_tape=True)
    assert engine.route == "traced"
    _, traced = _engine(path, one_tape=False)
    assert facts.losses == traced.losses


def test_mode_parity_keeps_the_traced_function() -> None:
    with modes.comparing():
        assert not modes.one_tape_allowed()
    with modes.using(modes.EAGER):
        assert not modes.one_tape_allowed()
    assert modes.one_tape_allowed()


def test_batch_norm_mean_from_a_variable_is_refused() -> None:
    """FusedBatchNorm's gradient gives its mean input none: no static answer is exact."""
    import tensorflow as tf

    from gradscope._src.engine import cuts as flow
    from gradscope._src.engine import passing
    from gradscope._src.engine.graph import Extracted, GradientRegistry

    mean = tf.Variable([0.5, 0.5])
    found: list[str] = []

    def body() -> Any:
        graph = tf.compat.v1.get_default_graph()
        handle = graph.capture(mean.handle)
        x = tf.ones([1, 2, 2, 2])
        y, _, _ = tf.compat.v1.nn.fused_batch_norm(
            x, tf.ones([2]), tf.zeros([2]), mean=mean, variance=tf.ones([2]), is_training=False
        )
        loss = tf.reduce_sum(y)
        extracted = Extracted(graph.get_operations(), GradientRegistry())
        vsets = flow.variable_sets(extracted.graph, {extracted.tensor_id(handle): 1})
        target = extracted.tensor_id(loss)
        reach = flow.reaching(extracted.graph, extracted.graph.producer[target])
        received = passing.received_from(extracted, target)
        found.append(passing.refusal(extracted, vsets, reach, received))
        return loss

    tf.function(body).get_concrete_function()
    assert "FusedBatchNorm" in found[0]
    with tf.GradientTape() as tape:  # and TensorFlow indeed gives the mean no gradient
        y, _, _ = tf.compat.v1.nn.fused_batch_norm(
            tf.ones([1, 2, 2, 2]), tf.ones([2]), tf.zeros([2]), mean=mean,
            variance=tf.ones([2]), is_training=False,
        )  # fmt: skip
        loss = tf.reduce_sum(y)
    assert tape.gradient(loss, mean) is None


def test_json_report_says_which_route_ran(mixed: tuple[Any, RunFacts, RunFacts]) -> None:
    from gradscope._src import pipeline

    path = mixed[1].target
    assert pipeline.run(path).report.to_dict()["route"] == "one-tape"
    with modes.comparing():
        assert pipeline.run(path).report.to_dict()["route"] == "traced"
    numeric = pipeline.run(path, pipeline.Request(numeric=True)).report.to_dict()
    assert numeric["route"] == "traced"  # --numeric keeps the traced route


def test_pad_constant_from_a_variable_is_refused_and_traced(tmp_path: Path) -> None:
    """PadV2's gradient gives its constant none: the traced route answers, as TensorFlow."""
    import tensorflow as tf

    path = _write(
        tmp_path,
        "pad.yaml",
        """\
        gradscope: 1
        variables:
          x: {values: [1.0, 2.0]}
          c: {values: 3.0}
        nodes:
          - {name: p, op: pad, inputs: {tensor: x, constant_values: c}, attrs: {paddings: [[1, 1]]}}
          - {name: o, op: reduce_sum, inputs: [p]}
        losses:
          o: o
        """,
    )
    engine, facts = _engine(path, one_tape=True)
    assert engine.route == "traced"
    x, c = tf.Variable([1.0, 2.0]), tf.Variable(3.0)
    with tf.GradientTape() as tape:
        o = tf.reduce_sum(tf.pad(x, [[1, 1]], constant_values=c))
    bare = dict(zip(["x", "c"], tape.gradient(o, [x, c]), strict=True))
    for pair in facts.loss("o").pairs:
        assert pair.has_gradient == (bare[pair.variable] is not None)
