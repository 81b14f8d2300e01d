"""What every validation step shares: the error list, field checks and the name table."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from gradscope._src.errors import SpecError
from gradscope._src.frontends.yaml.tree import YEntry, YMap, YNode, YScalar, YSeq, describe
from gradscope._src.location import Location
from gradscope._src.results.expect import Pos


def suggest(word: str, options: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` when ``word`` is close to one of ``options``, else ``""``."""
    close = difflib.get_close_matches(word, list(options), n=2, cutoff=0.6)
    if not close:
        return ""
    return " (did you mean " + " or ".join(repr(c) for c in close) + "?)"


def is_number(node: YNode) -> bool:
    """Whether a node is an integer or a float (booleans are not numbers here)."""
    return (
        isinstance(node, YScalar)
        and isinstance(node.value, (int, float))
        and not isinstance(node.value, bool)
    )


@dataclass(frozen=True)
class Defined:
    """A name in the spec's one namespace: an input, a variable or a node."""

    name: str
    kind: str
    pos: Pos
    order: int
    """-1 for inputs and variables, the node's index for nodes."""


@dataclass
class Context:
    """The state of validating one spec file: where it is and every problem found so far."""

    path: str
    max_elements: int
    errors: list[SpecError] = field(default_factory=list)
    names: dict[str, Defined] = field(default_factory=dict)

    def error(self, pos: Pos, where: str, message: str) -> None:
        """Record one problem at ``pos`` for the field ``where``."""
        self.errors.append(SpecError(Location(self.path, pos.line, pos.column), where, message))

    def expected(self, node: YNode, where: str, what: str, hint: str = "") -> None:
        """Record ``expected <what>, saw <node>`` at the node."""
        self.error(node.pos, where, f"expected {what}, saw {describe(node)}{hint}")

    def mapping(self, node: YNode, where: str, what: str = "a mapping") -> YMap | None:
        """The node as a mapping, or None after recording an error."""
        if isinstance(node, YMap):
            return node
        self.expected(node, where, what)
        return None

    def sequence(self, node: YNode, where: str, what: str) -> YSeq | None:
        """The node as a list, or None after recording an error."""
        if isinstance(node, YSeq):
            return node
        self.expected(node, where, what)
        return None

    def string(self, node: YNode, where: str, what: str) -> str | None:
        """The node's non-empty string value, or None after recording an error."""
        if isinstance(node, YScalar) and isinstance(node.value, str) and node.value.strip():
            return node.value
        self.expected(node, where, what)
        return None

    def fields(
        self, mapping: YMap, where: str, allowed: Sequence[str], required: Sequence[str] = ()
    ) -> dict[str, YEntry]:
        """The mapping's entries by key, after reporting unknown and missing fields."""
        found: dict[str, YEntry] = {}
        for entry in mapping:
            if entry.key in allowed:
                found[entry.key] = entry
                continue
            choices = ", ".join(allowed)
            self.error(
                entry.key_pos,
                where,
                f"expected a field out of {choices}, saw {entry.key!r}"
                + suggest(entry.key, allowed),
            )
        for key in required:
            if key not in found:
                given = ", ".join(repr(e.key) for e in mapping) or "no fields"
                self.error(mapping.pos, where, f"expected a field {key!r}, saw {given}")
        return found

    def define(self, name: str, kind: str, pos: Pos, where: str, order: int) -> None:
        """Add a name to the namespace, reporting a clash with an earlier definition."""
        first = self.names.get(name)
        if first is not None:
            message = (
                f"expected a name not used before, saw {name!r}, "
                f"already the {first.kind} at line {first.pos.line}"
            )
            self.error(pos, where, message)
            return
        self.names[name] = Defined(name, kind, pos, order)

    def kind_of(self, name: str) -> str | None:
        """``input``, ``variable`` or ``node`` for a defined name, else None."""
        defined = self.names.get(name)
        return defined.kind if defined else None

    def node_names(self) -> list[str]:
        """Every node name, in order."""
        return [d.name for d in self.names.values() if d.kind == "node"]


def a(kind: str) -> str:
    """``kind`` with its indefinite article: ``an input``, ``a variable``."""
    return ("an " if kind[:1] in "aeiou" else "a ") + kind


def join(base: str, key: str | int) -> str:
    """A readable field path: ``join("nodes", 3)`` is ``nodes[3]``, then ``nodes[3].op``."""
    if isinstance(key, int):
        return f"{base}[{key}]"
    return f"{base}.{key}" if base else key
