"""The programs of the gradflow benchmark and the labels in their headers.

Every buggy program opens with a block of ``# key: value`` comment lines (README.md, "Adding a
program"); its fixed twin opens with a shorter one. This module reads them, checks them and
pairs each program with its twin; it imports no TensorFlow.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROGRAMS = HERE / "programs"

KINDS = ("tf1", "tape", "function", "fit", "train_step", "distribute")
BACKENDS = ("tensorflow", "jax")
# What bare TensorFlow shows at the program's own gradient calls (the truth must agree).
EFFECTS = ("none", "nan", "zero", "untrained")
# Root causes, labelled by hand (README.md lists what each means).
CAUSES = (
    "outside-tape",
    "numpy",
    "unwatched",
    "stop-gradient",
    "assign",
    "nondifferentiable",
    "integer",
    "unused",
    "var-list",
    "non-trainable",
    "untracked",
    "trainable-changed",
    "nan",
    "zero",
    "replica",
)
_BUGGY_KEYS = ("title", "source", "shrunk", "kind", "effect", "cause", "line", "fix", "twin")
_FIXED_KEYS = ("twin of", "change")
_KEY = re.compile(r"^# ([a-z][a-z ]*): ?(.*)$")
_MORE = re.compile(r"^#   (.*)$")


class HeaderError(ValueError):
    """A header that does not follow README.md: ``FILE:LINE: message``."""


@dataclass(frozen=True)
class Program:
    """One file of the set: its path and the labels of its header."""

    path: Path
    role: str  # "buggy" or "fixed"
    fields: dict[str, str]

    @property
    def name(self) -> str:
        return self.path.stem


@dataclass(frozen=True)
class Case:
    """A buggy program, its fixed twin and what was labelled by hand."""

    buggy: Path
    fixed: Path
    title: str
    sources: tuple[str, ...]
    shrunk: str
    kind: str
    backend: str
    effect: str
    cause: str
    lines: tuple[int, ...]
    fixes: tuple[str, ...]
    change: str

    @property
    def name(self) -> str:
        return self.buggy.stem


def read_header(path: Path) -> Program:
    """The header block of one program (comment lines up to the first other line)."""
    fields: dict[str, str] = {}
    last = ""
    lines = path.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, 1):
        more = _MORE.match(line)
        if more and last:
            fields[last] += " " + more.group(1).strip()
            continue
        match = _KEY.match(line)
        if not match:
            break
        last = match.group(1)
        if last in fields:
            raise HeaderError(f"{path}:{number}: '{last}' given twice")
        fields[last] = match.group(2).strip()
    role = fields.pop("gradflow", "")
    if role not in ("buggy", "fixed"):
        raise HeaderError(f"{path}:1: the header must open with '# gradflow: buggy' or 'fixed'")
    wanted = _BUGGY_KEYS if role == "buggy" else _FIXED_KEYS
    missing = [key for key in wanted if not fields.get(key)]
    if missing:
        raise HeaderError(f"{path}:1: the header lacks {', '.join(missing)}")
    return Program(path=path, role=role, fields=fields)


def _choice(program: Program, key: str, allowed: tuple[str, ...], default: str = "") -> str:
    value = program.fields.get(key, default)
    if value not in allowed:
        raise HeaderError(f"{program.path}:1: {key} must be one of {', '.join(allowed)}, "
                          f"saw {value!r}")  # fmt: skip
    return value


def _split(value: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in value.split(",") if part.strip())


def make_case(buggy: Program, fixed: Program) -> Case:
    """Check one pair's labels against each other and the files, and join them."""
    where = f"{buggy.path}:1"
    if fixed.fields["twin of"] != buggy.path.name:
        raise HeaderError(f"{fixed.path}:1: 'twin of' names {fixed.fields['twin of']!r}, "
                          f"not {buggy.path.name!r}")  # fmt: skip
    try:
        lines = tuple(int(part) for part in _split(buggy.fields["line"]))
    except ValueError:
        raise HeaderError(f"{where}: line must be line numbers, saw "
                          f"{buggy.fields['line']!r}") from None  # fmt: skip
    length = len(buggy.path.read_text(encoding="utf-8").splitlines())
    if not lines or any(not 1 <= line <= length for line in lines):
        raise HeaderError(f"{where}: line {buggy.fields['line']} is outside the file")
    sources = _split(buggy.fields["source"])
    if not all(source.startswith(("https://", "seeds/")) for source in sources):
        raise HeaderError(f"{where}: each source is an https:// address or seeds/FILE")
    return Case(
        buggy=buggy.path,
        fixed=fixed.path,
        title=buggy.fields["title"],
        sources=sources,
        shrunk=buggy.fields["shrunk"],
        kind=_choice(buggy, "kind", KINDS),
        backend=_choice(buggy, "backend", BACKENDS, "tensorflow"),
        effect=_choice(buggy, "effect", EFFECTS),
        cause=_choice(buggy, "cause", CAUSES),
        lines=lines,
        fixes=_split(buggy.fields["fix"]),
        change=fixed.fields["change"],
    )


def load(folder: Path = PROGRAMS) -> list[Case]:
    """Every pair in ``folder``, in name order; a header error raises :class:`HeaderError`."""
    programs = {p.name: read_header(p) for p in sorted(folder.glob("[!_]*.py"))}
    cases = []
    twins = set()
    for program in programs.values():
        if program.role != "buggy":
            continue
        twin = programs.get(program.fields["twin"])
        if twin is None or twin.role != "fixed":
            raise HeaderError(f"{program.path}:1: its twin {program.fields['twin']!r} is not "
                              "a fixed program of the set")  # fmt: skip
        twins.add(twin.path.name)
        cases.append(make_case(program, twin))
    orphans = [p for p in programs.values() if p.role == "fixed" and p.path.name not in twins]
    if orphans:
        raise HeaderError(f"{orphans[0].path}:1: no buggy program names it as its twin")
    return cases
