"""SavedModel directories and ``keras.layers.TFSMLayer`` against bare TensorFlow: which
signature ran, which variables are trainable, frozen or untracked, and what training reaches."""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.conftest import RunCli
from tests.frontends.saved.truth import statuses, verdicts

pytestmark = pytest.mark.tf


@dataclass(frozen=True)
class Models:
    folder: Path
    x: np.ndarray  # inputs for both models, saved as x.npy


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Models:
    """``export/``: a Keras model exported with a frozen BatchNormalization; ``module/``: a
    tf.Module with a signature (w trainable, b not, scale used only under stop_gradient);
    ``bare/``: the same module saved without signatures; ``printing/``: a signature that
    prints."""
    import keras
    import tensorflow as tf

    folder = tmp_path_factory.mktemp("savedmodel")
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, name="d1"),
                              keras.layers.BatchNormalization(name="bn"),
                              keras.layers.Dense(2, name="d2")], name="seq")  # fmt: skip
    model.get_layer("bn").trainable = False
    model.export(str(folder / "export"), verbose=False)

    class Scaled(tf.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = tf.Variable(tf.ones((4, 2)), name="w")
            self.b = tf.Variable(tf.zeros((2,)), name="b", trainable=False)
            self.scale = tf.Variable(2.0, name="scale")

        @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32)])
        def __call__(self, x: Any) -> Any:
            return {"y": tf.matmul(x, self.w) + self.b,
                    "z": tf.stop_gradient(x[:, :1] * self.scale)}  # fmt: skip

    class Printing(tf.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = tf.Variable(tf.ones((4, 2)), name="w")

        @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32)])
        def __call__(self, x: Any) -> Any:
            tf.print("a side effect")
            return tf.matmul(x, self.w)

    scaled = Scaled()
    tf.saved_model.save(scaled, str(folder / "module"))
    tf.saved_model.save(scaled, str(folder / "bare"), signatures={})
    tf.saved_model.save(Printing(), str(folder / "printing"))
    x = np.random.default_rng(3).standard_normal((5, 4)).astype("float32")
    np.save(folder / "x.npy", x)
    return Models(folder, x)


def _json(run_cli: RunCli, *args: str, cwd: Path) -> dict[str, Any]:
    result = run_cli("inspect", *args, "--format", "json", cwd=cwd)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_keras_export_matches_tensorflow(models: Models, run_cli: RunCli) -> None:
    import tensorflow as tf

    report = _json(run_cli, "export", "--loss", "mse", "--inputs", "x.npy", cwd=models.folder)
    loaded = tf.saved_model.load(str(models.folder / "export"))
    serve = loaded.signatures["serving_default"]
    (key,) = serve.structured_input_signature[1]  # keras_tensor, or _593 after other tests
    # labels are random: None-ness does not depend on their values
    truth = verdicts(lambda: tf.reduce_sum(serve(**{key: models.x})["output_0"] ** 2),
                     serve.variables, loaded.trainable_variables)  # fmt: skip
    assert statuses(report, "mse") == truth
    assert truth["seq/bn/gamma"] == "frozen" and truth["seq/d1/kernel"] == "ok"
    facts = report["loaded"]
    assert (facts["format"], facts["signature"], facts["inputs"]) == (
        "saved_model", "serving_default", "x.npy")  # fmt: skip
    assert sorted(facts["variables"]["frozen"]) == [
        "seq/bn/beta", "seq/bn/gamma", "seq/bn/moving_mean", "seq/bn/moving_variance"]  # fmt: skip
    notes = report["notes"]
    assert any(n.startswith("signature 'serving_default' called (the SavedModel also has serve; "
                            "--signature picks one); it reads 8 variables: 4 trainable, 4 frozen")
               for n in notes)  # fmt: skip
    assert any("(seq/bn/gamma, seq/bn/beta) have trainable tf.Variables: "
               "keras.layers.TFSMLayer tracks them as trainable" in n for n in notes)  # fmt: skip
    other = _json(run_cli, "export", "--loss", "mae", "--signature", "serve", cwd=models.folder)
    assert other["loaded"]["signature"] == "serve"


def test_tf_module_signature_matches_tensorflow(models: Models, run_cli: RunCli) -> None:
    import tensorflow as tf

    report = _json(run_cli, "module", "--loss", "y=mse", "--loss", "z=mse", "--inputs", "x.npy",
                   cwd=models.folder)  # fmt: skip
    assert list(report["losses"]) == ["y", "z", "total"]
    loaded = tf.saved_model.load(str(models.folder / "module"))
    fn = loaded.signatures["serving_default"]
    trainable = [v for v in fn.variables if v.trainable]
    for out in ("y", "z"):
        truth = verdicts(lambda out=out: tf.reduce_mean((fn(x=models.x)[out] - 0.5) ** 2),
                         fn.variables, trainable)  # fmt: skip
        assert statuses(report, out) == truth, out
    # one call computes every output: w reaches z's loss as zeros through y's, scale is cut
    assert statuses(report, "z") == {"w": "zero", "scale": "none", "b": "frozen"}
    assert report["loaded"]["variables"] == {
        "trainable": ["w", "scale"], "frozen": ["b"], "untracked": [], "stale": []}  # fmt: skip
    assert any(n.startswith("the SavedModel lists no trainable_variables (saved from a "
                            "tf.Module)") for n in report["notes"])  # fmt: skip


