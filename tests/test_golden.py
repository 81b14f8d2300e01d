"""Golden cases: every spec in tests/cases/ and configs/, held to bare TensorFlow.

Each ``X.yaml`` has an ``X.golden.yaml`` beside it (configs' goldens are
``tests/cases/configs.X.golden.yaml``) listing, per loss, ``variable: status`` or
``variable: status @ node node`` (the cut points' nodes). gradscope must produce those statuses
and cut points (each located at its node's line), and every pair's None-ness, norm and sparsity
must agree with ``reference.py``: the same computation run eagerly under a GradientTape.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml

from gradscope._src.frontends.yaml import load_spec
from gradscope._src.results import report as m

HERE = Path(__file__).parent
ROOT = HERE.parent


def _cases() -> list[tuple[Path, Path]]:
    cases = [
        (p, p.with_name(p.name.replace(".yaml", ".golden.yaml")))
        for p in sorted((HERE / "cases").glob("*.yaml"))
        if not p.name.endswith(".golden.yaml")
    ]
    cases += [
        (p, HERE / "cases" / f"configs.{p.stem}.golden.yaml")
        for p in sorted((ROOT / "configs").glob("*.yaml"))
    ]
    return cases


CASES = _cases()
EXTRA_KEYS = {"sparse", "same_norm", "different_norm"}


def _expected(text: str) -> tuple[str, set[str] | None]:
    status, _, cuts = text.partition("@")
    return status.strip(), set(cuts.split()) if cuts.strip() else set()


def _line(spec, name: str) -> int:
    """The line of a node, or of a variable (an integer variable is its own cut point)."""
    variables = {v.name: v for v in spec.variables}
    return variables[name].pos.line if name in variables else spec.node(name).pos.line


@pytest.fixture(scope="module")
def runs() -> dict[Path, tuple]:
    return {}


def _run(path: Path, cache: dict) -> tuple:
    if path not in cache:
        import gradscope._src.api as api
        from gradscope._src.engine.tf_import import import_tensorflow
        from tests.reference import _grad, gradients

        spec = load_spec(str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path))
        values: dict[str, float] = {}
        tf = import_tensorflow()
        ref = {
            loss: {n: _grad(tf, g) for n, g in grads.items()}
            for loss, grads in gradients(spec, values).items()
        }
        cache[path] = (spec, api.inspect(spec), (ref, values))
    return cache[path]


@pytest.mark.tf
@pytest.mark.parametrize("path,golden", CASES, ids=[c[0].name for c in CASES])
def test_golden_agrees_with_bare_tensorflow(path: Path, golden: Path, runs: dict) -> None:
    _, report, (ref, values) = _run(path, runs)
    for loss in report.losses:
        for pair in loss.pairs:
            expected = ref[loss.name].get(pair.variable)
            where = f"{loss.name} x {pair.variable}: {pair.status}"
            if expected is None:  # not requested: outside vars, or not trainable
                assert pair.status in (m.EXCLUDED, m.FROZEN), where
                continue
            assert m.is_none(pair.status) == expected.none, where
            if expected.none:
                continue
            assert pair.sparse == expected.sparse, where
            assert (pair.status == m.NAN) == (not expected.finite), where
            assert (pair.status == m.ZERO) == expected.zero, where
            if expected.finite:
                assert pair.norm == pytest.approx(expected.norm, rel=1e-4, abs=1e-7), where
        value = values[loss.name]  # bare TensorFlow's loss value, NaN or Inf included
        assert loss.value is not None, loss.name
        if math.isnan(value):
            assert math.isnan(loss.value), loss.name
        else:
            assert loss.value == pytest.approx(value, rel=1e-5, abs=1e-7), loss.name


@pytest.mark.tf
@pytest.mark.parametrize("path,golden", CASES, ids=[c[0].name for c in CASES])
def test_golden_statuses_and_cut_points(path: Path, golden: Path, runs: dict) -> None:
    assert golden.exists(), f"{path} has no golden file {golden}"
    spec, report, _ = _run(path, runs)
    data = yaml.safe_load(golden.read_text())
    listed = set()
    for loss_name, pairs in data.items():
        if loss_name in EXTRA_KEYS:
            continue
        loss = report.loss(loss_name)
        for variable, text in pairs.items():
            listed.add((loss_name, variable))
            pair = loss.pair(variable)
            status, cuts = _expected(text)
            assert pair.status == status, f"{loss_name} x {variable}"
            assert {c.node for c in pair.cut_points} == cuts, f"{loss_name} x {variable}"
            for c in pair.cut_points:
                assert c.source == f"{spec.path}:{_line(spec, c.node)}"
    for loss, pair in report.pairs():
        if m.is_none(pair.status):
            assert (loss.name, pair.variable) in listed, (
                f"golden must list {loss.name} x {pair.variable}"
            )
    for item in data.get("sparse", []):
        loss_name, variable = item.split("/", 1)
        assert report.loss(loss_name).pair(variable).sparse, item
    for a, b in data.get("same_norm", []):
        na = report.loss(a.split("/", 1)[0]).pair(a.split("/", 1)[1]).norm
        nb = report.loss(b.split("/", 1)[0]).pair(b.split("/", 1)[1]).norm
        assert na == pytest.approx(nb, rel=1e-5)
    for a, b in data.get("different_norm", []):
        na = report.loss(a.split("/", 1)[0]).pair(a.split("/", 1)[1]).norm
        nb = report.loss(b.split("/", 1)[0]).pair(b.split("/", 1)[1]).norm
        assert na != pytest.approx(nb, rel=1e-3)
