"""What the tools of ``gradscope mcp`` share without the ``mcp`` SDK: the working folder's
confinement, the child ``gradscope`` process a tool runs, and the registry's word on a cause.

Each tool that runs TensorFlow runs the ``gradscope`` command itself in a child process, with
``--format json``, in the working folder the server was given (``--root``): the same code, the
same options and limits, and the same JSON, valid against the same schemas (a failure:
``error-v1.json``). The child's standard output never reaches the protocol's channel; a child
that outlives its time limit is killed with its whole process group, as it is on every other
way out of a call. Every path a tool is given must lie inside the working folder (symbolic
links resolved); gradscope itself writes nothing outside it (the report goes to
``.gradscope-mcp/`` inside it, and is removed; ``gradscope fix``'s scratch copy is made inside
it, and removed even when the child was killed).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from typing import IO, Any

#: The longest a tool's child process may run (seconds), and the default.
MAX_SECONDS = 3600.0
DEFAULT_SECONDS = 600.0
#: How much of a program's own output a ``run`` result carries (bytes per stream, the end).
OUTPUT_TAIL = 64 * 1024
#: The server's name as agents list it.
NAME = "gradscope"


class Refused(ValueError):
    """A tool argument the server will not act on (a path outside the working folder)."""


@dataclass(frozen=True)
class Outcome:
    """What a child ``gradscope`` returned: its exit code, its JSON, the end of its output."""

    exit_code: int
    data: dict[str, Any] | None
    stdout: str
    stderr: str

    def result(self) -> dict[str, Any]:
        """The tool's structured result: the JSON the command printed (a report, or the
        failure of ``error-v1.json``); a child that printed none is an ``internal`` failure."""
        if self.data is not None:
            return self.data
        message = (self.stderr.strip().splitlines() or ["no output"])[-1]
        entry = {"kind": "internal", "message": message, "location": None,
                 "exit_code": self.exit_code}  # fmt: skip
        return {"gradscope": 1, "command": "", "error": entry, "errors": [entry]}


def inside(root: str, path: str) -> str:
    """``path`` (relative to ``root``, or absolute) resolved, when it lies inside ``root``.

    Raises:
        Refused: the resolved path (links followed) is outside ``root``.
    """
    if "\0" in path:
        raise Refused(f"{path!r}: not a path")
    full = os.path.realpath(os.path.join(root, path))
    if os.path.commonpath([root, full]) != root:
        raise Refused(f"{path}: outside the working folder {root}; give a path inside it")
    return full


def target_inside(root: str, target: str) -> str:
    """A spec, a saved model or a ``file.py:function`` target inside ``root``, as given.

    Raises:
        Refused: a file outside ``root``, or a ``module:function`` target (a module is found
            on Python's path, outside the working folder).
    """
    head, sep, function = target.rpartition(":")
    if sep and head.endswith(".py") and function.isidentifier():
        inside(root, head)
        return target
    if sep and not os.path.exists(os.path.join(root, target)) and function.isidentifier():
        raise Refused(f"{target}: a module target is found on Python's path; give "
                      "path/to/file.py:function inside the working folder")  # fmt: skip
    inside(root, target)
    return target


def gradscope(root: str, args: list[str], seconds: float, scratch: bool = False) -> Outcome:
    """Run ``gradscope ARGS`` in ``root`` and read its JSON.

    The command writes its report with ``--output`` to a file in ``root/.gradscope-mcp/``
    (removed after); its standard output and error (a program's own output) are read as they
    come, and only their last ``OUTPUT_TAIL`` bytes kept, so a program that prints without end
    costs the server no memory. A failure's JSON is the last object on either stream.

    Args:
        root: the working folder (the child's working directory).
        args: the command and its options (``--format json`` among them).
        seconds: the child is killed, with every process of its session, after this long.
        scratch: the command makes a scratch copy of ``root`` (``gradscope fix``): once the
            child is gone, whatever way it ended, its copy is removed too.

    Raises:
        TimedOut: the child ran longer than ``seconds`` (and was killed).
    """
    place = os.path.join(root, ".gradscope-mcp")
    os.makedirs(place, exist_ok=True)
    fd, path = tempfile.mkstemp(prefix="report-", suffix=".json", dir=place)
    os.close(fd)
    # ``--output`` right after the command's name: its own option, before a program's words
    command = [sys.executable, "-m", "gradscope", args[0], "--output", path, *args[1:]]
    env = {**os.environ, "NO_COLOR": "1", "PYTHONUNBUFFERED": "1"}
    child = subprocess.Popen(command, cwd=root, env=env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             start_new_session=True)  # fmt: skip
    tails = [_Tail(child.stdout), _Tail(child.stderr)]
    try:
        try:
            child.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            _kill(child)
            raise TimedOut(f"gradscope {args[0]}: still running after {seconds:g} s; killed "
                           "(give a longer timeout, or a smaller program)") from None  # fmt: skip
        out, err = (t.text() for t in tails)
        data = _json(_read(path)) or _last_json(out) or _last_json(err)
        return Outcome(child.returncode, data, out, err)
    finally:
        _kill(child)  # every way out: a cancelled call, a server shutting down
        for t in tails:
            t.close()
        if scratch:
            from gradscope._src.prove import remove_scratch

            remove_scratch(root, child.pid)
        with contextlib.suppress(OSError):
            os.unlink(path)
        with contextlib.suppress(OSError):
            os.rmdir(place)


class TimedOut(Refused):
    """A child that outlived its time limit (killed)."""


class _Tail:
    """A stream read on a thread of its own as it comes; its last ``OUTPUT_TAIL`` bytes kept."""

    def __init__(self, stream: IO[bytes] | None) -> None:
        self._stream = stream
        self._kept = bytearray()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        if self._stream is None:
            return
        with contextlib.suppress(OSError, ValueError):
            while chunk := self._stream.read1(65536):  # type: ignore[attr-defined]
                self._kept += chunk
                del self._kept[:-OUTPUT_TAIL]

    def text(self) -> str:
        self._thread.join(timeout=10)  # the stream ends with the child's session
        return bytes(self._kept).decode("utf-8", "replace")

    def close(self) -> None:
        self._thread.join(timeout=10)
        if self._stream is not None:
            with contextlib.suppress(OSError):
                self._stream.close()


def _kill(child: subprocess.Popen[bytes]) -> None:
    """End the child and every process of its session (its own group, and the groups its
    children made: ``gradscope fix`` runs the program in a group of its own)."""
    if child.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pid, signal.SIGKILL)
    for pid in _session(child.pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    child.wait()


def _session(sid: int) -> list[int]:
    """The processes of session ``sid`` still alive (Linux's /proc; none elsewhere)."""
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return []
    found = []
    for pid in pids:
        with contextlib.suppress(OSError):
            if pid != os.getpid() and os.getsid(pid) == sid:
                found.append(pid)
    return found


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        return ""


def _json(text: str) -> dict[str, Any] | None:
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _last_json(text: str) -> dict[str, Any] | None:
    """The last JSON object a stream holds (a failure's, printed after a program's output)."""
    at = len(text)
    while (at := text.rfind("{\n", 0, at)) >= 0:
        if at == 0 or text[at - 1] == "\n":
            found = _json(text[at:])
            if found is not None:
                return found
    return None


def seconds_of(timeout: float | None) -> float:
    return DEFAULT_SECONDS if not timeout or timeout <= 0 else min(float(timeout), MAX_SECONDS)


def schema(name: str) -> dict[str, Any]:
    """The published schema ``gradscope schema NAME`` prints (the package's copy)."""
    from importlib import resources

    path = resources.files("gradscope").joinpath(f"_src/data/schema/{name}-v1.json")
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def explain(cause: str) -> dict[str, Any] | None:
    """A cause of the registry as data (``gradscope schema mcp``, ``$defs.explanation``):
    id, status, SARIF rule, title, help, fix kinds; None for an unknown id."""
    from gradscope._src.results.causes import CAUSES

    found = CAUSES.get(cause)
    if found is None:
        return None
    return {"id": found.id, "status": str(found.status), "rule": found.rule,
            "title": found.title, "help": found.help, "fixes": list(found.fixes)}  # fmt: skip
