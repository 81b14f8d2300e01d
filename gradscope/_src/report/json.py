"""The JSON format (contract sections 5 and 6): any result as its JSON report, stable keys,
no NaN.

Each result owns its JSON shape (``to_dict``, next to the data in ``gradscope/_src/results`` and
``gradscope/_src/analysis``); this module only writes it out. ``schema/`` holds the JSON Schemas.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gradscope._src.report.formats import Result


def dumps(data: Any) -> str:
    """``data`` as indented JSON ending with a newline; NaN is refused (it is not JSON).

    Names are written as they are: a newline in a variable's name is the JSON escape ``\n``
    inside its key, which reads back as the name (``printable.py``). A lone surrogate (an
    undecodable byte in a file name) is written as its ``\ud800`` escape, the one way JSON
    text in UTF-8 can hold it."""
    text = json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


_SURROGATE = re.compile("[\ud800-\udfff]")


def render(result: Result, *, color: bool = False, width: int = 120) -> str:
    """Any result object as its JSON report."""
    return dumps(result.to_dict())
