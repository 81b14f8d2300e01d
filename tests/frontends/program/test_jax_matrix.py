"""Keras 3 on JAX against Keras 3 on TensorFlow: the same programs, the same report.

Each program of ``programs/keras_matrix.py`` is trained one step inside ``gradscope.watch()``
on both backends: on TensorFlow in this process, on JAX in one child process started first
(``KERAS_BACKEND`` is read at Keras' first import, so a backend is a process). What each
variable should get is computed by bare TensorFlow (a tape over the loss Keras' step
differentiates): None or not, then ``ok``, ``zero`` or ``nan`` from its value. JAX never
answers None (it hands back zeros), so its None-ness must come from gradscope's reading of
the jaxpr: it is held to bare TensorFlow's, and every status, cut point (op, kind, line) and
cause to TensorFlow's report of the same program.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytestmark = pytest.mark.tf

PROGRAMS = Path(__file__).parent / "programs"
ROOT = Path(__file__).parents[3]
#: The JAX side's time limit (its imports and 16 one-step fits take ~20 s on an idle machine).
LIMIT = 300

needs_jax = pytest.mark.skipif(
    importlib.util.find_spec("jax") is None,
    reason="JAX is not installed: pip install '.[jax]' (make demo installs it) to compare "
    "Keras on JAX with Keras on TensorFlow",
)


def _matrix() -> Any:
    sys.path.insert(0, str(PROGRAMS))
    try:
        import keras_matrix
    finally:
        sys.path.remove(str(PROGRAMS))
    return keras_matrix


NAMES = list(_matrix().PROGRAMS)


@pytest.fixture(scope="module")
def jax_side() -> Iterator[subprocess.Popen[str]]:
    """The JAX side, started before the TensorFlow side runs so the two overlap."""
    if importlib.util.find_spec("jax") is None:
        pytest.skip("JAX is not installed: pip install '.[jax]'")
    # XLA's optimizations off: they cost 60% of the side's time and change no status
    env = {**os.environ, "KERAS_BACKEND": "jax", "PYTHONPATH": str(ROOT),
           "JAX_DISABLE_MOST_OPTIMIZATIONS": "1"}  # fmt: skip
    process = subprocess.Popen(
        [sys.executable, str(PROGRAMS / "keras_matrix.py")], cwd=str(ROOT), env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()


@pytest.fixture(scope="module")
def reports(jax_side: subprocess.Popen[str]) -> dict[str, dict[str, Any]]:
    """Per backend, each program's report (JSON) by name."""
    import gradscope

    matrix = _matrix()
    tf_side = matrix.run_all(gradscope.watch)
    try:
        out, err = jax_side.communicate(timeout=LIMIT)
    except subprocess.TimeoutExpired:
        jax_side.kill()
        out, err = jax_side.communicate()
    assert jax_side.returncode == 0, err[-3000:]
    return {"tensorflow": tf_side, "jax": json.loads(out)}


def _bare(name: str) -> dict[str, str]:
    """What bare TensorFlow gives each variable for the loss the program's step
    differentiates: ``none`` (no gradient) or ``ok``/``zero``/``nan`` from its value;
    ``frozen`` for a variable not among ``trainable_variables``."""
    import keras
    import tensorflow as tf

    matrix = _matrix()
    keras.backend.clear_session()
    keras.utils.set_random_seed(0)
    model, x, y = matrix.PROGRAMS[name]()
    with tf.GradientTape() as tape:
        pred = model(x, training=True)
        if hasattr(model, "step_loss"):  # its own train step's loss
            loss = model.step_loss(y, pred)
        else:
            loss = model.compute_loss(x=x, y=y, y_pred=pred, training=True)
    grads = tape.gradient(loss, model.trainable_variables)
    out = {v.path: "frozen" for v in model.variables}
    for v, g in zip(model.trainable_variables, grads, strict=True):
        if g is None:
            out[v.path] = "none"
            continue
        values = np.asarray(tf.convert_to_tensor(g), dtype=np.float64)
        out[v.path] = ("nan" if not np.isfinite(values).all()
                       else "zero" if not values.any() else "ok")  # fmt: skip
    return out


def _sources(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    (call,) = report["calls"]
    return dict(call["sources"])


def _cause(source: dict[str, Any]) -> tuple[Any, ...]:
    """A source's status, its cut points' op, kind and line, and its note's cause (the
    first clause: TensorFlow may add where the last path ends)."""
    cuts = tuple((c["op"], c["kind"], c["source"]) for c in source["cut_points"])
    return source["status"], cuts, source.get("note", "").split("; ")[0]


@needs_jax
@pytest.mark.parametrize("name", NAMES)
def test_matrix_jax_reports_what_tensorflow_reports(name: str, reports: Any) -> None:
    tf_sources = _sources(reports["tensorflow"][name])
    jax_sources = _sources(reports["jax"][name])
    bare = _bare(name)
    # on TensorFlow, against bare TensorFlow
    for variable, source in tf_sources.items():
        expected = bare[variable]
        got = source["status"]
        assert got.startswith("none:") if expected == "none" else got == expected, variable
    # on JAX: the same variables, in the same order, each with the same status, cut points
    # and cause (JAX gave zeros for each none:*: None-ness came from the jaxpr)
    assert list(jax_sources) == list(tf_sources)
    assert {v: _cause(s) for v, s in jax_sources.items()} == {
        v: _cause(s) for v, s in tf_sources.items()
    }
    (tf_call,) = reports["tensorflow"][name]["calls"]
    (jax_call,) = reports["jax"][name]["calls"]
    if tf_call["api"] == "fit":  # Keras' own step: the fit() line on both
        assert (jax_call["site"], jax_call["api"]) == (tf_call["site"], tf_call["api"])
    else:  # a custom train step: each backend's own gradient call, at its own line
        assert (tf_call["api"], jax_call["api"]) == ("GradientTape.gradient",
                                                     "jax.value_and_grad")  # fmt: skip
        assert jax_call["target"]["source"] == tf_call["target"]["source"]  # step_loss's line
    assert reports["jax"][name]["backend"] == "jax"


@needs_jax
def test_matrix_covers_every_cause(reports: Any) -> None:
    """The matrix holds each way a gradient is lost, and a healthy program."""
    seen = {s["status"] for r in reports["jax"].values() for s in _sources(r).values()}
    assert {"ok", "frozen", "none:disconnected", "none:stopped",
            "none:nondifferentiable"} <= seen  # fmt: skip
    assert len(NAMES) >= 15
