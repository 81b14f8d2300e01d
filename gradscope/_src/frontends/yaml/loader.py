"""Read a spec file into located YAML values, safely: no Python objects, bounded aliases."""

from __future__ import annotations

import math
import os
import re
import stat
from pathlib import Path
from typing import Any, cast

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from gradscope._src.errors import SpecError, SpecErrors
from gradscope._src.frontends.yaml.tree import ScalarValue, YEntry, YMap, YNode, YScalar, YSeq
from gradscope._src.location import Location
from gradscope._src.printable import is_printable, printable
from gradscope._src.results.expect import Pos

#: Most values that aliases may expand to; a "billion laughs" document is refused long before.
MAX_ALIAS_NODES = 100_000
#: Most values (scalars and collections, counted by their separators) a spec file may hold:
#: every value costs a few hundred bytes and microseconds while read (4,000,000 small
#: numbers took minutes and 2.4 GB). A 10,000-node spec holds about 70,000.
MAX_VALUES = 300_000
#: Deepest nesting of lists and mappings accepted.
MAX_DEPTH = 100
#: Largest spec file read (bytes): reading YAML takes about 2 s per MiB, and a spec describes a
#: computation, not its data (large values are generated from a shape and an init). A
#: generated 10,000-node spec is about 0.5 MiB.
MAX_BYTES = 8 * 2**20

_Y = "tag:yaml.org,2002:"
_MERGE = _Y + "merge"
_STR = _Y + "str"
_NON_PRINTABLE = re.compile(
    "[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
)
# YAML 1.2 floats: PyYAML's YAML 1.1 resolver reads ``1e-3`` as a string, which surprises users.
_FLOAT_12 = re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)[eE][-+]?[0-9]+$")


class _Loader(yaml.SafeLoader):
    """SafeLoader's scanner and composer, plus YAML 1.2 exponent floats; never constructs."""


_Loader.add_implicit_resolver(_Y + "float", _FLOAT_12, list("-+0123456789."))

# libyaml's parser (when PyYAML was built with it) composes the same nodes, marks included,
# ten times faster: a 10,000-node spec reads in a fraction of a second instead of 2.5 s.
# Errors are re-read with the pure-Python loader, whose messages the tests pin down.
_FastLoader: type[Any] | None = None
if getattr(yaml, "__with_libyaml__", False):

    class _CLoader(yaml.CSafeLoader):
        """libyaml's parser with the same resolvers as ``_Loader``."""

    _CLoader.add_implicit_resolver(_Y + "float", _FLOAT_12, list("-+0123456789."))
    _FastLoader = _CLoader
_CONSTRUCT = SafeConstructor()
_SCALAR_TAGS = {
    _Y + "str": _CONSTRUCT.construct_yaml_str,
    _Y + "int": _CONSTRUCT.construct_yaml_int,
    _Y + "float": _CONSTRUCT.construct_yaml_float,
    _Y + "bool": _CONSTRUCT.construct_yaml_bool,
    _Y + "null": _CONSTRUCT.construct_yaml_null,
    # A plain 2020-01-02 resolves to a timestamp; gradscope has no use for dates: keep the text.
    _Y + "timestamp": _CONSTRUCT.construct_yaml_str,
}


_SURPRISE_TAGS = frozenset({_Y + "bool", _Y + "int", _Y + "float"})
_SURROGATE = re.compile("[\ud800-\udfff]")
_SURPRISING_BOOL = re.compile(r"^(?:y|Y|yes|Yes|YES|n|N|no|No|NO|on|On|ON|off|Off|OFF)$")


def _surprise(node: ScalarNode) -> str | None:
    """A plain scalar YAML 1.1 reads as something its author likely did not mean."""
    if node.style or node.tag not in _SURPRISE_TAGS:
        return None
    text = str(node.value)
    if node.tag == _Y + "bool" and _SURPRISING_BOOL.match(text):
        return (
            f"{text!r} is read as a boolean by YAML 1.1; write true or false, "
            f'or quote it ("{text}") for the word'
        )
    if node.tag in (_Y + "int", _Y + "float") and ":" in text:
        return (
            f"{text!r} is read as a base-60 number by YAML 1.1; quote it, or write the "
            "number it stands for"
        )
    if node.tag == _Y + "int" and re.match(r"^[-+]?0[0-7_]+$", text):
        return f"{text!r} is read as an octal number by YAML 1.1; write it without the leading 0"
    return None


