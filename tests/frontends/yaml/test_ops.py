"""Op names: the lookup order, the deny-list under every spelling, and the generated lists."""

from __future__ import annotations

import functools
import importlib.util
import os

import pytest

from gradscope._src.frontends.yaml import catalog
from gradscope._src.frontends.yaml.ops import OpError, refusal, resolve_op, spellings
from tests.conftest import ROOT


@pytest.mark.parametrize(
    ("name", "target"),
    [
        ("stop_gradient", "gradscope.stop_gradient"),
        ("tf.stop_gradient", "gradscope.stop_gradient"),
        ("assign", "gradscope.assign"),
        ("layer", "gradscope.layer"),
        ("matmul", "matmul"),
        ("reduce_mean", "reduce_mean"),
        ("relu", "nn.relu"),
        ("log1p", "math.log1p"),
        ("det", "linalg.det"),
        ("nn.softmax", "nn.softmax"),
        ("math.log", "math.log"),
        ("tf.math.log", "math.log"),
        ("tf.matmul", "matmul"),
        ("random.stateless_normal", "random.stateless_normal"),
        ("signal.fft", "signal.fft"),
        ("debugging.check_numerics", "debugging.check_numerics"),
        ("debugging.assert_equal", "debugging.assert_equal"),
    ],
)
def test_resolve_op_follows_the_lookup_order(name: str, target: str):
    assert resolve_op(name) == target


@pytest.mark.parametrize(
    "name",
    [
        "tf.io.write_file", "io.write_file", "compat.v1.io.write_file", "raw_ops.WriteFile",
        "io.read_file", "io.gfile.GFile", "gfile.GFile", "__builtins__", "__import__",
        "nn.__dict__", "math..log", ".log", "log.", "_private", "py_function",
        "numpy_function", "print", "tf.print", "summary.scalar", "summary",
        "debugging.set_log_device_placement", "debugging.enable_check_numerics",
        "random.set_seed", "random.Generator", "random.get_global_generator",
        "config.set_visible_devices", "saved_model.load", "keras.utils.get_file",
        "data.Dataset", "distribute.MirroredStrategy", "train.Checkpoint",
        "lookup.StaticHashTable", "tpu.experimental", "experimental.numpy.sum",
        "random.experimental.stateless_split", "autograph.to_graph", "profiler.experimental.start",
        "sysconfig.get_lib", "test.main", "load_library", "load_op_library", "map_fn",
        "vectorized_map", "while_loop", "cond", "case", "switch_case", "scan", "foldl",
        "foldr", "custom_gradient", "recompute_grad", "function", "Variable", "Module",
        "GradientTape", "Graph", "device", "name_scope", "control_dependencies",
        "init_scope", "gradients", "hessians", "nest.map_structure", "sparse.map_values",
        "tf.compat.v1.assign", "compat.v1.set_random_seed",
    ],
)  # fmt: skip
def test_resolve_op_refuses_every_spelling(name: str):
    with pytest.raises(OpError, match=r"^refused: "):
        resolve_op(name)
    assert refusal(name) is not None


def test_resolve_op_suggests_close_names():
    with pytest.raises(OpError, match=r"did you mean 'matmul'"):
        resolve_op("matmull")
    with pytest.raises(OpError, match=r"did you mean 'matmul'"):
        resolve_op("MatMul")
    with pytest.raises(OpError, match=r"saw 'zzz_qq' \(an op under tf"):
        resolve_op("zzz_qq")


def test_resolve_op_dotted_names_are_taken_as_written():
    with pytest.raises(OpError, match="expected a TensorFlow function"):
        resolve_op("nn.matmul")  # exists as tf.matmul, not tf.nn.matmul


def test_every_allowed_op_passes_the_deny_list():
    assert len(catalog.allowed_ops()) > 500
    assert [name for name in catalog.allowed_ops() if refusal(name)] == []


def test_spellings_include_short_forms():
    names = set(spellings())
    assert {"relu", "nn.relu", "log1p", "math.log1p", "assign", "matmul"} <= names


def test_catalog_lists_are_plausible():
    assert catalog.ops_data()["tensorflow"].startswith("2.")
    assert {"Dense", "Embedding", "Conv2D"} <= catalog.layer_classes()
    assert not set(catalog.REFUSED_LAYERS) & catalog.layer_classes()
    assert {"ResNet50", "MobileNetV2"} <= catalog.applications()
    assert {"glorot_uniform", "GlorotUniform", "he_normal"} <= catalog.keras_initializers()


def _tf_modules():
    pytest.importorskip("tensorflow")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import keras
    import tensorflow as tf

    return tf, keras


@pytest.mark.tf
def test_generated_lists_are_current(capsys: pytest.CaptureFixture[str]):
    loaded = importlib.util.spec_from_file_location("gen_names", ROOT / "scripts" / "gen_names.py")
    assert loaded is not None and loaded.loader is not None
    script = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(script)
    code = script.main(["--check"])
    assert code == 0, capsys.readouterr().err[-2000:]


@pytest.mark.tf
def test_every_checked_in_name_resolves_in_tensorflow():
    tf, keras = _tf_modules()
    for path in catalog.allowed_ops():
        assert callable(functools.reduce(getattr, path.split("."), tf)), path
    for dtype in catalog.DTYPES:
        assert tf.as_dtype(dtype).name == dtype
    for name in catalog.layer_classes():
        assert issubclass(getattr(keras.layers, name), keras.layers.Layer), name
    for name in catalog.applications():
        assert callable(getattr(keras.applications, name)), name
    for name in catalog.keras_initializers():
        assert keras.initializers.get(name) is not None, name
