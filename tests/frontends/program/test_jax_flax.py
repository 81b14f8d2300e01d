"""Flax NNX and Flax Linen models trained with optax, under ``gradscope run`` (issue 44.2).

One child process (``programs/flax_side.py``: JAX, Flax and optax, no TensorFlow) runs each
program plain and then watched. Each model has a layer behind ``jax.lax.stop_gradient``
(``cut``), one whose output is dropped (``unused``) and a healthy ``head``. The truth is bare
JAX's, computed in that process at the trained parameters, named by Flax's own paths
(``nnx.State.flat_state()``, ``flax.traverse_util.flatten_dict``): a parameter has no gradient
when JAX's forward-mode AD gives the loss a symbolically zero tangent from it (as
``tests/engine/test_jax_jaxpr.py`` checks the analysis), and ``jax.grad`` gives it exact zeros.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("jax", "flax", "optax")),
    reason="JAX, Flax and optax are not installed: pip install '.[dev]' (make demo installs "
    "them) to check gradscope run of Flax programs against bare JAX",
)

PROGRAMS = Path(__file__).parent / "programs"
ROOT = Path(__file__).parents[3]
#: The side's time limit (~10 s of CPU on an idle machine: imports, 4 runs of 4 tiny steps).
LIMIT = 300

#: What each program's construction says of each layer (the truth says which are None).
BUILT = {"cut": "none:stopped", "unused": "none:disconnected", "head": "ok"}


def _line(program: str, text: str) -> str:
    """``tests/.../programs/PROGRAM:N``: the line of ``program`` holding ``text``."""
    lines = (PROGRAMS / program).read_text().splitlines()
    number = next(i for i, t in enumerate(lines, 1) if text in t)
    return f"{(PROGRAMS / program).relative_to(ROOT)}:{number}"


@pytest.fixture(scope="module")
def side(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = str(tmp_path_factory.mktemp("flax_side"))
    # XLA's optimizations off for speed (both runs alike: the weights still compare)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu",
           "JAX_DISABLE_MOST_OPTIMIZATIONS": "1"}  # fmt: skip
    done = subprocess.run(
        [sys.executable, str(PROGRAMS / "flax_side.py"), out], cwd=str(ROOT), env=env,
        capture_output=True, text=True, timeout=LIMIT, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    return dict(json.loads(done.stdout))


@pytest.mark.parametrize("api", ["nnx", "linen"])
def test_each_leaf_named_by_its_path_with_bare_jaxs_none_ness(api: str, side: Any) -> None:
    truth, report = side[api]["truth"], side[api]["report"]
    prefix = "params/" if api == "linen" else ""
    # the truth agrees with the construction: the cut and the unused layers get no gradient
    # (symbolically, and exact zeros from jax.grad), the head a nonzero one
    assert {n: t["none"] for n, t in truth.items()} == {
        f"{prefix}{layer}/{p}": status.startswith("none:")
        for layer, status in BUILT.items() for p in ("kernel", "bias")
    }  # fmt: skip
    assert all(t["zero"] == t["none"] for t in truth.values())
    calls = report["calls"]
    assert [(c["api"], c["mode"], c["step"]) for c in calls] == [
        ("jax.value_and_grad", "function", 1), ("jax.grad", "eager", 1),
    ]  # fmt: skip
    for call in calls:  # the jitted training step and the eager call after it
        sources = call["sources"]
        assert sorted(sources) == sorted(truth)
        for name, source in sources.items():
            layer = name.removeprefix(prefix).split("/")[0]
            assert source["status"] == BUILT[layer], (call["site"], name)
            assert source["status"].startswith("none:") == truth[name]["none"], name
        (cut,) = {(c["op"], c["kind"], c["source"]) for n in sources if "/cut/" in f"/{n}"
                  for c in sources[n]["cut_points"]}  # fmt: skip
        assert cut == ("StopGradient", "stopped", _line(f"flax_{api}.py", "stop_gradient("))
    assert report["backend"] == "jax"


@pytest.mark.parametrize("api", ["nnx", "linen"])
def test_what_optax_moves_without_a_gradient_is_a_finding(api: str, side: Any) -> None:
    """optax.adamw's weight decay moves parameters no gradient reaches (JAX hands it zeros):
    each one the plain run changed, and only those, is moved-without-gradient at the
    training step, named with the optax update's line (issue 44.3)."""
    truth, moved, report = side[api]["truth"], side[api]["moved"], side[api]["report"]
    expected = {n for n, t in truth.items() if t["none"] and moved[n]}
    # bare JAX: decay moves the cut and unused kernels; their zero-initialised biases stay
    assert expected == {f"{'params/' if api == 'linen' else ''}{layer}/kernel"
                        for layer in ("cut", "unused")}  # fmt: skip
    found = [p for p in report["problems"] if p["kind"] == "moved-without-gradient"]
    assert {p["variable"] for p in found} == expected
    update = _line(f"flax_{api}.py", "optimizer.update(" if api == "nnx" else "apply_updates(")
    step = report["calls"][0]
    for p in found:
        assert (p["site"], p["step"]) == (step["site"], 1)
        assert f"the optax update applied at {update} moved {p['variable']}" in p["message"]


@pytest.mark.parametrize("api", ["nnx", "linen"])
def test_watching_changes_no_trained_weight(api: str, side: Any) -> None:
    plain, watched = side[api]["weights"]
    assert plain == watched and len(plain) == 2 * 4 * 29  # 29 float32 parameters


def test_side_never_imports_tensorflow(side: Any) -> None:
    assert side["tensorflow_imported"] is False
