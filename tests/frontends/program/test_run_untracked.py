"""A tf.Variable a Keras 3 layer keeps where Keras does not track it (an attribute, a plain
dict) is read by the loss and trained by nothing: ``gradscope run`` says so, with the
attribute and the fix; compared with the same program run bare."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest

from tests.frontends.program.test_run import PROGRAMS, site, watched

pytestmark = pytest.mark.tf

SCHEMA = Path(__file__).resolve().parents[3] / "schema" / "run-v1.json"
PROGRAM = "untracked.py"


def test_run_reports_variables_keras_does_not_track() -> None:
    import jsonschema
    import keras
    import numpy as np
    import tensorflow as tf

    from gradscope._src.report import render

    bare = runpy.run_path(str(PROGRAMS / PROGRAM), run_name="__main__")
    layer = bare["model"].layers[0]
    raw = [layer.shift, layer.table["scale"]]
    tracked = {id(getattr(v, "_value", v)) for v in bare["model"].trainable_variables}
    assert not any(id(v) in tracked for v in raw)  # Keras leaves them out
    before = [v.numpy().copy() for v in raw]
    with tf.GradientTape() as tape:  # bare TF: the loss does depend on them...
        loss = tf.reduce_mean((bare["model"](bare["x"]) - bare["y"]) ** 2)
    assert all(g is not None for g in tape.gradient(loss, raw))
    bare["optimizer"].apply_gradients(
        zip(bare["grads"], bare["model"].trainable_variables, strict=True)
    )
    assert all(
        np.array_equal(v.numpy(), b) for v, b in zip(raw, before, strict=True)
    )  # ...untrained
    keras.backend.clear_session()
    outcome, _ = watched(PROGRAM)
    (call,) = outcome.report.calls
    assert call.unasked == (("shift", "layers[0].shift"), ("scale", "layers[0].table['scale']"))
    problems = [p for p in outcome.report.problems if p.kind == "never-trained"]
    assert sorted(p.variable for p in problems) == ["scale", "shift"]
    asks = site(PROGRAM, "# asks")
    for p in problems:
        assert p.site == asks and p.fix is not None
        assert (p.fix.kind, p.fix.where) == ("build-add-weight", asks)
        assert "add_weight" in p.fix.text
    assert outcome.report.exit_code == 1
    data = outcome.report.to_dict()
    jsonschema.validate(data, json.loads(SCHEMA.read_text()))
    assert data["calls"][0]["untracked"][0] == {"variable": "shift", "attribute": "layers[0].shift"}
    table = render(outcome.report, "table", width=80)
    # each fix names its own attribute, so each is said for its variable
    assert "fix (shift):" in table and "fix (scale):" in table
    assert "self.table['scale'] = self.add_weight(...)" in " ".join(table.split())
    assert max(len(x) for x in table.splitlines()) <= 80


def test_run_asked_for_untracked_variable_is_no_problem(tmp_path: Path) -> None:
    """The same program asking for them too: they train; nothing to report."""
    import keras

    from gradscope._src.watch.launch import Program
    from gradscope._src.watch.run import run

    text = (
        (PROGRAMS / PROGRAM)
        .read_text()
        .replace(
            "grads = tape.gradient(loss, model.trainable_variables)  # asks",
            "grads = tape.gradient(loss, model.trainable_variables + [model.layers[0].shift,"
            " model.layers[0].table['scale']])",
        )
        .replace(
            "zip(grads, model.trainable_variables)", "zip(grads[:2], model.trainable_variables)"
        )
    )
    program = tmp_path / "asked.py"
    program.write_text(text, encoding="utf-8")
    keras.backend.clear_session()
    report = run(Program(str(program), ())).report
    assert report.problems == () or not [p for p in report.problems if p.kind == "never-trained"]
    assert report.calls[0].unasked == ()
