"""Whatever bytes a spec file holds, loading it gives a Spec or SpecErrors, never a crash."""

from __future__ import annotations

import tempfile
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gradscope._src.errors import SpecErrors
from gradscope._src.frontends.yaml import load_spec

_SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True),
    st.sampled_from(["x", "w", "s", "matmul", "reduce_sum", "io.write_file", "float32", "*"]),
    st.text(max_size=8),
)
_keys = st.sampled_from(
    ["gradscope", "inputs", "variables", "nodes", "losses", "expect", "shape", "dtype",
     "values", "range", "init", "trainable", "name", "op", "attrs", "node", "grad_loss",
     "vars", "stop_gradients", "none", "connected", "ref", "value", "begin", "class", "x",
     "w", "s", "l"]
)  # fmt: skip
_documents = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_keys, inner, max_size=5),
    max_leaves=30,
)


def _load(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "fuzz.yaml"
        path.write_bytes(data)
        try:
            load_spec(str(path))
        except SpecErrors as errors:
            assert all("\n" not in line for line in errors.lines())


@_SETTINGS
@given(st.binary(max_size=300))
def test_fuzz_arbitrary_bytes(data: bytes):
    _load(data)


@_SETTINGS
@given(_documents)
def test_fuzz_spec_shaped_documents(document: object):
    wrapped = {"gradscope": 1, "losses": {"l": "s"}, "variables": document}
    for candidate in (document, wrapped):
        _load(yaml.safe_dump(candidate, allow_unicode=True).encode("utf-8"))
