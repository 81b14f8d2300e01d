"""The picture as data: grouping ops into boxes, classifying links, NaN, expand, Keras layers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from gradscope._src.engine import cuts as flow
from gradscope._src.engine.picture.draw import CUT, GRADIENT, LOSS, VALUE, VARIABLE, Scene, draw
from gradscope._src.engine.picture.grouping import scope_boxes
from tests.pictures import seed_report

# Op names as Keras 3 names them inside a tf.function (printed from TensorFlow 2.21).
SEQUENTIAL = [
    "sequential_1/dense_1/Cast/ReadVariableOp",
    "sequential_1/dense_1/MatMul",
    "sequential_1/dense_1/BiasAdd/ReadVariableOp",
    "sequential_1/dense_1/BiasAdd",
    "sequential_1/dense_1/Relu",
    "sequential_1/batch_normalization_1/Cast/ReadVariableOp",
    "sequential_1/batch_normalization_1/moments/mean",
    "sequential_1/batch_normalization_1/moments/StopGradient",
    "sequential_1/batch_normalization_1/batchnorm/add_1",
    "sequential_1/dropout_1/stateless_dropout/SelectV2",
    "sequential_1/dense_1_2/MatMul",
    "sequential_1/dense_1_2/BiasAdd/ReadVariableOp",
    "Square",
    "Mean",
]


def test_scope_boxes_one_box_per_keras_layer() -> None:
    boxes = scope_boxes(SEQUENTIAL)
    assert boxes == [
        *["sequential_1/dense_1"] * 5,
        *["sequential_1/batch_normalization_1"] * 4,
        "sequential_1/dropout_1",
        *["sequential_1/dense_1_2"] * 2,
        "Square",
        "Mean",
    ]


def test_scope_boxes_ops_of_a_subclassed_model_are_their_own_boxes() -> None:
    names = [
        "sub_1/dense_4_1/Cast/ReadVariableOp",
        "sub_1/dense_4_1/MatMul",
        "sub_1/Relu",
        "sub_1/dense_5_1/BiasAdd/ReadVariableOp",
        "sub_1/dense_5_1/BiasAdd",
    ]
    assert scope_boxes(names) == [
        "sub_1/dense_4_1",
        "sub_1/dense_4_1",
        "sub_1/Relu",
        "sub_1/dense_5_1",
        "sub_1/dense_5_1",
    ]


def test_scope_boxes_a_one_layer_model_is_one_box() -> None:
    assert scope_boxes(["model/dense/MatMul", "model/dense/BiasAdd", "Mean"]) == [
        "model",
        "model",
        "Mean",
    ]


def _graph() -> flow.Graph:
    """handle -> read -> mul -> stop_gradient -> add <- mul (a straight-through shape)."""
    ops = [
        flow.Op("w", "Placeholder", [], [0]),
        flow.Op("read", "ReadVariableOp", [0], [1]),
        flow.Op("mul", "Mul", [1], [2]),
        flow.Op("stop", "StopGradient", [2], [3]),
        flow.Op("add", "AddV2", [2, 3], [4]),
    ]
    return flow.Graph(ops, producer=[0, 1, 2, 3, 4], differentiable=[True] * 5)


def _scene(received: set[int], locate: Callable[[int], Any] | None = None) -> Scene:
    graph = _graph()
    sets = flow.variable_sets(graph, {0: 1})
    reach = flow.reaching(graph, 4)
    cuts = flow.find_cuts(graph, sets, reach, received, set())
    names = [op.name for op in graph.ops]
    return Scene(
        loss="L", graph=graph, names=names, variables=["w", "spare"], handle_ops={0: 0},
        all_sets=sets, mask=1, reach=reach, received=received, cuts=cuts, stop_ops=set(),
        target_op=4, locate=locate or (lambda i: (names[i], f"m.py:{i + 10}")),
        visible=lambda _i: True,
    )  # fmt: skip


def test_draw_classifies_links_as_the_cut_analysis_does() -> None:
    pic = draw(_scene({0, 1, 2, 3, 4})).picture
    assert [b.name for b in pic.boxes] == ["w", "read", "mul", "stop", "add", "L"]
    assert pic.boxes[0].kind == VARIABLE and pic.boxes[-1].kind == LOSS
    assert pic.link("w", "read").flow == GRADIENT
    assert pic.link("mul", "add").flow == GRADIENT
    cut = pic.link("mul", "stop")
    assert cut.flow == CUT
    assert [(c.node, c.kind, c.source) for c in cut.cuts] == [("stop", "stopped", "m.py:13")]
    assert pic.link("stop", "add").flow == GRADIENT
    assert pic.link("add", "L").flow == GRADIENT
    assert pic.off_path == ("spare",)
    assert pic.cut_boxes == {pic.box("stop").id}


def test_draw_grey_where_no_gradient_arrives() -> None:
    # Only the stop_gradient's output gets a gradient: the path through `mul` is dead.
    pic = draw(_scene({3, 4})).picture
    assert pic.link("mul", "stop").flow == CUT
    assert pic.link("read", "mul").flow == VALUE
    assert pic.link("w", "read").flow == VALUE


def test_draw_blames_the_link_into_a_node_that_cuts_inside() -> None:
    # read, mul and stop belong to one spec node `n`: the cut happens inside it, so the
    # link from the variable into `n` turns red rather than grey.
    def locate(i: int) -> tuple[str, str]:
        return ("n", "s.yaml:3") if i in (1, 2, 3) else ("total", "s.yaml:4")

    pic = draw(_scene({3, 4}, locate)).picture
    assert [b.name for b in pic.boxes] == ["w", "n", "total", "L"]
    link = pic.link("w", "n")
    assert link.flow == CUT and link.cuts[0].node == "n"
    assert pic.link("n", "total").flow == GRADIENT


def test_draft_finish_marks_only_gradient_links_nan() -> None:
    draft = draw(_scene({0, 1, 2, 3, 4}))
    pic = draft.finish([False] * len(draft.picture.links))
    assert [link.nan for link in pic.links] == [link.flow == GRADIENT for link in pic.links]
    assert not pic.link("mul", "stop").nan
    # the NaN check of w -> read is the gradient of w's handle, tensor 0
    assert draft.checks[[link.dst for link in pic.links].index(pic.box("read").id)] == (0,)


def test_draw_a_loss_no_variable_reaches_is_the_loss_alone() -> None:
    scene = _scene(set())
    scene.mask, scene.all_sets = 0, [0] * 5
    pic = draw(scene).picture
    assert [b.kind for b in pic.boxes] == [LOSS] and pic.links == ()
    assert pic.off_path == ("w", "spare")


@pytest.mark.tf
def test_picture_expand_has_a_box_per_op() -> None:
    import gradscope._src.api as api

    report = api.inspect("configs/straight-through.yaml", losses=["loss_ste"], pictures=True)
    grouped = report.picture("loss_ste")
    expanded = api.graph("configs/straight-through.yaml", "loss_ste", expand=True)
    assert grouped is not None and expanded is not None and expanded.expanded
    assert len(expanded.boxes) > len(grouped.boxes)
    names = [b.name for b in expanded.boxes]
    assert "gap_frozen/StopGradient" in names and "h/MatMul" in names
    cuts = [link for link in expanded.links if link.flow == CUT]
    assert len(cuts) == 1 and cuts[0].dst == expanded.box("gap_frozen/StopGradient").id
    assert cuts[0].src == expanded.box("round_gap/Sub").id


@pytest.mark.tf
def test_picture_nan_gradient_is_marked_where_bare_tensorflow_sees_it(write_spec: Any) -> None:
    import gradscope._src.api as api
    from gradscope._src.engine.tf_import import import_tensorflow

    tf = import_tensorflow()
    path = write_spec(
        """
        gradscope: 1
        variables:
          w: {values: [0.0, 4.0]}
        nodes:
          - {name: a, op: multiply, inputs: [w, 1.0]}
          - {name: r, op: sqrt, inputs: [a]}
          - {name: s, op: reduce_sum, inputs: [r]}
        losses:
          l: s
        """
    )
    w = tf.Variable([0.0, 4.0])
    with tf.GradientTape(persistent=True) as tape:
        a = w * 1.0
        r = tf.sqrt(a)
        loss = tf.reduce_sum(r)

    def finite(x: Any) -> bool:
        return bool(tf.reduce_all(tf.math.is_finite(tape.gradient(loss, x))))

    assert not finite(w) and not finite(a) and finite(r)
    pic = api.inspect(path, pictures=True).picture("l")
    assert pic is not None
    assert pic.link("w", "a").nan  # w's own gradient: its pair says inf
    assert pic.link("a", "r").nan  # the gradient into a's output is inf
    assert not pic.link("r", "s").nan  # the one into sqrt's output is finite
    assert not pic.link("s", "l").nan


class _KerasTarget:
    """A Python target as the targets engineer's Traceable sees one: ``locate`` names ops."""

    target = "model.py:build"

    def __init__(self) -> None:
        import keras

        self.model = keras.Sequential(
            [keras.Input((4,)), keras.layers.Dense(8, activation="relu"),
             keras.layers.BatchNormalization(), keras.layers.Dense(3)]
        )  # fmt: skip

    def trace(self) -> tuple[list[Any], list[Any]]:
        from gradscope._src.engine.protocol import LossEntry, VariableEntry
        from gradscope._src.engine.tf_import import import_tensorflow

        tf = import_tensorflow()
        y = self.model(tf.ones((2, 4)), training=True)
        loss = LossEntry("mse", tf.reduce_mean(tf.square(y)))
        variables = [
            VariableEntry(v.path, v, v.trainable, "model.py:3") for v in self.model.weights
        ]
        return [loss], variables

    def locate(self, op: Any) -> tuple[str, str]:
        return op.name, "model.py:9"

    def visible(self, op: Any) -> bool:
        return False

    def describe(self, op: Any) -> str | None:
        return None

    def display_path(self, filename: str) -> str:
        return filename

    def named_inputs(self) -> list[tuple[str, str, Any]]:
        return []

    def trace_error(self, exc: BaseException) -> BaseException:
        return exc


