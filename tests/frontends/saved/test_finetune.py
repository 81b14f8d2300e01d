"""Fine-tuning as users write it, on ``keras.applications.MobileNetV3Small`` (``weights=None``:
nothing is downloaded; 32x32 inputs): a base saved, reloaded and given a new head, then a frozen
base, a base unfrozen after ``fit`` built its step, BatchNormalization left in inference mode, a
base wrapped in a ``Lambda``, and a layer-wise unfreeze schedule. Each verdict is held to bare
TensorFlow: a ``GradientTape`` over the model, and Keras' own ``trainable_variables``."""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.conftest import RunCli
from tests.frontends.saved.conftest import truth_of
from tests.frontends.saved.truth import statuses, verdicts

pytestmark = pytest.mark.tf

BASE = "MobileNetV3Small"


BLOCKS = ("expanded_conv_9", "expanded_conv_10")  # the schedule's last two blocks


@dataclass(frozen=True)
class FineTune:
    folder: Path  # base.keras, frozen.keras, x.npy, y.npy
    x: np.ndarray
    y: np.ndarray
    model: Any  # the reloaded base with a head, fit once, then unfrozen (not compiled again)
    base: Any
    frozen: dict[str, str]  # bare TensorFlow's verdicts on frozen.keras's model as saved
    schedule: dict[str, str]  # ... and after the schedule (BLOCKS unfrozen, BN kept frozen)


def _head(base: Any, name: str) -> Any:
    import keras

    inputs = keras.Input((32, 32, 3))
    features = base(inputs, training=False)  # BatchNormalization stays in inference mode
    outputs = keras.layers.Dense(3, name="head")(keras.layers.Dropout(0.2)(features))
    return keras.Model(inputs, outputs, name=name)


@pytest.fixture(scope="module")
def tuned(tmp_path_factory: pytest.TempPathFactory) -> FineTune:
    import keras

    folder = tmp_path_factory.mktemp("finetune")
    keras.applications.MobileNetV3Small(
        input_shape=(32, 32, 3), include_top=False, weights=None, pooling="avg",
        minimalistic=True, alpha=0.75,
    ).save(folder / "base.keras")  # fmt: skip
    base = keras.models.load_model(folder / "base.keras")
    model = _head(base, "tuned")
    base.trainable = False
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.save(folder / "frozen.keras")
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 32, 32, 3)).astype("float32")
    y = rng.integers(0, 3, size=(4,)).astype("int32")
    np.save(folder / "x.npy", x)
    np.save(folder / "y.npy", y)
    # bare TensorFlow on the model frozen.keras holds (the same weights and flags)
    frozen = truth_of(model, lambda: _ce()(y, model(x)))
    model.fit(x, y, epochs=1, verbose=0)  # the head trains; fit's step is built
    base.trainable = True  # ... and the base is unfrozen without compile() again
    # the schedule on frozen.keras loaded again: flags set once, as a script sets them
    scheduled = keras.models.load_model(folder / "frozen.keras")
    for layer in scheduled.get_layer(BASE).layers:
        is_norm = isinstance(layer, keras.layers.BatchNormalization)
        layer.trainable = layer.name.startswith(BLOCKS) and not is_norm
    schedule = truth_of(scheduled, lambda: _ce()(y, scheduled(x)))
    return FineTune(folder, x, y, model, base, frozen, schedule)


def _ce() -> Any:
    import keras

    return keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def test_frozen_base(tuned: FineTune, run_cli: RunCli) -> None:
    result = run_cli("inspect", "frozen.keras", "--inputs", "x.npy", "--labels", "y.npy",
                     "--format", "json", cwd=tuned.folder)  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    truth = tuned.frozen
    assert statuses(report, "compiled") == truth
    assert {s for n, s in truth.items() if not n.startswith("head/")} == {"frozen"}
    assert truth["head/kernel"] == "ok"
    assert report["loaded"]["variables"]["trainable"] == ["head/kernel", "head/bias"]


