"""A spec's inputs split along their first axis across replicas, in order, as a distributed
dataset splits a global batch (the first replicas take one row more when it does not divide)."""

from __future__ import annotations

from typing import Any

import numpy as np

from gradscope._src.errors import UsageError


def split(inputs: dict[str, Any], replicas: int) -> dict[str, list[np.ndarray]]:
    """Every input as ``replicas`` consecutive slices of its first axis; a scalar input is
    given whole to every replica (it has no batch axis).

    Raises:
        UsageError: an input has fewer rows than there are replicas (one would get none).
    """
    out: dict[str, list[np.ndarray]] = {}
    for name, value in inputs.items():
        array = np.asarray(value)
        if array.ndim == 0:
            out[name] = [array] * replicas
            continue
        if array.shape[0] < replicas:
            raise UsageError(
                f"--replicas {replicas}: input '{name}' has {array.shape[0]} row(s) along its "
                f"first axis, too few to give each of {replicas} replicas one"
            )
        out[name] = list(np.array_split(array, replicas, axis=0))
    return out


def rows(shards: dict[str, list[np.ndarray]]) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """How many rows each replica got, per input (scalars: 0)."""
    return tuple(
        (name, tuple(int(s.shape[0]) if s.ndim else 0 for s in parts))
        for name, parts in shards.items()
    )
