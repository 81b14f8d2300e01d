"""A fix that proves itself: ``gradscope fix --check PROGRAM`` applies each fix that is a text
edit (``results.fix.Edit``) in a scratch copy of the working folder, runs the program there
again as ``gradscope run`` does, and compares.

The proof, per call site and source: the status before and after; per call: the loss's value
before and after (the forward values: a fix that is an edit keeps them, and this checks it).
It passes when at least one source gets a gradient it had not, none loses one, every loss value
is the same (within ``RTOL``), and the program ran as before (exit 0 or 1). Both runs are made
in the scratch copy (the same paths, so a seeded program gives the same values). The user's
files are written only by :func:`apply`, only after a passed proof, and only where they still
hold the text the edits replace.

Both runs are child processes (``python -m gradscope run``): a program run twice in one
process would not start fresh (Keras' name counters, TensorFlow's random state).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from gradscope._src.errors import UsageError
from gradscope._src.results.fix import Edit
from gradscope._src.writable import Unwritable, write

#: Relative tolerance of "the same forward value".
RTOL = 1e-6
#: The working folder is copied only when it is at most this large (bytes, files).
MAX_COPY_BYTES = 200 * 2**20
MAX_COPY_FILES = 20_000
#: Never copied: version control, environments, caches.
SKIPPED = (".git", ".hg", ".venv", "venv", "__pycache__", "node_modules", ".gradscope-mcp",
           ".mypy_cache", ".pytest_cache", ".ruff_cache")  # fmt: skip

#: ``runner(args, cwd, seconds) -> (exit code, the JSON report's text)``: runs
#: ``gradscope run --format json ... SCRIPT ARGS`` (``args``) in ``cwd``.
Runner = Callable[[list[str], str, float], tuple[int, str]]


@dataclass(frozen=True)
class Change:
    """One source of one call: its status before and after the edits."""

    site: str
    variable: str
    before: str
    after: str

    @property
    def better(self) -> bool:
        return not _flows(self.before) and _flows(self.after)

    @property
    def worse(self) -> bool:
        return _flows(self.before) and not _flows(self.after)


def _flows(status: str) -> bool:
    return status in ("ok", "zero")


@dataclass(frozen=True)
class Forward:
    """One call's loss value before and after."""

    site: str
    step: int
    before: float | None
    after: float | None

    @property
    def same(self) -> bool:
        a, b = self.before, self.after
        if a is None or b is None:
            return a is b
        return a == b or (math.isfinite(a) and math.isclose(a, b, rel_tol=RTOL, abs_tol=0.0))


@dataclass(frozen=True)
class Proof:
    """What ``gradscope fix --check`` found (``schema/fix-v1.json``)."""

    program: str
    argv: tuple[str, ...]
    edits: tuple[tuple[str, Edit], ...]  # (fix kind, edit)
    changes: tuple[Change, ...] = ()
    forward: tuple[Forward, ...] = ()
    exit_codes: tuple[int, int] = (0, 0)
    applied: bool = False
    skipped: tuple[str, ...] = field(default=())  # edits left out, and why

    @property
    def forward_same(self) -> bool:
        return all(f.same for f in self.forward)

    @property
    def passed(self) -> bool:
        """Some source gains a gradient, none loses one, every loss value stays, and the
        program ends as well as before (exit 0 or 1, never worse)."""
        before, after = self.exit_codes
        return (
            bool(self.edits)
            and any(c.better for c in self.changes)
            and not any(c.worse for c in self.changes)
            and self.forward_same
            and after in (0, 1)
            and after <= before
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "gradscope": 1,
            "program": self.program,
            "argv": list(self.argv),
            "edits": [{"kind": kind, **edit.to_dict()} for kind, edit in self.edits],
            "skipped": list(self.skipped),
            "variables": [
                {"site": c.site, "variable": c.variable, "before": c.before, "after": c.after}
                for c in self.changes
            ],
            "forward": [
                {
                    "site": f.site,
                    "step": f.step,
                    "before": f.before,
                    "after": f.after,
                    "same": f.same,
                }
                for f in self.forward
            ],
            "forward_same": self.forward_same,
            "exit_codes": {"before": self.exit_codes[0], "after": self.exit_codes[1]},
            "passed": self.passed,
            "applied": self.applied,
        }


