"""An ``expect`` pattern that names no variable: a typo that would turn the gate off.

``expect.loss_1.connected: ["tsk1/*"]`` holds nothing, so ``check`` would pass whatever
happens to ``task1``. A spec's variables are known before TensorFlow runs (those it declares;
a Keras ``layer`` node's weights are ``<node>/<weight>``), so ``validate`` refuses such a
pattern at its line. A Python target's variables are known only after it ran: ``check`` then
fails on the same error (``unmatched_errors``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from gradscope._src.errors import SpecError
from gradscope._src.frontends.yaml.context import Context, suggest
from gradscope._src.location import Location
from gradscope._src.results.expect import Expectation, Pattern, glob_matches

_WILDCARD = re.compile(r"[*?\[]")


def fields(expect: Sequence[Expectation]) -> list[tuple[str, Pattern]]:
    """``(field, pattern)`` for every pattern of every loss, in order."""
    out: list[tuple[str, Pattern]] = []
    for e in expect:
        for name, patterns in (("none", e.none), ("connected", e.connected),
                               ("numeric", e.numeric)):  # fmt: skip
            out += [(f"expect.{e.loss}.{name}", p) for p in patterns]
    return out


def may_match(glob: str, names: Iterable[str], scopes: Iterable[str] = ()) -> bool:
    """Whether ``glob`` matches one of ``names``, or may match a weight ``<scope>/...`` of a
    layer whose weights are not known yet (its text before the first wildcard agrees)."""
    if any(glob_matches(name, glob) for name in names):
        return True
    head = _WILDCARD.split(glob, maxsplit=1)[0]
    return any(head.startswith(f"{s}/") or f"{s}/".startswith(head) for s in scopes)


def message(glob: str, names: Sequence[str]) -> str:
    """``'tsk1/*' matches no variable (did you mean 'task1/*'?); ...``."""
    hint = suggest(glob, list(dict.fromkeys([*_globbed(glob, names), *names])))
    brackets = (
        " in a glob, [ ] enclose a set of characters ([[] is a literal [)," if "[" in glob else ""
    )
    return f"'{glob}' matches no variable{hint}:{brackets} the check would hold nothing"


def _globbed(glob: str, names: Sequence[str]) -> list[str]:
    """Candidate corrections in the glob's own form: ``task1/*`` for ``tsk1/*``."""
    if not glob.endswith("/*"):
        return []
    return [f"{name.rsplit('/', 1)[0]}/*" for name in names if "/" in name]


def refuse_unmatched(
    ctx: Context, expect: Sequence[Expectation], variables: Sequence[str], layers: Sequence[str]
) -> None:
    """``validate``: an error at each pattern that matches no declared variable and no weight
    of a ``layer`` node."""
    for field, p in fields(expect):
        if not may_match(p.glob, variables, layers):
            ctx.error(p.pos, field, message(p.glob, variables))


def unmatched_errors(
    path: str, expect: Sequence[Expectation], names: Sequence[str]
) -> list[SpecError]:
    """A ``SpecError`` at each pattern of ``expect`` that matches none of ``names``."""
    return [
        SpecError(Location(path, p.pos.line, p.pos.column), field, message(p.glob, names))
        for field, p in fields(expect)
        if not may_match(p.glob, names)
    ]


def unknown_losses(unknown: Sequence[str], known: Sequence[str]) -> str:
    """``'los_2' (did you mean 'loss_2'?)``, for each unknown loss name, comma-separated."""
    return ", ".join(f"{name!r}{suggest(name, known)}" for name in unknown)
