"""gradscope's one writer: one set of refusals and one set of permissions for every file.

Reports (``--output``), baselines (``--write-baseline``) and timelines (``run --timeline``,
``Monitor(timeline=...)``) are all written by :func:`gradscope._src.writable.write`.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradscope._src import writable
from gradscope._src.cli import main
from gradscope._src.timeline.record import write as write_timeline
from gradscope._src.writable import Unwritable

TIMELINE = {
    "gradscope": 1,
    "program": "train.py",
    "steps": [{"step": 1, "site": "train.py:3", "loss": 0.5,
               "variables": {"w": {"status": "ok", "norm": 0.1}}}],
    "findings": [],
}  # fmt: skip


@pytest.fixture
def umask_027() -> Iterator[None]:
    previous = os.umask(0o027)
    try:
        yield
    finally:
        os.umask(previous)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_writable_refuses_a_device_a_symlink_a_fifo_and_a_directory(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("before", encoding="utf-8")
    (tmp_path / "link.json").symlink_to(real)
    os.mkfifo(tmp_path / "pipe.json")
    (tmp_path / "dir.json").mkdir()
    # /dev/zero, not /dev/null: other programs on a shared machine have replaced /dev/null
    cases = {
        "/dev/zero": "not a regular file (a device or special file)",
        str(tmp_path / "link.json"): "is a symbolic link",
        str(tmp_path / "pipe.json"): "not a regular file (a FIFO)",
        str(tmp_path / "dir.json"): "is a directory",
    }
    for path, why in cases.items():
        with pytest.raises(Unwritable, match=re.escape(why)) as refused:
            writable.write(path, b"report")
        assert refused.value.refused and "\n" not in str(refused.value)
    assert real.read_text(encoding="utf-8") == "before"
    assert (tmp_path / "link.json").is_symlink()
    assert stat.S_ISFIFO((tmp_path / "pipe.json").lstat().st_mode)
    assert Path("/dev/zero").is_char_device()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "dir.json", "link.json", "pipe.json", "real.json"]  # fmt: skip


def test_writable_refuses_an_input(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text("gradscope: 1\n", encoding="utf-8")
    with pytest.raises(Unwritable, match="is an input of this command"):
        writable.write(str(tmp_path / "." / "spec.yaml"), b"report", inputs=[str(spec)])
    assert spec.read_text(encoding="utf-8") == "gradscope: 1\n"


def test_writable_new_file_gets_the_umask_and_a_replaced_one_keeps_its_mode(
    tmp_path: Path, umask_027: None
) -> None:
    reference = tmp_path / "by-open.txt"
    with open(reference, "w", encoding="utf-8") as f:  # Python's own: 0666 less the umask
        f.write("x")
    new = tmp_path / "new.json"
    writable.write(str(new), b"report")
    assert _mode(new) == _mode(reference) == 0o640
    new.chmod(0o604)
    writable.write(str(new), b"again")
    assert _mode(new) == 0o604 and new.read_bytes() == b"again"


def test_timeline_is_written_with_the_umask_like_output(tmp_path: Path, umask_027: None) -> None:
    """Timelines were 0600 (mkstemp's mode) where --output files follow the umask."""
    path = tmp_path / "deeper" / "t.json"  # parents made, as run --timeline does
    write_timeline(str(path), TIMELINE)
    assert _mode(path) == 0o640
    assert json.loads(path.read_text(encoding="utf-8"))["steps"] == TIMELINE["steps"]
    assert [p.name for p in path.parent.iterdir()] == ["t.json"]


def test_timeline_writer_never_replaces_a_device_or_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("before", encoding="utf-8")
    (tmp_path / "link.json").symlink_to(real)
    for path in ("/dev/zero", str(tmp_path / "link.json")):
        with pytest.raises(Unwritable):
            write_timeline(path, TIMELINE)
    assert real.read_text(encoding="utf-8") == "before"
    assert (tmp_path / "link.json").is_symlink() and Path("/dev/zero").is_char_device()


@pytest.mark.parametrize("kind", ["device", "symlink", "fifo"])
def test_monitor_refuses_a_timeline_that_is_not_a_regular_file(tmp_path: Path, kind: str) -> None:
    """Decided: a timeline is written only as a regular file; Monitor(timeline='/dev/null')
    is refused when the Monitor is made (as root, a rename would replace /dev/null itself)."""
    from gradscope._src.timeline.monitor_args import check_arguments

    real = tmp_path / "real.json"
    real.write_text("before", encoding="utf-8")
    path = {"device": "/dev/null", "symlink": str(tmp_path / "link.json"),
            "fifo": str(tmp_path / "pipe.json")}[kind]  # fmt: skip
    if kind == "symlink":
        os.symlink(real, path)
    if kind == "fifo":
        os.mkfifo(path)
    before = os.lstat(path)
    with pytest.raises(OSError, match=r"^gradscope\.keras\.Monitor: cannot write the timeline to"):
        check_arguments(1, path, None, None, False, False)
    after = os.lstat(path)
    assert (after.st_mode, after.st_ino, after.st_rdev) == (
        before.st_mode, before.st_ino, before.st_rdev)  # fmt: skip
    assert real.read_text(encoding="utf-8") == "before"


@pytest.mark.parametrize("option", ["--output", "--write-baseline"])
def test_check_never_writes_over_its_input_timeline(tmp_path: Path, option: str) -> None:
    timeline = tmp_path / "t.json"
    write_timeline(str(timeline), TIMELINE)
    before = timeline.read_bytes()
    result = CliRunner().invoke(main, ["check", "--timeline", str(timeline), option,
                                       str(timeline)])  # fmt: skip
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        f"gradscope check: {option} {timeline}: is an input of this command ({timeline}); "
        "it is never written over"
    ]
    assert timeline.read_bytes() == before
    assert result.stdout == ""  # refused before any work


def test_check_refuses_one_file_for_output_and_baseline(tmp_path: Path) -> None:
    timeline = tmp_path / "t.json"
    write_timeline(str(timeline), TIMELINE)
    out = str(tmp_path / "out.json")
    result = CliRunner().invoke(
        main, ["check", "--timeline", str(timeline), "-o", out, "--write-baseline", out]
    )
    assert result.exit_code == 2
    assert "is also --output" in result.stderr and not os.path.exists(out)
