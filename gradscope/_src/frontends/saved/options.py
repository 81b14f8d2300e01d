"""How to turn a saved model into losses: the options of ``--loss``, ``--inputs``, ``--labels``,
``--freeze``, ``--training``, ``--custom-objects``, ``--signature`` and ``--no-safe-mode``,
checked without TensorFlow.

A saved model names no loss of its own (a compiled one at most), so for a saved model ``--loss``
says which loss to compute: ``compiled`` (what ``model.compile`` saved), a Keras loss name for
every output (``mse``; repeated, one per output in order), or ``OUTPUT=NAME`` for one output.
A name may take literal arguments as Python writes them:
``SparseCategoricalCrossentropy(from_logits=True)``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gradscope._src.errors import UsageError

#: ``--loss compiled``: the loss ``model.compile`` saved with the model.
COMPILED = "compiled"
_CALL = re.compile(r"^(?P<name>[A-Za-z_]\w*)(?:\((?P<args>.*)\))?$", re.S)
_ASSIGN = re.compile(r"^(?P<output>[^=()]+?)=(?P<loss>.+)$", re.S)


@dataclass(frozen=True)
class LossChoice:
    """One ``--loss`` value: the output it scores (None: every output, or the next one in
    order), and the loss: ``compiled``, a Keras loss name with its arguments, or (from the
    Python API) a callable ``loss(y_true, y_pred)``."""

    output: str | None
    name: str  # as written: what the report calls the loss of a one-output model
    function: str | None = None  # the Keras loss name; None for ``compiled`` or a callable
    arguments: tuple[tuple[str, Any], ...] = ()
    callable: Callable[..., Any] | None = None

    @property
    def compiled(self) -> bool:
        return self.function is None and self.callable is None


@dataclass(frozen=True)
class LoadOptions:
    """Everything a saved model needs besides its file (the command line's options, or the
    Python API's keywords); the defaults load safely and use the compiled loss."""

    losses: tuple[LossChoice, ...] = ()
    inputs: Any = None  # a .npy/.npz path, an array, a list or a mapping of arrays
    labels: Any = None
    freeze: tuple[str, ...] = ()  # globs over layer paths and classes; "!GLOB" unfreezes
    training: bool = False
    custom_objects: tuple[str, ...] = ()  # "module:NAME" or "file.py:NAME"
    custom_mapping: tuple[tuple[str, Any], ...] = ()  # the API's {name: object}
    safe_mode: bool = True
    signature: str | None = None
    batch: int = 4  # rows of random inputs


def parse_loss(text: str) -> LossChoice:
    """One ``--loss`` value.

    Raises:
        UsageError: not ``compiled``, ``NAME``, ``NAME(ARGS)`` or ``OUTPUT=`` one of those.

    Example:
        >>> parse_loss("out_a=mse")
        LossChoice(output='out_a', name='mse', function='mse', arguments=(), callable=None)
        >>> parse_loss("SparseCategoricalCrossentropy(from_logits=True)").arguments
        (('from_logits', True),)
    """
    text = text.strip()
    output: str | None = None
    assigned = _ASSIGN.match(text)
    if assigned and "(" not in assigned["output"]:
        output, text = assigned["output"].strip(), assigned["loss"].strip()
    call = _CALL.match(text)
    if not call:
        raise UsageError(
            f"--loss {text!r}: expected compiled, a Keras loss name (mse, "
            "sparse_categorical_crossentropy, Huber(delta=2.0)) or OUTPUT=NAME"
        )
    name = call["name"]
    if name == COMPILED:
        if call["args"] is not None:
            raise UsageError(f"--loss {text!r}: compiled takes no arguments")
        return LossChoice(output, text)
    return LossChoice(output, text, name, _arguments(text, call["args"]))


def _arguments(text: str, args: str | None) -> tuple[tuple[str, Any], ...]:
    if args is None or not args.strip():
        return ()
    try:
        call = ast.parse(f"f({args})", mode="eval").body
    except SyntaxError:
        raise UsageError(f"--loss {text!r}: the arguments are not Python syntax") from None
    assert isinstance(call, ast.Call)
    if call.args or any(k.arg is None for k in call.keywords):
        raise UsageError(f"--loss {text!r}: give arguments by name, as from_logits=True")
    out = []
    for keyword in call.keywords:
        try:
            value = ast.literal_eval(keyword.value)
        except (ValueError, SyntaxError):
            raise UsageError(
                f"--loss {text!r}: {keyword.arg}= must be a literal (a number, a string, "
                "True/False/None, a list)"
            ) from None
        out.append((str(keyword.arg), value))
    return tuple(out)


def loss_choices(loss: Any) -> tuple[LossChoice, ...]:
    """The API's ``loss=`` (a string, a list of strings, ``{output: loss}``, or a callable /
    Keras ``Loss``) as choices; None: the compiled loss.

    Raises:
        UsageError: a value of another type.
    """
    if loss is None:
        return ()
    if isinstance(loss, str):
        return (parse_loss(loss),)
    if isinstance(loss, Mapping):
        return tuple(_one(value, str(output)) for output, value in loss.items())
    if callable(loss):
        return (_one(loss, None),)
    if isinstance(loss, Sequence):
        return tuple(_one(value, None) for value in loss)
    raise UsageError(
        f"loss: expected a loss name, a list of them, a mapping {{output: loss}} or a "
        f"callable, saw {type(loss).__name__}"
    )


def _one(value: Any, output: str | None) -> LossChoice:
    if isinstance(value, str):
        choice = parse_loss(value)
        if choice.output is not None and output is not None:
            raise UsageError(f"loss: {output!r} maps to {value!r}, which names an output too")
        return LossChoice(output or choice.output, choice.name, choice.function, choice.arguments)
    if callable(value):
        name = getattr(value, "name", None) or getattr(value, "__name__", None)
        return LossChoice(output, str(name or type(value).__name__), callable=value)
    raise UsageError(f"loss: expected a loss name or a callable, saw {type(value).__name__}")


def freeze_globs(values: str | Sequence[str] | None) -> tuple[str, ...]:
    """``freeze=``: one glob or several; ``"!GLOB"`` unfreezes what an earlier glob froze."""
    if values is None:
        return ()
    items = [values] if isinstance(values, str) else list(values)
    for item in items:
        if not isinstance(item, str) or not item.strip("!"):
            raise UsageError(f"freeze: expected glob patterns over layer names, saw {item!r}")
    return tuple(items)
