"""Loading a saved model the safe way, every failure one line naming the file.

A ``.keras`` or ``.h5`` file loads with Keras' ``safe_mode`` on (whatever
``keras.config.enable_unsafe_deserialization()`` said before): a ``Lambda`` layer's Python
bytecode and a ``TFSMLayer`` (which loads another SavedModel) are refused, and Keras imports
classes from ``keras`` alone. Custom classes come only from modules the user names
(``--custom-objects module:NAME``): importing those runs the user's own code, as a Python
target does. A SavedModel is a graph: gradscope calls one of its signatures, after refusing
ops that touch files, run Python, print or reach the network.
"""

from __future__ import annotations

import contextlib
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from gradscope._src.errors import TargetError, UsageError
from gradscope._src.frontends.saved.options import LoadOptions
from gradscope._src.frontends.saved.sniff import Kind, Sniffed
from gradscope._src.printable import printable

_MISSING = re.compile(r"Could not locate (?P<what>class|function) '(?P<name>[^']+)'")
_REGISTERED = re.compile(r"'registered_name': '(?P<name>[^']+)'")
_UNKNOWN = re.compile(r"Unknown (?P<what>[\w ]+): '(?P<name>[^']+)'")
_UNSAFE_HINT = (
    "gradscope loads with Keras' safe_mode on. If you trust the file as you trust your own "
    "code, --no-safe-mode loads it (Keras' safe_mode=False: the code in the file runs)"
)
#: Op types of a SavedModel's graph that read or write files, run Python, print, write
#: summaries, read datasets or talk to other processes: never run while safe_mode is on.
_UNSAFE_OPS = re.compile(
    r"PyFunc|File|Reader|Writer|Summary|^Save|^Restore|Checkpoint|Print|Dataset|Rpc|Debug|"
    r"DecodeProto|LoadAndRemap|GenerateVocab|Collective|Send$|Recv$|Iterator|ImmutableConst|"
    r"Sql|LMDB|Lmdb"
)


def _fail(path: str, message: str) -> TargetError:
    return TargetError(f"{printable(path)}: {message}")


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Keras' warnings about the saved optimizer's variables say nothing about gradients."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def custom_objects(options: LoadOptions) -> dict[str, Any]:
    """The classes and functions ``--custom-objects`` names, by class name and by the name
    Keras registered them under (``package>Name``).

    Raises:
        TargetError: a module or name that cannot be imported.
    """
    from gradscope._src.frontends.python.resolve import import_named

    found: dict[str, Any] = {}
    for text in options.custom_objects:
        if ":" not in text:
            raise UsageError(
                f"--custom-objects {text!r}: name the module and the object, as "
                f"my_pkg.layers:{text} or path/to/layers.py:{text}"
            )
        try:
            obj = import_named(text)
        except TargetError as exc:
            raise TargetError(f"--custom-objects {exc}", cause=exc.cause) from exc
        _register(found, text.rpartition(":")[2], obj)
    for name, obj in options.custom_mapping:
        _register(found, name, obj)
    return found


def _register(found: dict[str, Any], name: str, obj: Any) -> None:
    import keras

    found[name] = obj
    with contextlib.suppress(Exception):
        found[keras.saving.get_registered_name(obj)] = obj


def load_keras(sniffed: Sniffed, options: LoadOptions) -> Any:
    """A ``.keras`` or ``.h5`` model, compiled as it was saved.

    Raises:
        TargetError: one line: a custom class Keras cannot find (named, with the option that
            gives it), a Lambda or TFSMLayer under safe_mode, or any other refusal.
    """
    import keras

    objects = custom_objects(options)

    # NOTE: load_model(safe_mode=True) does not reach every nested from_config: a Sequential's
    # Lambda falls back to the process-wide flag, which keras.config.
    # enable_unsafe_deserialization() (a notebook's earlier cell) turns off. The scope sets
    # that flag too while loading, then puts the caller's back.
    from gradscope._src import tfcompat

    safe_mode_scope = tfcompat.get("SafeModeScope")  # a class private to Keras

    def loaded(compile: bool) -> Any:
        with _quiet(), safe_mode_scope(options.safe_mode):
            return keras.models.load_model(
                sniffed.path, custom_objects=objects or None, compile=compile,
                safe_mode=options.safe_mode,
            )  # fmt: skip

    try:
        return loaded(compile=True)
    except Exception as exc:  # Keras raises TypeError, ValueError, KeyError, OSError, ...
        if sniffed.kind != Kind.H5 or "Could not deserialize 'keras.metrics." not in str(exc):
            raise _fail(sniffed.path, _why(sniffed, exc)) from exc
        # NOTE: Keras 3 writes a string loss (compile(loss="mse")) into an .h5 file's
        # training_config, then cannot read it back with compile=True ("Could not deserialize
        # 'keras.metrics.mse'"); the model loads without it and is compiled from the file's
        # own training_config, as Keras 2 did.
        try:
            model = loaded(compile=False)
        except Exception:
            raise _fail(sniffed.path, _why(sniffed, exc)) from exc
        _compile_h5(model, sniffed.path)
        model._gradscope_compiled_from_h5 = True  # the note: Keras' own restore failed
        return model


def notes_of(model: Any) -> list[str]:
    """What loading did that the report should say."""
    if not getattr(model, "_gradscope_compiled_from_h5", False):
        return []
    return [
        "Keras could not restore this .h5 file's compile() configuration (it writes a loss "
        "given by name, then cannot read it back); gradscope compiled the model with the "
        "losses the file's training_config names"
    ]


