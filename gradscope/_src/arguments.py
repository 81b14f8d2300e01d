"""The public API's arguments, checked before any work: a wrong one is a ``UsageError`` that
names the function, the argument, what it takes and what it received.

``gradscope.check([spec], expect=5)`` raised ``AttributeError: 'int' object has no attribute
'items'`` from deep inside, after TensorFlow had run the spec; every public function
(``inspect``, ``diff``, ``check``, ``graph``, ``run``, ``draw``,
``gradscope.testing.assert_gradients``) asks these checks first, so what it raises on a bad
argument is always ``gradscope: UsageError: gradscope.check: expect must ..., saw 5 (int)``.
No TensorFlow here.
"""

from __future__ import annotations

import numbers
import os
from collections.abc import Mapping, Sequence
from typing import Any

from gradscope._src.errors import UsageError

#: The fields of one loss's ``expect`` (contract section 1, and ``numeric``).
EXPECT_FIELDS = ("none", "connected", "numeric")
#: How gradients are computed (``inspect(mode=...)``; ``engine/modes.py``).
MODES = ("function", "eager", "xla")
STRATEGIES = ("default", "mirrored", "multiworker")


def seen(value: Any) -> str:
    """What was received, for a message: its repr (shortened) and, unless that says it, its
    type: ``5 (int)``, ``'x'``, ``None``."""
    text = repr(value)
    if len(text) > 80:
        text = text[:60] + "..." + text[-12:]
    plain = value is None or isinstance(value, (bool, str))
    return text if plain else f"{text} ({type(value).__name__})"


def refused(who: str, name: str, takes: str, value: Any) -> UsageError:
    """``gradscope.check: expect must be a mapping ..., saw 5 (int)``."""
    return UsageError(f"{who}: {name} must be {takes}, saw {seen(value)}")


def flag(who: str, name: str, value: Any) -> bool:
    """``True`` or ``False`` (not ``"yes"``, not ``1``)."""
    if not isinstance(value, bool):
        raise refused(who, name, "True or False", value)
    return value


def whole(who: str, name: str, value: Any, *, least: int = 1, optional: bool = False) -> Any:
    """A whole number of at least ``least`` (None too when ``optional``)."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
        takes = f"a whole number of at least {least}" + (", or None" if optional else "")
        raise refused(who, name, takes, value)
    return int(value)


def text(who: str, name: str, value: Any, *, optional: bool = False) -> Any:
    """A string (None too when ``optional``)."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise refused(who, name, "a string" + (" or None" if optional else ""), value)
    return value


def path(who: str, name: str, value: Any, *, optional: bool = False) -> Any:
    """A path: a string or an ``os.PathLike`` (None too when ``optional``)."""
    if value is None and optional:
        return None
    if not isinstance(value, (str, os.PathLike)):
        raise refused(who, name, "a path (a string)" + (" or None" if optional else ""), value)
    return value


def one_of(who: str, name: str, value: Any, choices: Sequence[str]) -> str:
    """One of ``choices``."""
    if not isinstance(value, str) or value not in choices:
        raise refused(who, name, "one of " + ", ".join(repr(c) for c in choices), value)
    return value


def strings(who: str, name: str, value: Any, *, optional: bool = False) -> Any:
    """A list (or tuple) of strings; a bare string is refused (``'ab'`` would be read as
    ``['a', 'b']``), with how to write it (None too when ``optional``)."""
    if value is None and optional:
        return None
    if isinstance(value, str):
        raise UsageError(f"{who}: {name} must be a list of strings, saw the string {value!r} "
                         f"(write [{value!r}])")  # fmt: skip
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise refused(who, name, "a list of strings" + (" or None" if optional else ""), value)
    return tuple(value)


def function(who: str, name: str, value: Any) -> Any:
    """Something to call."""
    if not callable(value):
        raise refused(who, name, "a function", value)
    return value


def target(who: str, value: Any, name: str = "target") -> Any:
    """What ``inspect`` reads: a spec path, a loaded ``Spec``, or a Python target
    (``"module:function"``, ``"file.py:function"``, a ``gradscope.Target``, a mapping, a
    zero-argument function)."""
    if isinstance(value, (str, os.PathLike, Mapping)) or callable(value) or _is_spec(value):
        return value
    takes = ("a spec path, a Spec, or a Python target ('module:function', 'file.py:function', "
             "a gradscope.Target, a mapping or a function)")  # fmt: skip
    raise refused(who, name, takes, value)


def _is_spec(value: Any) -> bool:
    from gradscope._src.frontends.python.target import Target
    from gradscope._src.frontends.yaml.model import Spec

    return isinstance(value, (Spec, Target))


def modes(who: str, value: Any) -> list[str]:
    """``mode``: one of :data:`MODES`, or a non-empty list of them."""
    wanted = [value] if isinstance(value, str) else value
    takes = "one of " + ", ".join(repr(m) for m in MODES) + ", or a non-empty list of them"
    if not isinstance(wanted, (list, tuple)) or not wanted:
        raise refused(who, "mode", takes, value)
    for each in wanted:
        if not isinstance(each, str) or each not in MODES:
            raise refused(who, "mode", takes, value)
    return list(wanted)


def expect(who: str, value: Any) -> Any:
    """``expect``: ``{loss: {"none": [globs], "connected": [globs], "numeric": [globs]}}``
    (a field may be one glob); None: the spec's own. Which losses exist is asked once the
    target is read (``analysis/check.expectations_of``)."""
    if value is None:
        return None
    shape = "{loss: {'none': [globs], 'connected': [globs], 'numeric': [globs]}}"
    if not isinstance(value, Mapping):
        raise refused(who, "expect", f"a mapping {shape}", value)
    for loss, fields in value.items():
        if not isinstance(loss, str):
            raise refused(who, "expect", f"a mapping {shape} whose keys are loss names", loss)
        where = f"expect[{loss!r}]"
        if not isinstance(fields, Mapping):
            raise refused(who, where, "a mapping with 'none', 'connected' and/or 'numeric'",
                          fields)  # fmt: skip
        for field, globs in fields.items():
            if field not in EXPECT_FIELDS:
                raise UsageError(f"{who}: {where} has the unknown field {seen(field)}; it "
                                 "takes 'none', 'connected' and/or 'numeric'")  # fmt: skip
            items = [globs] if isinstance(globs, str) else globs
            if not isinstance(items, (list, tuple)) or not all(isinstance(g, str) for g in items):
                raise refused(who, f"{where}[{field!r}]", "a glob or a list of globs", globs)
    return value


def check_common(who: str, *, device: Any = "auto", max_elements: Any = 1, progress: Any = None,
                 strategy: Any = "default", replicas: Any = None) -> None:  # fmt: skip
    """The arguments every function that runs a target shares."""
    text(who, "device", device, optional=True)
    whole(who, "max_elements", max_elements)
    if progress is not None:
        function(who, "progress", progress)
    one_of(who, "strategy", strategy, STRATEGIES)
    whole(who, "replicas", replicas, optional=True)
