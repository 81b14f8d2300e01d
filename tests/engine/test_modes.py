"""``--mode eager|function|xla`` and the parity check between modes, against bare TensorFlow
computing the same gradients eagerly, in tf.function, and in tf.function(jit_compile=True)."""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import numpy as np
import pytest
import tensorflow as tf
from click.testing import CliRunner

import gradscope
from gradscope._src.cli import main
from gradscope._src.errors import UsageError
from gradscope._src.results import report as m
from tests.frontends.python.bare import DATA, load_file

pytestmark = pytest.mark.tf

BODIES = DATA / "truth" / "bodies.py"
SPEC = "configs/stop-gradient.yaml"


@pytest.fixture(scope="module")
def cases() -> ModuleType:
    return load_file(BODIES)


def _bare(fn: Any, variables: list[Any], jit: bool) -> list[Any]:
    none: list[bool] = []

    @tf.function(jit_compile=jit)
    def grads() -> list[Any]:
        found = tf.gradients(fn(), variables)
        none[:] = [g is None for g in found]
        return [tf.zeros(()) if g is None else g for g in found]

    values = grads()
    return [None if n else np.asarray(v) for v, n in zip(values, none, strict=True)]


def _agree(report: m.Report, fresh: dict[str, Any], jit: bool | None) -> None:
    """Each pair as bare TensorFlow computes it: eagerly (``jit`` None) or traced."""
    variables = fresh["variables"]
    for loss, fn in fresh["losses"].items():
        if jit is None:
            with tf.GradientTape() as tape:
                value = fn()
            grads = [None if g is None else np.asarray(g) for g in tape.gradient(value, variables)]
        else:
            grads = _bare(fn, variables, jit=jit)
        for variable, grad in zip(variables, grads, strict=True):
            pair = report.loss(loss).pair(variable.name.split(":")[0])
            assert m.is_none(pair.status) == (grad is None), (loss, variable.name, pair.status)
            if grad is not None:
                assert pair.norm == pytest.approx(float(np.linalg.norm(grad)), rel=1e-4)


@pytest.mark.parametrize("case", ["nested_function", "conditionals", "integer_chains"])
def test_modes_xla_agrees_with_bare_jit_compile(cases: ModuleType, case: str) -> None:
    report = gradscope.inspect(getattr(cases, case), mode="xla")
    _agree(report, getattr(cases, case)(), jit=True)


@pytest.mark.parametrize("case", ["while_loop", "conditionals", "custom_gradients"])
def test_modes_eager_agrees_with_bare_gradient_tape(cases: ModuleType, case: str) -> None:
    report = gradscope.inspect(getattr(cases, case), mode="eager")
    _agree(report, getattr(cases, case)(), jit=None)
    if case == "while_loop":  # zeros when traced, None eagerly: named as stopped
        assert report.loss("all_stopped").pair("w").status == m.STOPPED


def test_modes_parity_names_the_pairs_that_differ(cases: ModuleType) -> None:
    report = gradscope.inspect(cases.while_loop, mode=["function", "eager"])
    differ = [n for n in report.notes if n.startswith("modes differ")]
    assert any("'all_stopped', variable 'w'" in n for n in differ), report.notes
    assert report.loss("all_stopped").pair("w").status == m.ZERO  # the first mode's answer


def test_modes_agree_on_a_spec_in_every_format() -> None:
    result = CliRunner().invoke(
        main, ["inspect", SPEC, "--mode", "eager", "--mode", "xla", "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert any(n.startswith("modes agree: eager, xla") for n in report["notes"])
    assert report["losses"]["exp1"]["variables"]["exp1/w1"]["status"] == "none:stopped"


def test_modes_unknown_is_a_usage_error() -> None:
    with pytest.raises(UsageError):
        gradscope.inspect(SPEC, mode="graph")
