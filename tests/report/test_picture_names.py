"""A Keras model's picture: boxes named after the layers the report's variables name (not
TensorFlow's per-call scopes), and the head no loss reads drawn and marked in every format."""

from __future__ import annotations

from pathlib import Path

import pytest

from gradscope._src.report import dot, mermaid
from tests.report import parse

pytestmark = pytest.mark.tf

TARGET = """\
import keras
import tensorflow as tf

def model_and_data():
    keras.utils.set_random_seed(0)
    inputs = keras.Input((4,))
    hidden = keras.layers.Dense(8, name="body")(inputs)
    main = keras.layers.Dense(1, name="main_head")(hidden)
    aux = keras.layers.Dense(3, name="aux_head")(hidden)
    return keras.Model(inputs, [main, aux], name="detector"), tf.ones((2, 4))

def build():
    model, x = model_and_data()
    return {"losses": {"main": lambda: tf.reduce_sum(model(x)[0])}, "model": model}
"""


@pytest.fixture(scope="module")
def heads(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, dict[str, bool]]:
    import importlib.util

    import tensorflow as tf

    import gradscope._src.api as api

    folder: Path = tmp_path_factory.mktemp("heads")
    (folder / "heads.py").write_text(TARGET, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("heads_reference", folder / "heads.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model, x = module.model_and_data()
    with tf.GradientTape() as tape:  # bare TensorFlow: which variables the loss reaches
        loss = tf.reduce_sum(model(x)[0])
    grads = tape.gradient(loss, model.trainable_variables)
    none = {v.path: g is None for v, g in zip(model.trainable_variables, grads, strict=True)}
    return api.inspect(f"{folder / 'heads.py'}:build", pictures=True), none


def test_picture_boxes_carry_the_layer_names_of_the_variables(heads: tuple) -> None:
    report, _ = heads
    d = parse.dot(dot.picture(report, "main"))
    ops = [a["label"].split("\n")[0] for a in d.nodes.values() if a.get("class") == "op"]
    layers = {v.name.rsplit("/", 1)[0] for v in report.variables}
    assert {"body", "main_head"} <= set(ops)
    assert all(name in layers or ("/" not in name and not name.startswith(("body_", "main_head_")))
               for name in ops)  # fmt: skip


def test_the_unread_head_is_drawn_in_dot_and_mermaid(heads: tuple) -> None:
    report, none = heads
    unread = sorted(name for name, is_none in none.items() if is_none)
    assert unread == ["aux_head/bias", "aux_head/kernel"]  # bare TensorFlow's answer
    d = parse.dot(dot.picture(report, "main"))
    (box,) = [a for a in d.nodes.values() if "off-path" in a.get("class", "")]
    assert box["label"] == "aux_head\nkernel, bias\nno path to main"
    m = parse.mermaid(mermaid.picture(report, "main"))
    (mbox,) = [a for a in m.nodes.values() if a["subgraph"] == "off_path"]
    assert mbox["label"] == "aux_head\nkernel, bias\nno path to main"
    assert mbox["class"] == "off_none"
