"""The names the user wrote: a subclassed model's ``self.box_head`` is reported beside
``dense_3``, in ``run``, ``inspect`` and ``check``, in every format (a real Keras model; the
attribute, evaluated on the model, must give back that very variable)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

pytestmark = pytest.mark.tf

SCHEMAS = Path(__file__).resolve().parents[2] / "schema"

#: Every way an attribute holds a layer or a variable: plain, nested, a list, a dict, a
#: Sequential held by an attribute, add_weight in a list; one layer given its own name.
MODEL = """\
import keras
import tensorflow as tf


class Encoder(keras.layers.Layer):
    def __init__(self):
        super().__init__()
        self.proj = keras.layers.Dense(8)

    def call(self, x):
        return self.proj(x)


class Detector(keras.Model):
    def __init__(self):
        super().__init__(name="detector")
        self.encoder = Encoder()
        self.heads = [keras.layers.Dense(2), keras.layers.Dense(2)]
        self.by_name = {"cls": keras.layers.Dense(1)}
        self.backbone = keras.Sequential([keras.layers.Dense(8), keras.layers.Dense(8)])
        self.box_head = keras.layers.Dense(4)
        self.named = keras.layers.Dense(1, name="named")
        self.scales = [self.add_weight(shape=(), name="s0")]

    def call(self, x):
        h = self.backbone(self.encoder(x))
        boxes = self.box_head(h) * self.scales[0] + self.named(h) + self.by_name["cls"](h)
        return boxes, self.heads[1](h)


model = Detector()
x = tf.random.normal((4, 5))
model(x)
"""

PROGRAM = (
    MODEL
    + """
with tf.GradientTape() as tape:
    boxes, classes = model(x)
    loss = tf.reduce_mean(boxes ** 2)
grads = tape.gradient(loss, model.trainable_variables)
"""
)

TARGET = (
    MODEL
    + """

def build():
    return {"losses": {"main": lambda: tf.reduce_mean(model(x)[0] ** 2)},
            "variables": model.trainable_variables}
"""
)


def _module(tmp_path: Path, name: str, code: str) -> dict[str, Any]:
    path = tmp_path / f"{name}.py"
    path.write_text(code, encoding="utf-8")
    scope: dict[str, Any] = {"__name__": name}
    exec(compile(code, str(path), "exec"), scope)
    return scope


def test_attributes_evaluate_to_their_variable(tmp_path: Path) -> None:
    from gradscope._src.frontends import keras_names

    model = _module(tmp_path, "detector_model", MODEL)["model"]
    names = keras_names.attributes(model)
    by_path = {v.path: names.get(id(v), "") for v in model.variables}
    for v in model.variables:  # each names this very variable, the keras.Variable and its tf one
        if by_path[v.path]:
            assert eval(f"model.{by_path[v.path]}", {"model": model}) is v, v.path
            assert names[id(v.value)] == by_path[v.path]
    assert by_path[model.box_head.kernel.path] == "box_head.kernel"
    assert by_path[model.heads[1].bias.path] == "heads[1].bias"
    assert by_path[model.encoder.proj.kernel.path] == "encoder.proj.kernel"
    assert by_path[model.by_name["cls"].kernel.path] == "by_name['cls'].kernel"
    assert by_path[model.backbone.layers[1].kernel.path] == "backbone.layers[1].kernel"
    assert by_path[model.scales[0].path] == "scales[0]"
    # a name the path already spells says nothing more: none
    assert model.named.kernel.path == "detector/named/kernel"
    assert by_path["detector/named/kernel"] == ""


def test_attributes_of_a_sequential_model_are_none() -> None:
    """``layers[2]`` says less than ``dense_2``: a Sequential's own layers get none."""
    import keras

    from gradscope._src.frontends import keras_names

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2), keras.layers.Dense(1)])
    assert keras_names.attributes(model) == {}


def _grads_none(tmp_path: Path) -> set[str]:
    """Bare TensorFlow: the paths of the variables whose gradient is None (Keras' names as a
    fresh process gives them, as gradscope runs the program), which must be heads[1]'s."""
    from gradscope._src.frontends import keras_names

    with keras_names.fresh():
        scope = _module(tmp_path, "bare_program", PROGRAM)
    variables, head = scope["model"].trainable_variables, scope["model"].heads[1]
    none = {v.path for v, g in zip(variables, scope["grads"], strict=True) if g is None}
    assert none == {v.path for v in head.trainable_variables}
    return none


def test_run_names_sources_by_their_attribute_in_every_format(tmp_path: Path) -> None:
    import gradscope
    from gradscope._src.report import render

    none = _grads_none(tmp_path)
    program = tmp_path / "train.py"
    program.write_text(PROGRAM, encoding="utf-8")
    report = gradscope.run(str(program))
    sources = {s.name: s for s in report.calls[0].sources}
    unread = {name for name, s in sources.items() if s.attribute.startswith("heads[1].")}
    assert unread == none and len(none) == 2  # heads[1] is the head no loss reads
    assert {sources[n].status for n in none} == {"none:disconnected"}
    assert {s.attribute for s in sources.values()} >= {
        "box_head.kernel",
        "encoder.proj.bias",
        "backbone.layers[0].kernel",
        "scales[0]",
    }
    data = report.to_dict()
    jsonschema.validate(data, json.loads((SCHEMAS / "run-v1.json").read_text()))
    kernel = next(n for n in none if n.endswith("kernel"))
    assert data["calls"][0]["sources"][kernel]["attribute"] == "heads[1].kernel"
    assert "attribute" not in data["calls"][0]["sources"]["detector/named/kernel"]
    for width in (80, 200):
        table = render(report, "table", width=width)
        assert max(len(line) for line in table.splitlines()) <= width
        assert f"{kernel} (heads[1].kernel)" in table
    assert f"`{kernel}` (`heads[1].kernel`)" in render(report, "markdown")


