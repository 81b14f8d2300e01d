"""--output writes regular files only, never an input, and cleans up on SIGTERM and a full disk."""

from __future__ import annotations

import errno
import os
import signal
from pathlib import Path

import click
import pytest

from gradscope._src.cli import output
from gradscope._src.errors import UsageError


def _leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]


def test_write_refuses_a_device_node() -> None:
    # The check alone: a regression must not get to replace a device (tests may run as root).
    # /dev/zero, not /dev/null: other programs on a shared machine have replaced /dev/null.
    assert Path("/dev/zero").is_char_device()
    with pytest.raises(UsageError, match="not a regular file"):
        output._check_target("/dev/zero")


def test_write_refuses_a_symlink_and_a_fifo(tmp_path: Path) -> None:
    target = tmp_path / "real.json"
    target.write_text("before", encoding="utf-8")
    (tmp_path / "link.json").symlink_to(target)
    os.mkfifo(tmp_path / "pipe.json")
    with pytest.raises(UsageError, match="symbolic link"):
        output.write_atomic(str(tmp_path / "link.json"), "report")
    with pytest.raises(UsageError, match="not a regular file"):
        output.write_atomic(str(tmp_path / "pipe.json"), "report")
    assert target.read_text(encoding="utf-8") == "before"
    assert (tmp_path / "link.json").is_symlink()


def test_write_refuses_the_commands_own_spec(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text("gradscope: 1\n", encoding="utf-8")
    command = click.Command("inspect", params=[click.Argument(["spec"])])
    with click.Context(command) as ctx:
        ctx.params["spec"] = str(spec)
        with pytest.raises(UsageError, match="is an input of this command"):
            output.write_atomic(str(spec), "report")
    assert spec.read_text(encoding="utf-8") == "gradscope: 1\n"


def test_a_full_disk_is_one_line_naming_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(_fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    out = tmp_path / "report.json"
    with pytest.raises(UsageError, match=f"cannot write {out}: No space left on device"):
        output.write_atomic(str(out), "report")
    assert not out.exists() and _leftovers(tmp_path) == []


def test_sigterm_during_the_write_removes_the_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def terminated(_fd: int) -> None:
        os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(os, "fsync", terminated)
    out = tmp_path / "report.json"
    with pytest.raises(SystemExit) as ended:
        output.write_atomic(str(out), "report")
    assert ended.value.code == 128 + signal.SIGTERM
    assert not out.exists() and _leftovers(tmp_path) == []
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_write_refuses_the_file_of_a_python_target(tmp_path: Path) -> None:
    module = tmp_path / "models.py"
    module.write_text("def build(): ...\n", encoding="utf-8")
    command = click.Command("inspect", params=[click.Argument(["spec"])])
    with click.Context(command) as ctx:
        ctx.params["spec"] = f"{module}:build"
        with pytest.raises(UsageError, match="is an input of this command"):
            output.write_atomic(str(module), "report")
    assert module.read_text(encoding="utf-8") == "def build(): ...\n"


_TARGET = """\
open("started", "w").close()  # the command began its work: it imported the target


def build():
    raise AssertionError("never reached")
"""

#: Every output option of every command that writes files, each with a path that cannot be
#: written: refused before any work, in one line, exit 2.
_OUTPUTS = [
    (["inspect", "t.py:build", "-o"], "--output"),
    (["diff", "t.py:build", "a", "b", "-o"], "--output"),
    (["check", "t.py:build", "-o"], "--output"),
    (["check", "t.py:build", "--write-baseline"], "--write-baseline"),
    (["graph", "t.py:build", "-o"], "--output"),
    (["plot", "timeline.json", "-o"], "--output"),
]


@pytest.mark.parametrize(
    ("words", "option"), _OUTPUTS, ids=lambda v: " ".join(v) if isinstance(v, list) else ""
)
@pytest.mark.parametrize("path", ["", "missing/r.dot", "adir", "input"])
def test_every_output_is_checked_before_the_command_works(
    words: list[str], option: str, path: str, tmp_path: Path
) -> None:
    """``-o ''`` wrote the report to standard output (inspect, check) or ran the whole
    command and then failed (a missing directory, a device, for inspect and diff): each
    output is refused before the target is even imported."""
    from tests.conftest import run_in_process

    given = words[1].partition(":")[0] if path == "input" else path  # the command's own input

    (tmp_path / "t.py").write_text(_TARGET, encoding="utf-8")
    (tmp_path / "timeline.json").write_text("{}", encoding="utf-8")
    (tmp_path / "adir").mkdir()
    done = run_in_process(*words, given, cwd=tmp_path)
    why = {
        "": "an empty path names no file; give a file path",
        "missing/r.dot": "directory missing does not exist",
        "adir": "is a directory; give a file path",
        "input": f"is an input of this command ({given}); it is never written over",
    }[path]
    shown = "''" if path == "" else given
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr == f"gradscope {words[0]}: {option} {shown}: {why}\n"
    assert not (tmp_path / "started").exists()