def _compile_h5(model: Any, path: str) -> None:
    """Compile ``model`` with the losses an ``.h5`` file's ``training_config`` names, when they
    are Keras loss names (as Keras 2 restored them); otherwise leave it uncompiled."""
    import json

    import h5py  # type: ignore[import-untyped]

    with contextlib.suppress(Exception), h5py.File(path, "r") as handle:
        raw = handle.attrs.get("training_config")
        config = json.loads(raw.decode() if isinstance(raw, bytes) else raw)
        loss, weights = config.get("loss"), config.get("loss_weights")
        names = (
            loss.values() if isinstance(loss, dict) else loss if isinstance(loss, list) else [loss]
        )
        if all(isinstance(n, str) for n in names):
            model.compile(loss=loss, loss_weights=weights)


def _why(sniffed: Sniffed, exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    if "Lambda" in text and "safe_mode" in text:
        layers = ", ".join(n for n in sniffed.lambdas if "Lambda" in n) or "a Lambda layer"
        return f"layer {layers} holds Python bytecode that loading would run; " + _UNSAFE_HINT
    if "TFSMLayer" in text and "safe_mode" in text:
        layers = ", ".join(n for n in sniffed.lambdas if "TFSMLayer" in n) or "a TFSMLayer"
        return f"layer {layers} loads another SavedModel, a graph from elsewhere; " + _UNSAFE_HINT
    missing = _MISSING.search(text) or _UNKNOWN.search(text)
    if missing:
        name = missing["name"]
        registered = _REGISTERED.search(text[missing.end() :])
        shown = registered["name"] if registered and missing["what"] == "class" else name
        short = shown.rpartition(">")[2]
        what = "function" if missing["what"] == "function" else "class"
        return (
            f"the model uses the custom {what} {shown!r}, which Keras cannot find: pass the "
            f"module that defines it, --custom-objects my_module:{short} (or "
            f"path/to/file.py:{short}; importing it runs that module's code)"
        )
    if "truncated" in text or "Bad CRC" in text or "BadZipFile" in type(exc).__name__:
        return f"damaged: {_first(text)}"
    return f"Keras could not load it: {type(exc).__name__}: {_first(text)} " + (
        "(--traceback shows the traceback)"
    )


def _first(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass(frozen=True)
class Signature:
    """The SavedModel signature gradscope calls: its name, the restored object, the function,
    its input specs (keyword arguments) and output specs (by name)."""

    name: str
    loaded: Any
    function: Any
    inputs: dict[str, Any]
    outputs: dict[str, Any]
    names: tuple[str, ...]  # every signature the SavedModel has


def load_saved_model(sniffed: Sniffed, options: LoadOptions) -> Signature:
    """A SavedModel directory and the signature to call (``--signature``, else
    ``serving_default``, else ``serve``, else the only one).

    Raises:
        TargetError: one line: no signatures, an unknown ``--signature``, a graph with ops
            that touch files or run Python (under safe_mode), or TensorFlow's own refusal.
    """
    import tensorflow as tf

    path = sniffed.path
    try:
        with _quiet():
            loaded = tf.saved_model.load(path)
    except Exception as exc:
        raise _fail(
            path,
            f"TensorFlow could not load the SavedModel: {type(exc).__name__}: "
            f"{_first(' '.join(str(exc).split()))}",
        ) from exc
    names = tuple(loaded.signatures.keys())
    if not names:
        raise _fail(
            path,
            "the SavedModel has no signatures, so there is no function to call: "
            "save it with tf.saved_model.save(obj, path, signatures=obj.__call__"
            ".get_concrete_function(...)) or model.export(path)",
        )
    name = options.signature or next(
        (n for n in ("serving_default", "serve") if n in names), names[0] if len(names) == 1 else ""
    )
    if name not in names:
        listed = ", ".join(names)
        said = f"has no signature {name!r}" if options.signature else "has several signatures"
        raise _fail(path, f"the SavedModel {said}: pick one with --signature ({listed})")
    function = loaded.signatures[name]
    if options.safe_mode:
        _refuse_unsafe_ops(path, name, function)
    _args, kwargs = function.structured_input_signature
    outputs = function.structured_outputs
    if not isinstance(outputs, dict):
        outputs = {"output_0": outputs}
    return Signature(name, loaded, function, dict(kwargs), dict(outputs), names)


def _refuse_unsafe_ops(path: str, signature: str, function: Any) -> None:
    graph = function.graph.as_graph_def()
    nodes = [(n.name, n.op) for n in graph.node]
    for library in graph.library.function:
        nodes += [(n.name, n.op) for n in library.node_def]
    for node, op in nodes:
        if _UNSAFE_OPS.search(op):
            raise _fail(
                path,
                f"signature {signature!r} runs op {op} ({node!r}), which may "
                "read or write files, run Python, print or reach the network; "
                "gradscope runs only a SavedModel's math with safe_mode on. If you "
                "trust the model as you trust your own code, --no-safe-mode runs it "
                "anyway",
            )


def load(sniffed: Sniffed, options: LoadOptions) -> Any:
    """The Keras model or SavedModel signature ``sniffed`` holds."""
    if sniffed.kind == Kind.SAVED_MODEL:
        return load_saved_model(sniffed, options)
    return load_keras(sniffed, options)
