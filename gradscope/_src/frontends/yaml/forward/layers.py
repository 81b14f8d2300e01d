"""The ``layer`` op: a Keras layer or a ``keras.applications`` model, with no code and no files."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: Layers that run user code or read files; the validator refuses them too (defence in depth).
REFUSED_LAYERS = frozenset({"Lambda", "TFSMLayer", "TorchModuleWrapper", "JaxLayer", "FlaxLayer"})


class LayerRefused(ValueError):
    """The layer class or its config is not allowed in a spec."""


def find_class(keras: Any, name: str) -> tuple[Any, bool]:
    """Return ``(constructor, is_application)`` for a Keras layer or application name."""
    if name in REFUSED_LAYERS or name.startswith("_"):
        raise LayerRefused(f"layer class {name!r} is refused: it runs user code or reads files")
    layer = getattr(keras.layers, name, None)
    if isinstance(layer, type) and issubclass(layer, keras.layers.Layer):
        return layer, False
    app = getattr(keras.applications, name, None)
    if callable(app) and not isinstance(app, type):
        return app, True
    raise LayerRefused(f"expected a keras.layers class or keras.applications model, saw {name!r}")


def make_layer(keras: Any, class_name: str, config: Mapping[str, Any]) -> Any:
    """Instantiate the layer; applications are always built with ``weights=None``."""
    ctor, is_app = find_class(keras, class_name)
    kwargs = dict(config)
    if is_app:
        weights = kwargs.pop("weights", None)
        if weights is not None:
            raise LayerRefused(f"config.weights must be null (no downloads), saw {weights!r}")
        kwargs["weights"] = None
    elif "weights" in kwargs and kwargs["weights"] is not None:
        raise LayerRefused(f"config.weights must be null, saw {kwargs['weights']!r}")
    return ctor(**kwargs)


def weight_name(node: str, layer: Any, variable: Any) -> str:
    """``<node>/<weight path inside the layer>``: ``d1/kernel``, ``net/conv1_conv/kernel``."""
    path = str(getattr(variable, "path", None) or variable.name).removesuffix(":0")
    prefix = f"{layer.name}/"
    if path.startswith(prefix):
        path = path[len(prefix) :]
    return f"{node}/{path}"
