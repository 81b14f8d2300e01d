"""Variables the program writes as copies of other variables: a target network, by structure.

A DQN's target network (or any lagged copy: an EMA "teacher", a "shadow" model) is updated by
copying another network's weights into it, ``target.set_weights(online.get_weights())`` or
``t.assign(s)`` per variable, and is kept out of the loss's gradient on purpose (a
``stop_gradient`` on its output). Its name says nothing reliable (``lagged``, ``shadow``,
``net_b``); what it is shows in what the program does: its variables are assigned from another
variable's value. ``gradscope run`` notes every such copy here, and a variable cut by a
``stop_gradient`` that is such a copy is a target network: the cut is intended.

A copy is told by the value given to ``assign``: a variable (Keras' or TensorFlow's), or one
of the arrays a ``get_weights()`` just returned (what ``set_weights`` then assigns).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from typing import Any

from gradscope._src.watcher import sites

#: Arrays of recent ``get_weights()`` calls remembered (their variables' names), at most.
KEPT = 4096

#: id of a variable that was assigned a copy -> (the copied variable's name, the user's line).
_copies: dict[int, tuple[str, str]] = {}
#: id of an array ``get_weights()`` returned -> (the array, the name of its variable); the array
#: is held so that its id is not reused while it is remembered.
_arrays: dict[int, tuple[Any, str]] = {}


def copy_of(variable: Any) -> tuple[str, str]:
    """``(name of the variable copied into it, FILE:LINE of the copy)``, or ``("", "")``."""
    found = _copies.get(id(variable))
    if found is None:
        inner = getattr(variable, "_value", None)  # a Keras variable's tf.Variable
        found = _copies.get(id(inner)) if inner is not None else None
    return found or ("", "")


def clear() -> None:
    _copies.clear()
    _arrays.clear()


def _noted(variable: Any, value: Any) -> None:
    """``variable.assign(value)`` ran: note it when ``value`` is another variable's value."""
    if value is variable:
        return
    if _is_variable(value):
        source = sites.variable_name(value)
    else:
        known = _arrays.get(id(value))
        if known is None or known[0] is not value:
            return
        source = known[1]
    if source and source != sites.variable_name(variable):
        _copies[id(variable)] = (source, sites.text(sites.fast_current()))


def _is_variable(value: Any) -> bool:
    tf = sys.modules.get("tensorflow")
    if tf is not None and isinstance(value, tf.Variable):
        return True
    keras = sys.modules.get("keras")
    cls = getattr(keras, "Variable", None)
    return cls is not None and isinstance(value, cls)


def patches() -> list[tuple[str, Callable[[Any], Any]]]:
    """``(attribute, make)`` of what to patch (``patching.ATTRIBUTES``): ``assign`` of Keras'
    and TensorFlow's variables, and Keras' ``get_weights``."""
    return [("BaseResourceVariable.assign", _assign), ("keras.Variable.assign", _assign),
            ("keras.layers.Layer.get_weights", _get_weights)]  # fmt: skip


def _assign(original: Any) -> Any:
    def assign(self: Any, value: Any, *args: Any, **kwargs: Any) -> Any:
        with contextlib.suppress(Exception):  # gradscope's failure never reaches the program
            _noted(self, value)
        return original(self, value, *args, **kwargs)

    return assign


def _get_weights(original: Any) -> Any:
    def get_weights(self: Any, *args: Any, **kwargs: Any) -> Any:
        arrays = original(self, *args, **kwargs)
        try:
            for variable, array in zip(self.weights, arrays, strict=False):
                _arrays[id(array)] = (array, sites.variable_name(variable))
            while len(_arrays) > KEPT:
                del _arrays[next(iter(_arrays))]
        except Exception:  # gradscope's own failure never reaches the program
            pass
        return arrays

    return get_weights
