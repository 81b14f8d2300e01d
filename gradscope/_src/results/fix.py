"""A fix: what to change at the user's own line so the gradient flows; plain data.

A cause of the registry (``results/causes.py``) builds it from its facts; ``analysis/fixes``
decides which cause a pair's fix comes from; reports only print it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Edit:
    """A fix as a text edit an agent (or ``gradscope fix``) can apply: replace lines
    ``start_line`` to ``end_line`` (from 1, inclusive) of ``file``, whose text is ``old``, by
    ``new``. ``old`` and ``new`` hold whole lines joined by newlines, without the last line's
    newline (as a SARIF ``deletedRegion`` of whole lines and its ``insertedContent``)."""

    file: str
    start_line: int
    end_line: int
    old: str
    new: str

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "start_line": self.start_line, "end_line": self.end_line,
                "old": self.old, "new": self.new}  # fmt: skip

    @staticmethod
    def from_dict(data: Any) -> Edit | None:
        """An edit as ``to_dict`` wrote it, or None for anything else."""
        keys = ("file", "start_line", "end_line", "old", "new")
        if not isinstance(data, dict) or not all(k in data for k in keys):
            return None
        return Edit(str(data["file"]), int(data["start_line"]), int(data["end_line"]),
                    str(data["old"]), str(data["new"]))  # fmt: skip


@dataclass(frozen=True)
class Fix:
    """What to change, and where.

    Attributes:
        kind: which fix (``soft-argmax``, ``move-into-tape``, ...: ``causes.fix_kinds()``).
        where: the ``FILE:LINE`` the change goes at ("" when the evidence names no line).
        text: one or two sentences naming the line and the change, with code where short.
        candidates: when the evidence does not single out one fix, the ones it allows
            (``text`` then says so); empty when ``text`` is the fix.
        later: further places on the same path that also lose the gradient (a later
            ``tf.cast(..., tf.int32)`` after the ``argmax`` that ``where`` names): fixing
            ``where`` alone leaves them.
        edit: the fix as a text edit, when it is one (``analysis/fixes/edit.py`` lists the
            kinds): removing a ``stop_gradient``, a straight-through rounding, ...
    """

    kind: str
    where: str
    text: str
    candidates: tuple[str, ...] = ()
    later: tuple[str, ...] = ()
    edit: Edit | None = None

    @property
    def intended(self) -> bool:
        """Whether the cut looks deliberate (a straight-through estimator, a target
        network): the fix is then to say so, not to change the code."""
        return self.kind == INTENDED

    def to_dict(self) -> dict[str, Any]:
        """The fix as the JSON reports hold it (the ``fix`` field of pairs, sources,
        problems and findings)."""
        out: dict[str, Any] = {"kind": self.kind, "where": self.where, "text": self.text,
                               "candidates": list(self.candidates),
                               "later": list(self.later)}  # fmt: skip
        if self.edit is not None:
            out["edit"] = self.edit.to_dict()
        return out

    @staticmethod
    def from_dict(data: Any) -> Fix | None:
        """A fix as ``to_dict`` wrote it (a timeline's finding), or None for anything else."""
        if not isinstance(data, dict) or not {"kind", "where", "text"} <= data.keys():
            return None
        return Fix(str(data["kind"]), str(data["where"]), str(data["text"]),
                   _strings(data.get("candidates")), _strings(data.get("later")),
                   Edit.from_dict(data.get("edit")))  # fmt: skip

    def sentence(self) -> str:
        """The fix as one line: ``fix: <text>`` plus the candidates, for messages."""
        text = self.text
        if self.candidates:
            text += " Candidates: " + "; ".join(self.candidates) + "."
        return text


def _strings(value: Any) -> tuple[str, ...]:
    """A list of strings as a file holds it; anything else (a number, a mapping) is none."""
    return tuple(map(str, value)) if isinstance(value, list) else ()


#: The kind of a fix that says the cut is deliberate.
INTENDED = "intended"