@pytest.mark.tf
def test_picture_python_target_one_box_per_keras_layer() -> None:
    from gradscope._src.engine.trace import Engine

    facts = Engine(_KerasTarget(), pictures=True).run()
    pic = facts.losses[0].picture
    assert pic is not None
    ops = [b for b in pic.boxes if b.kind not in (VARIABLE, LOSS)]
    layers = [b.scope.rsplit("/", 1)[-1] for b in ops]
    assert len(ops) == 5, [b.scope for b in ops]  # dense, batch_normalization, dense, Square, Mean
    assert [layer.split("_")[0] for layer in layers[:3]] == ["dense", "batch", "dense"]
    assert layers[3:] == ["Square", "Mean"]
    for b in pic.boxes:
        if b.kind == VARIABLE and b.name.endswith("kernel"):
            link = next(link for link in pic.links if link.src == b.id)
            assert link.flow == GRADIENT


@pytest.mark.tf
def test_pictures_are_drawn_only_when_asked() -> None:
    import gradscope._src.api as api

    assert api.inspect("configs/straight-through.yaml").pictures == ()
    report = seed_report("straight-through")
    assert [p.loss for p in report.pictures] == ["loss_ste", "loss_naive"]
    assert "pictures" not in report.to_dict()  # the JSON report keeps its contract


