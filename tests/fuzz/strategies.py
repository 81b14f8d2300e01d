"""Hypothesis strategies for hostile and broken specs: bytes, YAML, and valid specs mutated.

``mutated_specs`` starts from every spec in ``configs/`` and ``tests/cases/`` and changes it
at a random place: a value of the wrong type, an absurd number, unicode, a very long name,
deep nesting, a missing or extra key, a duplicated entry. ``tf_specs`` builds small specs
that pass the validator often, with ops, attrs and shapes drawn at random, to reach
TensorFlow's own errors at trace and run time.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

from gradscope._src.frontends.yaml import catalog

ROOT = Path(__file__).resolve().parent.parent.parent
SEED_FILES = sorted(ROOT.glob("configs/*.yaml")) + sorted(
    p for p in ROOT.glob("tests/cases/*.yaml") if not p.name.endswith(".golden.yaml")
)
SEEDS: list[Any] = [yaml.safe_load(p.read_text(encoding="utf-8")) for p in SEED_FILES]

Path_ = tuple[Any, ...]

# --- values that break things ------------------------------------------------------------

_WORDS = [
    "x", "w", "h", "loss", "matmul", "reduce_sum", "layer", "Dense", "float32", "int32",
    "bool", "zeros", "glorot_uniform", "*", "io.write_file", "tf.io.write_file",
    "compat.v1.io.write_file", "math.__class__", "nn.__dict__", "py_function", "Lambda",
    "TFSMLayer", "/etc/passwd", "os.system", "..", "x[0]", "x[99]", "", " ", "null", "~",
]  # fmt: skip
_absurd_numbers = st.sampled_from(
    [-1, 0, 1, 2**31, 2**63, -(2**63), 2**70, 1e308, -1e308, 1e-320, math.inf, -math.inf,
     math.nan, 0.5, -0.0, 10**12]
)  # fmt: skip
_long_text = st.integers(300, 20_000).flatmap(
    lambda n: st.sampled_from(["x" * n, "é" * n, "名" * n, "a/" * (n // 2), "\U0001f600" * n])
)


def _nest(depth: int, leaf: Any) -> Any:
    value = leaf
    for index in range(depth):
        value = [value] if index % 2 else {"k": value}
    return value


_deep = st.tuples(st.integers(20, 400), st.sampled_from([1.0, "x", None])).map(
    lambda pair: _nest(*pair)
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(_WORDS),
    st.text(max_size=12),
    _absurd_numbers,
)
hostile_values = st.one_of(
    scalars,
    _long_text,
    _deep,
    st.lists(scalars, max_size=6),
    st.dictionaries(st.text(max_size=8) | st.sampled_from(_WORDS), scalars, max_size=4),
    st.lists(st.lists(scalars, min_size=1, max_size=3), min_size=1, max_size=3),
)

# --- documents ------------------------------------------------------------------------

documents = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=6) | st.sampled_from(_WORDS), inner, max_size=5)
    ),
    max_leaves=40,
)

#: Pieces of YAML syntax (anchors, aliases, tags, merge keys, block scalars, documents).
_YAML_PIECES = [
    "gradscope: 1\n", "losses: {l: s}\n", "nodes:\n", "  - ", "{name: s, op: reduce_sum, ",
    "inputs: [w]}", "variables:\n", "  w: ", "{shape: [2, 3]}", "&a ", "*a", "<<: *a\n",
    "!!python/object/apply:os.system ['touch MARKER']", "!!binary aGVsbG8=", "!!set {a}",
    "!!omap [a: 1]", "!custom x", "? ", ": ", "|\n  text\n", ">\n  folded\n", "---\n",
    "...\n", "%YAML 1.1\n", "%TAG ! tag:x,2000:\n", "[", "]", "{", "}", ",", "\t", "#", "'",
    '"', "\\u0000", "\\", "\n", "  ", "1e9", ".nan", "-.inf", "0x1F", "0o17", "2001-12-14",
    "yes", "NO", "~", "é名😀", "1:30", "off", "010", "1e999", "-1e400",
]  # fmt: skip
yaml_text = st.lists(st.sampled_from(_YAML_PIECES), max_size=40).map("".join)


@st.composite
def deep_text(draw: st.DrawFn) -> str:
    """A spec nested far deeper than the limit, as flow brackets, block indentation or
    ``- `` items (libyaml's C parser used to crash on ~30,000 levels)."""
    depth = draw(st.sampled_from([101, 401, 5_000, 30_000, 60_000]))
    kind = draw(st.sampled_from(["flow", "mapping", "block", "items", "mixed"]))
    if kind == "flow":
        body = "[" * depth + "1" + "]" * depth
    elif kind == "mapping":
        body = "{a: " * depth + "1" + "}" * depth
    elif kind == "block":
        depth = min(depth, 3_000)  # indentation grows quadratically in bytes
        body = "\n" + "".join(" " * (i + 1) + "a:\n" for i in range(depth)) + " " * depth + " 1"
    elif kind == "items":
        body = "\n    " + "- " * depth + "1"
    else:
        body = "[{a: " * (depth // 2) + "1" + "}]" * (depth // 2)
    return f"gradscope: 1\nlosses:\n  l: {body}\n"


# --- valid specs, mutated -------------------------------------------------------------


def _paths(value: Any, prefix: Path_ = ()) -> Iterator[Path_]:
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*prefix, index))


