"""Reading a timeline file: its version, structure and types checked in one place.

``gradscope plot`` and ``gradscope check --timeline`` read timelines only through :func:`load`,
so what they draw and gate on is always a timeline this gradscope understands (contract
section 7, with the keys ``record.py`` documents). Anything else, a newer or unknown version, a
missing key or a value of the wrong type, is refused with one line naming the file and the
place (``t.json: steps[3].variables["dense/kernel"].norm: expected a number or null, saw
'big'``). Keys this reader does not know are ignored: new keys may be added.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import Any

from gradscope._src.errors import UsageError
from gradscope._src.results.status import Status
from gradscope._src.timeline.findings import KINDS, Thresholds

#: The timeline versions this reader understands (``record.TIMELINE_VERSION`` writes one).
VERSIONS = (1,)
STATUSES = tuple(s.value for s in Status)
#: The ``thresholds`` keys, each an int (``patience``, ``warmup``) or a float.
THRESHOLDS = {name: type(value) for name, value in Thresholds().to_dict().items()}


class TimelineError(ValueError):
    """A file that is not a timeline this gradscope reads; the message is one line,
    ``FILE: WHERE: what was expected, what was seen``."""


def load(path: str) -> dict[str, Any]:
    """Read and check a timeline JSON file.

    Args:
        path: the timeline file (``gradscope run --timeline``, ``gradscope.keras.Monitor``).

    Returns:
        The timeline as a dictionary, every key this reader uses of the right type.

    Raises:
        OSError: the file cannot be read.
        json.JSONDecodeError: the file is not JSON (its line and column say where).
        TimelineError: it is JSON, but not a timeline of a version this reader knows.
    """
    text = _read(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        raise
    except (RecursionError, ValueError) as exc:  # nested too deeply, a 5,000-digit integer
        raise TimelineError(f"{path}: not a gradscope timeline: {str(exc)[:80]}") from None
    return checked(data, path)


def _read(path: str) -> str:
    """The file's text; only a regular file (a FIFO would block the read forever)."""
    import os
    import stat

    with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise OSError(0, "not a regular file")
        data = handle.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        reason = f"not UTF-8 text ({exc.reason})"
        raise TimelineError(f"{path}: not a gradscope timeline: {reason}") from None


def checked(data: Any, path: str) -> dict[str, Any]:
    """``data`` when it is a timeline this reader knows (see :func:`load`).

    Raises:
        TimelineError: the first thing wrong, with where it is.
    """
    error = _timeline(data)
    if error is not None:
        where, what = error
        raise TimelineError(f"{path}: {where}: {what}" if where else f"{path}: {what}")
    assert isinstance(data, dict)
    return data


#: The first error found: where (``steps[3].norm``, or "" for the whole file) and what.
Error = tuple[str, str] | None
Check = Callable[[Any, str], Error]


def _timeline(data: Any) -> Error:
    if not isinstance(data, dict) or "steps" not in data:
        return "", "not a gradscope timeline (expected an object with `gradscope` and `steps`)"
    known = " or ".join(str(v) for v in VERSIONS)
    version = data.get("gradscope")
    if "gradscope" not in data:
        return "", (
            f"not a gradscope timeline: no `gradscope` version (this gradscope reads version "
            f"{known})"
        )
    if not _integer(version) or version not in VERSIONS:
        return "", (
            f"timeline version {_seen(version)}; this gradscope reads version {known} only "
            "(a newer gradscope wrote it, or it is not a timeline)"
        )
    return (
        _optional(data, "program", _text, "")
        or _optional(data, "tensorflow", _nullable(_text), "")
        or _optional(data, "device", _nullable(_text), "")
        or _optional(data, "every", _count(1), "")
        or _optional(data, "thresholds", _thresholds, "")
        or _optional(data, "allow_none", lambda v, w: _items(v, w, _text), "")
        or _items(data["steps"], "steps", _step)
        or _optional(data, "findings", lambda v, w: _items(v, w, _finding), "")
    )


def _step(record: Any, where: str) -> Error:
    return _object(record, where) or (
        _required(record, "step", _count(0), where)
        or _required(record, "site", _text, where)
        or _optional(record, "loss", _number(), where)
        or _required(record, "variables", _entries(_gradient), where)
        or _optional(record, "losses", _entries(_loss), where)
        or _optional(record, "cosine", lambda v, w: _items(v, w, _cosines), where)
        or _optional(record, "skipped", _flag, where)
    )


def _gradient(value: Any, where: str) -> Error:
    """One variable of one record (or of one loss of a record)."""
    return _object(value, where) or (
        _required(value, "status", _word(STATUSES), where)
        or _required(value, "norm", _number(0.0), where)
        or _optional(value, "weight_norm", _number(0.0), where)
        or _optional(value, "zero_fraction", _number(0.0, 1.0), where)
        or _optional(value, "sparse", _flag, where)
        or _optional(value, "shape", _shape, where)
        or _optional(value, "cause", _text, where)
        or _optional(value, "why", _object, where)
        or _optional(value, "allowed", _flag, where)
        or _optional(value, "cut_points", lambda v, w: _items(v, w, _cut_point), where)
    )


