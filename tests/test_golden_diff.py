"""Golden cases of ``gradscope diff`` (tests/cases/diff/), held to bare TensorFlow.

Each case names a spec and pairs of losses with the reach sets and explanations they must
produce (see tests/cases/diff/README.md). Every number is recomputed here from the gradients
an eager GradientTape returns for the same computation (``tests/reference.py``): the cosine,
sign agreement and norm ratio per shared variable, both norms, the whole-model cosine, and
for ``matrix: true`` the whole-model cosine of every pair of losses.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

import gradscope
from gradscope._src.frontends.yaml import load_spec
from gradscope._src.frontends.yaml.model import Spec
from gradscope._src.results.diff import BOTH, NEITHER, ONLY_A, ONLY_B, Diff

HERE = Path(__file__).parent
CASES = sorted((HERE / "cases" / "diff").glob("*.yaml"))

pytestmark = pytest.mark.tf


def _bare(spec: Spec) -> dict[str, dict[str, tuple[np.ndarray, bool] | None]]:
    """Per loss, per variable: (the densified float64 gradient, sparse?) or None."""
    from gradscope._src.engine.tf_import import import_tensorflow
    from tests.reference import gradients

    tf = import_tensorflow()
    out: dict[str, dict[str, tuple[np.ndarray, bool] | None]] = {}
    for loss, grads in gradients(spec).items():
        out[loss] = {}
        for name, g in grads.items():
            if g is not None:
                dense = np.asarray(tf.convert_to_tensor(g).numpy(), dtype=np.float64)
                out[loss][name] = (dense, isinstance(g, tf.IndexedSlices))
    return out


def _cosine(dot: float, aa: float, bb: float) -> float | None:
    return dot / math.sqrt(aa * bb) if aa > 0 and bb > 0 else None


def _whole(ga: dict[str, Any], gb: dict[str, Any]) -> float | None:
    """The whole-model cosine: over shared variables whose two gradients are finite."""
    shared = [
        n for n in ga if n in gb and np.isfinite(ga[n][0]).all() and np.isfinite(gb[n][0]).all()
    ]
    if not shared:
        return None
    dot = sum(float(np.sum(ga[n][0] * gb[n][0])) for n in shared)
    aa = sum(float(np.sum(ga[n][0] ** 2)) for n in shared)
    bb = sum(float(np.sum(gb[n][0] ** 2)) for n in shared)
    return _cosine(dot, aa, bb)


def _approx(actual: float | None, expected: float | None, where: str, **tol: float) -> None:
    if expected is None:
        assert actual is None, where
    else:
        assert actual == pytest.approx(expected, **tol), where


def _check_numbers(diff: Diff, ga: dict[str, Any], gb: dict[str, Any]) -> None:
    for v in diff.variables:
        where = f"{diff.loss_a} vs {diff.loss_b}: {v.variable}"
        a, b = ga.get(v.variable), gb.get(v.variable)
        expected_reach = {(1, 1): BOTH, (1, 0): ONLY_A, (0, 1): ONLY_B, (0, 0): NEITHER}
        assert v.reach == expected_reach[(a is not None, b is not None)], where
        if a is None or b is None:
            assert v.cosine is None and v.sign_agreement is None and v.norm_ratio is None
            continue
        (xa, sparse_a), (xb, sparse_b) = a, b
        assert (v.a.sparse, v.b.sparse) == (sparse_a, sparse_b), where
        if not (np.isfinite(xa).all() and np.isfinite(xb).all()):
            assert v.cosine is None and v.sign_agreement is None and v.dot is None, where
            assert v.variable in diff.left_out, where
            continue
        na, nb = float(np.linalg.norm(xa)), float(np.linalg.norm(xb))
        _approx(v.a.norm, na, where, rel=1e-4, abs=1e-7)
        _approx(v.b.norm, nb, where, rel=1e-4, abs=1e-7)
        dot = float(np.sum(xa * xb))
        _approx(v.cosine, _cosine(dot, na * na, nb * nb), f"{where}: cosine", abs=1e-6)
        sign = float(np.mean(np.sign(xa) == np.sign(xb)))
        _approx(v.sign_agreement, sign, f"{where}: signs", abs=1e-12)
        _approx(v.norm_ratio, na / nb if nb > 0 else None, f"{where}: ratio", rel=1e-5)
    _approx(diff.cosine, _whole(ga, gb), f"{diff.loss_a} vs {diff.loss_b}: whole", abs=1e-6)


def _check_golden(diff: Diff, expected: dict[str, Any]) -> None:
    where = f"{diff.loss_a} vs {diff.loss_b}"
    assert list(diff.names(BOTH)) == expected.get("both", []), where
    for key, reach in (("only_a", ONLY_A), ("only_b", ONLY_B), ("neither", NEITHER)):
        wanted = expected.get(key, {})
        assert list(diff.names(reach)) == list(wanted), f"{where}: {key}"
        for name, text in wanted.items():
            assert diff.variable(name).explanation == text, f"{where}: {name}"
    for name, cosine in expected.get("exact", {}).items():
        assert diff.variable(name).cosine == cosine, f"{where}: {name} exactly {cosine}"
    assert list(diff.left_out) == expected.get("left_out", []), where


@pytest.fixture(scope="module")
def cache() -> dict[Path, tuple[Spec, dict[str, Any]]]:
    return {}


def _case(path: Path, cache: dict[Path, Any]) -> tuple[dict[str, Any], Spec, dict[str, Any]]:
    data = yaml.safe_load(path.read_text())
    if path not in cache:
        spec = load_spec(data["spec"])
        cache[path] = (spec, _bare(spec))
    return data, *cache[path]


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_golden_diff_pairs_agree_with_bare_tensorflow(path: Path, cache: dict) -> None:
    data, spec, bare = _case(path, cache)
    for title, expected in data["diffs"].items():
        a, b = title.split(" vs ")
        result = gradscope.diff(spec, a, b)
        _check_numbers(result.diff, bare[a], bare[b])
        _check_golden(result.diff, expected or {})


@pytest.mark.parametrize("path", [p for p in CASES if yaml.safe_load(p.read_text()).get("matrix")])
def test_golden_diff_matrix_agrees_with_bare_tensorflow(path: Path, cache: dict) -> None:
    _, spec, bare = _case(path, cache)
    result = gradscope.diff(spec)
    names = [loss.name for loss in spec.losses]
    assert list(result.losses) == names
    assert len(result.diffs) == len(names) * (len(names) - 1) // 2
    expected = {}
    for a, b in itertools.combinations(names, 2):
        expected[(a, b)] = _whole(bare[a], bare[b])
        _approx(result.cosine(a, b), expected[(a, b)], f"{a} x {b}", abs=1e-6)
        _approx(result.cosine(b, a), expected[(a, b)], f"{b} x {a}", abs=1e-6)
        _check_numbers(result.pair(a, b), bare[a], bare[b])  # type: ignore[arg-type]
    negative = sorted((c, a, b) for (a, b), c in expected.items() if c is not None and c < 0)
    assert [(d.loss_a, d.loss_b) for d in result.conflicts] == [(a, b) for _, a, b in negative]


def test_golden_diff_every_case_is_checked() -> None:
    assert {p.stem for p in CASES} >= {
        "multitask",
        "chained-heads",
        "seed001-sum-vs-product",
        "gan-grad-loss",
        "sparse-dense",
        "heads",
    }


def test_diff_runs_one_forward_pass_for_any_number_of_pairs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from gradscope._src.engine.pairs import PairBuilder
    from gradscope._src.engine.trace import Engine
    from gradscope._src.frontends.yaml.forward.model import SpecModel

    calls: dict[str, list[str]] = {"trace": [], "run": [], "backward": []}

    def counting(cls: type, method: str, key: str) -> None:
        original = getattr(cls, method)

        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            calls[key].append(getattr(args[0], "name", "") if args else "")
            return original(self, *args, **kwargs)

        monkeypatch.setattr(cls, method, wrapper)

    counting(SpecModel, "trace", "trace")
    counting(Engine, "run", "run")
    counting(PairBuilder, "differentiate", "backward")
    spec = load_spec("configs/chained-heads.yaml")
    gradscope.diff(spec, "loss1", "loss2")
    assert (len(calls["trace"]), len(calls["run"])) == (1, 1)
    assert calls["backward"] == ["loss1", "loss2"]  # one backward pass per loss, no more
    for key in calls:
        calls[key].clear()
    result = gradscope.diff(spec)  # 7 losses: 21 pairs
    assert len(result.diffs) == 21
    assert (len(calls["trace"]), len(calls["run"])) == (1, 1)
    assert calls["backward"] == [loss.name for loss in spec.losses]