def _parent(doc: Any, path: Path_) -> Any:
    for key in path[:-1]:
        doc = doc[key]
    return doc


def _mutate(doc: Any, path: Path_, kind: str, value: Any, key: str) -> Any:
    """``doc`` with one change at ``path``; the root itself can only be replaced."""
    if not path:
        return value if kind == "replace" else doc
    parent, last = _parent(doc, path), path[-1]
    if kind == "replace":
        parent[last] = value
    elif kind == "delete":
        del parent[last]
    elif kind == "extra" and isinstance(parent, dict):
        parent[key] = value
    elif kind == "duplicate" and isinstance(parent, list):
        parent.insert(last, copy.deepcopy(parent[last]))
    elif kind == "rename" and isinstance(parent, dict):
        parent[key] = parent.pop(last)
    return doc


_MUTATIONS = ["replace", "replace", "delete", "extra", "duplicate", "rename"]


@st.composite
def mutated_specs(draw: st.DrawFn) -> Any:
    """A spec from ``configs/`` or ``tests/cases/`` with one to three random changes."""
    doc = copy.deepcopy(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 3))):
        paths = list(_paths(doc))
        path = draw(st.sampled_from(paths[1:] or paths))  # the root itself: see ``documents``
        kind = draw(
            st.sampled_from(["replace", "replace", "delete", "extra", "duplicate", "rename"])
        )
        key = draw(st.sampled_from(_WORDS) | st.text(min_size=1, max_size=8) | _long_text)
        doc = _mutate(doc, path, kind, draw(hostile_values), key)
    return doc


def dump(doc: Any) -> bytes:
    """A document as YAML text (any Python value ``safe_dump`` can write)."""
    return yaml.safe_dump(doc, allow_unicode=True, sort_keys=False).encode("utf-8")


# --- small specs for TensorFlow -------------------------------------------------------

UNARY = ["sin", "exp", "log", "sqrt", "relu", "sigmoid", "tanh", "abs", "square", "softplus",
         "nn.softmax", "round", "sign", "stop_gradient", "zeros_like", "cumsum", "argmax",
         "reduce_sum", "reduce_mean", "reduce_max", "transpose", "expand_dims", "squeeze",
         "reshape", "tile", "one_hot", "cast", "linalg.inv", "linalg.det", "math.log1p",
         "unique", "where", "nn.l2_normalize", "reverse", "sort", "math.top_k", "pad",
         "identity", "split", "unstack", "math.reciprocal", "floor", "nn.relu6", "size",
         "shape", "rank", "fill", "zeros", "ones", "range", "eye", "random.normal",
         # value-sized: their output size comes from an input's value
         "math.sobol_sample", "math.bincount", "random.categorical", "linspace",
         "histogram_fixed_width", "image.non_max_suppression", "sparse.cross_hashed",
         "ragged_fill_empty_rows", "math.confusion_matrix", "timestamp",
         "random.fixed_unigram_candidate_sampler"]  # fmt: skip
BINARY = ["add", "subtract", "multiply", "divide", "matmul", "maximum", "minimum", "pow",
          "gather", "concat", "stack", "tensordot", "einsum", "boolean_mask", "equal",
          "greater", "math.floordiv", "math.squared_difference", "broadcast_to",
          "nn.sparse_softmax_cross_entropy_with_logits", "linalg.solve", "scatter_nd",
          "math.unsorted_segment_sum", "searchsorted", "clip_by_value", "where",
          "image.extract_glimpse", "image.combined_non_max_suppression",
          "image.non_max_suppression_overlaps", "linalg.svd",
          "random.stateless_normal"]  # fmt: skip
