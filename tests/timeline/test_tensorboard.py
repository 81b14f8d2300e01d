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
