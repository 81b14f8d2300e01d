"""Names as every output format can show them: control characters written as escapes.

The one escaping of names: every name a result holds (a spec or program path, a site, a loss,
a variable, a cut point) passes through :func:`printable` when the result is made
(``gradscope._src.results``), and names read from files (timelines, baselines) when they are read,
so every format (table, JSON, Markdown, GitHub, JUnit, SARIF, HTML, pictures) shows the same
text. Lone surrogates (``"\ud800"`` in JSON, undecodable bytes in a file name) are escaped the
same way: they cannot be written as UTF-8 at all.
"""

from __future__ import annotations

import re
import unicodedata

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
