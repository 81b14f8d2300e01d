"""Which TensorFlow functions a spec may name, and what each name resolves to; no TensorFlow.

A node's ``op`` resolves in the order of contract section 1: gradscope's own ops
(``stop_gradient``, ``assign``, ``layer`` -> ``gradscope.<op>``), then ``tf.<op>``,
``tf.math.<op>``, ``tf.nn.<op>``, ``tf.linalg.<op>``. The target is the first of those
paths, relative to ``tf``, under which the name exists (``reduce_mean``, because
``tf.reduce_mean`` exists, but ``math.log1p``). A dotted name (``nn.softmax``) is taken
as written. A leading ``tf.`` is ignored.

Before any lookup, every spelling is checked against the deny-list: only pure tensor math
may be named, never anything that touches files, the network, Python code or global state.
"""

from __future__ import annotations

import difflib
import re

from gradscope._src.frontends.yaml import catalog
from gradscope._src.frontends.yaml.model import SPECIAL_OPS

#: Modules (any segment of a dotted name) that are refused, and why.
DENIED_MODULES: dict[str, str] = {
    **dict.fromkeys(("io", "gfile", "saved_model", "lookup"), "reads or writes files"),
    "data": "builds input pipelines that may read files",
    "summary": "writes summaries to disk",
    **dict.fromkeys(("distribute", "tpu", "config", "sysconfig"), "changes global state"),
    "keras": "is Keras, not a TensorFlow op (use op: layer)",
    "compat": "is a compatibility alias; name the TF 2 function",
    "raw_ops": "bypasses TensorFlow's public API",
    "train": "manages checkpoints and training state",
    "experimental": "is experimental API",
    "autograph": "converts and runs Python code",
    "profiler": "writes profiles to disk",
    "test": "is test tooling",
    "nest": "takes Python callables",
    "xla": "compiles Python functions",
    "mlir": "is a compiler interface",
    "estimator": "is not tensor math",
    "feature_column": "is not tensor math",
    "queue": "creates state",
    "version": "is not tensor math",
    "errors": "is not tensor math",
    "types": "is not tensor math",
    "strings": "has no gradients, and its strings grow without a bound gradscope can check",
}


def _each(names: str, reason: str) -> dict[str, str]:
    return dict.fromkeys(names.split(), reason)


#: Functions (the last segment, under any module) that are refused, and why.
DENIED_FUNCTIONS: dict[str, str] = {
    **_each("py_function numpy_function py_func eager_py_func", "runs Python code"),
    **_each("print Print", "writes to the console"),
    **_each("as_string", "makes strings that grow without a bound gradscope can check"),
    **_each(
        """decode_and_crop_jpeg decode_bmp decode_gif decode_image decode_jpeg decode_jxl
        decode_png decode_webp encode_jpeg encode_png extract_jpeg_shape is_jpeg
        adjust_jpeg_quality random_jpeg_quality stateless_random_jpeg_quality""",
        "decodes or encodes image files' bytes",
    ),
    **_each("make_tensor_proto", "is not a TensorFlow op"),
    **_each(
        "load_library load_op_library read_file write_file get_file",
        "reads or writes files",
    ),
    **_each(
        """map_fn vectorized_map while_loop cond case switch_case scan foldl foldr
        custom_gradient recompute_grad function grad_pass_through map_values raw_rnn
        dynamic_rnn static_rnn inverse_stft_window_fn""",
        "takes a Python callable",
    ),
    **_each(
        """Variable Module GradientTape Graph device name_scope control_dependencies
        init_scope get_current_name_scope Generator get_global_generator RegisterGradient
        no_gradient import_graph_def variable_creator_scope nondifferentiable_batch_function
        batch_function""",
        "creates state, graphs or scopes",
    ),
    **_each("gradients hessians", "computes gradients itself"),
    **_each(
        """set_seed set_random_seed set_global_generator get_logger
        register_tensor_conversion_function enable_check_numerics disable_check_numerics
        set_log_device_placement enable_tensor_float_32""",
        "changes global state",
    ),
}

