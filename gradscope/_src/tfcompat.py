"""The private TensorFlow and Keras names gradscope reaches, found in one place.

gradscope watches TensorFlow from the inside: a few of what it reads and patches are not part
of TensorFlow's or Keras' public API (``tensorflow.python...``, ``keras.src...``). Each is
reached here by a short name; :data:`PRIVATE` says where it lives, in the order tried, so
that a TensorFlow or Keras that moves one breaks here, in one place, and gets its new place
added beside the old. ``tests/test_tfcompat.py`` resolves every name on the installed
versions. Nothing is imported until a name is asked for.
"""

from __future__ import annotations

import functools
import importlib
import sys
from typing import Any

#: Short name -> where it lives: ``module`` or ``module:attribute``, each place in turn.
PRIVATE: dict[str, tuple[str, ...]] = {
    # tensorflow.python: the eager runtime, tapes, functions
    "pywrap_tfe": ("tensorflow.python.pywrap_tfe",),
    "context": ("tensorflow.python.eager.context",),
    "tape": ("tensorflow.python.eager.tape",),
    "GradientTape": ("tensorflow.python.eager.backprop:GradientTape",),
    "FallbackException": ("tensorflow.python.eager.core:_FallbackException",),
    "Function": (
        "tensorflow.python.eager.polymorphic_function.polymorphic_function:Function",
        "tensorflow.python.eager.def_function:Function",
    ),
    "py_func_from_autograph": (
        "tensorflow.python.eager.polymorphic_function.autograph_util:py_func_from_autograph",
    ),
    "ag_ctx": ("tensorflow.python.autograph.core.ag_ctx",),
    "tf_stack": ("tensorflow.python.util.tf_stack",),
    # tensorflow.python: graphs and ops
    "ops": ("tensorflow.python.framework.ops",),
    "EagerTensor": ("tensorflow.python.framework.ops:EagerTensor",),
    "_EagerTensorBase": ("tensorflow.python.framework.ops:_EagerTensorBase",),
    "op_callbacks": ("tensorflow.python.framework.op_callbacks",),
    "constant_op": ("tensorflow.python.framework.constant_op",),
    "AutomaticControlDependencies": (
        "tensorflow.python.framework.auto_control_deps:AutomaticControlDependencies",
    ),
    "function_def_to_graph": (
        "tensorflow.python.framework.function_def_to_graph:function_def_to_graph",
    ),
    "gradients_util": ("tensorflow.python.ops.gradients_util",),
    "script_ops": ("tensorflow.python.ops.script_ops",),
    "op_selector": ("tensorflow.python.ops.op_selector",),
    "control_flow_util_v2": ("tensorflow.python.ops.control_flow_util_v2",),
    "BaseResourceVariable": ("tensorflow.python.ops.resource_variable_ops:BaseResourceVariable",),
    "ResourceVariable": ("tensorflow.python.ops.resource_variable_ops:ResourceVariable",),
    # tensorflow.python: TensorFlow 1 and distribution
    "Optimizer": ("tensorflow.python.training.optimizer:Optimizer",),
    "BaseSession": ("tensorflow.python.client.session:BaseSession",),
    "StrategyBase": ("tensorflow.python.distribute.distribute_lib:StrategyBase",),
    "_MirroredReplicaThread": ("tensorflow.python.distribute.mirrored_run:_MirroredReplicaThread",),
    # keras (public names, kept here beside the private ones they are patched with)
    "keras.Model": ("keras:Model",),
    "keras.Variable": ("keras:Variable", "keras.src.backend.common.variables:Variable"),
    "keras.Operation": ("keras:Operation", "keras.src.ops.operation:Operation"),
    "keras.layers.Layer": ("keras.layers:Layer",),
    # keras.src
    "TensorFlowTrainer": ("keras.src.backend.tensorflow.trainer:TensorFlowTrainer",),
    "LossScaleOptimizer": ("keras.src.optimizers.loss_scale_optimizer:LossScaleOptimizer",),
    "BaseOptimizer": ("keras.src.optimizers.base_optimizer:BaseOptimizer",),
    "Functional": ("keras.src.models.functional:Functional",),
    "keras_global_state": ("keras.src.backend.common.global_state",),
    "SafeModeScope": ("keras.src.saving.serialization_lib:SafeModeScope",),
    "KerasVariable": ("keras.src.backend.common.variables:Variable",),
    # JAX (frontends/program/jax_hooks.py): where value_and_grad is defined (what a jax.grad
    # bound before the watch calls)
    "jax_api": ("jax._src.api",),
    "jax_ad": ("jax._src.interpreters.ad",),  # JVP rules: a primitive whose derivative is 0
    "jax_source_info": ("jax._src.source_info_util",),  # an equation's user frames
}


def get(name: str) -> Any:
    """The object ``name`` of :data:`PRIVATE` stands for, imported on first use.

    Raises:
        ImportError: no place listed for it holds it in the installed TensorFlow or Keras.
    """
    return _get(name)


@functools.cache
def _get(name: str) -> Any:
    failures = []
    for place in PRIVATE[name]:
        module, _, attribute = place.partition(":")
        try:
            found = importlib.import_module(module)
            return getattr(found, attribute) if attribute else found
        except (ImportError, AttributeError) as exc:
            failures.append(f"{place}: {exc}")
    raise ImportError(f"{name} is in none of its places ({'; '.join(failures)})")


def where(name: str) -> str:
    """The place ``name`` was found at (for the compatibility test)."""
    for place in PRIVATE[name]:
        module, _, attribute = place.partition(":")
        try:
            found = importlib.import_module(module)
            if not attribute or hasattr(found, attribute):
                return place
        except ImportError:
            continue
    return ""


def keras_on_tensorflow() -> bool:
    """Whether the program's Keras is imported and runs on TensorFlow (one on JAX or PyTorch
    is left alone: its train step is not TensorFlow's). Imports nothing."""
    keras = sys.modules.get("keras")
    backend = getattr(getattr(keras, "backend", None), "backend", None)
    try:
        return "tensorflow" in sys.modules and backend is not None and backend() == "tensorflow"
    except Exception:  # a Keras that cannot say
        return False
