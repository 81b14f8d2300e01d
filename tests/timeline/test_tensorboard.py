"""TensorBoard event files of a real run, read back with TensorFlow's own event reader."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
import pytest

from tests.timeline import scenarios

pytestmark = pytest.mark.tf


def _events(directory: Any) -> dict[str, dict[int, tuple[str, np.ndarray[Any, Any]]]]:
    """tag -> step -> (plugin, value), from every event file in the directory."""
    import tensorflow as tf

    out: dict[str, dict[int, tuple[str, np.ndarray[Any, Any]]]] = defaultdict(dict)
    files = sorted(directory.glob("events.out.tfevents.*"))
    assert files, f"no event file in {directory}"
    for path in files:
        for event in tf.compat.v1.train.summary_iterator(str(path)):
            for value in event.summary.value:
                plugin = value.metadata.plugin_data.plugin_name
                out[value.tag][event.step] = (plugin, tf.make_ndarray(value.tensor))
    return out


def test_tensorboard_scalars_and_histograms_per_variable() -> None:
    run = scenarios.conflicting()
    events = _events(run.path.parent / "tb")
    for record in run.timeline["steps"]:
        step = record["step"]
        assert events["loss"][step][1] == pytest.approx(record["loss"], rel=1e-6)
        for name, v in record["variables"].items():
            for tag, key in (
                ("gradients/norm", "norm"),
                ("weights/norm", "weight_norm"),
                ("gradients/zero_fraction", "zero_fraction"),
            ):
                plugin, value = events[f"{tag}/{name}"][step]
                assert plugin == "scalars" and value.shape == ()
                assert float(value) == pytest.approx(v[key], rel=1e-6)
            ratio = events[f"gradients/ratio/{name}"][step][1]
            assert float(ratio) == pytest.approx(v["norm"] / v["weight_norm"], rel=1e-6)
            plugin, buckets = events[f"gradients/{name}"][step]
            assert plugin == "histograms" and buckets.shape[1] == 3
            assert buckets[:, 2].sum() == np.prod(v["shape"])
        for loss, per in record["losses"].items():
            for name, v in per["variables"].items():
                value = events[f"losses/{loss}/norm/{name}"][step][1]
                assert float(value) == pytest.approx(v["norm"], rel=1e-6)
        for name, cosine in record["cosine"][0]["variables"].items():
            assert float(events[f"cosine/up~down/{name}"][step][1]) == pytest.approx(
                cosine, abs=1e-6
            )


@pytest.mark.parametrize("sites", [False, True])
def test_tensorboard_tags_stay_the_same_per_site_and_variable(sites: bool, tmp_path: Any) -> None:
    from gradscope._src.timeline.tensorboard import Board

    board = Board(str(tmp_path), sites=sites)
    gradient = np.array([1.0, -2.0])
    for step in (1, 2, 3):
        for site in ("a.py:1", "b.py:2"):  # the second site appears after a.py:1's first record
            variables = {"w": {"norm": 1.0, "weight_norm": 2.0, "zero_fraction": 0.0}}
            board.write({"step": step, "site": site, "loss": 1.0, "variables": variables},
                        {"w": gradient})  # fmt: skip
    board.close()
    events = _events(tmp_path)
    first = "a.py:1/" if sites else ""
    for tag in ("gradients/norm/w", "gradients/w", "loss"):
        assert sorted(events[f"{first}{tag}"]) == [1, 2, 3]
        assert sorted(events[f"b.py:2/{tag}"]) == [1, 2, 3]
    assert len(events) == 2 * 6  # loss, norm, ratio, zero fraction, weight norm, histogram
