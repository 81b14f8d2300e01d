"""``gradscope inspect model.keras`` (and ``.h5``, ``check``, ``diff``, ``graph``) against bare
TensorFlow: the loaded model's gradients, for the loss the user names, on their data."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pytest

from tests.conftest import ROOT, RunCli
from tests.frontends.saved.conftest import Saved, truth_of
from tests.frontends.saved.truth import statuses

pytestmark = pytest.mark.tf


def _json(run_cli: RunCli, *args: str, cwd: Path) -> dict[str, Any]:
    result = run_cli("inspect", *args, "--format", "json", cwd=cwd)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_keras_file_compiled_loss_matches_tensorflow(saved: Saved, run_cli: RunCli) -> None:
    import keras

    before = hashlib.sha256(saved.keras.read_bytes()).hexdigest()
    report = _json(run_cli, "model.keras", "--inputs", "inputs.npz", "--labels", "labels.npz",
                   cwd=saved.folder)  # fmt: skip
    assert list(report["losses"]) == ["price", "kind", "total"]  # compile()'s, as fit's
    model = saved.load()
    x, price, kind = saved.arrays["features"], saved.arrays["price"], saved.arrays["kind"]
    mse, ce = keras.losses.MeanSquaredError(), keras.losses.SparseCategoricalCrossentropy()
    terms = {
        "price": lambda: mse(price, model(x)["price"]),
        "kind": lambda: ce(kind, model(x)["kind"]),
    }
    truth = {name: truth_of(model, term) for name, term in terms.items()}
    truth["total"] = truth_of(model, lambda: terms["price"]() + terms["kind"]())
    for loss, expected in truth.items():
        assert statuses(report, loss) == expected, loss
    assert truth["price"]["kind/kernel"] == "none" and truth["price"]["stem/kernel"] == "frozen"
    loaded = report["loaded"]
    assert loaded["format"] == "keras" and loaded["model"] == "shop" and loaded["safe_mode"]
    assert (loaded["inputs"], loaded["labels"], loaded["training"]) == (
        "inputs.npz", "labels.npz", False)  # fmt: skip
    assert loaded["variables"]["frozen"] == ["stem/kernel", "stem/bias"]
    assert report["problems"] == []
    jsonschema.validate(report, json.loads((ROOT / "schema" / "report-v1.json").read_text()))
    assert hashlib.sha256(saved.keras.read_bytes()).hexdigest() == before  # never written


def test_keras_loss_names_per_output_and_one_output(saved: Saved, run_cli: RunCli) -> None:
    both = _json(
        run_cli,
        "model.h5",
        "--loss",
        "mse",
        "--loss",
        "sparse_categorical_crossentropy",
        cwd=saved.folder,
    )  # fmt: skip (one per output, in the model's order)
    assert list(both["losses"]) == ["price", "kind", "total"]
    assert both["loaded"]["format"] == "h5"
    assert both["notes"][0].startswith("Keras could not restore this .h5 file's compile() ")
    assert both["loaded"]["losses"]["kind"] == "sparse_categorical_crossentropy on output kind"
    written = "kind=SparseCategoricalCrossentropy(from_logits=False)"
    one = _json(run_cli, "model.keras", "--loss", written, cwd=saved.folder)
    assert list(one["losses"]) == ["kind"]
    assert statuses(one, "kind")["price/kernel"] == "none"
    assert any("kind: class ids in [0, 3)" in note for note in one["notes"])  # labels it takes
    assert any(note.startswith("inputs are random (seed 0): features [4, 6] float32")
               for note in one["notes"])  # fmt: skip


def test_keras_training_mode_and_freeze(saved: Saved, run_cli: RunCli) -> None:
    import keras
    import tensorflow as tf

    report = _json(run_cli, "model.keras", "--loss", "price=mse", "--training", "--freeze", "body",
                   "--freeze", "BatchNormalization", "--freeze", "!stem", "--inputs",
                   "inputs.npz", "--labels", "labels.npz", cwd=saved.folder)  # fmt: skip
    model = saved.load()
    for name in ("body", "norm"):
        model.get_layer(name).trainable = False
    model.get_layer("stem").trainable = True
    x, price = saved.arrays["features"], saved.arrays["price"]
    tf.random.set_seed(0)  # Dropout drops: None-ness does not depend on which units
    truth = truth_of(model, lambda: keras.losses.mean_squared_error(
        price, model(x, training=True)["price"]))  # fmt: skip
    assert statuses(report, "price") == truth
    assert truth["stem/kernel"] == "ok" and truth["body/kernel"] == "frozen"
    assert report["loaded"]["training"] is True
    assert report["loaded"]["freeze"] == [
        "--freeze body froze body", "--freeze BatchNormalization froze norm",
        "--freeze !stem unfroze stem",
    ]  # fmt: skip
    assert any(n.startswith("layers ran in training mode") for n in report["notes"])


def test_keras_freeze_glob_that_matches_nothing(saved: Saved, run_cli: RunCli) -> None:
    result = run_cli("inspect", "model.keras", "--freeze", "bdy*", cwd=saved.folder)
    assert result.returncode == 2
    assert result.stderr.startswith("gradscope inspect: --freeze 'bdy*': no layer of model.keras")
    assert len(result.stderr.splitlines()) == 1


def test_keras_check_diff_graph(saved: Saved, run_cli: RunCli) -> None:
    # only the price loss: the kind head trains from a loss not computed here
    check = run_cli("check", "model.keras", "--loss", "price=mse", "--format", "json",
                    cwd=saved.folder)  # fmt: skip
    assert check.returncode == 0, check.stderr
    said = "only some outputs have a loss (not kind), so never-trained variables are not reported"
    assert json.loads(check.stdout)["notes"][-1] == said
    assert run_cli("check", "model.keras", cwd=saved.folder).returncode == 0  # compiled: all
    diff = run_cli("diff", "model.keras", "price", "kind", "--format", "json", cwd=saved.folder)
    assert diff.returncode == 0, diff.stderr
    reach = json.loads(diff.stdout)["diff"]["reach"]
    assert reach["only_a"] == ["price/kernel", "price/bias"]
    assert reach["only_b"] == ["kind/kernel", "kind/bias"]
    assert "body/kernel" in reach["both"] and "stem/kernel" in reach["neither"]  # frozen
    graph = run_cli("graph", "model.keras", "--loss", "price=mse", "--format", "mermaid",
                    cwd=saved.folder)  # fmt: skip
    assert graph.returncode == 0, graph.stderr
    assert graph.stdout.startswith("%% gradscope graph model.keras --loss price=mse\nflowchart")
    several = run_cli("graph", "model.keras", cwd=saved.folder)
    assert several.returncode == 2
    assert "compute one output's loss: --loss price=compiled" in several.stderr


def test_saved_options_refused_for_a_spec(run_cli: RunCli) -> None:
    result = run_cli("inspect", "configs/multitask.yaml", "--inputs", "x.npy", "--training")
    assert result.returncode == 2
    assert result.stderr == (
        "gradscope inspect: --inputs (inputs=), --training (training=): only for a saved model "
        "(a .keras or .h5 file, a SavedModel directory, a Keras model); configs/multitask.yaml "
        "is not one\n"
    )


def test_api_inspect_file_and_model_object(saved: Saved) -> None:
    import gradscope

    x = saved.arrays["features"]
    report = gradscope.inspect(str(saved.keras), loss={"price": "mse"}, inputs=x,
                               labels={"price": saved.arrays["price"]})  # fmt: skip
    assert [loss.name for loss in report.losses] == ["price"]
    assert report.loss("price").pair("kind/kernel").status == "none:disconnected"
    assert report.to_dict()["loaded"]["inputs"] == "arrays"
    model = saved.load()
    shown = gradscope.inspect(model, loss="mse", inputs=x)  # a model in a notebook
    assert [loss.name for loss in shown.losses] == ["price", "kind", "total"]
    assert shown.to_dict()["loaded"]["format"] == "keras_model"
    assert np.isfinite(shown.loss("total").value)
    assert "shop" in shown._repr_html_()  # the notebook display of any report


def test_unfreezing_a_reloaded_base(tmp_path: Path, run_cli: RunCli) -> None:
    import keras

    base = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, name="features")],
                            name="base")  # fmt: skip
    inputs = keras.Input((4,))
    model = keras.Model(inputs, keras.layers.Dense(1, name="head")(base(inputs)))
    base.trainable = False
    model.save(tmp_path / "tuned.keras")
    report = _json(run_cli, "tuned.keras", "--loss", "mse", "--freeze", "!base", cwd=tmp_path)

    reloaded = keras.models.load_model(tmp_path / "tuned.keras")
    again = reloaded.get_layer("base")
    assert again.trainable and not again.get_layer("features").trainable  # as saved
    again.trainable = True  # the script's line: Keras skips it (the flag is already True)
    x = np.ones((2, 4), "float32")
    loss = lambda: keras.losses.mean_squared_error(np.zeros((2, 1)), reloaded(x))  # noqa: E731
    assert truth_of(reloaded, loss)["features/kernel"] == "frozen"
    again.trainable = False
    again.trainable = True  # what the user meant
    assert statuses(report, "mse") == truth_of(reloaded, loss)
    assert statuses(report, "mse")["features/kernel"] == "ok"
    said = ("in a script, base.trainable = True would do nothing here: base.trainable is already "
            "True while 1 layer inside it is not trainable")  # fmt: skip
    assert any(n.startswith(said) for n in report["notes"])


def test_a_head_compiled_without_a_loss_is_never_trained(tmp_path: Path, run_cli: RunCli) -> None:
    """``compile(loss=["mse", None])``: fit's loss leaves the second head untrained, and
    ``--loss compiled`` says so (it was a KeyError); naming that head's compiled loss is a
    usage error."""
    import keras

    inputs = keras.Input((4,))
    outputs = [keras.layers.Dense(3, name="a")(inputs), keras.layers.Dense(2, name="b")(inputs)]
    model = keras.Model(inputs, outputs)
    model.compile(optimizer="adam", loss=["mse", None])
    model.save(tmp_path / "two.keras")
    report = _json(run_cli, "two.keras", "--loss", "compiled", cwd=tmp_path)
    assert list(report["losses"]) == ["a", "total"]

    x = np.random.default_rng(0).normal(size=(4, 4)).astype("float32")
    y = np.zeros((4, 3), "float32")
    fit_loss = lambda: keras.losses.mean_squared_error(y, model(x)[0])  # noqa: E731
    truth = truth_of(model, fit_loss)
    assert truth["b/kernel"] == truth["b/bias"] == "none"
    assert statuses(report, "total") == truth
    named = sorted(p["variable"] for p in report["problems"] if p["kind"] == "never-trained")
    assert named == ["b/bias", "b/kernel"]
    assert "output b compiled with no loss (None)" in report["loaded"]["losses"]["total"]

    refused = run_cli("inspect", "two.keras", "--loss", "b=compiled", cwd=tmp_path)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "output 'b' of two.keras was compiled with no loss (None)" in refused.stderr
