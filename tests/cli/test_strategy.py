"""``--strategy`` and ``--replicas`` on inspect, diff and check, run in-process (CliRunner).

The session makes 2 logical CPU devices before any test runs (``replicas`` marker,
``tests/conftest.py``). Expected numbers come from bare TensorFlow: a tape per replica's share.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from gradscope._src.cli import main
from tests.conftest import ROOT

pytestmark = [pytest.mark.tf, pytest.mark.replicas]

MASK = "tests/cases/replica-mask.yaml"


def _invoke(*args: str) -> Any:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def mask_json() -> dict[str, Any]:
    result = _invoke("inspect", MASK, "--strategy", "mirrored", "--replicas", "2",
                     "--format", "json")  # fmt: skip
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_inspect_json_has_every_replica_and_matches_the_schema(mask_json: dict[str, Any]) -> None:
    from gradscope._src.engine.tf_import import import_tensorflow
    from gradscope._src.frontends.yaml import load_spec
    from tests.reference import gradients

    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((ROOT / "schema" / "report-v1.json").read_text())
    jsonschema.validate(mask_json, schema)
    tf = import_tensorflow()
    shards = [gradients(load_spec(MASK), shard=(r, 2))["masked"]["w"] for r in range(2)]
    norms = [float(tf.norm(g)) for g in shards]
    pair = mask_json["losses"]["masked"]["variables"]["w"]
    assert pair["status"] == "ok"
    assert pair["norm"] == pytest.approx(float(np.linalg.norm(sum(g.numpy() for g in shards))))
    assert [(r["replica"], r["status"]) for r in pair["replicas"]] == [(0, "ok"), (1, "zero")]
    assert pair["replicas"][0]["norm"] == pytest.approx(norms[0], rel=1e-5)
    assert norms[1] == 0.0 and pair["replicas"][1]["norm"] == 0.0
    assert mask_json["distribution"] == {
        "strategy": "mirrored", "replicas": 2, "devices": ["CPU:0", "CPU:1"],
        "shards": {"x": [2, 2]}, "reduced": "sum",
    }  # fmt: skip
    (problem,) = mask_json["problems"]
    assert (problem["kind"], problem["loss"], problem["variable"]) == (
        "replica-mismatch",
        "masked",
        "w",
    )
    assert problem["source"] == f"{MASK}:12"


def test_inspect_table_shows_replicas_compactly_at_80_columns(monkeypatch: Any) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    result = _invoke("inspect", MASK, "--strategy", "mirrored")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert all(len(line) <= 80 for line in lines)
    title = " ".join(" ".join(lines[:2]).split())  # the title wraps at 80 columns
    assert title.endswith(" · mirrored ×2") and "CPU:0" not in title  # in place of a device
    assert any(
        line.startswith("Per replica (mirrored on CPU:0, CPU:1; the matrix shows") for line in lines
    )
    row = next(line for line in lines if line.split()[:2] == ["masked", "w"])
    # replica 0's rows (1, 2) and (0.5, 1.5) pass the ReLU: dL/dw = (1.5, 3.5) / 4
    assert row.split()[2:] == ["ok", f"{np.hypot(1.5, 3.5) / 4:.2e}", "zero"]
    assert "replica-mismatch" in result.output


def test_check_fails_on_a_replica_mismatch_and_passes_without_a_strategy() -> None:
    failed = _invoke("check", MASK, "--strategy", "mirrored", "--format", "json")
    assert failed.exit_code == 1
    kinds = [p["kind"] for p in json.loads(failed.stdout)["problems"]]
    assert kinds == ["replica-mismatch"]
    assert _invoke("check", MASK).exit_code == 0


def test_check_flags_a_loss_averaged_per_replica() -> None:
    result = _invoke("check", "configs/global-batch.yaml", "--strategy", "mirrored",
                     "--format", "json")  # fmt: skip
    assert result.exit_code == 1
    (problem,) = json.loads(result.stdout)["problems"]
    assert (problem["kind"], problem["loss"]) == ("replica-loss-scale", "per_replica_mean")


def test_diff_under_a_strategy_shows_the_all_reduced_norms() -> None:
    result = _invoke("diff", "configs/global-batch.yaml", "global_batch", "per_replica_mean",
                     "--strategy", "mirrored", "--format", "json")  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    w = data["diff"]["variables"]["dense/w"]
    assert w["norm_b"] == pytest.approx(2 * w["norm_a"], rel=1e-5)  # apply_gradients' sums
    assert w["cosine"] == pytest.approx(1.0)
    assert "replicas" in data["losses"]["global_batch"]["variables"]["dense/w"]


@pytest.mark.parametrize(
    "args,message",
    [
        (["--replicas", "2"], "--replicas needs --strategy mirrored or multiworker"),
        (["--strategy", "mirrored", "--replicas", "0"], "0 is not in the range x>=1"),
        (["--strategy", "mirrored", "--replicas", "4"], "TensorFlow was already running on"),
        (["--strategy", "cluster"], "'cluster' is not one of"),
    ],
)
def test_bad_strategy_options_exit_2(args: list[str], message: str) -> None:
    result = CliRunner().invoke(main, ["inspect", MASK, *args])
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


def test_a_python_target_under_a_strategy_runs_whole_on_every_replica(tmp_path: Any) -> None:
    target = tmp_path / "t.py"
    target.write_text(
        "import tensorflow as tf\n"
        "def build():\n"
        "    w = tf.Variable(1.5, name='w')\n"
        "    return {'losses': {'l': lambda: w * w}}\n",
        encoding="utf-8",
    )
    result = _invoke("inspect", f"{target}:build", "--strategy", "mirrored", "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    pair = data["losses"]["l"]["variables"]["w"]
    assert (pair["status"], pair["norm"]) == ("ok", pytest.approx(3.0))  # d(w*w)/dw = 2w
    assert pair["replicas"] == [{"replica": r, "status": "ok", "norm": pytest.approx(3.0)}
                                for r in range(2)]  # fmt: skip
    assert data["distribution"]["reduced"] == "mean"
    assert any("each replica computed the whole loss" in n for n in data["notes"])


@pytest.mark.parametrize(
    "case", ["tests/cases/replica-dtypes.yaml", "tests/cases/replica-complex.yaml"]
)
def test_variables_of_several_dtypes_and_complex_ones_are_all_reduced(case: str) -> None:
    """Collectives take one dtype and no complex one: a bfloat16 and a float16 variable, a
    complex64 one, each get the sum of the replicas' gradients bare TensorFlow computes."""
    from gradscope._src.frontends.yaml import load_spec
    from tests.reference import gradients

    result = _invoke("inspect", case, "--strategy", "mirrored", "--replicas", "2",
                     "--format", "json")  # fmt: skip
    assert result.exit_code in (0, 1), result.output
    assert "Warning" not in result.output
    data = json.loads(result.stdout)
    shards = [gradients(load_spec(case), shard=(r, 2)) for r in range(2)]
    for loss, pairs in data["losses"].items():
        for variable, pair in pairs["variables"].items():
            summed = sum(np.asarray(s[loss][variable], np.complex128) for s in shards)
            assert pair["status"] == "ok", pair
            assert pair["norm"] == pytest.approx(float(np.linalg.norm(summed)), rel=1e-2)