def check(
    script: str,
    args: Sequence[str] = (),
    *,
    steps: int = 1,
    seconds: float = 900.0,
    runner: Runner | None = None,
) -> Proof:
    """Prove the edit fixes of ``gradscope run SCRIPT ARGS`` (run in the working directory).

    Raises:
        UsageError: the script is outside the working directory, the folder is too large to
            copy, or the first run printed no report (its error is said).
    """
    run = runner or subprocess_runner
    here = os.path.realpath(os.getcwd())
    full = os.path.realpath(script)
    if os.path.commonpath([here, full]) != here:
        raise UsageError(f"{script}: outside the working folder {here}: fix copies the "
                         "working folder, so the program must be inside it")  # fmt: skip
    options = ["run", "--format", "json", "--steps", str(steps)]
    with tempfile.TemporaryDirectory(prefix="gradscope-fix-") as scratch:
        copy = os.path.join(scratch, "work")
        _copy(here, copy)
        code0, text0 = run([*options, script, *args], copy, seconds)
        before = _report(text0, code0)
        edits, skipped = _edits(before, here)
        if not edits:
            return Proof(script, tuple(args), (), skipped=tuple(skipped),
                         exit_codes=(code0, code0))  # fmt: skip
        for _kind, edit in edits:
            _apply_in(copy, edit)
        code1, text1 = run([*options, script, *args], copy, seconds)
        after = _report(text1, code1)
    return Proof(script, tuple(args), tuple(edits), _changes(before, after),
                 _forward(before, after), (code0, code1), skipped=tuple(skipped))  # fmt: skip


def apply(proof: Proof) -> Proof:
    """Write a passed proof's edits into the user's files (atomically, each file once), where
    each still holds the text the edit replaces; the proof, ``applied``.

    Raises:
        UsageError: the proof did not pass, or a file changed since the proof.
    """
    if not proof.passed:
        raise UsageError("fix --apply: the proof did not pass; nothing was written")
    by_file: dict[str, list[Edit]] = {}
    for _kind, edit in proof.edits:
        by_file.setdefault(edit.file, []).append(edit)
    texts = {path: _edited(_read(path), edits, path) for path, edits in by_file.items()}
    for path, text in texts.items():  # every file checked before any is written
        try:
            write(path, text.encode("utf-8"), inputs=[])
        except Unwritable as exc:
            raise UsageError(f"fix --apply: cannot write {path}: {exc.why}") from None
    return Proof(proof.program, proof.argv, proof.edits, proof.changes, proof.forward,
                 proof.exit_codes, True, proof.skipped)  # fmt: skip


def subprocess_runner(args: list[str], cwd: str, seconds: float) -> tuple[int, str]:
    """``python -m gradscope ARGS`` in ``cwd``, the report written to a file beside the copy
    (the program's own output is thrown away); killed with its group after ``seconds``."""
    report = os.path.join(os.path.dirname(cwd), "report.json")
    command = [sys.executable, "-m", "gradscope", args[0], "--output", report, *args[1:]]
    child = subprocess.Popen(command, cwd=cwd, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)  # fmt: skip
    try:
        code = child.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        raise UsageError(f"fix: the program ran longer than {seconds:g} s (--timeout)") from None
    finally:
        if child.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, 9)
            child.wait()
    text = _read(report) if os.path.exists(report) else ""
    with contextlib.suppress(OSError):
        os.unlink(report)
    return code, text


def _copy(source: str, target: str) -> None:
    count, size = 0, 0
    for folder, dirs, files in os.walk(source):
        dirs[:] = [d for d in dirs if d not in SKIPPED]
        for name in files:
            count += 1
            with contextlib.suppress(OSError):
                size += os.lstat(os.path.join(folder, name)).st_size
        if count > MAX_COPY_FILES or size > MAX_COPY_BYTES:
            raise UsageError(
                f"fix: the working folder {source} is too large to copy for the proof (more "
                f"than {MAX_COPY_FILES} files or {MAX_COPY_BYTES >> 20} MB); run it from the "
                "program's own folder"
            )
    shutil.copytree(source, target, symlinks=True, ignore=shutil.ignore_patterns(*SKIPPED))


