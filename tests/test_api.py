"""The Python API: ``gradscope.inspect`` (and ``pipeline.run``, which every command uses) on specs
and Python targets, ``Report.to_dict()`` and ``Report.__rich__``."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import gradscope
from gradscope._src import api, pipeline
from gradscope._src.results import report as m
from tests.conftest import ROOT

SCHEMA = ROOT / "schema" / "report-v1.json"
HERE = Path(__file__)


def test_import_gradscope_stays_free_of_tensorflow(no_tensorflow: dict[str, str]) -> None:
    code = (
        "import gradscope, gradscope.keras, sys; "
        "print(gradscope.Target.__name__, gradscope.Report.__name__, callable(gradscope.inspect),"
        " callable(gradscope.keras.targets), 'tensorflow' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], env=no_tensorflow, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["Target", "Report", "True", "True", "False"]


def test_unknown_attribute_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        gradscope.nope  # noqa: B018


@pytest.mark.tf
def test_run_accepts_every_kind_of_target(monkeypatch: pytest.MonkeyPatch) -> None:
    import tensorflow as tf

    from gradscope._src.frontends.yaml import load_spec

    w = tf.Variable(2.0, name="w")
    target = gradscope.Target(losses={"l": lambda: w * w})
    monkeypatch.chdir(ROOT / "tests" / "frontends" / "python" / "data")
    forms: list[object] = [
        target,
        {"losses": {"l": lambda: w * w}},
        lambda: target,
        "mypkg.models:two_heads",
        "loose_model.py:build",
        str(ROOT / "configs" / "multitask.yaml"),
        load_spec(str(ROOT / "configs" / "multitask.yaml")),
    ]
    for form in forms:
        out = pipeline.run(form)
        report, facts = out.report, out.facts
        assert isinstance(report, m.Report) and report.losses, form
        assert facts.losses, form
    assert api.inspect(target).loss("l").pair("w").norm == pytest.approx(4.0)  # d(w^2)/dw = 2w


@pytest.mark.tf
def test_report_of_a_python_target_is_the_json_report() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    import tensorflow as tf

    w = tf.Variable([1.0, -2.0], name="w")
    v = tf.Variable(3.0, name="v")
    report = gradscope.inspect(
        {"losses": {"l": lambda: tf.reduce_sum(tf.stop_gradient(w) * v)}, "name": "tiny"}
    )
    data = json.loads(json.dumps(report.to_dict()))
    jsonschema.validate(data, json.loads(SCHEMA.read_text()))
    assert data["spec"] == "tiny" and data["name"] == "tiny"
    (cut,) = data["losses"]["l"]["variables"]["w"]["cut_points"]
    assert cut["op"] == "StopGradient" and cut["kind"] == "stopped"
    assert cut["source"].startswith("tests/test_api.py:")


@pytest.mark.tf
def test_report_prints_as_the_table_in_rich_consoles() -> None:
    import tensorflow as tf
    from rich.console import Console

    w = tf.Variable(2.0, name="weight")
    report = gradscope.inspect({"losses": {"double": lambda: w * 2.0}})
    console = Console(file=io.StringIO(), width=100, color_system=None)
    console.print(report)
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert "weight" in text and "double" in text and "1 pair: 1 ok" in text


@pytest.mark.tf
def test_compare_through_run_matches_bare_dot_products() -> None:
    import tensorflow as tf

    a = tf.Variable([1.0, 2.0], name="a")
    b = tf.Variable([3.0, -1.0], name="b")

    def sum_loss() -> tf.Tensor:
        return tf.reduce_sum(a * b)

    def square_loss() -> tf.Tensor:
        return tf.reduce_sum(a * a)

    def numpy_loss() -> tf.Tensor:  # untraceable: compared from its eager gradients
        return tf.reduce_sum(a * b) * float(np.sum(b.numpy()))

    losses = {"sum": sum_loss, "square": square_loss, "numpy": numpy_loss}
    request = pipeline.Request(compare=(("sum", "square"), ("numpy", "square")))
    facts = pipeline.run({"losses": losses}, request).facts
    bare = {}
    for name, fn in losses.items():
        with tf.GradientTape() as tape:
            value = fn()
        bare[name] = [g if g is None else g.numpy() for g in tape.gradient(value, [a, b])]
    first, second = facts.comparisons
    assert set(first.dots) == {"a"}  # the only variable both reach
    assert first.dots["a"] == pytest.approx(float(np.dot(bare["sum"][0], bare["square"][0])))
    assert second.dots["a"] == pytest.approx(float(np.dot(bare["numpy"][0], bare["square"][0])))
    for got, (x, y) in ((first, ("sum", "square")), (second, ("numpy", "square"))):
        agree = np.mean(np.sign(bare[x][0]) == np.sign(bare[y][0]))
        assert got.sign_agreement["a"] == pytest.approx(agree)


@pytest.mark.tf
def test_check_holds_a_target_to_its_expect() -> None:
    import tensorflow as tf

    w = tf.Variable(2.0, name="w")
    spare = tf.Variable(1.0, name="spare")

    def build() -> gradscope.Target:
        return gradscope.Target(
            losses={"l": lambda: w * 3.0},
            variables=[w, spare],
            expect={"l": {"none": ["w"]}},
        )

    report = gradscope.inspect(build)
    kinds = {(p.kind, p.variable): p for p in report.problems}
    assert set(kinds) == {(m.UNEXPECTED_CONNECTED, "w"), (m.NEVER_TRAINED, "spare")}
    problem = kinds[(m.UNEXPECTED_CONNECTED, "w")]
    line = next(i for i, t in enumerate(HERE.read_text().splitlines(), 1) if '{"none": ["w"]}' in t)
    assert problem.to_dict()["source"] == f"tests/test_api.py:{line}"
    assert report.failures == report.problems


TWO_HEADS = """\
import tensorflow as tf

