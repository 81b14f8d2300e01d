"""Deterministic values for a spec's inputs and variables: the same spec gives the same numbers."""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np

from gradscope._src.frontends.yaml.catalog import dtype_kind
from gradscope._src.frontends.yaml.model import InputDef, VariableDef

#: Initializers gradscope implements itself; any other name is a Keras initializer.
BUILTIN_INITS = ("normal", "uniform", "zeros", "ones")


def rng_for(seed: int, name: str) -> np.random.Generator:
    """A generator seeded by the spec's seed and the tensor's name.

    Seeding per name keeps a tensor's values stable when other tensors are added or removed.
    """
    return np.random.default_rng([seed, zlib.crc32(name.encode("utf-8"))])


def derived_seed(seed: int, name: str) -> int:
    """A 31-bit integer seed for Keras initializers, stable across runs and machines."""
    return int(rng_for(seed, name).integers(0, 2**31 - 1))


def _numpy_dtype(dtype: str) -> Any:
    # bfloat16 has no NumPy dtype; generate float32 and let TensorFlow cast.
    return np.float32 if dtype == "bfloat16" else np.dtype(dtype)


def _explicit(data: Any, dtype: Any, shape: tuple[int, ...]) -> np.ndarray:
    array: np.ndarray = np.broadcast_to(np.array(data, dtype=dtype), shape).copy()
    return array


def input_array(definition: InputDef, seed: int) -> np.ndarray:
    """The value of an input: explicit ``values``, else generated from ``seed``."""
    dtype = _numpy_dtype(definition.dtype)
    shape = definition.shape
    if definition.values is not None:
        return _explicit(definition.values, dtype, shape)
    rng = rng_for(seed, definition.name)
    kind = dtype_kind(definition.dtype)
    if kind == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    if kind == "int":
        if definition.range is None:
            return np.zeros(shape, dtype=dtype)
        low, high = definition.range
        return rng.integers(int(low), int(high), size=shape).astype(dtype)
    if definition.range is not None:
        low, high = definition.range
        return rng.uniform(low, high, size=shape).astype(dtype)
    return rng.standard_normal(size=shape).astype(dtype)


def variable_array(definition: VariableDef, seed: int) -> np.ndarray | None:
    """The initial value of a variable for the built-in inits, or None for a Keras initializer."""
    dtype = _numpy_dtype(definition.dtype)
    shape = definition.shape
    if definition.values is not None:
        return _explicit(definition.values, dtype, shape)
    init = definition.init
    if init == "zeros":
        return np.zeros(shape, dtype=dtype)
    if init == "ones":
        return np.ones(shape, dtype=dtype)
    if init not in ("normal", "uniform"):
        return None
    rng = rng_for(seed, definition.name)
    kind = dtype_kind(definition.dtype)
    if kind == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    if init == "uniform":
        low, high = definition.range if definition.range is not None else (0.0, 1.0)
        if kind == "int":
            return rng.integers(int(low), int(high), size=shape).astype(dtype)
        return rng.uniform(low, high, size=shape).astype(dtype)
    if kind == "int":
        return np.rint(rng.standard_normal(size=shape)).astype(dtype)
    return rng.standard_normal(size=shape).astype(dtype)
