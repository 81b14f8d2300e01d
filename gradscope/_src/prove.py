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
process would not start fresh (Keras' name counters, TensorFlow's random state). Each is its
own process group in the proof's session, killed whole at its time limit; a caller that kills
the proof kills its session (``cli/agent_calls.py``).

Nothing outside the working folder is read or written: the scratch copy is a hidden folder
inside it (``.gradscope-fix-<pid>-<random>/``, never copied into itself), the reports are
written inside the copy's folder, and the copy is removed on every way out (an error, a time
limit, Ctrl-C, SIGTERM or SIGHUP). One the proof could not remove (it was killed with
SIGKILL) is removed by its killer (:func:`remove_scratch`), or by the next proof in that
folder, once its process is gone.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fnmatch
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from gradscope._src.errors import UsageError
from gradscope._src.results.fix import Edit
from gradscope._src.writable import Unwritable, write

#: Tolerance of "the same forward value": relative and absolute, as ``numpy.allclose`` takes
#: them (an edit that computes the same math with other ops, ``np.tanh`` to ``tf.math.tanh``,
#: differs in the last bits of float32, and a loss that sums values of both signs shows it).
RTOL = 1e-6
ATOL = 1e-6
#: The working folder is copied only when it is at most this large (bytes, files).
MAX_COPY_BYTES = 200 * 2**20
MAX_COPY_FILES = 20_000
#: Never copied: version control, environments, caches, gradscope's own scratch folders (the
#: copy itself, ``gradscope mcp``'s reports).
SKIPPED = (".git", ".hg", ".venv", "venv", "__pycache__", "node_modules", ".gradscope-*",
           ".mypy_cache", ".pytest_cache", ".ruff_cache")  # fmt: skip
#: The scratch folder's name inside the working folder: ``PREFIX<pid>-<random>``.
PREFIX = ".gradscope-fix-"

#: ``runner(args, cwd, seconds) -> (exit code, the JSON report's text)``: runs
#: ``gradscope run --format json ... SCRIPT ARGS`` (``args``) in ``cwd``.
Runner = Callable[[list[str], str, float], tuple[int, str]]


@dataclass(frozen=True)
class Change:
    """One source of one call: its status before and after the edits (``absent``: the call
    no longer asks for it)."""

    site: str
    variable: str
    before: str
    after: str

    @property
    def better(self) -> bool:
        """It gains a gradient (a finite one, for a ``nan``)."""
        return not _flows(self.before) and _flows(self.after)

    @property
    def resolved(self) -> bool:
        """It had no usable gradient, and the edit stopped asking for one: it is declared not
        trainable (``frozen``: an integer variable) or the call no longer takes it (a
        ``var_list`` of the variables the loss reads)."""
        return _wrong(self.before) and self.after in ("frozen", "absent", "excluded")

    @property
    def worse(self) -> bool:
        return _flows(self.before) and not _flows(self.after)


def _flows(status: str) -> bool:
    return status in ("ok", "zero")


def _wrong(status: str) -> bool:
    return status.startswith("none:") or status == "nan"


@dataclass(frozen=True)
class Forward:
    """One call's loss value before and after (None: not finite, or never computed);
    ``nan_before``: a source of that call had a ``nan`` gradient before."""

    site: str
    step: int
    before: float | None
    after: float | None
    nan_before: bool = False

    @property
    def same(self) -> bool:
        """The same value (within ``RTOL``); where it was not finite before a NaN fix, there
        is nothing to keep, and it must be finite after."""
        a, b = self.before, self.after
        if a is None and b is not None and self.nan_before:
            return math.isfinite(b)
        if a is None or b is None:
            return a is b
        return a == b or (math.isfinite(a) and math.isclose(a, b, rel_tol=RTOL, abs_tol=ATOL))


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
    #: the problems of the run before and after (kind, site, variable), each once
    problems: tuple[tuple[tuple[str, str, str], ...], tuple[tuple[str, str, str], ...]] = ((), ())

    @property
    def forward_same(self) -> bool:
        return all(f.same for f in self.forward)

    @property
    def new_problems(self) -> tuple[tuple[str, str, str], ...]:
        """Problems the edited program has that the program had not."""
        before, after = self.problems
        return tuple(p for p in after if p not in before)

    @property
    def passed(self) -> bool:
        """Some source gains a gradient (or stops asking for one it cannot have), none loses
        one, no source and no problem is new, every call's loss value stays, and
        the program ends as well as before (exit 0 or 1, never worse)."""
        before, after = self.exit_codes
        return (
            bool(self.edits)
            and any(c.better or c.resolved for c in self.changes)
            and not any(c.worse for c in self.changes)
            and not any(c.before == "absent" for c in self.changes)
            and not self.new_problems
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
            "problems": {
                "before": len(self.problems[0]),
                "after": len(self.problems[1]),
                "new": [{"kind": k, "site": s, "variable": v} for k, s, v in self.new_problems],
            },
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
    remove_scratch(here)  # what a proof killed with SIGKILL left here
    with _scratch(here) as scratch:
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
        after = _unshifted(_report(text1, code1), [e for _k, e in edits])
    return Proof(script, tuple(args), tuple(edits), _changes(before, after),
                 _forward(before, after), (code0, code1), skipped=tuple(skipped),
                 problems=(_problems(before), _problems(after)))  # fmt: skip


class _Ended(BaseException):
    """SIGTERM or SIGHUP arrived during the proof: unwind (removing the copy), then end."""


@contextlib.contextmanager
def _scratch(here: str) -> Iterator[str]:
    """A scratch folder inside ``here``, removed on every way out; SIGTERM and SIGHUP unwind
    through it (then end the process as the signal would)."""
    path = tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=here)
    caught: list[int] = []

    def ended(signum: int, frame: object) -> None:
        caught.append(signum)
        raise _Ended

    previous = {}
    for signum in (signal.SIGTERM, signal.SIGHUP):
        with contextlib.suppress(ValueError, OSError):  # not the main thread: as it was
            previous[signum] = signal.signal(signum, ended)
    try:
        yield path
    except _Ended:
        pass
    finally:
        shutil.rmtree(path, ignore_errors=True)
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if caught:  # the copy is gone: end as the signal would have ended the process
        signal.signal(caught[0], signal.SIG_DFL)
        os.kill(os.getpid(), caught[0])
        raise SystemExit(128 + caught[0])


