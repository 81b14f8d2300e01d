"""How a watched JAX call names the leaves it differentiates.

Keras' JAX trainer differentiates ``compute_loss_and_updates(trainable_variables, ...)``: a
list of arrays, one per ``model.trainable_variables``, so each leaf is named by its
variable's Keras ``path``, as on TensorFlow (``dense/kernel``). Any other function's
parameters are named by their pytree path, keys joined with ``/`` (``params/dense/w``,
``layers/0/b``); with several ``argnums`` each starts with its parameter's name.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any


def keras_variables(fun: Any, leaves: Sequence[Any],
                    models: Sequence[Any] = ()) -> tuple[Any, list[Any]] | None:  # fmt: skip
    """``(model, its variables)`` the leaves stand for: one value per ``trainable_variables``
    of a Keras model, of the same shapes, as Keras' stateless calls take them. The model is
    ``fun``'s own (a method: its ``compute_loss_and_updates``, a custom one), else the first
    of ``models`` that fits (the one ``fit()`` trains: a custom step's closure); None when
    none does."""
    owner = getattr(fun, "__self__", None)
    while owner is None and hasattr(fun, "func"):  # functools.partial of a method
        fun = fun.func
        owner = getattr(fun, "__self__", None)
    for model in (owner, *models):
        variables = list(getattr(model, "trainable_variables", None) or ())
        if (
            variables
            and len(variables) == len(leaves)
            and all(
                tuple(getattr(v, "shape", ())) == tuple(getattr(leaf, "shape", ()))
                for v, leaf in zip(variables, leaves, strict=True)
            )
        ):
            return model, variables
    return None


def leaf_names(fun: Any, argnums: int | Sequence[int], paths: Sequence[Any]) -> list[str]:
    """Each leaf's name from its pytree path (``jax.tree_util.tree_flatten_with_path`` of the
    differentiated arguments: one argument, or a tuple of them for several ``argnums``)."""
    positions = [argnums] if isinstance(argnums, int) else list(argnums)
    several = not isinstance(argnums, int)
    params = _parameters(fun)
    # Flax NNX's nnx.grad calls jax.grad with its own function of ``*states``: its leaves are
    # the module's own paths, under the position of the states they came in
    nnx = type(fun).__module__.startswith("flax.")
    out = []
    for path in paths:
        keys = list(path)
        if keys and _key(keys[-1]) == "value" and type(keys[-1]).__name__ == "GetAttrKey":
            keys.pop()  # an NNX Variable's value: the Variable's own path names it
        if nnx and len(keys) > 2:
            keys = keys[2:]
            several = False
            params = []
        head = ""
        if several and keys:
            position = _key(keys.pop(0))
            index = positions[int(position)] if position.isdigit() else -1
            head = params[index] if 0 <= index < len(params) else f"arg{position}"
        elif not several:
            index = positions[0]
            head = params[index] if index < len(params) else f"arg{index}"
        parts = [_key(k) for k in keys]
        if not parts or several:
            parts.insert(0, head)
        out.append("/".join(p for p in parts if p) or head or "param")
    return _unique(out)


def _key(key: Any) -> str:
    """One step of a pytree path as a name part: a dict key, an index, an attribute."""
    for attr in ("key", "idx", "name"):
        if hasattr(key, attr):
            return str(getattr(key, attr))
    return str(key).strip(".[]'\"")


def _parameters(fun: Any) -> list[str]:
    try:
        return [p.name for p in inspect.signature(fun).parameters.values()
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]  # fmt: skip
    except (TypeError, ValueError):
        return []


def _unique(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
    return out
