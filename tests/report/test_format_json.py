"""The JSON format (``report/json.py``): every result's contract shape."""

from __future__ import annotations

import json

from gradscope._src.report import Format, render
from tests.report import samples


def test_format_json_is_the_contract_shape() -> None:
    data = json.loads(render(samples.inspect_report(), "json"))
    assert data["losses"]["loss_5"]["variables"]["body/w"] == {
        "status": "none:stopped",
        "norm": None,
        "shape": [4, 16],
        "sparse": False,
        "cut_points": [
            {
                "node": "frozen",
                "op": "StopGradient",
                "kind": "stopped",
                "source": "configs/x.yaml:17",
            }
        ],
    }
    assert data["problems"][0]["kind"] == "never-trained"


def test_check_formats_json_is_parseable_and_complete() -> None:
    data = json.loads(render(samples.CHECKS["known"](), "json"))
    assert data["check"]["problems"] == 2 and data["check"]["known"] == 2
    assert len(data["reports"]) == 2


def test_diff_format_json_has_cosine_per_shared_variable() -> None:
    data = json.loads(render(samples.diff(), "json"))
    assert data["gradscope"] == 1
    assert set(data["losses"]) == {"loss1", "loss2"}  # the inspect report of both losses
    diff = data["diff"]
    assert diff["variables"]["embedding"]["cosine"] == -0.75
    assert diff["variables"]["embedding"]["sign_agreement"] == 0.25
    assert diff["variables"]["embedding"]["norm_ratio"] == 0.5
    assert diff["variables"]["output1"]["cosine"] is None
    assert diff["reach"] == {"both": ["embedding"], "only_a": ["output1"],
                             "only_b": ["output2"], "neither": []}  # fmt: skip
    assert diff["cosine"] == -0.75


def test_diff_format_matrix_json() -> None:
    data = json.loads(render(samples.diff_matrix(), "json"))
    assert data["matrix"]["head1"] == {"head1": 1.0, "head2": -0.75, "head3": None}
    assert data["conflicts"] == [{"loss_a": "head1", "loss_b": "head2", "cosine": -0.75}]
    assert len(data["pairs"]) == 3


def test_run_json_is_the_contract_shape() -> None:
    data = json.loads(render(samples.run_report(), Format.JSON))
    call = data["calls"][0]
    assert call["target"] == {"source": "train.py:11", "value": 2.5}
    assert call["sources"]["patch"]["cut_points"][0]["kind"] == "assign"
    assert data["calls"][1]["target"]["loss_scale"] == 32768.0
    assert data["problems"][1] == {"site": "model.py:40", "step": 1, "variable": "d/kernel",
                                   "kind": "nan", "message": data["problems"][1]["message"],
                                   "cut_points": []}  # fmt: skip


def test_json_writes_a_non_finite_number_a_result_missed_as_null() -> None:
    """A NaN norm (one replica's gradient under MirroredStrategy was NaN) is null in the
    report, as every non-finite number is, never ``NaN`` nor a crash of the report."""
    import math

    from gradscope._src.report.json import dumps
    from gradscope._src.results.replicas import ReplicaResult
    from gradscope._src.results.status import Status

    replica = ReplicaResult(1, Status.NAN, math.nan)
    assert replica.to_dict()["norm"] is None
    text = dumps({"a": [1.5, math.inf, {"b": -math.inf, "c": math.nan}], "d": "nan"})
    assert json.loads(text) == {"a": [1.5, None, {"b": None, "c": None}], "d": "nan"}