def test_savedmodel_refusals(models: Models, run_cli: RunCli) -> None:
    bare = run_cli("inspect", "bare", "--loss", "mse", cwd=models.folder)
    assert bare.returncode == 2
    assert bare.stderr.startswith("gradscope inspect: bare: the SavedModel has no signatures, ")
    printing = run_cli("inspect", "printing", "--loss", "mse", cwd=models.folder)
    assert printing.returncode == 2
    assert printing.stderr.startswith(
        "gradscope inspect: printing: signature 'serving_default' runs op PrintV2 "
    )
    assert "--no-safe-mode runs it anyway" in printing.stderr
    unknown = run_cli("inspect", "export", "--loss", "mse", "--signature", "predict",
                      cwd=models.folder)  # fmt: skip
    assert unknown.stderr == (
        "gradscope inspect: export: the SavedModel has no signature 'predict': pick one with "
        "--signature (serve, serving_default)\n")  # fmt: skip
    compiled = run_cli("inspect", "module", cwd=models.folder)
    assert compiled.returncode == 2
    assert "a SavedModel keeps no compile() configuration" in compiled.stderr
    for result in (bare, printing, unknown, compiled):
        assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.stderr
    trusted = run_cli("inspect", "printing", "--loss", "mse", "--no-safe-mode", "-q",
                      cwd=models.folder)  # fmt: skip
    assert trusted.returncode == 0, trusted.stderr


TARGETS = """
    import keras
    import numpy as np
    import tensorflow as tf

    import gradscope

    x = np.load("x.npy")
    y = np.array([0, 1, 2, 0, 1])
    ce = keras.losses.SparseCategoricalCrossentropy(from_logits=True)


    def tfsm():
        base = keras.layers.TFSMLayer("export", call_endpoint="serve")
        inputs = keras.Input((4,))
        model = keras.Model(inputs, keras.layers.Dense(3, name="head")(base(inputs)), name="ft")
        return gradscope.Target(losses={"ce": lambda: ce(y, model(x))}, model=model)


    def signature_in_lambda():
        serve = tf.saved_model.load("module").signatures["serving_default"]
        inputs = keras.Input((4,))
        features = keras.layers.Lambda(lambda t: serve(x=t)["y"], name="wrap")(inputs)
        model = keras.Model(inputs, keras.layers.Dense(3, name="head")(features), name="ft")
        return gradscope.Target(losses={"ce": lambda: ce(y, model(x))}, model=model)
"""


def test_tfsm_layer_and_a_signature_in_a_lambda(models: Models, run_cli: RunCli) -> None:
    import keras
    import tensorflow as tf

    (models.folder / "finetune.py").write_text(textwrap.dedent(TARGETS))
    report = _json(run_cli, "finetune.py:tfsm", cwd=models.folder)
    base = keras.layers.TFSMLayer(str(models.folder / "export"), call_endpoint="serve")
    inputs = keras.Input((4,))
    model = keras.Model(inputs, keras.layers.Dense(3, name="head")(base(inputs)))
    y = np.array([0, 1, 2, 0, 1])
    ce = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    shown = [v for v in model.variables if v.trainable]
    truth = verdicts(lambda: ce(y, model(models.x)), shown, model.trainable_variables)
    assert statuses(report, "ce") == truth
    assert truth["seq_bn_gamma:0"] == "ok"  # frozen when exported, trained through TFSMLayer
    notes = report["notes"]
    assert any(n.startswith("TFSMLayer 'tfsm_layer' calls endpoint 'serve' of export; it tracks "
                            "8 variables (6 trainable)") for n in notes)  # fmt: skip
    trains = "TFSMLayer 'tfsm_layer' trains 2 variables the SavedModel lists as non-trainable "
    assert any(n.startswith(trains + "(seq_bn_gamma:0, seq_bn_beta:0)") for n in notes)

    wrapped = _json(run_cli, "finetune.py:signature_in_lambda", cwd=models.folder)
    module = tf.saved_model.load(str(models.folder / "module"))
    serve = module.signatures["serving_default"]
    inputs = keras.Input((4,))
    features = keras.layers.Lambda(lambda t: serve(x=t)["y"])(inputs)
    head = keras.layers.Dense(3, name="head")
    model = keras.Model(inputs, head(features))
    assert [v.path for v in model.trainable_variables] == ["head/kernel", "head/bias"]
    truth = verdicts(lambda: ce(y, model(models.x)), [module.w, module.scale],
                     [module.w, module.scale])  # fmt: skip
    got = statuses(wrapped, "ce")
    assert {k: got[k] for k in ("w", "scale")} == truth  # w gets a gradient ...
    said = "2 variables of a SavedModel (w, scale, restored at finetune.py:21) are read by the "
    assert any(n.startswith(said) for n in wrapped["notes"])  # ... and fit never applies them