#: Modules, besides the lookup path, whose functions may be named when dotted.
EXTRA_MODULES = ("random", "signal", "image", "bitwise", "sparse", "debugging")

_LOOKUP_PREFIXES = ("", "math.", "nn.", "linalg.")
_PRIVATE = re.compile(r"^_|__")


class OpError(ValueError):
    """An op name that cannot be used; the message says why (``refused: ...`` or unknown)."""


def strip_tf(name: str) -> str:
    """The name relative to ``tf``: surrounding spaces and one leading ``tf.`` removed."""
    name = name.strip()
    return name[3:] if name.startswith("tf.") else name


def refusal(name: str) -> str | None:
    """Why an op name is refused, or None when the deny-list does not apply.

    Matches every spelling: ``tf.io.write_file``, ``io.write_file``,
    ``compat.v1.io.write_file``, ``raw_ops.WriteFile``, dunder names, empty segments.
    """
    parts = strip_tf(name).split(".")
    if any(part == "" for part in parts):
        return "an empty name segment"
    if any(_PRIVATE.search(part) for part in parts):
        return "private and dunder names are not TensorFlow ops"
    for part in parts[:-1]:
        if part in DENIED_MODULES:
            return f"anything under {part} {DENIED_MODULES[part]}"
    last = parts[-1]
    if len(parts) == 1 and last in DENIED_MODULES:
        return f"{last} {DENIED_MODULES[last]}"
    if last in DENIED_FUNCTIONS:
        return f"{last} {DENIED_FUNCTIONS[last]}"
    if parts[0] == "debugging" and not (last.startswith("assert_") or last == "check_numerics"):
        return "debugging tools other than assert_* and check_numerics change global state"
    return None


def resolve_op(name: str) -> str:
    """Where an op name resolves to.

    Args:
        name: the ``op`` of a node, as written (``matmul``, ``nn.softmax``, ``tf.math.log``).

    Returns:
        ``gradscope.<op>`` for gradscope's own ops, otherwise the path relative to ``tf``
        (``matmul``, ``nn.softmax``, ``math.log``).

    Raises:
        OpError: the name is refused by the deny-list or names no allowed function.
    """
    reason = refusal(name) or _generated_refusal(strip_tf(name))
    if reason is not None:
        raise OpError(f"refused: {reason}; only pure tensor math may be named")
    bare = strip_tf(name)
    if bare in SPECIAL_OPS:
        return f"gradscope.{bare}"
    allowed = catalog.allowed_ops()
    candidates = [bare] if "." in bare else [prefix + bare for prefix in _LOOKUP_PREFIXES]
    for candidate in candidates:
        if candidate in allowed:
            return candidate
    raise OpError(f"expected a TensorFlow function relative to tf, saw {name!r}{_hint(bare)}")


def _generated_refusal(bare: str) -> str | None:
    refused = catalog.refused_ops()
    candidates = [bare] if "." in bare else [prefix + bare for prefix in _LOOKUP_PREFIXES]
    return next((refused[c] for c in candidates if c in refused), None)


def spellings() -> list[str]:
    """Every op name a spec may write, short forms included (for completion and hints)."""
    names = set(SPECIAL_OPS) | catalog.allowed_ops()
    for full in catalog.allowed_ops():
        prefix, _, short = full.rpartition(".")
        if prefix + "." in _LOOKUP_PREFIXES:
            names.add(short)
    return sorted(names)


def _hint(bare: str) -> str:
    options = spellings()
    lowered = {name.lower(): name for name in options}
    close = difflib.get_close_matches(bare.lower(), list(lowered), n=3, cutoff=0.75)
    if close:
        return " (did you mean " + " or ".join(repr(lowered[c]) for c in close) + "?)"
    return " (an op under tf, tf.math, tf.nn or tf.linalg, or a dotted name like nn.softmax)"
