"""How a diagnostic pass builds a spec again: as it was (NaN origins), in float64 (--numeric)."""

from __future__ import annotations

from typing import Any

from gradscope._src.engine import retrace
from gradscope._src.frontends.yaml.forward.model import SpecModel
from gradscope._src.frontends.yaml.forward.widen import WideSpecModel, float64_policy, has_layers
from gradscope._src.frontends.yaml.model import Spec


def same(spec: Spec) -> retrace.Rebuild:
    """The spec as the main run built it: same seed, same values, same dtypes."""
    return retrace.Rebuild(lambda: SpecModel(spec))


def wide(spec: Spec) -> retrace.Rebuild:
    """The spec in float64 (same values, cast), falling back to its own dtypes when an op
    has no float64 kernel. Keras layers start from the weights the float32 model draws."""

    def initial() -> list[Any]:
        traced = retrace.trace(SpecModel(spec), lambda _traced, _losses: {})
        return [retrace.tf_variable(v).read_value() for v in traced.created]

    return retrace.Rebuild(
        lambda: WideSpecModel(spec),
        dtype="float64",
        scope=float64_policy,
        fallback=same(spec),
        initial=initial if has_layers(spec) else None,
    )
