"""A place in the user's files: a call site, a cut point's line, a spec line (file, line,
column), with the one parser and formatter of ``FILE:LINE[:COLUMN]``.

One type for every place: results' findings and the errors a spec raises (``SpecError``) both
carry it, so it sits below both layers and imports nothing of gradscope.

Reports keep places as the contract's strings (``"source": "train.py:57"``); code that needs
the file or the line reads them here, never by splitting on ``:`` itself (a Windows path has
a colon of its own; a site may carry a column).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Location:
    """A file and, when known, a line and a column (counted from 1; 0 when unknown)."""

    file: str
    line: int = 0
    column: int = 0

    def __str__(self) -> str:
        """``FILE:LINE:COLUMN``, ``FILE:LINE`` or ``FILE``, as much as is known.

        Example:
            >>> str(Location("train.py", 57))
            'train.py:57'
        """
        if not self.line:
            return self.file
        return f"{self.file}:{self.line}" + (f":{self.column}" if self.column else "")

    @classmethod
    def parse(cls, text: str, *, column: bool = False) -> Location | None:
        """``FILE:LINE`` (and, with ``column``, ``FILE:LINE:COLUMN``) as a location; None when
        ``text`` names no file and line (``""``, ``train.py``, ``mod:function``).

        Example:
            >>> Location.parse("C:\\\\work\\\\train.py:57")
            Location(file='C:\\\\work\\\\train.py', line=57, column=0)
            >>> Location.parse("spec.yaml:3:7", column=True)
            Location(file='spec.yaml', line=3, column=7)
        """
        head, _, tail = text.rpartition(":")
        if not head or not tail.isdigit():
            return None
        if column:
            file, _, line = head.rpartition(":")
            if file and line.isdigit():
                return cls(file, int(line), int(tail))
        return cls(head, int(tail))

    @classmethod
    def at(cls, text: str, default: str, line: int = 1) -> Location:
        """``text`` parsed, else ``default`` (a spec's or timeline's path) at ``line``: where a
        problem points when its own place is unknown."""
        return cls.parse(text) or cls(default, line)


def line_of(text: str, default: int = 1) -> int:
    """The line of a ``FILE:LINE`` (``default`` when it names none)."""
    found = Location.parse(text)
    return found.line if found is not None else default
