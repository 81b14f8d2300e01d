"""Real model code from the Keras and TensorFlow documentation and examples, adapted to small
sizes and no downloads (``data/real/``): every pair checked against bare TensorFlow.

gradscope answers as a ``tf.function`` training step computes (traced): each pair's
None-ness, zero-ness and norm must equal ``tf.gradients`` inside ``tf.function`` on a fresh
copy of the same model; wherever an eager ``GradientTape`` disagrees about None-ness, the
loss must say so in a note. A model whose losses draw new random numbers on every call
(``RANDOM = True``) is compared on None-ness only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorflow as tf

import gradscope
from gradscope._src.results import report as m
from tests.frontends.python.bare import DATA, load_file

pytestmark = pytest.mark.tf

REAL = sorted((DATA / "real").glob("*.py"))


def _variables(target: dict[str, Any], report: m.Report) -> tuple[list[str], list[Any]]:
    """The variables to compare, and gradscope's name for each: an explicit list keeps its
    order in the report; a model's are named by their Keras path."""
    if target.get("variables"):
        listed = [v if isinstance(v, tf.Variable) else v.value for v in target["variables"]]
        return [v.name for v in report.variables][: len(listed)], listed
    # a model's variables, as gradscope lists them: in the model's order, its trainable ones
    # and those of layers frozen with trainable = False (a fresh copy's layer names differ)
    weights = [v.value for v in target["model"].variables if v.trainable or v.value.trainable]
    return [v.name for v in report.variables][: len(weights)], weights


def _bare(fn: Any, variables: list[Any]) -> tuple[list[Any], list[bool]]:
    """Traced gradients (None-ness known while tracing) and eager None-ness, per variable."""
    none: list[bool] = []

    @tf.function
    def grads() -> list[Any]:
        found = tf.gradients(fn(), variables)
        none[:] = [g is None for g in found]
        return [tf.zeros(()) if g is None else tf.convert_to_tensor(g) for g in found]

    values = grads()
    traced = [
        None if n else np.asarray(v, dtype=np.float64) for v, n in zip(values, none, strict=True)
    ]
    with tf.GradientTape() as tape:
        target = tf.convert_to_tensor(fn())
    eager = [g is None for g in tape.gradient(target, variables)]
    return traced, eager


@pytest.mark.parametrize("path", REAL, ids=[p.stem for p in REAL])
def test_real_model_agrees_with_bare_tensorflow(path: Path) -> None:
    module = load_file(path)
    report = gradscope.inspect(module.build)
    target = module.build()
    by_order, variables = _variables(target, report)
    random = getattr(module, "RANDOM", False)
    for loss, fn in target["losses"].items():
        traced, eager = _bare(fn, variables)
        got = report.loss(loss)
        for name, grad in zip(by_order, traced, strict=True):
            pair = got.pair(name)
            if pair.status == m.FROZEN:  # not trainable: gradscope asks TensorFlow nothing
                continue
            assert m.is_none(pair.status) == (grad is None), (path.stem, loss, name, pair.status)
            if grad is None or random:
                continue
            norm = float(np.linalg.norm(grad))
            assert (pair.status == m.ZERO) == (not grad.any()), (path.stem, loss, name, pair.status)
            assert pair.norm == pytest.approx(norm, rel=2e-3, abs=1e-6), (path.stem, loss, name)
        if any(e != (g is None) for e, g in zip(eager, traced, strict=True)):
            assert any("disagree" in note for note in got.notes), (path.stem, loss, got.notes)
        for name, grad, eager_none in zip(by_order, traced, eager, strict=True):
            _cuts_named(path, got.pair(name), zero_but_none_eagerly=grad is not None
                        and not grad.any() and eager_none)  # fmt: skip


#: Ops that only run a body: a cut point there means the body was not looked into.
_CALLS = {"StatefulPartitionedCall", "PartitionedCall", "While", "StatelessWhile", "If",
          "StatelessIf", "Case", "StatelessCase"}  # fmt: skip


def _cuts_named(path: Path, pair: m.PairResult, *, zero_but_none_eagerly: bool) -> None:
    """Every cut point is named at the op inside bodies, at a line of the model's own file;
    a custom gradient's at its grad_fn; a traced zero that eager TensorFlow gives as None
    (a loop or branch stopped inside) says where."""
    for cut in pair.cut_points:
        assert cut.op not in _CALLS, (path.stem, pair.variable, cut)
        assert cut.source.split(":")[0].endswith(path.name), (path.stem, pair.variable, cut)
        if cut.op == "IdentityN":
            assert "." in cut.node, (path.stem, pair.variable, cut)  # custom_fn.grad_fn
    if m.is_none(pair.status) and pair.status != m.DISCONNECTED:
        assert pair.cut_points, (path.stem, pair.variable, pair.status)
    if zero_but_none_eagerly:
        assert pair.cut_points, (path.stem, pair.variable, "zero with no cut point")
