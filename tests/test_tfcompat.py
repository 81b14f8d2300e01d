"""The compatibility module (``tfcompat.py``): every private TensorFlow and Keras name
gradscope reaches resolves on each supported version, at the place this file states for it.

A TensorFlow or Keras that moves a name fails here, in one place: give the name its new place
in ``tfcompat.PRIVATE`` (after the old one) and add the version's row below.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from gradscope._src import tfcompat

pytestmark = pytest.mark.tf

#: (TensorFlow, Keras) major.minor -> where each name of ``tfcompat.PRIVATE`` is found.
FOUND: dict[tuple[str, str], dict[str, str]] = {
    ("2.21", "3.15"): {
        "pywrap_tfe": "tensorflow.python.pywrap_tfe",
        "context": "tensorflow.python.eager.context",
        "tape": "tensorflow.python.eager.tape",
        "GradientTape": "tensorflow.python.eager.backprop:GradientTape",
        "FallbackException": "tensorflow.python.eager.core:_FallbackException",
        "Function": "tensorflow.python.eager.polymorphic_function.polymorphic_function:Function",
        "py_func_from_autograph": "tensorflow.python.eager.polymorphic_function.autograph_util:py_func_from_autograph",
        "ag_ctx": "tensorflow.python.autograph.core.ag_ctx",
        "tf_stack": "tensorflow.python.util.tf_stack",
        "ops": "tensorflow.python.framework.ops",
        "EagerTensor": "tensorflow.python.framework.ops:EagerTensor",
        "_EagerTensorBase": "tensorflow.python.framework.ops:_EagerTensorBase",
        "op_callbacks": "tensorflow.python.framework.op_callbacks",
        "constant_op": "tensorflow.python.framework.constant_op",
        "AutomaticControlDependencies": "tensorflow.python.framework.auto_control_deps:AutomaticControlDependencies",
        "function_def_to_graph": "tensorflow.python.framework.function_def_to_graph:function_def_to_graph",
        "gradients_util": "tensorflow.python.ops.gradients_util",
        "script_ops": "tensorflow.python.ops.script_ops",
        "op_selector": "tensorflow.python.ops.op_selector",
        "control_flow_util_v2": "tensorflow.python.ops.control_flow_util_v2",
        "BaseResourceVariable": "tensorflow.python.ops.resource_variable_ops:BaseResourceVariable",
        "ResourceVariable": "tensorflow.python.ops.resource_variable_ops:ResourceVariable",
        "Optimizer": "tensorflow.python.training.optimizer:Optimizer",
        "BaseSession": "tensorflow.python.client.session:BaseSession",
        "StrategyBase": "tensorflow.python.distribute.distribute_lib:StrategyBase",
        "_MirroredReplicaThread": "tensorflow.python.distribute.mirrored_run:_MirroredReplicaThread",
        "keras.Model": "keras:Model",
        "keras.Variable": "keras:Variable",
        "keras.Operation": "keras:Operation",
        "keras.layers.Layer": "keras.layers:Layer",
        "TensorFlowTrainer": "keras.src.backend.tensorflow.trainer:TensorFlowTrainer",
        "LossScaleOptimizer": "keras.src.optimizers.loss_scale_optimizer:LossScaleOptimizer",
        "BaseOptimizer": "keras.src.optimizers.base_optimizer:BaseOptimizer",
        "Functional": "keras.src.models.functional:Functional",
        "keras_global_state": "keras.src.backend.common.global_state",
        "SafeModeScope": "keras.src.saving.serialization_lib:SafeModeScope",
        "KerasVariable": "keras.src.backend.common.variables:Variable",
        "jax_api": "jax._src.api",  # JAX 0.10 (the [jax] extra; dev installs it)
        "jax_ad": "jax._src.interpreters.ad",
        "jax_source_info": "jax._src.source_info_util",
    },
}


def _installed() -> tuple[str, str]:
    import keras
    import tensorflow as tf

    return (
        ".".join(tf.__version__.split(".")[:2]),
        ".".join(keras.__version__.split(".")[:2]),
    )


def test_every_private_name_resolves_where_this_version_keeps_it() -> None:
    versions = _installed()
    assert versions in FOUND, f"TensorFlow/Keras {versions}: no row in FOUND (a new version)"
    assert {name: tfcompat.where(name) for name in tfcompat.PRIVATE} == FOUND[versions]
    for name in tfcompat.PRIVATE:
        assert tfcompat.get(name) is not None, name


def test_a_name_in_none_of_its_places_says_where_it_looked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(tfcompat.PRIVATE, "moved", ("tensorflow.python.nowhere:Thing",))
    with pytest.raises(ImportError, match="moved is in none of its places"):
        tfcompat._get.__wrapped__("moved")


def test_keras_on_tensorflow_is_told_without_importing() -> None:
    import sys

    assert tfcompat.keras_on_tensorflow() == (
        "keras" in sys.modules and sys.modules["keras"].backend.backend() == "tensorflow"
    )


#: The private packages of TensorFlow, Keras and JAX: reached through ``tfcompat.PRIVATE`` only.
_PRIVATE = ("tensorflow.python", "tensorflow.compiler", "tensorflow.core", "keras.src", "jax._src")


def _private(module: str) -> bool:
    return any(module == p or module.startswith(f"{p}.") for p in _PRIVATE)


def test_no_module_but_the_compatibility_module_imports_a_private_name() -> None:
    """Every ``import`` (at the top or inside a function) and ``importlib.import_module`` of
    gradscope names public modules only, outside ``tfcompat.py``: an upgrade that moves a
    private name breaks in that one module (and the test above)."""
    root = Path(tfcompat.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.name == "tfcompat.py" and path.parent == root:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
            elif (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "import_module"
                  and node.args and isinstance(node.args[0], ast.Constant)):  # fmt: skip
                names = [str(node.args[0].value)]
            else:
                continue
            found += [f"{path.relative_to(root)}:{node.lineno}: {n}" for n in names if _private(n)]
    assert found == []
