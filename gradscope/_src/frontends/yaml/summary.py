"""One-line summaries of validated specs, for ``gradscope validate``."""

from __future__ import annotations

from gradscope._src.frontends.yaml.model import Spec


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "es" if noun.endswith("s") else "s")


def summary_line(spec: Spec) -> str:
    """``ok  PATH (N inputs, N variables, N nodes, N losses)``."""
    parts = (
        _count(len(spec.inputs), "input"),
        _count(len(spec.variables), "variable"),
        _count(len(spec.nodes), "node"),
        _count(len(spec.losses), "loss"),
    )
    return f"ok  {spec.path} ({', '.join(parts)})"
