"""The JSON format (contract sections 5 and 6): any result as its JSON report, stable keys,
no NaN.

Each result owns its JSON shape (``to_dict``, next to the data in ``gradscope/_src/results`` and
``gradscope/_src/analysis``); this module only writes it out. ``schema/`` holds the JSON Schemas.
"""

from __future__ import annotations

import json
import math
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gradscope._src.report.formats import Result


def dumps(data: Any) -> str:
    """``data`` as indented JSON ending with a newline. NaN and infinities are not JSON: each
    result writes them as null (``facts.json_number``), and one a result missed is written as
    null too, never as ``NaN`` (which JSON readers refuse) nor as a crash of the report.

    Names are written as they are: a newline in a variable's name is the JSON escape ``\n``
    inside its key, which reads back as the name (``printable.py``). A lone surrogate (an
    undecodable byte in a file name) is written as its ``\ud800`` escape, the one way JSON
    text in UTF-8 can hold it."""
    try:
        text = json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    except ValueError:  # a non-finite number: null, as the contract writes them
        text = json.dumps(_finite(data), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _finite(data: Any) -> Any:
    """``data`` with every NaN or infinite float replaced by None."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {k: _finite(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [_finite(v) for v in data]
    return data


_SURROGATE = re.compile("[\ud800-\udfff]")


def render(result: Result, *, color: bool = False, width: int = 120) -> str:
    """Any result object as its JSON report."""
    return dumps(result.to_dict())
