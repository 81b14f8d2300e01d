"""What an author expects of a model: glob patterns over variable names, located where written.

Specs write them in ``expect`` and loss ``vars``; Python targets and ``check(expect=...)``
give them in code. Both front-ends hand the same types to the analysis.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass


@dataclass(frozen=True)
class Pos:
    """A 1-based line and column in the spec file."""

    line: int
    column: int


@dataclass(frozen=True)
class Pattern:
    """A glob over variable names, with where it was written."""

    glob: str
    pos: Pos

    def matches(self, name: str) -> bool:
        return glob_matches(name, self.glob)


@dataclass(frozen=True)
class Expectation:
    """What the author expects of one loss: variables with no gradient, connected ones, and
    (``numeric``) ones whose gradient must agree with finite differences under ``--numeric``,
    even where a straight-through estimator or a custom gradient makes it differ on purpose."""

    loss: str
    none: tuple[Pattern, ...]
    connected: tuple[Pattern, ...]
    pos: Pos
    numeric: tuple[Pattern, ...] = ()


def glob_matches(name: str, glob: str) -> bool:
    """Whether ``name`` matches ``glob`` (``*`` also matches ``/``), or is the glob's exact
    text: a variable named ``w[0]`` is matched by ``w[0]``, where the glob alone would not."""
    return name == glob or fnmatch.fnmatchcase(name, glob)


def matches_any(name: str, globs: tuple[str, ...]) -> bool:
    """Whether ``name`` matches any of the glob patterns (see :func:`glob_matches`)."""
    return any(glob_matches(name, g) for g in globs)


@dataclass(frozen=True)
class PatternUse:
    """A glob written in a front-end's own fields (a spec loss's ``vars``), for the note
    that names a pattern matching no variable."""

    field: str
    glob: str
    where: str