def _specs() -> list[str]:
    from tests.test_golden import CASES, ROOT

    return [str(path.relative_to(ROOT)) for path, _ in CASES]


@pytest.mark.tf
@pytest.mark.parametrize("path", _specs())
def test_picture_red_marks_are_exactly_the_reported_cut_points(path: str) -> None:
    import gradscope._src.api as api

    report = api.inspect(path, pictures=True)
    for loss in report.losses:
        pic = report.picture(loss.name)
        assert pic is not None
        shown = {c for link in pic.links if link.flow == CUT for c in link.cuts}
        shown |= {c for box in pic.boxes for c in box.cuts}
        assert shown == {c for pair in loss.pairs for c in pair.cut_points}, loss.name
        drawn = {b.name for b in pic.boxes if b.kind == VARIABLE}
        for pair in loss.pairs:  # a variable with no path is left out, and only then
            assert (pair.variable in drawn) == (pair.variable not in pic.off_path)
            if pair.status == "none:disconnected":
                assert pair.variable in pic.off_path, (loss.name, pair.variable)


@pytest.mark.tf
def test_an_edge_past_an_earlier_cut_carries_value_only() -> None:
    """w is stopped at s; the link from s into the comparison g is grey, not a second cut,
    while v's own link into g is the cut (tests/cases/cut-then-compare.yaml)."""
    import gradscope._src.api as api

    report = api.inspect("tests/cases/cut-then-compare.yaml", pictures=True)
    pic = report.picture("l")
    assert pic is not None
    names = {b.id: b.name for b in pic.boxes}
    into_g = {names[link.src]: link.flow for link in pic.links if names[link.dst] == "g"}
    assert into_g == {"s": VALUE, "v": CUT}


def test_summary_words_a_box_as_a_user_reads_it() -> None:
    from gradscope._src.engine.picture.grouping import summary

    assert summary(["ReadVariableOp", "MatMul", "BiasAdd", "Relu"]) == "matmul + bias, relu"
    assert summary(["Cast", "MatMul", "AddV2"]) == "matmul + bias"  # Keras 3's Dense
    loss = ["compile_loss/sparse_categorical_crossentropy/Log", "compile_loss/mse/Sub"]
    assert summary(["Log", "Sub"], loss) == "sparse categorical crossentropy + mse"
    many = ["GreaterEqual", "SelectV2", "Mean", "Sum", "Log", "Neg", "Mul", "Cast"]
    assert summary(many) == "compare, where, mean … 7 ops"


@pytest.mark.tf
def test_boxes_name_the_layer_or_the_users_line() -> None:
    """docs/examples/models.py's aux loss: its layers by name and what they compute, the
    stop_gradient by the user's own call, the loss's ops in one box of the user's line; no
    TensorFlow op type counted ("MatMul+2 more") anywhere."""
    import gradscope._src.api as api

    report = api.inspect("docs/examples/models.py:build", pictures=True)
    pic = next(p for p in report.pictures if p.loss == "aux")
    ops = {b.name: b for b in pic.boxes if b.kind not in (VARIABLE, LOSS)}
    layers = {n.rsplit("_", 1)[0]: b for n, b in ops.items() if b.scope.startswith("net")}
    assert layers["body"].op == "matmul + bias, relu" and layers["head_aux"].op == "matmul + bias"
    stop = next(b for b in ops.values() if b.op == "stop_gradient")
    assert stop.name == "…keras.ops.stop_gradient(body))" and stop.source.endswith("models.py:13")
    (line,) = [b for b in ops.values() if b.scope.startswith('"aux": lambda')]
    assert line.op == "mean" and line.source.endswith("models.py:21")
    assert not any("more" in b.op or b.op[:1].isupper() for b in ops.values())