def test_unfrozen_after_fit_and_batch_norm_in_inference(tuned: FineTune) -> None:
    import gradscope

    model, base = tuned.model, tuned.base
    report = gradscope.inspect(model, inputs=tuned.x, labels=tuned.y, training=True)
    truth = truth_of(model, lambda: _ce()(tuned.y, model(tuned.x, training=True)))
    got = {p.variable: str(p.status).split(":")[0] for p in report.loss("compiled").pairs}
    assert got == truth
    assert truth["conv/kernel"] == "ok" and truth["conv_bn/gamma"] == "ok"  # a gradient ...
    before = [v.numpy().copy() for v in base.trainable_variables]
    model.fit(tuned.x, tuned.y, epochs=1, verbose=0)
    after = [v.numpy() for v in base.trainable_variables]
    assert all(np.array_equal(a, b) for a, b in zip(before, after, strict=True))  # ... unused
    stale = report.to_dict()["loaded"]["variables"]["stale"]
    assert sorted(stale) == sorted(v.path for v in base.trainable_variables)
    notes = " ".join(report.notes)
    assert f"{len(stale)} variables became trainable after fit built its train step" in notes
    assert "call tuned.compile(...) again after changing trainable" in notes
    # base(x, training=False) does not keep BatchNormalization in inference mode in Keras 3:
    # bare Keras, a training-mode call (fit's) moves every trainable one's statistics
    norms = [layer for layer in base.layers if type(layer).__name__ == "BatchNormalization"]
    moving = [layer.moving_mean.numpy().copy() for layer in norms]
    model(tuned.x, training=True)
    moved = [
        not np.array_equal(m, n.moving_mean.numpy()) for m, n in zip(moving, norms, strict=True)
    ]
    assert all(moved)
    assert (
        f"{BASE} is called with training=False in model 'tuned', but Keras 3 passes the "
        f"outer call's training to every layer (keras-team/keras#20285): under fit its "
        f"{len(norms)} trainable BatchNormalization layers normalize by the batch"
    ) in notes
    assert "ran in inference mode under --training" not in notes


TARGET = """
    import keras
    import numpy as np

    import gradscope

    x, y = np.load("x.npy"), np.load("y.npy")


    def wrapped():
        base = keras.models.load_model("base.keras")
        inputs = keras.Input((32, 32, 3))
        features = keras.layers.Lambda(lambda t: base(t, training=False), name="wrap")(inputs)
        model = keras.Model(inputs, keras.layers.Dense(3, name="head")(features), name="tuned")
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        return gradscope.Target(losses={"ce": lambda: loss(y, model(x))}, model=model,
                                eager_check=False)
"""


def test_base_wrapped_in_a_lambda(tuned: FineTune, run_cli: RunCli) -> None:
    import keras

    (tuned.folder / "tune.py").write_text(textwrap.dedent(TARGET))
    result = run_cli("inspect", "tune.py:wrapped", "--format", "json", cwd=tuned.folder)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    base = tuned.base
    inputs = keras.Input((32, 32, 3))
    features = keras.layers.Lambda(lambda t: base(t, training=False))(inputs)
    model = keras.Model(inputs, keras.layers.Dense(3, name="head")(features))
    assert [v.path for v in model.trainable_variables] == ["head/kernel", "head/bias"]
    shown = [v for v in base.variables if v.trainable] + model.trainable_variables
    truth = verdicts(lambda: _ce()(tuned.y, model(tuned.x)), shown, shown)
    assert statuses(report, "ce") == truth  # every base variable gets a gradient ...
    said = (f"{len(base.trainable_variables)} variables (conv/kernel, conv_bn/gamma, "
            f"conv_bn/beta and {len(base.trainable_variables) - 3} more) of {BASE} are read "
            "inside Lambda layer 'wrap' of model 'tuned'")  # fmt: skip
    assert any(n.startswith(said) for n in report["notes"])  # ... that fit never applies


def test_layer_wise_unfreeze_schedule(tuned: FineTune, run_cli: RunCli) -> None:
    result = run_cli("inspect", "frozen.keras", "--freeze", "!expanded_conv_9*", "--freeze",
                     "!expanded_conv_10*", "--freeze", "BatchNormalization", "--inputs", "x.npy",
                     "--labels", "y.npy", "--format", "json", cwd=tuned.folder)  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert statuses(report, "compiled") == tuned.schedule
    unfrozen = {n for n, s in tuned.schedule.items() if s != "frozen"} - {
        "head/kernel",
        "head/bias",
    }
    assert unfrozen and all(n.startswith(BLOCKS) and "_bn/" not in n for n in unfrozen)