class _Fatal(Exception):
    """Stops reading at the first problem that makes the rest meaningless."""

    def __init__(self, error: SpecError) -> None:
        super().__init__(str(error))
        self.error = error


def load_yaml(path: str) -> YNode:
    """Read and compose one YAML file into located values.

    Args:
        path: the spec file, as given by the user (used verbatim in messages).

    Returns:
        The document's root value with every position kept.

    Raises:
        SpecErrors: the file cannot be read, is not YAML, or uses unsafe or unbounded
            features (Python tags, duplicate keys, alias bombs, ...).
    """
    try:
        text = _read_text(path)
        root = _compose(path, text)
        converter = _Converter(path)
        result = converter.convert(root, depth=0, aliased=False)
    except _Fatal as fatal:
        raise SpecErrors([fatal.error]) from None
    if converter.errors:
        raise SpecErrors(converter.errors)
    return result


def _fatal(path: str, pos: Pos, message: str) -> _Fatal:
    return _Fatal(SpecError(Location(path, pos.line, pos.column), "", message))


#: First bytes of files that are binary whatever else they hold (zip, HDF5, gzip, ELF, PNG).
_BINARY_MAGIC = (b"PK\x03\x04", b"\x89HDF\r\n\x1a\n", b"\x1f\x8b", b"\x7fELF", b"\x89PNG")


def _binary(data: bytes) -> bool:
    """A zip, HDF5, gzip, ELF or PNG file, or one whose first line is not text (a NUL byte,
    bytes that are not UTF-8); a text file with a stray byte further on is YAML with an
    error at that byte's line."""
    if data.startswith(_BINARY_MAGIC):
        return True
    first = data[:512].split(b"\n", 1)[0]
    try:
        first.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return exc.start < len(first) - 3  # not a character cut off at the 512th byte
    return b"\x00" in first


def _read_text(path: str) -> str:
    start = Pos(1, 1)
    unread = Pos(0, 0)  # a file that cannot be read has no line 1: `x.yaml: no such file`
    if not is_printable(path):  # the path is shown in every report: a newline forges lines
        message = "the file name has control characters; rename the file"
        raise _fatal(printable(path), start, message)
    file = Path(path)
    try:
        if file.is_dir():
            raise _fatal(path, unread, "is a directory, expected a YAML spec file")
        # O_NONBLOCK: opening a FIFO to read would otherwise wait for a writer forever.
        with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as stream:
            if not stat.S_ISREG(os.fstat(stream.fileno()).st_mode):
                raise _fatal(path, unread, "not a regular file, expected a YAML spec file")
            data = stream.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise _fatal(path, unread, "no such file") from None
    except PermissionError:
        raise _fatal(path, unread, "permission denied") from None
    except OSError as exc:
        raise _fatal(path, unread, f"cannot read the file: {exc.strerror or exc}") from None
    if _binary(data):  # never parsed as YAML: a model file, an archive, an executable
        raise _fatal(
            path,
            start,
            "a binary file, not a YAML spec (a saved Keras model is "
            "a .keras or .h5 file; inspect, check, diff and graph load it)",
        )
    if len(data) > MAX_BYTES:
        message = (
            f"the file is larger than {MAX_BYTES // 2**20} MiB; "
            "give large values as a shape and an init instead of writing them out"
        )
        raise _fatal(path, start, message)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        pos = _pos_in(data[: exc.start].decode("utf-8", "replace"), len(data[: exc.start]))
        byte = data[exc.start]
        raise _fatal(path, pos, f"not UTF-8 text (binary data?): byte 0x{byte:02x}") from None
    bad = _NON_PRINTABLE.search(text)
    if bad is not None:
        code = ord(bad.group())
        message = f"not a text file (binary data?): control character U+{code:04X}"
        raise _fatal(path, _pos_in(text, bad.start()), message)
    if not text.strip():
        raise _fatal(path, start, "the file is empty, expected a mapping with 'gradscope: 1'")
    _check_nesting(path, text)
    separators = sum(text.count(c) for c in ",\n:")
    if separators > MAX_VALUES:  # each value needs a separator: an upper bound, before parsing
        message = (
            f"the file holds more than {MAX_VALUES} values; give large values as a shape "
            "and an init instead of writing them out"
        )
        raise _fatal(path, start, message)
    return text


