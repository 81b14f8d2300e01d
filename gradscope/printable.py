"""Names as every output format can show them: control characters written as escapes."""

from __future__ import annotations

import re
import unicodedata

# Control and format characters, and line or paragraph separators: any of them inside a name
# could start a new line in a table (a GitHub workflow command such as ``::error``), move the
# cursor on a terminal, or make XML not well-formed (a form feed).
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` with every control character written as a Python-style escape (``\\n``)."""
    if not _UNSAFE.search(text) and all(unicodedata.category(c) != "Cc" for c in text):
        return text
    return _UNSAFE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def is_printable(text: str) -> bool:
    """Whether ``text`` holds no character ``printable`` would escape."""
    return printable(text) == text
