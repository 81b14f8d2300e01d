"""Regenerate gradscope/_src/data/*.json: the TF ops, Keras layers and initializers a spec may name.

The TF ops come from the reviewed list ``gradscope/_src/data/tf_ops_review.txt``: a public
function it does not list is refused, and reported here, until someone reviews it.

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

from gradscope._src.frontends.yaml import catalog
from gradscope._src.frontends.yaml.ops import EXTRA_MODULES, refusal

DATA = Path(__file__).resolve().parent.parent / "gradscope" / "_src" / "data"
REVIEW = DATA / "tf_ops_review.txt"
UNREVIEWED = "not reviewed yet"
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


def read_review(text: str) -> dict[str, str | None]:
    """``tf_ops_review.txt`` as path -> None (allowed) or the reason it is refused."""
    try:
        return catalog.read_review(text)
    except ValueError as exc:
        raise SystemExit(f"{REVIEW}:{exc}") from None


def public_functions() -> dict[str, Any]:
    """Every public TF function a spec could name (not refused by name in ``spec/ops.py``)."""
    found: dict[str, Any] = {}
    for module_name in MODULES:
        module = getattr(tf, module_name) if module_name else tf
        for name, fn in _functions(module).items():
            path = f"{module_name}.{name}" if module_name else name
            if refusal(path) is None:
                found[path] = fn
    return found


def unreviewed(review: dict[str, str | None]) -> list[str]:
    """Public functions the review does not list (callable-takers are refused anyway)."""
    return sorted(
        p for p, fn in public_functions().items() if p not in review and not _takes_callable(fn)
    )


def tf_ops(review: dict[str, str | None]) -> dict[str, Any]:
    """The content of ``tf_ops.json``: the reviewed ``allow`` entries TensorFlow has."""
    allowed: list[str] = []
    refused: dict[str, str] = {}
    for path, fn in public_functions().items():
        if _takes_callable(fn):
            refused[path] = f"{path.rpartition('.')[2]} takes a Python callable"
        elif path not in review:
            refused[path] = f"{path} is {UNREVIEWED} (see gradscope/_src/data/tf_ops_review.txt)"
        elif review[path] is not None:
            refused[path] = f"{path} {review[path]}"
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    parser.add_argument(
        "--add-unreviewed", action="store_true", help="append unlisted ops to the review, refused"
    )
    args = parser.parse_args(argv)
    review = read_review(REVIEW.read_text(encoding="utf-8"))
    missing = unreviewed(review)
    if args.add_unreviewed and missing:
        with REVIEW.open("a", encoding="utf-8") as handle:
            handle.writelines(f"{p:48s} refuse  {UNREVIEWED}\n" for p in missing)
        print(f"appended {len(missing)} ops to {REVIEW}; review each line by hand")
        review = read_review(REVIEW.read_text(encoding="utf-8"))
        missing = []
    stale = []
    for filename, data in ((catalog.OPS_FILE, tf_ops(review)), (catalog.KERAS_FILE, keras_names())):
        target = DATA / filename
        text = _render(data)
        if args.check:
            if not target.exists() or target.read_text(encoding="utf-8") != text:
                stale.append(filename)
        else:
            target.write_text(text, encoding="utf-8")
            print(f"wrote {target} ({sum(len(v) for v in data.values())} entries)")
    if missing:
        print(
            f"not reviewed: {', '.join(missing)}; run python scripts/gen_names.py "
            f"--add-unreviewed and review each in {REVIEW.name}",
            file=sys.stderr,
        )
    if stale:
        print("stale: " + ", ".join(stale) + "; run python scripts/gen_names.py", file=sys.stderr)
    return 1 if stale or missing else 0


if __name__ == "__main__":
    sys.exit(main())
