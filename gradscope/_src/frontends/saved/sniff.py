"""What a path holds, told from its bytes before TensorFlow is imported: a Keras archive, a
legacy HDF5 model, a SavedModel directory, or something gradscope must refuse in one line.

A saved model is data the user was handed (a download, a colleague's checkpoint): a wrong or
damaged file must cost neither TensorFlow's 3 s import nor a traceback, and a binary file must
never reach the YAML reader. Everything here reads headers, a zip's central directory and an
HDF5 file's attributes (``h5py`` alone, no TensorFlow), and compares the weights' size with the
memory the machine has left.
"""

from __future__ import annotations

import enum
import json
import os
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path

from gradscope._src.errors import TargetError
from gradscope._src.printable import is_printable, printable

ZIP_MAGIC = b"PK\x03\x04"
HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"
KERAS_SUFFIXES = (".keras",)
H5_SUFFIXES = (".h5", ".hdf5")
SAVED_MODEL_FILES = ("saved_model.pb", "saved_model.pbtxt")
#: Loading holds the weights about twice (read from the file, then in the variables).
LOAD_FACTOR = 2


class Kind(str, enum.Enum):
    """The formats gradscope loads (``loaded.format`` in the JSON report)."""

    KERAS = "keras"  # a Keras 3 archive: model.save("model.keras")
    H5 = "h5"  # the legacy HDF5 format: model.save("model.h5")
    SAVED_MODEL = "saved_model"  # a directory: tf.saved_model.save, model.export
    MODEL = "keras_model"  # a Keras model object handed to the Python API


@dataclass(frozen=True)
class Sniffed:
    """A path's format and what loading it costs."""

    path: str
    kind: Kind
    weight_bytes: int  # what the weights take once loaded (uncompressed)
    lambdas: tuple[str, ...] = ()  # Lambda layers in the config: "name (Lambda)"


def looks_saved(text: str) -> bool:
    """Whether ``text`` names a saved model rather than a spec or a Python target: a
    ``.keras``/``.h5``/``.hdf5`` name (existing or not), a directory holding
    ``saved_model.pb``, or a file whose first bytes are a zip's or an HDF5 file's."""
    if text.endswith(KERAS_SUFFIXES + H5_SUFFIXES):
        return True
    if text.endswith((".yaml", ".yml", ".json")):  # named a spec: the spec reader says what
        return False
    try:
        if os.path.isdir(text):
            return any(os.path.isfile(os.path.join(text, n)) for n in SAVED_MODEL_FILES)
        if not os.path.isfile(text) or text.endswith(".py"):
            return False
        with open(text, "rb") as stream:
            head = stream.read(8)
    except OSError:
        return False
    return head.startswith(ZIP_MAGIC) or head == HDF5_MAGIC


def _fail(path: str, message: str) -> TargetError:
    return TargetError(f"{printable(path)}: {message}")


def sniff(path: str) -> Sniffed:
    """The format of ``path`` and the size of its weights, checked without TensorFlow.

    Raises:
        TargetError: one line: no such file, a zip that is not a Keras archive, a truncated
            or damaged file, a weights-only file, a directory that is no SavedModel, weights
            larger than the memory available.
    """
    if not is_printable(path):
        raise _fail(path, "the file name has control characters; rename the file")
    if os.path.isdir(path):
        found = _saved_model(path)
    elif not os.path.exists(path):
        raise _fail(path, "no such file")
    else:
        mode = os.stat(path).st_mode
        if not stat.S_ISREG(mode):
            raise _fail(path, "not a regular file, expected a saved model file")
        found = _file(path)
    _check_memory(found)
    return found


def _file(path: str) -> Sniffed:
    try:
        with open(path, "rb") as stream:
            head = stream.read(8)
    except OSError as exc:
        raise _fail(path, f"cannot read the file: {exc.strerror or exc}") from None
    size = os.path.getsize(path)
    if head.startswith(ZIP_MAGIC):
        if not path.endswith(KERAS_SUFFIXES):
            raise _fail(
                path,
                "a zip archive: a Keras model file must be named *.keras "
                "(Keras refuses other names); rename it",
            )
        return _keras(path, size)
    if head == HDF5_MAGIC:
        if not path.endswith(H5_SUFFIXES):
            raise _fail(
                path,
                "an HDF5 file: a Keras model in the legacy format must be named "
                "*.h5 or *.hdf5 (Keras refuses other names); rename it",
            )
        return _h5(path, size)
    if size == 0:
        raise _fail(path, "the file is empty, expected a Keras model file")
    if path.endswith(KERAS_SUFFIXES):
        raise _fail(
            path,
            "not a zip archive, so not a Keras model file (model.save("
            "'model.keras') writes one); its first bytes are " + _shown(head),
        )
    raise _fail(
        path,
        "not an HDF5 file, so not a Keras model in the legacy .h5 format; its "
        "first bytes are " + _shown(head),
    )