#: Deepest nesting the scan before parsing lets through (a loose bound: the converter holds
#: the document to MAX_DEPTH exactly; this one only keeps the C parser off deep recursion).
_SCAN_DEPTH = 4 * MAX_DEPTH


def _check_nesting(path: str, text: str) -> None:
    """Refuse deep nesting before any parser sees the text.

    libyaml composes nested collections recursively in C: a document nested ~30,000 deep
    (``[[[[...]]]]``) overflows its stack and kills the process with SIGSEGV, which no
    Python code can catch. This scan bounds the depth from above: the brackets open outside
    quotes and comments, plus the block levels (indentation steps and ``- `` items on a line).
    """
    flow, indents = 0, [-1]
    for number, line in enumerate(text.split("\n"), 1):
        stripped = line.lstrip(" ")
        indent = len(line) - len(stripped)
        if flow == 0 and stripped and not stripped.startswith("#"):
            while indents[-1] >= indent:
                indents.pop()
            indents.append(indent)
        items = 0
        while re.match(r"[-?](?:\s+|$)", stripped[items * 2 :] or "x"):
            items += 1
        column = _deepest_flow(stripped, flow)
        flow = column[0]
        if column[1] + len(indents) + items > _SCAN_DEPTH:
            pos = Pos(number, indent + 1)
            raise _fatal(path, pos, f"nested deeper than {MAX_DEPTH} levels")


_FLOW_CHARS = re.compile(r"[\[\]{}'\"#]")


def _deepest_flow(line: str, depth: int) -> tuple[int, int]:
    """The bracket depth after ``line`` and the deepest it reached, quotes and comments skipped."""
    deepest, quote = depth, ""
    for match in _FLOW_CHARS.finditer(line):  # only the characters that matter: fast on long lines
        char, index = match.group(), match.start()
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1] in " \t"):
            break
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth = max(depth - 1, 0)
    return depth, deepest


def _pos_in(text: str, index: int) -> Pos:
    before = text[:index]
    line = before.count("\n") + 1
    return Pos(line, index - (before.rfind("\n") + 1) + 1)


def _compose(path: str, text: str) -> Node:
    if _FastLoader is not None:
        fast = _FastLoader(text)
        try:
            node = fast.get_single_node()
        except (yaml.YAMLError, RecursionError):
            node = None  # read again below, for the well-worded error
        else:
            if node is not None:
                return node  # type: ignore[no-any-return]
        finally:
            fast.dispose()
    loader = _Loader(text)
    try:
        root = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        raise _fatal(path, *_yaml_problem(exc)) from None
    except yaml.YAMLError as exc:
        raise _fatal(path, Pos(1, 1), f"YAML syntax error: {exc}") from None
    except RecursionError:
        raise _fatal(path, Pos(1, 1), f"nested deeper than {MAX_DEPTH} levels") from None
    finally:
        loader.dispose()
    if root is None:
        raise _fatal(path, Pos(1, 1), "the file has no YAML document, expected a mapping")
    return root


def _yaml_problem(exc: yaml.MarkedYAMLError) -> tuple[Pos, str]:
    mark = exc.problem_mark or exc.context_mark
    pos = Pos(mark.line + 1, mark.column + 1) if mark is not None else Pos(1, 1)
    problem = exc.problem or exc.context or "not valid YAML"
    if "'\\t'" in problem:
        return pos, "YAML syntax error: a tab character; indent YAML with spaces only"
    context = f" ({exc.context})" if exc.context and exc.problem else ""
    return pos, f"YAML syntax error: {problem}{context}"


def _show_tag(tag: str) -> str:
    return "!!" + tag[len(_Y) :] if tag.startswith(_Y) else tag