def test_inspect_and_check_name_variables_by_their_attribute(tmp_path: Path) -> None:
    import gradscope
    from gradscope._src.report import render

    none = _grads_none(tmp_path)
    target = tmp_path / "detector_target.py"
    target.write_text(TARGET, encoding="utf-8")
    report = gradscope.inspect(f"{target}:build")
    attributes = {v.name: v.attribute for v in report.variables}
    assert {n for n, a in attributes.items() if a.startswith("heads[1].")} == none
    kernel = next(n for n in none if n.endswith("kernel"))
    data = report.to_dict()
    jsonschema.validate(data, json.loads((SCHEMAS / "report-v1.json").read_text()))
    assert data["variables"][kernel]["attribute"] == "heads[1].kernel"
    assert data["variables"][model_kernel(report, "box_head")]["attribute"] == "box_head.kernel"
    table = render(report, "table", width=80)
    assert f"{kernel} (heads[1].kernel)" in table
    assert f"`{kernel}` (`heads[1].kernel`)" in render(report, "markdown")
    checked = gradscope.check(f"{target}:build")
    assert f"{kernel} (heads[1].kernel)" in render(checked, "table", width=80)
    grouped = render(report, "table", width=80, group="layer")
    layer = kernel.rsplit("/", 1)[0]
    assert f"{layer}/* (heads[1])" in grouped


def model_kernel(report: Any, attribute: str) -> str:
    return next(v.name for v in report.variables if v.attribute == f"{attribute}.kernel")


def test_group_label_names_the_layers_attributes() -> None:
    from gradscope._src.report.rows import group_label

    names = [f"deep/dense_{i}/{p}" for i in range(3) for p in ("kernel", "bias")]
    attributes = [f"blocks[{i}].{p}" for i in range(3) for p in ("kernel", "bias")]
    assert group_label(names, attributes) == (
        "deep/dense_0 … deep/dense_2 (blocks[0] … blocks[2])",
        "6 in 3 layers",
    )
    assert group_label(names) == ("deep/dense_0 … deep/dense_2", "6 in 3 layers")
    # a member without an attribute: the group claims none
    assert group_label(names, attributes[:-1]) == ("deep/dense_0 … deep/dense_2", "6 in 3 layers")


DEEP = """\
import keras
import tensorflow as tf


class Deep(keras.Model):
    def __init__(self):
        super().__init__(name="deep")
        self.blocks = [keras.layers.Dense(4, activation="tanh") for _ in range(60)]
        self.aux_head = keras.layers.Dense(3)
        self.box_head = keras.layers.Dense(1)

    def call(self, x):
        for block in self.blocks:
            x = block(x)
        return self.box_head(x), self.aux_head(x)


keras.utils.set_random_seed(0)
model = Deep()
x = tf.random.normal((4, 4))
model(x)


def build():
    return {"losses": {"main": lambda: tf.reduce_mean(model(x)[0] ** 2)},
            "variables": model.trainable_variables}
"""


def test_a_deep_models_picture_groups_as_the_table_does(tmp_path: Path) -> None:
    """60 layers: the picture is a few boxes; the gathered variables show their smallest and
    largest norm (a vanishing gradient is not hidden by 'ok'), the attributes of their layers;
    the head no loss reads is drawn, named by its attribute, in Mermaid and DOT."""
    import tensorflow as tf

    import gradscope
    from gradscope._src.frontends import keras_names
    from gradscope._src.report import dot, mermaid
    from tests.report import parse

    with keras_names.fresh():
        scope = _module(tmp_path, "deep_bare", DEEP)
    model, x = scope["model"], scope["x"]
    with tf.GradientTape() as tape:  # bare TensorFlow: which get a gradient, and how large
        loss = tf.reduce_mean(model(x)[0] ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    norms = [float(tf.norm(g)) for g in grads if g is not None]
    none = {v.path for v, g in zip(model.trainable_variables, grads, strict=True) if g is None}
    assert none == {v.path for v in model.aux_head.trainable_variables}
    target = tmp_path / "deep.py"
    target.write_text(DEEP, encoding="utf-8")
    report = gradscope.inspect(f"{target}:build", pictures=True)
    m = parse.mermaid(mermaid.picture(report, "main"))
    assert len(m.nodes) <= 6  # 183 ops and 122 variables, gathered
    (gathered,) = [a for a in m.nodes.values() if a["label"].startswith("122 variables")]
    assert gathered["label"].split("\n")[0] == (
        f"122 variables: ok {min(norms):.1e}…{max(norms):.1e}"
    )
    assert gathered["label"].split("\n")[-1] == "(blocks[0] … box_head)"
    (head,) = [a for a in m.nodes.values() if a["subgraph"] == "off_path"]
    layer = next(iter(none)).rsplit("/", 1)[0]
    assert head["label"] == f"{layer} (aux_head)\nkernel, bias\nno path to main"
    d = parse.dot(dot.picture(report, "main"))
    assert any(a["label"].startswith(f"{layer} (aux_head)\n") for a in d.nodes.values())
