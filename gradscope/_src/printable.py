r"""Names as every output format can show them: control characters written as escapes.

Results hold names as they are (a variable named ``"a\nb"`` holds the newline), so the JSON
formats (``json``, ``sarif``, the timeline, the baseline) are faithful: a JSON key holding the
real newline, escaped by the JSON encoder, which reads back as the name. Every format that is
read as lines or markup (the table, Markdown, GitHub annotations, JUnit XML, HTML, pictures,
the notebook) draws :func:`shown` of the result instead: every string with each control
character written as an escape (``\n``), so no name can start a line of its own (forge a
GitHub annotation, break a table), move a terminal's cursor, or make XML not well-formed.
Lone surrogates (``"\ud800"`` in JSON, undecodable bytes in a file name) are escaped the same
way: they cannot be written as UTF-8 at all (the JSON writer writes them as ``\ud800``).
``report/__init__.py`` decides which format draws which.
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata
from typing import Any

# Control and format characters, and line or paragraph separators: any of them inside a name
# could start a new line in a table (a GitHub workflow command such as ``::error``), move the
# cursor on a terminal, or make XML not well-formed (a form feed). A lone surrogate cannot be
# encoded as UTF-8: printing or writing it raises UnicodeEncodeError.
_UNSAFE = re.compile(
    r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)


def printable(text: str) -> str:
    """``text`` with every control character written as a Python-style escape (``\\n``)."""
    if not _UNSAFE.search(text) and all(unicodedata.category(c) != "Cc" for c in text):
        return text
    return _UNSAFE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def is_printable(text: str) -> bool:
    """Whether ``text`` holds no character ``printable`` would escape."""
    return printable(text) == text


def printable_or_none(text: str | None) -> str | None:
    """:func:`printable`, passing None through (a problem with no loss)."""
    return None if text is None else printable(text)


def shown(value: Any) -> Any:
    r"""``value`` as the line-based formats show it: a copy in which every string (a result's
    names, messages, notes and fixes, a timeline's keys and values) is :func:`printable`;
    ``value`` itself when nothing needs escaping. Frozen dataclasses are copied field by field
    (what they cached from their fields is dropped, to be made again from the copy);
    tuples, lists and dicts element by element; anything else is kept.

    Example:
        >>> shown({"a\nb": ["ok", "x\ty"]})
        {'a\\nb': ['ok', 'x\\ty']}
    """
    if isinstance(value, str):
        return printable(value) if not is_printable(value) else value
    if isinstance(value, (tuple, list)):
        items = [shown(v) for v in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return type(value)(items) if type(value) in (tuple, list) else _rebuilt(value, items)
    if isinstance(value, dict):
        pairs = [(shown(k), shown(v)) for k, v in value.items()]
        if all(a is k and b is v for (a, b), (k, v) in zip(pairs, value.items(), strict=True)):
            return value
        return dict(pairs)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _shown_dataclass(value)
    return value


def _rebuilt(value: Any, items: list[Any]) -> Any:
    """A named tuple (or another tuple or list subclass) made again with ``items``."""
    make = getattr(type(value), "_make", None)
    return make(items) if make is not None else type(value)(items)


def _shown_dataclass(value: Any) -> Any:
    changed = {}
    for field in dataclasses.fields(value):
        inner = getattr(value, field.name)
        escaped = shown(inner)
        if escaped is not inner:
            changed[field.name] = escaped
    if not changed:
        return value
    copy = object.__new__(type(value))
    names = {f.name for f in dataclasses.fields(value)}
    state = getattr(value, "__dict__", None)
    if state is not None:  # cached properties are made again from the escaped fields
        copy.__dict__.update({k: v for k, v in state.items() if k in names})
    else:
        for name in names:
            object.__setattr__(copy, name, getattr(value, name))
    for name, escaped in changed.items():
        object.__setattr__(copy, name, escaped)
    return copy


def escape_fields(record: object, *names: str) -> None:
    """In a frozen dataclass's ``__post_init__``: each named ``str`` field (or tuple of them)
    made :func:`printable` in place."""
    for name in names:
        value = getattr(record, name)
        if isinstance(value, str):
            fixed: object = printable(value)
        elif isinstance(value, tuple) and all(isinstance(v, str) for v in value):
            fixed = tuple(printable(v) for v in value)
        else:
            continue
        if fixed != value:
            object.__setattr__(record, name, fixed)