class _Converter:
    """Turns composed YAML nodes into located values, checking tags and duplicate keys."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.errors: list[SpecError] = []
        self.seen: set[int] = set()
        self.expanded = 0

    def error(self, pos: Pos, message: str) -> None:
        self.errors.append(SpecError(Location(self.path, pos.line, pos.column), "", message))

    def convert(self, node: Node, *, depth: int, aliased: bool) -> YNode:
        pos = Pos(node.start_mark.line + 1, node.start_mark.column + 1)
        # The composer shares one node object between an anchor and its aliases: seeing a
        # node twice means an alias is being expanded, which is what a bomb multiplies.
        aliased = aliased or id(node) in self.seen
        self.seen.add(id(node))
        if aliased:
            self.expanded += 1
            if self.expanded > MAX_ALIAS_NODES:
                message = f"aliases expand to more than {MAX_ALIAS_NODES} values; refused"
                raise _fatal(self.path, pos, message)
        if depth > MAX_DEPTH:
            raise _fatal(self.path, pos, f"nested deeper than {MAX_DEPTH} levels")
        if isinstance(node, SequenceNode):
            self._check_tag(node, _Y + "seq", pos)
            items = [self.convert(item, depth=depth + 1, aliased=aliased) for item in node.value]
            return YSeq(tuple(items), pos)
        if isinstance(node, MappingNode):
            self._check_tag(node, _Y + "map", pos)
            return self._mapping(node, pos, depth=depth, aliased=aliased)
        return YScalar(self._scalar(node, pos), pos)

    def _check_tag(self, node: Node, expected: str, pos: Pos) -> None:
        if node.tag != expected:
            self.error(pos, f"the tag {_show_tag(node.tag)} is not allowed; write plain YAML")

    def _scalar(self, node: Node, pos: Pos) -> ScalarValue:
        if node.tag == _STR and isinstance(node, ScalarNode):
            text = str(node.value)  # most scalars are names; the constructor adds nothing
            if not is_printable(text) or _SURROGATE.search(text):
                bad = next(c for c in text if not is_printable(c) or _SURROGATE.match(c))
                shown = bad.encode("unicode_escape", "backslashreplace").decode("ascii")
                self.error(pos, f"a string with the control character {shown}; write plain text")
                return None
            return text
        construct = _SCALAR_TAGS.get(node.tag)
        if construct is None or not isinstance(node, ScalarNode):
            self.error(pos, f"the tag {_show_tag(node.tag)} is not allowed; write plain YAML")
            return None
        surprise = _surprise(node)
        if surprise is not None:
            self.error(pos, surprise)
            return None
        try:
            value = cast(ScalarValue, construct(node))
        except (ValueError, KeyError):
            shown = node.value if len(node.value) <= 40 else node.value[:40] + "..."
            self.error(pos, f"{shown!r} is not a valid {_show_tag(node.tag)}")
            return None
        if isinstance(value, float) and math.isinf(value) and "inf" not in node.value.lower():
            self.error(pos, f"{node.value!r} is too large for a number (it would become inf)")
            return None
        return value

    def _mapping(self, node: MappingNode, pos: Pos, *, depth: int, aliased: bool) -> YMap:
        explicit: dict[str, YEntry] = {}
        merged: dict[str, YEntry] = {}
        for key_node, value_node in node.value:
            value = self.convert(value_node, depth=depth + 1, aliased=aliased)
            if key_node.tag == _MERGE:
                self._merge(value, merged)
                continue
            key_pos = Pos(key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            if not isinstance(key_node, ScalarNode):
                self.error(key_pos, "a key must be a plain name, saw a list or mapping")
                continue
            if key_node.tag not in _SCALAR_TAGS:
                self.error(key_pos, f"the tag {_show_tag(key_node.tag)} is not allowed")
            key = str(key_node.value)
            if not is_printable(key) or _SURROGATE.search(key):
                message = f"the key '{printable(key)}' has a control character; write plain text"
                self.error(key_pos, message)
                continue
            if key in explicit:
                first = explicit[key].key_pos
                self.error(key_pos, f"duplicate key {key!r}, first written at line {first.line}")
                continue
            explicit[key] = YEntry(key, key_pos, value)
        entries = list(explicit.values())
        entries += [entry for key, entry in merged.items() if key not in explicit]
        return YMap(tuple(entries), pos)

    def _merge(self, value: YNode, merged: dict[str, YEntry]) -> None:
        sources = value.items if isinstance(value, YSeq) else (value,)
        for source in sources:
            if not isinstance(source, YMap):
                self.error(source.pos, "a merge key '<<' takes a mapping or a list of mappings")
                continue
            for entry in source.entries:
                merged.setdefault(entry.key, entry)
