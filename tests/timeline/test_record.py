"""The Recorder without TensorFlow: numpy gradients, sparse rows, None, cosines, the JSON file."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gradscope._src.timeline import Recorder, load
from gradscope._src.timeline.record import gradient_stats


@dataclass
class Slices:
    """What tf.IndexedSlices looks like to the recorder."""

    values: Any
    indices: Any
    dense_shape: Any


def test_recorder_stats_of_dense_sparse_none_and_nan(tmp_path: Path) -> None:
    kernel = np.array([[3.0, 0.0], [0.0, 4.0]], np.float32)
    table = np.ones((5, 2), np.float32)
    rows = Slices(
        np.array([[1.0, 2.0], [2.0, 0.0]], np.float32), np.array([1, 1]), np.array([5, 2])
    )
    recorder = Recorder(every=5, timeline=tmp_path / "t.json", program="train.py")
    assert [s for s in range(1, 16) if recorder.due(s)] == [5, 10, 15]
    record = recorder.record(
        5,
        "train.py:9",
        np.float32(0.5),
        [
            ("dense/kernel", kernel, kernel * 2),
            ("embed/table", rows, table),
            ("spare", None, np.zeros(3), "none:stopped"),
            ("head/bias", np.array([np.nan, 1.0]), None),
        ],
    )
    v = record["variables"]
    assert v["dense/kernel"] == {
        "status": "ok",
        "norm": 5.0,
        "zero_fraction": 0.5,
        "sparse": False,
        "weight_norm": 10.0,
        "shape": [2, 2],
    }
    # Row 1 gets both slices summed: [3, 2]; 8 of 10 elements are zero.
    assert v["embed/table"]["norm"] == pytest.approx(np.sqrt(13.0))
    assert v["embed/table"]["zero_fraction"] == 0.8 and v["embed/table"]["sparse"] is True
    assert v["spare"]["status"] == "none:stopped" and v["spare"]["norm"] is None
    assert v["head/bias"]["status"] == "nan" and v["head/bias"]["norm"] is None
    assert v["head/bias"]["weight_norm"] is None and v["head/bias"]["shape"] == [2]
    timeline = recorder.close()
    assert load(str(tmp_path / "t.json")) == json.loads(json.dumps(timeline))
    assert timeline["program"] == "train.py" and timeline["every"] == 5
    assert [(f["kind"], f["variable"]) for f in timeline["findings"]] == [
        ("nan", "head/bias"),
        ("none", "spare"),
    ]


def test_recorder_per_loss_norms_and_cosines() -> None:
    recorder = Recorder()
    a, b = np.array([1.0, 0.0]), np.array([-1.0, 1.0])
    record = recorder.record(
        1,
        "s",
        1.0,
        [("w", a + b, np.ones(2)), ("u", a, np.ones(2))],
        losses={
            "main": (0.7, [("w", a), ("u", a)]),
            "aux": (0.3, [("w", b), ("u", None)]),
        },
    )
    assert record["losses"]["aux"]["value"] == 0.3
    assert record["losses"]["aux"]["variables"]["w"]["norm"] == pytest.approx(np.sqrt(2))
    assert record["losses"]["aux"]["variables"]["u"]["status"] == "none:unexplained"
    (pair,) = record["cosine"]
    assert pair == {"losses": ["main", "aux"], "variables": {"w": pytest.approx(-1 / np.sqrt(2))}}


def test_recorder_writes_no_nan_into_json(tmp_path: Path) -> None:
    with Recorder(timeline=tmp_path / "t.json") as recorder:
        recorder.record(1, "s", float("inf"), [("w", np.array([np.inf]), np.array([np.nan]))])

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} is not JSON")

    data = json.loads((tmp_path / "t.json").read_text(), parse_constant=refuse)
    assert data["steps"][0]["loss"] is None
    assert data["steps"][0]["variables"]["w"]["weight_norm"] is None


def test_gradient_stats_of_an_all_zero_gradient() -> None:
    assert gradient_stats(np.zeros((2, 3)))["status"] == "zero"
    assert gradient_stats(np.zeros((0,)))["zero_fraction"] == 0.0


def test_recorder_refuses_every_below_one() -> None:
    with pytest.raises(ValueError, match=r"every must be from 1 to 2\*\*63-1 steps, saw 0"):
        Recorder(every=0)


def test_load_refuses_what_is_not_a_timeline(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    path.write_text('{"gradscope": 1, "losses": {}}')
    with pytest.raises(ValueError, match="not a gradscope timeline"):
        load(str(path))