def build():
    w1 = tf.Variable([1.0, 2.0], name="w1")
    w2 = tf.Variable([3.0], name="w2")
    spare = tf.Variable([0.5], name="spare")
    return {
        "losses": {"a": lambda: tf.reduce_sum(w1 * w1), "b": lambda: tf.reduce_sum(w2)},
        "variables": [w1, w2, spare],
    }
"""


@pytest.mark.tf
def test_check_keys_problems_alike_with_and_without_expect(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One pipeline: ``check(target)`` and ``check(target, expect=...)`` locate a variable's
    problem at the same file and line (baselines and SARIF fingerprints depend on it)."""
    import tensorflow as tf

    (tmp_path / "t.py").write_text(TWO_HEADS)
    monkeypatch.chdir(tmp_path)
    plain = api.check("t.py:build").failures
    held = api.check("t.py:build", expect={"a": {"none": ["w2"]}}).failures
    w1, w2, spare = tf.Variable([1.0, 2.0]), tf.Variable([3.0]), tf.Variable([0.5])
    with tf.GradientTape(persistent=True) as tape:  # bare TensorFlow: spare gets no gradient
        a, b = tf.reduce_sum(w1 * w1), tf.reduce_sum(w2)
    assert tape.gradient(a, spare) is None and tape.gradient(b, spare) is None
    assert [(p.kind, p.variable) for p in plain] == [(m.NEVER_TRAINED, "spare")]
    assert [(p.kind, p.variable) for p in held] == [(m.NEVER_TRAINED, "spare")]
    assert plain[0].key() == held[0].key() == ("t.py", None, "spare", m.NEVER_TRAINED)
    assert plain[0].line == held[0].line == 6  # where `spare` was created


@pytest.mark.tf
def test_draw_is_the_public_way_to_a_picture() -> None:
    """gradscope.draw draws a report's picture as `gradscope graph` does (the docs send users
    here, not into gradscope._src.report); bad input is a UsageError that says what it saw."""
    from gradscope._src.report import dot, mermaid

    spec = str(ROOT / "configs" / "stop-gradient.yaml")
    report = gradscope.inspect(spec, pictures=True)
    loss = report.losses[0].name
    assert gradscope.draw(report, loss) == mermaid.picture(report, loss)
    assert gradscope.draw(report, loss, "dot") == dot.picture(report, loss)
    with pytest.raises(gradscope.UsageError, match="unknown format 'jpeg'"):
        gradscope.draw(report, loss, "jpeg")
    with pytest.raises(gradscope.UsageError, match="no loss 'nope'"):
        gradscope.draw(report, "nope")
    with pytest.raises(gradscope.UsageError, match="pictures=True"):
        gradscope.draw(gradscope.inspect(spec), loss)


def test_thresholds_are_public_beside_the_monitor() -> None:
    import gradscope.keras

    assert gradscope.Thresholds is gradscope.keras.Thresholds
    assert gradscope.keras.Thresholds(patience=5).patience == 5
