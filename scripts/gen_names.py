"""Regenerate gradscope/data/*.json: the TF ops, Keras layers and initializers a spec may name.

Usage: ``python scripts/gen_names.py`` rewrites the files; ``--check`` only compares them
with what the installed TensorFlow and Keras give, and exits 1 when they differ.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras
import tensorflow as tf

from gradscope.frontends.yaml import catalog
from gradscope.frontends.yaml.ops import EXTRA_MODULES, refusal

DATA = Path(__file__).resolve().parent.parent / "gradscope" / "data"
MODULES = ("", "math", "nn", "linalg", *EXTRA_MODULES)
# Parameter names through which TF functions take Python callables.
CALLABLE_PARAMS = {"fn", "func", "f", "body", "true_fn", "false_fn", "branch_fns", "loop_fn"}


def _functions(module: Any) -> dict[str, Any]:
    """Public plain functions of a module: no classes, submodules or constants."""
    out = {}
    for name in dir(module):
        obj = getattr(module, name, None)
        if name.startswith("_") or inspect.ismodule(obj) or inspect.isclass(obj):
            continue
        if callable(obj):
            out[name] = obj
    return out


def _takes_callable(fn: Any) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return bool(CALLABLE_PARAMS & set(params))


def tf_ops() -> dict[str, Any]:
    """The content of ``tf_ops.json``."""
    allowed: list[str] = []
    refused: dict[str, str] = {}
    for module_name in MODULES:
        module = getattr(tf, module_name) if module_name else tf
        for name, fn in _functions(module).items():
            path = f"{module_name}.{name}" if module_name else name
            if refusal(path) is not None:
                continue
            if _takes_callable(fn):
                refused[path] = f"{name} takes a Python callable"
            else:
                allowed.append(path)
    return {"tensorflow": tf.__version__, "ops": sorted(allowed), "refused": refused}


def keras_names() -> dict[str, Any]:
    """The content of ``keras_names.json``."""
    layers = [
        name
        for name in dir(keras.layers)
        if inspect.isclass(getattr(keras.layers, name))
        and issubclass(getattr(keras.layers, name), keras.layers.Layer)
        and name not in catalog.REFUSED_LAYERS
    ]
    apps = [
        name
        for name, obj in vars(keras.applications).items()
        if name[:1].isupper() and callable(obj) and not inspect.ismodule(obj)
    ]
    base = keras.initializers.Initializer
    inits = [
        name
        for name in dir(keras.initializers)
        if not name.startswith("_")
        and name not in ("Initializer", "get", "serialize", "deserialize")
        and _is_initializer(name, base)
    ]
    return {
        "keras": keras.__version__,
        "layers": sorted(layers),
        "applications": sorted(apps),
        "initializers": sorted(inits),
    }


def _is_initializer(name: str, base: type) -> bool:
    try:
        return isinstance(keras.initializers.get(name), base)
    except Exception:  # the way the builder instantiates them; any failure means unusable
        return False


def _render(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args()
    stale = []
    for filename, data in ((catalog.OPS_FILE, tf_ops()), (catalog.KERAS_FILE, keras_names())):
        target = DATA / filename
        text = _render(data)
        if args.check:
            if not target.exists() or target.read_text(encoding="utf-8") != text:
                stale.append(filename)
        else:
            target.write_text(text, encoding="utf-8")
            print(f"wrote {target} ({sum(len(v) for v in data.values())} entries)")
    if stale:
        print("stale: " + ", ".join(stale) + "; run python scripts/gen_names.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