def remove_scratch(here: str, pid: int | None = None) -> None:
    """Remove the scratch folders in ``here`` of the proof ``pid`` (its killer calls this), or,
    without ``pid``, of every proof whose process is gone."""
    try:
        names = os.listdir(here)
    except OSError:
        return
    for name in names:
        if not name.startswith(PREFIX):
            continue
        owner = name[len(PREFIX) :].partition("-")[0]
        if not owner.isdigit() or (pid is not None and int(owner) != pid):
            continue
        if pid is None and _alive(int(owner)):
            continue
        shutil.rmtree(os.path.join(here, name), ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


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
    return dataclasses.replace(proof, applied=True)


def subprocess_runner(args: list[str], cwd: str, seconds: float) -> tuple[int, str]:
    """``python -m gradscope ARGS`` in ``cwd``, the report written to a file beside the copy
    (the program's own output is thrown away); killed with its group after ``seconds``, and on
    every other way out. Its own process group in this session: whoever kills the proof's
    session kills it too."""
    report = os.path.join(os.path.dirname(cwd), "report.json")
    command = [sys.executable, "-m", "gradscope", args[0], "--output", report, *args[1:]]
    child = subprocess.Popen(command, cwd=cwd, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             **_own_group())  # fmt: skip
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


def _own_group() -> dict[str, Any]:
    """Popen's arguments that make the child its own process group (in this session)."""
    if sys.version_info >= (3, 11):
        return {"process_group": 0}
    return {"preexec_fn": os.setpgrp}  # pragma: no cover


def _skipped(name: str) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in SKIPPED)


def _copy(source: str, target: str) -> None:
    count, size = 0, 0
    for folder, dirs, files in os.walk(source):
        dirs[:] = [d for d in dirs if not _skipped(d)]
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


def _unshifted(report: Any, edits: Sequence[Edit]) -> Any:
    """The edited program's report with every ``FILE:LINE`` of an edited file said at the
    line it has in the program (an edit that adds a line, ``tape.watch(x)``, moves the lines
    after it), so sites and sources compare."""
    files = {e.file for e in edits}
    if not any(e.new.count("\n") != e.old.count("\n") for e in edits):
        return report
    pattern = re.compile(r"(?<![\w./-])(" + "|".join(map(re.escape, files)) + r"):(\d+)")

    def line(file: str, at: int) -> int:
        shift = 0
        for e in sorted((e for e in edits if e.file == file), key=lambda e: e.start_line):
            new_start, new_count = e.start_line + shift, e.new.count("\n") + 1
            if at < new_start:
                break
            if at < new_start + new_count:
                return e.start_line + min(at - new_start, e.end_line - e.start_line)
            shift += new_count - (e.end_line - e.start_line + 1)
        return at - shift

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return pattern.sub(lambda m: f"{m[1]}:{line(m[1], int(m[2]))}", value)
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, dict):
            return {walk(k): walk(v) for k, v in value.items()}
        return value

    return walk(report)


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
    nan = {(c.get("site", ""), int(c.get("step", 0))) for c in before.get("calls", [])
           if any(s.get("status") == "nan" for s in c.get("sources", {}).values())}  # fmt: skip
    keys = list(dict.fromkeys([*was, *now]))
    return tuple(Forward(site, step, was.get((site, step)), now.get((site, step)),
                         (site, step) in nan) for site, step in keys)  # fmt: skip


def _problems(report: dict[str, Any]) -> tuple[tuple[str, str, str], ...]:
    """A run's problems as (kind, site, variable), each once."""
    found = [(str(p.get("kind", "")), str(p.get("site", "")), str(p.get("variable") or ""))
             for p in report.get("problems", [])]  # fmt: skip
    return tuple(dict.fromkeys(found))
