"""Located YAML values: what the loader hands the validator, each with its line and column."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from gradscope._src.results.expect import Pos

#: The scalar values a plain YAML document can hold.
ScalarValue = str | int | float | bool | None


@dataclass(frozen=True)
class YScalar:
    """A string, number, boolean or null, where it was written."""

    value: ScalarValue
    pos: Pos


@dataclass(frozen=True)
class YSeq:
    """A YAML list."""

    items: tuple[YNode, ...]
    pos: Pos


@dataclass(frozen=True)
class YEntry:
    """One ``key: value`` pair of a mapping; the key is always its text."""

    key: str
    key_pos: Pos
    value: YNode


@dataclass(frozen=True)
class YMap:
    """A YAML mapping, in the order written (merge keys already applied)."""

    entries: tuple[YEntry, ...]
    pos: Pos

    def get(self, key: str) -> YEntry | None:
        """The entry for ``key``, or None."""
        for entry in self.entries:
            if entry.key == key:
                return entry
        return None

    def __iter__(self) -> Iterator[YEntry]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)


YNode = YScalar | YSeq | YMap


def plain(node: YNode) -> Any:
    """The plain Python value of a node: dicts, lists and scalars without positions."""
    if isinstance(node, YScalar):
        return node.value
    if isinstance(node, YSeq):
        return [plain(item) for item in node.items]
    return {entry.key: plain(entry.value) for entry in node.entries}


def describe(node: YNode) -> str:
    """A short human description of what was written, for ``saw ...`` in messages."""
    if isinstance(node, YSeq):
        count = len(node.items)
        return "an empty list" if count == 0 else f"a list of {count} item{'s' * (count != 1)}"
    if isinstance(node, YMap):
        return "a mapping" if node.entries else "an empty mapping"
    return describe_value(node.value)


def describe_value(value: Any) -> str:
    """Like :func:`describe`, for a plain value."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        text = repr(value)
        return text if len(text) <= 40 else text[:37] + "..."
    if isinstance(value, str):
        text = value if len(value) <= 40 else value[:37] + "..."
        return repr(text)
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__