def _loss(value: Any, where: str) -> Error:
    return _object(value, where) or (
        _optional(value, "value", _number(), where)
        or _required(value, "variables", _entries(_gradient), where)
    )


def _cosines(value: Any, where: str) -> Error:
    return _object(value, where) or (
        _required(value, "losses", _two_names, where)
        or _required(value, "variables", _entries(_number(-1.0, 1.0)), where)
    )


def _two_names(value: Any, where: str) -> Error:
    if isinstance(value, list) and len(value) == 2 and all(isinstance(n, str) for n in value):
        return None
    return where, f"expected the names of two losses, saw {_seen(value)}"


def _finding(value: Any, where: str) -> Error:
    return _object(value, where) or (
        _required(value, "kind", _word(KINDS), where)
        or _required(value, "site", _text, where)
        or _required(value, "variable", _text, where)
        or _required(value, "from_step", _count(0), where)
        or _required(value, "message", _text, where)
        or _optional(value, "cut_points", lambda v, w: _items(v, w, _cut_point), where)
    )


def _cut_point(value: Any, where: str) -> Error:
    keys = ("node", "op", "kind", "source")
    return _object(value, where) or next(
        (e for k in keys if (e := _required(value, k, _text, where))), None
    )


def _thresholds(value: Any, where: str) -> Error:
    if not isinstance(value, dict):
        return _object(value, where)
    for name, kind in THRESHOLDS.items():
        check = _count(0) if kind is int else _number(0.0, null=False)
        error = _optional(value, name, check, where)
        if error is not None:
            return error
    try:  # each in its range, as gradscope.Thresholds takes them
        Thresholds(**{k: v for k, v in value.items() if k in THRESHOLDS})
    except UsageError as exc:
        return where, str(exc).removeprefix("gradscope.Thresholds: ")
    return None


# --- the pieces -------------------------------------------------------------------------------


def _required(record: Mapping[str, Any], key: str, check: Check, where: str) -> Error:
    inner = f"{where}.{key}" if where else key
    if key not in record:
        return (where or "", f"`{key}` is missing")
    return check(record[key], inner)


def _optional(record: Mapping[str, Any], key: str, check: Check, where: str) -> Error:
    return _required(record, key, check, where) if key in record else None


def _object(value: Any, where: str) -> Error:
    return None if isinstance(value, dict) else (where, f"expected an object, saw {_seen(value)}")


def _items(value: Any, where: str, check: Check) -> Error:
    if not isinstance(value, list):
        return where, f"expected a list, saw {_seen(value)}"
    return next((e for i, item in enumerate(value) if (e := check(item, f"{where}[{i}]"))), None)


def _entries(check: Check) -> Check:
    """An object whose every value passes ``check`` (named ``where["name"]``)."""

    def entries(value: Any, where: str) -> Error:
        if not isinstance(value, dict):
            return _object(value, where)
        return next(
            (e for k, v in value.items() if (e := check(v, f"{where}[{json.dumps(k)}]"))), None
        )

    return entries


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


#: The largest integer a timeline holds (a step, a shape's dimension): TensorFlow's int64.
#: JSON allows a 400-digit step, which no float (a plot's axis) can hold.
MAX_INTEGER = 2**63 - 1


def _count(low: int) -> Check:
    def count(value: Any, where: str) -> Error:
        if _integer(value) and low <= value <= MAX_INTEGER:
            return None
        return where, f"expected an integer from {low} to 2**63-1, saw {_seen(value)}"

    return count


def _number(low: float | None = None, high: float | None = None, null: bool = True) -> Check:
    """A finite number within ``[low, high]``, or (``null``) null."""
    bounds = (f" from {low:g}" if low is not None else "") + (
        f" to {high:g}" if high is not None else ""
    )
    alternative = " or null" if null else ""

    def number(value: Any, where: str) -> Error:
        if (null and value is None) or (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and math.isfinite(value)
            and (low is None or value >= low)
            and (high is None or value <= high)
        ):
            return None
        return where, f"expected a finite number{bounds}{alternative}, saw {_seen(value)}"

    return number


def _text(value: Any, where: str) -> Error:
    return None if isinstance(value, str) else (where, f"expected a string, saw {_seen(value)}")


def _nullable(check: Check) -> Check:
    return lambda value, where: None if value is None else check(value, where)


def _flag(value: Any, where: str) -> Error:
    ok = isinstance(value, bool)
    return None if ok else (where, f"expected true or false, saw {_seen(value)}")


def _shape(value: Any, where: str) -> Error:
    if isinstance(value, list) and all(_integer(d) and 0 <= d <= MAX_INTEGER for d in value):
        return None
    return where, f"expected a list of integers from 0 to 2**63-1, saw {_seen(value)}"


def _word(words: tuple[str, ...]) -> Check:
    def word(value: Any, where: str) -> Error:
        if isinstance(value, str) and value in words:
            return None
        return where, f"expected one of {', '.join(words)}; saw {_seen(value)}"

    return word


def _seen(value: Any) -> str:
    """A value as an error message shows it: JSON, cut to 40 characters."""
    try:
        text = json.dumps(value, ensure_ascii=True, allow_nan=True)
    except (RecursionError, TypeError, ValueError):
        text = type(value).__name__
    return text if len(text) <= 40 else text[:37] + "..."