#: Keras layers, each with the config it needs to be built at all.
LAYERS: dict[str, dict[str, Any]] = {
    "Dense": {"units": 2}, "Conv1D": {"filters": 2, "kernel_size": 1},
    "Conv2D": {"filters": 2, "kernel_size": 1}, "LSTM": {"units": 2}, "GRU": {"units": 2},
    "SimpleRNN": {"units": 2}, "Embedding": {"input_dim": 5, "output_dim": 2},
    "BatchNormalization": {}, "LayerNormalization": {}, "Dropout": {"rate": 0.5},
    "Flatten": {}, "Reshape": {"target_shape": [-1]}, "GlobalAveragePooling1D": {},
    "MaxPooling2D": {}, "DepthwiseConv2D": {"kernel_size": 1}, "ReLU": {}, "Softmax": {},
    "MultiHeadAttention": {"num_heads": 1, "key_dim": 2}, "Attention": {}, "Add": {},
    "Concatenate": {}, "TimeDistributed": {"layer": {"class_name": "Dense", "config": {}}},
}  # fmt: skip
_ATTR_KEYS = ["axis", "keepdims", "shape", "perm", "multiples", "depth", "dtype", "axes",
              "transpose_a", "transpose_b", "units", "filters", "kernel_size", "num",
              "num_or_size_splits", "equation", "paddings", "num_segments", "k", "rate",
              "activation", "clip_value_min", "clip_value_max", "limit", "dims", "value",
              "num_rows", "output_dim", "input_dim", "return_sequences", "num_heads",
              "key_dim", "target_shape", "batch_dims", "exclusive", "reverse",
              # string-typed parameters: options, and ones that name files
              "padding", "data_format", "method", "mode", "vocab_file", "filename", "name",
              "contents", "num_results", "max_output_size", "size", "max_total_size"]  # fmt: skip
ANY_OP = sorted(catalog.allowed_ops())
_small_int = st.integers(-3, 6)
_attr_values = st.one_of(
    _small_int,
    st.booleans(),
    st.lists(_small_int, max_size=4),
    st.lists(st.lists(_small_int, max_size=3), max_size=3),
    st.sampled_from(["float32", "int32", "bool", "float64", "relu", "ij,jk->ik", "i,i->",
                     "bad", "os.system", None, 1e9, 10**10, [10**5, 10**5], [-1],
                     "SAME", "NHWC", "bilinear", "MARKER", "reads.fifo", "/etc/passwd",
                     "gs://bucket/MARKER", "../MARKER", "x" * 5000, "a,b->ab", ["MARKER"]]),
)  # fmt: skip
_shapes = st.lists(st.integers(0, 4), max_size=3)


@st.composite
def tf_specs(draw: st.DrawFn) -> dict[str, Any]:
    """A small spec, often valid, with random ops, attrs and shapes."""
    spec: dict[str, Any] = {"gradscope": 1, "seed": draw(st.integers(0, 3))}
    spec["inputs"] = {
        "x": {"shape": draw(_shapes)},
        "ids": {"shape": draw(_shapes), "dtype": "int32", "range": [0, draw(st.integers(1, 5))]},
    }
    spec["variables"] = {"w": {"shape": draw(_shapes)}, "v": {"shape": draw(_shapes)}}
    names, nodes = ["x", "ids", "w", "v"], []
    for index in range(draw(st.integers(1, 4))):
        nodes.append(draw(_node(f"n{index}", names)))
        names.append(f"n{index}")
    nodes.append({"name": "total", "op": "reduce_sum", "inputs": [names[-1]]})
    spec["nodes"] = nodes
    spec["losses"] = {"loss": "total", "other": {"node": "total", "vars": ["w"]}}
    return spec


@st.composite
def _node(draw: st.DrawFn, name: str, names: list[str]) -> dict[str, Any]:
    floats = [n for n in names if n != "ids"]
    ref = st.sampled_from(floats) | st.sampled_from(floats) | st.sampled_from(names)
    kind = draw(st.sampled_from(["unary", "unary", "binary", "binary", "layer", "any"]))
    attrs = draw(
        st.just({}) | st.dictionaries(st.sampled_from(_ATTR_KEYS), _attr_values, max_size=2)
    )
    if kind == "layer":
        layer = draw(st.sampled_from(sorted(LAYERS)))
        extra = draw(st.dictionaries(st.sampled_from(_ATTR_KEYS), _attr_values, max_size=2))
        config = {**LAYERS[layer], **(extra if draw(st.booleans()) else {})}
        attrs = {"class": layer, "config": config}
        return {"name": name, "op": "layer", "inputs": [draw(ref)], "attrs": attrs}
    if kind == "any":  # any op a spec may name, with one to three inputs
        op = draw(st.sampled_from(ANY_OP))
        count = draw(st.integers(1, 3))
    else:
        op = draw(st.sampled_from(UNARY if kind == "unary" else BINARY))
        count = 1 if kind == "unary" else 2
    inputs: list[Any] = [draw(ref | st.integers(-2, 3)) for _ in range(count)]
    if op in ("concat", "stack"):
        inputs = [inputs]
    node: dict[str, Any] = {"name": name, "op": op, "inputs": inputs}
    if attrs:
        node["attrs"] = attrs
    return node
