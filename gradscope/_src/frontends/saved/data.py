"""The data a saved model is run on: the user's ``.npy``/``.npz`` files (or arrays, from the
Python API), else random values shaped by the model's inputs and outputs, seeded, and said.

Labels follow the loss that reads them: class ids for a sparse crossentropy, one-hot rows for
a categorical one, 0/1 for a binary one, values in [0, 1) for the rest, so every loss is
computed on labels it accepts.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gradscope._src.errors import TargetError, UsageError
from gradscope._src.printable import printable

SEED = 0
#: A dimension a model leaves open (besides the batch) gets this size in random data.
OPEN_DIM = 8


@dataclass(frozen=True)
class Port:
    """One input or output of a model: its name, shape (None: open) and dtype name."""

    name: str
    shape: tuple[int | None, ...]
    dtype: str


@dataclass(frozen=True)
class Data:
    """Arrays by port name, and how they were made (for the report's notes)."""

    arrays: dict[str, np.ndarray]
    source: str  # the file, "arrays" (the Python API), or "random"
    described: tuple[str, ...] = ()  # per array, how a random one was made


def _shape(shape: Sequence[int | None]) -> str:
    return "[" + ", ".join("None" if d is None else str(d) for d in shape) + "]"


def read(
    value: Any, ports: Sequence[Port], what: str, required: Sequence[str] | None = None
) -> Data | None:
    """The user's ``--inputs``/``--labels`` (a ``.npy``/``.npz`` path) or the API's arrays
    (one array, a list in port order, or a mapping by port name); None when not given.
    Every port is required unless ``required`` names some (the outputs a loss reads).

    Raises:
        TargetError: an unreadable file, a missing or unknown name, a wrong shape.
    """
    if value is None:
        return None
    wanted = [p for p in ports if required is None or p.name in required]  # by position
    if isinstance(value, (str, os.PathLike)):
        path = os.fspath(value)
        arrays = _load_file(path, wanted, what)
        source = path
    else:
        path, source = what, "arrays"
        arrays = _by_name(value, wanted, what)
    return Data(_checked(path, arrays, ports, what, required), source)


def _load_file(path: str, ports: Sequence[Port], what: str) -> dict[str, Any]:
    shown = printable(path)
    try:
        # allow_pickle=False: an .npy/.npz file is data; a pickled object would run code
        loaded = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise TargetError(f"{shown}: no such file (--{what})") from None
    except IsADirectoryError:
        raise TargetError(f"{shown}: is a directory, expected a .npy or .npz file") from None
    except ValueError as exc:
        if "pickle" in str(exc):
            raise TargetError(
                f"{shown}: holds Python objects (pickled), which gradscope never "
                "loads: save plain arrays (np.save, np.savez)"
            ) from None
        raise TargetError(f"{shown}: not a .npy or .npz file: {exc}") from None
    except (OSError, EOFError) as exc:
        raise TargetError(f"{shown}: cannot read it as .npy or .npz: {exc}") from None
    if isinstance(loaded, np.ndarray):
        if len(ports) != 1:
            names = ", ".join(p.name for p in ports)
            raise TargetError(
                f"{shown}: one array, but the model has {len(ports)} {what} "
                f"({names}): save them by name with np.savez"
            )
        return {ports[0].name: loaded}
    with loaded:
        keys = list(loaded.files)
        if all(k.startswith("arr_") for k in keys) and len(keys) == len(ports):
            return {p.name: loaded[f"arr_{i}"] for i, p in enumerate(ports)}
        return {k: loaded[k] for k in keys}


def _by_name(value: Any, ports: Sequence[Port], what: str) -> dict[str, Any]:
    if isinstance(value, Mapping):
        return {str(k): v for k, v in value.items()}
    if isinstance(value, (list, tuple)) and len(ports) > 1:
        if len(value) != len(ports):
            raise UsageError(f"{what}: {len(value)} arrays for {len(ports)} {what}")
        return {p.name: v for p, v in zip(ports, value, strict=True)}
    if len(ports) != 1:
        names = ", ".join(p.name for p in ports)
        raise UsageError(
            f"{what}: the model has {len(ports)} {what} ({names}): give a list or a mapping by name"
        )
    return {ports[0].name: value}


def _checked(
    path: str,
    arrays: dict[str, Any],
    ports: Sequence[Port],
    what: str,
    required: Sequence[str] | None,
) -> dict[str, Any]:
    shown = printable(path)
    names = [p.name for p in ports]
    unknown = [k for k in arrays if k not in names]
    missing = [n for n in (names if required is None else required) if n not in arrays]
    if unknown or missing:
        said = f"no {what[:-1]} named {unknown[0]!r}" if unknown else f"no {missing[0]!r}"
        raise TargetError(f"{shown}: {said}; the model's {what} are {', '.join(names)}")
    out = {}
    for port in ports:
        if port.name not in arrays:
            continue
        array = np.asarray(arrays[port.name])
        if array.dtype == object:
            raise TargetError(f"{shown}: {port.name!r} holds Python objects, not numbers")
        fits = array.ndim == len(port.shape) and all(
            want is None or want == got
            for want, got in zip(port.shape[1:], array.shape[1:], strict=True)
        )
        if port.shape and not fits:
            raise TargetError(
                f"{shown}: {what[:-1]} {port.name!r} has shape "
                f"{_shape(array.shape)}; the model takes "
                f"{_shape(port.shape)}"
            )
        out[port.name] = array.astype(port.dtype) if port.dtype else array
    batches = {a.shape[0] for a in out.values() if a.ndim}
    if len(batches) > 1:
        raise TargetError(f"{shown}: the {what} have different batch sizes {sorted(batches)}")
    return out


def random_inputs(ports: Sequence[Port], batch: int, int_ranges: Mapping[str, int]) -> Data:
    """Inputs of the ports' shapes: floats from N(0, 1), integers in [0, n) where ``n`` is an
    Embedding's vocabulary the input feeds (else 2)."""
    rng = np.random.default_rng(SEED)
    arrays, described = {}, []
    for port in ports:
        shape = _concrete(port.shape, batch)
        if _is_int(port.dtype):
            high = int_ranges.get(port.name, 2)
            arrays[port.name] = rng.integers(0, high, size=shape).astype(port.dtype)
            described.append(f"{port.name} {_shape(shape)} {port.dtype} in [0, {high})")
        elif port.dtype == "bool":
            arrays[port.name] = rng.integers(0, 2, size=shape).astype(bool)
            described.append(f"{port.name} {_shape(shape)} bool")
        else:
            arrays[port.name] = rng.standard_normal(shape).astype(port.dtype or "float32")
            described.append(f"{port.name} {_shape(shape)} {port.dtype or 'float32'} ~ N(0, 1)")
    return Data(arrays, "random", tuple(described))


def _concrete(shape: Sequence[int | None], batch: int) -> tuple[int, ...]:
    if not shape:
        return ()
    return (batch, *(OPEN_DIM if d is None else int(d) for d in shape[1:]))


def _is_int(dtype: str) -> bool:
    return dtype.startswith(("int", "uint"))


#: How labels are made for a loss, by its normalised name (lower case, no underscores).
SPARSE, ONE_HOT, BINARY, VALUES = "sparse", "one_hot", "binary", "values"


def label_kind(loss_name: str, classes: int) -> str:
    """The labels a Keras loss reads, from its name (``SparseCategoricalCrossentropy``,
    ``sparse_categorical_crossentropy``, ``mse``, ...) and the output's last dimension."""
    key = loss_name.lower().replace("_", "")
    if key == "crossentropy":  # compile's alias: Keras picks the flavour from the labels
        return BINARY if classes == 1 else SPARSE
    if "sparse" in key:
        return SPARSE
    if "categorical" in key or key in ("kldivergence", "kld", "kullbackleiblerdivergence"):
        return ONE_HOT
    if "binary" in key or "hinge" in key:
        return BINARY
    return VALUES


def random_labels(outputs: Mapping[str, tuple[tuple[int, ...], str]]) -> Data:
    """Labels for each output: ``{name: (the output's shape, label kind)}``."""
    rng = np.random.default_rng(SEED + 1)
    arrays, described = {}, []
    for name, (shape, kind) in outputs.items():
        classes = shape[-1] if shape else 1
        if kind == SPARSE:
            arrays[name] = rng.integers(0, classes, size=shape[:-1]).astype("int32")
            described.append(f"{name}: class ids in [0, {classes})")
        elif kind == ONE_HOT:
            ids = rng.integers(0, classes, size=shape[:-1])
            arrays[name] = np.eye(classes, dtype="float32")[ids]
            described.append(f"{name}: one-hot rows of {classes} classes")
        elif kind == BINARY:
            arrays[name] = rng.integers(0, 2, size=shape).astype("float32")
            described.append(f"{name}: 0 or 1")
        else:
            arrays[name] = rng.random(shape).astype("float32")
            described.append(f"{name}: uniform in [0, 1)")
    return Data(arrays, "random", tuple(described))
