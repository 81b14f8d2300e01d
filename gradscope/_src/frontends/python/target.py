"""``gradscope.Target``: what a Python target's function returns, checked before anything runs.

No TensorFlow here: the checks are about the shape of what the user returned (a mapping of
named zero-argument callables, ...); whether the callables build a differentiable loss is
found out later, inside the trace.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from gradscope._src.errors import TargetError
from gradscope._src.printable import is_printable
from gradscope._src.results.expect import Expectation, Pattern, Pos

_EXPECT_KEYS = ("none", "connected", "numeric")


@dataclass(frozen=True)
class Target:
    """A model given as Python: named losses, and optionally which variables and what to expect.

    A target function (``gradscope inspect my_pkg.models:build``) takes no arguments and
    returns a ``Target`` or a mapping with the same keys.

    Attributes:
        losses: loss name -> zero-argument callable returning a tensor. A loss that is not a
            scalar is summed, as ``tf.gradients`` and ``GradientTape.gradient`` do.
        variables: the variables to inspect, in report order. Default: every trainable
            variable the losses touch; with ``model``, the model's trainable variables (and
            the weights of layers frozen with ``trainable = False``) first.
        expect: loss name -> ``{"none": [globs], "connected": [globs], "numeric": [globs]}``,
            what ``check`` holds the model to (the same as a spec's ``expect`` block).
        model: a Keras model; its variables are the default ``variables``.
        name: a name for reports (default: the model's name, else the target string).
        eager_check: also run every loss eagerly under a ``tf.GradientTape`` and report any
            variable whose gradient is None one way and not the other. On by default (Python
            targets are usually small); False saves one eager forward and backward pass per
            loss on a large model.
        grad_loss: loss name -> the upstream gradient (a number, or an array of the loss's
            shape), as ``output_gradients=`` of ``GradientTape.gradient`` and a spec's
            ``grad_loss`` (a GAN's generator step passes -1).
        stop_gradients: loss name -> glob patterns over TensorFlow op names in the trace
            (the ``node`` of a cut point, ``dense/Relu``): their outputs are treated as
            constants, as ``tf.gradients(stop_gradients=...)`` and a spec's
            ``stop_gradients`` do.
        unconnected_gradients: ``"none"`` (default) or ``"zero"``, as
            ``GradientTape.gradient``'s argument: with ``"zero"`` a variable a loss does not
            reach gets zeros, and reports ``zero`` (its cut points still say why).

    Example:
        >>> def build():
        ...     model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
        ...     x, y = np.ones((8, 4), "float32"), np.zeros((8, 1), "float32")
        ...     return gradscope.Target(
        ...         losses={"mse": lambda: tf.reduce_mean((model(x) - y) ** 2)},
        ...         expect={"mse": {"connected": ["*"]}},
        ...     )
    """

    losses: Mapping[str, Callable[[], Any]]
    variables: Sequence[Any] | None = None
    expect: Mapping[str, Mapping[str, Sequence[str]]] | None = None
    model: Any = None
    name: str | None = None
    eager_check: bool = True
    grad_loss: Mapping[str, Any] | None = None
    stop_gradients: Mapping[str, Sequence[str]] | None = None
    unconnected_gradients: str = "none"


FIELDS = tuple(f.name for f in fields(Target))


def article(word: str) -> str:
    """``an int``, ``a float``: a word with its indefinite article."""
    return f"{'an' if word[:1].lower() in 'aeiou' else 'a'} {word}"


def _fail(origin: str, message: str) -> TargetError:
    return TargetError(f"{origin}: {message}")


def coerce(value: Any, origin: str) -> Target:
    """A checked ``Target`` from what a target function returned.

    Raises:
        TargetError: the value is not a Target or a mapping with valid fields.
    """
    if isinstance(value, Target):
        target = value
    elif isinstance(value, Mapping):
        unknown = [k for k in value if k not in FIELDS]
        if unknown:
            key = str(unknown[0])
            close = difflib.get_close_matches(key, FIELDS, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise _fail(origin, f"unknown key {key!r}{hint}; a target has {', '.join(FIELDS)}")
        if "losses" not in value:
            raise _fail(origin, "the mapping has no 'losses'")
        target = Target(**{str(k): v for k, v in value.items()})
    else:
        raise _fail(
            origin,
            f"returned {type(value).__name__}; expected a gradscope.Target or a mapping "
            "with 'losses' (and optionally 'variables', 'expect', 'model')",
        )
    _check(target, origin)
    return target


def _check(target: Target, origin: str) -> None:
    losses = target.losses
    if not isinstance(losses, Mapping) or not losses:
        what = "an empty mapping" if isinstance(losses, Mapping) else type(losses).__name__
        raise _fail(origin, f"'losses' must map names to zero-argument callables, saw {what}")
    for name, fn in losses.items():
        if not isinstance(name, str) or not name:
            raise _fail(origin, f"loss names must be non-empty strings, saw {name!r}")
        if not is_printable(name):
            raise _fail(origin, f"loss names must be printable, saw {name!r}")
        _check_callable(
            fn, f"loss {name!r}", origin, "; wrap it, e.g. lambda: loss_fn(y, model(x))"
        )
    variables = target.variables
    if variables is not None and (
        isinstance(variables, (str, bytes, Mapping)) or not isinstance(variables, Sequence)
    ):
        raise _fail(origin, f"'variables' must be a list of variables, saw {_kind(variables)}")
    if target.name is not None and not isinstance(target.name, str):
        raise _fail(origin, f"'name' must be a string, saw {_kind(target.name)}")
    if not isinstance(target.eager_check, bool):
        raise _fail(origin, f"'eager_check' must be True or False, saw {target.eager_check!r}")
    if target.unconnected_gradients not in ("none", "zero"):
        raise _fail(
            origin,
            "'unconnected_gradients' must be 'none' or 'zero', "
            f"saw {target.unconnected_gradients!r}",
        )
    for field_name in ("grad_loss", "stop_gradients"):
        _check_per_loss(target, field_name, origin)
    _check_expect(target, origin)


def _check_per_loss(target: Target, field_name: str, origin: str) -> None:
    """``grad_loss`` / ``stop_gradients``: a mapping keyed by loss names."""
    value = getattr(target, field_name)
    if value is None:
        return
    if not isinstance(value, Mapping):
        raise _fail(origin, f"'{field_name}' must map loss names to values, saw {_kind(value)}")
    for loss, entry in value.items():
        if loss not in target.losses:
            raise _fail(
                origin,
                f"{field_name} names loss {loss!r}, which the target does not define "
                f"(it has {', '.join(map(repr, target.losses))})",
            )
        if field_name == "stop_gradients" and (
            isinstance(entry, str) or not all(isinstance(g, str) for g in entry)
        ):
            raise _fail(origin, f"stop_gradients[{loss!r}] must be a list of op-name globs")


def _kind(value: Any) -> str:
    return type(value).__name__


def _check_callable(fn: Any, what: str, origin: str, hint: str = "") -> None:
    if not callable(fn):
        raise _fail(origin, f"{what} must be a zero-argument callable, saw {_kind(fn)}")
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin without a signature: let the call decide
        return
    required = [
        p.name
        for p in signature.parameters.values()
        if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    if required:
        raise _fail(
            origin, f"{what} must take no arguments, but it takes ({', '.join(required)}){hint}"
        )


def _check_expect(target: Target, origin: str) -> None:
    expect = target.expect
    if expect is None:
        return
    if not isinstance(expect, Mapping):
        raise _fail(
            origin, f"'expect' must map loss names to {{none, connected}}, saw {_kind(expect)}"
        )
    for loss, rules in expect.items():
        if loss not in target.losses:
            raise _fail(
                origin,
                f"expect names loss {loss!r}, which the target does not define "
                f"(it has {', '.join(map(repr, target.losses))})",
            )
        if not isinstance(rules, Mapping) or any(k not in _EXPECT_KEYS for k in rules):
            raise _fail(
                origin,
                f"expect[{loss!r}] must be a mapping with 'none', 'connected' and/or 'numeric'",
            )
        for key, globs in rules.items():
            if isinstance(globs, str):
                continue
            if not isinstance(globs, Sequence) or not all(isinstance(g, str) for g in globs):
                raise _fail(origin, f"expect[{loss!r}][{key!r}] must be a list of glob strings")


def _globs(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else [str(g) for g in value or ()]


def expectations(target: Target, lines: Sequence[str], first_line: int) -> tuple[Expectation, ...]:
    """``target.expect`` as the spec's ``Expectation`` objects, for ``check``.

    Each pattern is placed on the first line of the target function's source that contains
    it in quotes (so a failure points at the line that wrote it), else on the function's line.

    Args:
        target: a checked target.
        lines: the source lines of the function that returned it (may be empty).
        first_line: the line number of ``lines[0]`` (or of the call site when unknown).
    """

    def where(text: str) -> Pos:
        for offset, line in enumerate(lines):
            for quoted in (f'"{text}"', f"'{text}'"):
                column = line.find(quoted)
                if column >= 0:
                    return Pos(first_line + offset, column + 1)
        return Pos(first_line, 1)

    out = []
    for loss, rules in (target.expect or {}).items():
        none = tuple(Pattern(g, where(g)) for g in _globs(rules.get("none")))
        connected = tuple(Pattern(g, where(g)) for g in _globs(rules.get("connected")))
        numeric = tuple(Pattern(g, where(g)) for g in _globs(rules.get("numeric")))
        out.append(Expectation(loss, none, connected, where(loss), numeric))
    return tuple(out)