def _report(text: str, code: int) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise UsageError(f"fix: gradscope run printed no report (exit code {code})")
    if "error" in data and "errors" in data:
        raise UsageError(f"fix: {data['error'].get('message', 'gradscope run failed')}")
    return data


def _fixes(report: dict[str, Any]) -> list[dict[str, Any]]:
    found = [s.get("fix") for c in report.get("calls", []) for s in c.get("sources", {}).values()]
    found += [p.get("fix") for p in report.get("problems", [])]
    return [f for f in found if isinstance(f, dict)]


def _edits(report: dict[str, Any], here: str) -> tuple[list[tuple[str, Edit]], list[str]]:
    """The report's edits, each once, inside the working folder and not overlapping."""
    out: list[tuple[str, Edit]] = []
    skipped: list[str] = []
    for fix in _fixes(report):
        edit = Edit.from_dict(fix.get("edit"))
        if edit is None or any(e == edit for _k, e in out):
            continue
        full = os.path.realpath(os.path.join(here, edit.file))
        if os.path.commonpath([here, full]) != here:
            skipped.append(f"{edit.file}:{edit.start_line}: outside the working folder")
            continue
        if any(e.file == edit.file and e.start_line <= edit.end_line
               and edit.start_line <= e.end_line for _k, e in out):  # fmt: skip
            skipped.append(f"{edit.file}:{edit.start_line}: overlaps another edit")
            continue
        out.append((str(fix.get("kind", "")), edit))
    return out, skipped


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def _edited(text: str, edits: Sequence[Edit], path: str) -> str:
    """``text`` with ``edits`` (one file's, not overlapping) made, the last first.

    Raises:
        UsageError: a file no longer holds an edit's old text.
    """
    lines = text.split("\n")
    for edit in sorted(edits, key=lambda e: e.start_line, reverse=True):
        held = "\n".join(lines[edit.start_line - 1 : edit.end_line])
        if held != edit.old:
            raise UsageError(f"fix: {path}:{edit.start_line}: the file changed since the "
                             "report; nothing was written")  # fmt: skip
        lines[edit.start_line - 1 : edit.end_line] = edit.new.split("\n")
    return "\n".join(lines)


def _apply_in(copy: str, edit: Edit) -> None:
    path = os.path.join(copy, edit.file)
    text = _edited(_read(path), [edit], edit.file)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def _sources(report: dict[str, Any]) -> dict[tuple[str, str], str]:
    """Each (site, source) and its status at its first watched step."""
    out: dict[tuple[str, str], str] = {}
    for call in report.get("calls", []):
        for name, source in call.get("sources", {}).items():
            out.setdefault((call.get("site", ""), name), str(source.get("status", "")))
    return out


def _changes(before: dict[str, Any], after: dict[str, Any]) -> tuple[Change, ...]:
    was, now = _sources(before), _sources(after)
    keys = list(dict.fromkeys([*was, *now]))
    return tuple(Change(site, name, was.get((site, name), "absent"),
                        now.get((site, name), "absent")) for site, name in keys)  # fmt: skip


def _values(report: dict[str, Any]) -> dict[tuple[str, int], float | None]:
    out: dict[tuple[str, int], float | None] = {}
    for call in report.get("calls", []):
        value = (call.get("target") or {}).get("value")
        out[(call.get("site", ""), int(call.get("step", 0)))] = (
            float(value) if isinstance(value, (int, float)) else None
        )
    return out


def _forward(before: dict[str, Any], after: dict[str, Any]) -> tuple[Forward, ...]:
    was, now = _values(before), _values(after)
    keys = list(dict.fromkeys([*was, *now]))
    return tuple(Forward(site, step, was.get((site, step)), now.get((site, step)))
                 for site, step in keys)  # fmt: skip
