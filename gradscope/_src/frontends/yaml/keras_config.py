"""What a ``layer`` node's Keras config may hold: plain values and reviewed Keras objects only.

Keras deserializes any mapping with a ``class_name`` by importing its ``module`` and calling
what it finds: ``{module: keras.datasets.mnist, class_name: function, config: load_data}``
as an ``activation`` downloads a dataset, ``keras.config.set_epsilon`` changes global state.
So a serialized object is accepted only from a reviewed module and with a reviewed class
(layers, initializers, regularizers, constraints, dtype policies) or, as a ``function``,
with a reviewed activation name; a string may not be a dotted name or a path.
"""

from __future__ import annotations

import re
from typing import Any

from gradscope._src.frontends.yaml import catalog

#: Modules a serialized object in a layer config may come from.
MODULES = frozenset(
    {"keras", "keras.layers", "keras.initializers", "keras.regularizers", "keras.constraints",
     "keras.activations"}
)  # fmt: skip
#: Keras activation functions (``keras.activations``), by the name a config gives them.
ACTIVATIONS = frozenset(
    """celu elu exponential gelu glu hard_shrink hard_sigmoid hard_silu hard_swish hard_tanh
    leaky_relu linear log_sigmoid log_softmax mish relu relu6 selu sigmoid silu soft_shrink
    softmax softplus softsign sparse_plus sparse_sigmoid sparsemax squareplus swish tanh
    tanh_shrink threshold""".split()  # noqa: SIM905 - a list of names reads better as words
)
#: Regularizer, constraint and dtype-policy classes (initializers and layers come from the
#: generated name lists).
OTHER_CLASSES = frozenset(
    """L1 L2 L1L2 OrthogonalRegularizer MaxNorm MinMaxNorm NonNeg UnitNorm DTypePolicy
    FloatDTypePolicy""".split()  # noqa: SIM905
)
_PLAIN_STRING = re.compile(r"^[A-Za-z0-9_\- ]{0,64}$")


def config_problem(value: Any) -> str | None:
    """Why a layer config (at any depth) is refused, or None when it holds only what is safe."""
    if isinstance(value, list):
        return next((p for p in map(config_problem, value) if p), None)
    if isinstance(value, str):
        if _PLAIN_STRING.match(value):
            return None
        return (
            f"refused: {value[:40]!r} in a layer config (a dotted name or a path could "
            "import a module or name a file)"
        )
    if not isinstance(value, dict):
        return None
    if "class_name" in value or "module" in value or "registered_name" in value:
        problem = _object_problem(value)
        if problem:
            return problem
        return config_problem(value.get("config"))
    return next((p for p in map(config_problem, value.values()) if p), None)


def _object_problem(value: dict[str, Any]) -> str | None:
    module, name = value.get("module"), value.get("class_name")
    registered = value.get("registered_name")
    if module is not None and module not in MODULES:
        return f"refused: a serialized object from module {module!r} (only keras.layers, ...)"
    if name == "function":
        config = value.get("config")
        if config in ACTIVATIONS and registered in (None, config):
            return None
        return f"refused: a serialized function {config!r}; only Keras activations may be named"
    classes = catalog.layer_classes() | catalog.keras_initializers() | OTHER_CLASSES
    if not isinstance(name, str) or name not in classes:
        return (
            f"refused: a serialized object of class {name!r}, which is not a reviewed Keras class"
        )
    if registered not in (None, name):
        return f"refused: registered_name {registered!r} differs from class_name {name!r}"
    return None
