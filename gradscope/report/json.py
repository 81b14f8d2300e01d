"""The JSON report (contract section 5): stable keys, no NaN, ends with a newline."""

from __future__ import annotations

import json
from typing import Any


def dumps(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def render(result: Any, *, color: bool = False, width: int = 120) -> str:
    """Any result object with ``to_dict()`` as JSON."""
    return dumps(result.to_dict())