def _shown(head: bytes) -> str:
    return repr(head)[1:] if head else "none"


def _keras(path: str, size: int) -> Sniffed:
    """A Keras archive: a zip holding ``config.json`` and the weights."""
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            infos = archive.infolist()
            config = archive.read("config.json") if "config.json" in names else None
    except zipfile.BadZipFile:
        raise _fail(
            path,
            f"truncated or damaged: the zip archive has no central directory "
            f"({size} bytes; an interrupted download or copy?)",
        ) from None
    except (OSError, EOFError, RuntimeError, ValueError) as exc:
        raise _fail(path, f"damaged: {' '.join(str(exc).split())}") from None
    if config is None:
        listed = ", ".join(names[:4]) + (", ..." if len(names) > 4 else "")
        raise _fail(
            path,
            "a zip archive but not a Keras model file: it holds no config.json "
            f"(it holds {listed or 'nothing'})",
        )
    weights = [i for i in infos if i.filename.startswith("model.weights")]
    try:
        parsed = json.loads(config)
    except (ValueError, UnicodeDecodeError):
        raise _fail(path, "damaged: its config.json is not JSON") from None
    return Sniffed(path, Kind.KERAS, sum(i.file_size for i in weights), tuple(_lambdas(parsed)))


def _lambdas(config: object) -> list[str]:
    """Every ``Lambda`` (and ``TFSMLayer``) layer of a Keras config, as ``name (Class)``:
    the layers whose loading would run code from the file."""
    out: list[str] = []
    stack = [config]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            name = item.get("class_name")
            if name in ("Lambda", "TFSMLayer"):
                inner = item.get("config")
                label = inner.get("name") if isinstance(inner, dict) else None
                out.append(f"{label} ({name})" if label else str(name))
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return sorted(set(out))


def _h5(path: str, size: int) -> Sniffed:
    """A legacy HDF5 model: ``h5py`` opens it (a truncated file fails here) and its
    ``model_config`` attribute says it is a whole model, not weights alone."""
    _check_memory(Sniffed(path, Kind.H5, size))  # before h5py reads a byte of it
    try:
        import h5py  # type: ignore[import-untyped]
    except ImportError:  # Keras needs h5py for .h5 files: loading will say so
        return Sniffed(path, Kind.H5, size)
    try:
        with h5py.File(path, "r") as handle:
            config = handle.attrs.get("model_config")
    except OSError as exc:
        text = " ".join(str(exc).split())
        if "truncated" in text:
            raise _fail(
                path,
                f"truncated: {size} bytes, fewer than the HDF5 file says it holds "
                "(an interrupted download or copy?)",
            ) from None
        raise _fail(path, f"damaged: h5py cannot open it: {text}") from None
    if config is None:
        raise _fail(
            path,
            "holds weights only (model.save_weights), not a model: save the "
            "whole model (model.save('model.keras')) or build it in a Python target "
            "and load the weights there",
        )
    lambdas: list[str] = []
    try:
        text = config.decode() if isinstance(config, bytes) else str(config)
        lambdas = _lambdas(json.loads(text))
    except (ValueError, UnicodeDecodeError):
        pass  # Keras reads it and says what is wrong
    return Sniffed(path, Kind.H5, size, tuple(lambdas))


def _saved_model(path: str) -> Sniffed:
    root = Path(path)
    if not any((root / name).is_file() for name in SAVED_MODEL_FILES):
        raise _fail(
            path,
            "is a directory without saved_model.pb: not a SavedModel (a spec is "
            "a YAML file, a Keras model a .keras or .h5 file)",
        )
    variables = root / "variables"
    size = 0
    if variables.is_dir():
        for item in variables.iterdir():
            if item.name.startswith("variables.data") and item.is_file():
                size += item.stat().st_size
    return Sniffed(path, Kind.SAVED_MODEL, size)


def available_memory() -> int | None:
    """Bytes of memory the machine can still give (``MemAvailable``); None when unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as stream:
            for line in stream:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _check_memory(found: Sniffed) -> None:
    free = available_memory()
    need = found.weight_bytes * LOAD_FACTOR
    if free is not None and need > free:
        raise _fail(
            found.path,
            f"too large for memory: its weights take {_size(found.weight_bytes)}"
            f", and loading holds them twice ({_size(need)}), more than the "
            f"{_size(free)} this machine has available",
        )


def _size(n: int) -> str:
    value = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")
