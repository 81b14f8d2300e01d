"""Nothing lost: ``--output`` files are replaced atomically, or not touched at all.

Every command that writes a file (``inspect``, ``diff``, ``check`` with ``--output`` and
``--write-baseline``, ``graph -o``) writes a temporary file beside the target and renames
it. A spec error, a TensorFlow error or Ctrl-C (exit 130) leaves the previous file byte for
byte, and no temporary file behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from gradscope._src.cli import main
from gradscope._src.errors import ExitCode
from tests.conftest import ROOT, Drivers
from tests.forked import Driver

pytestmark = pytest.mark.tf

SPEC = str(ROOT / "configs" / "multitask.yaml")
PREVIOUS = b"the previous report\n"
BROKEN = "gradscope: 1\nlosses: {l: nowhere}\n"
#: A spec that validates but fails inside TensorFlow (a shape mismatch).
FAILS_IN_TF = """\
gradscope: 1
inputs: {x: {shape: [2, 3]}}
variables: {w: {shape: [4, 5]}}
nodes:
  - {name: loss_1, op: matmul, inputs: [x, w]}
  - {name: loss_2, op: reduce_sum, inputs: [loss_1]}
losses: {loss_1: loss_2, loss_2: loss_2}
"""

#: Each command with a file output: (name, arguments with {spec} and {out}, file name).
COMMANDS = [
    ("inspect", ["inspect", "{spec}", "--format", "json", "-o", "{out}"], "report.json"),
    ("diff", ["diff", "{spec}", "loss_1", "loss_2", "--format", "json", "-o", "{out}"], "d.json"),
    ("check", ["check", "{spec}", "--format", "json", "--output", "{out}"], "check.json"),
    ("check-baseline", ["check", "{spec}", "--write-baseline", "{out}"], "baseline.json"),
    ("graph", ["graph", "{spec}", "--loss", "loss_1", "-o", "{out}"], "picture.dot"),
]


def _args(template: list[str], spec: str, out: Path) -> list[str]:
    return [a.format(spec=spec, out=out) for a in template] + ["-q"]


def _listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.mark.parametrize(("name", "template", "file"), COMMANDS, ids=[c[0] for c in COMMANDS])
def test_output_is_replaced_whole_and_leaves_no_temporary_file(
    tmp_path: Path, name: str, template: list[str], file: str
) -> None:
    out = tmp_path / "out" / file
    out.parent.mkdir()
    out.write_bytes(PREVIOUS)
    out.chmod(0o640)
    result = CliRunner().invoke(main, _args(template, SPEC, out))
    assert result.exit_code in (ExitCode.OK, ExitCode.PROBLEMS), result.output
    written = out.read_bytes()
    assert written != PREVIOUS and written.strip()
    assert _listing(out.parent) == [file]  # the temporary file was renamed, nothing else left
    assert out.stat().st_mode & 0o777 == 0o640  # the replaced file's permissions are kept


@pytest.mark.parametrize("broken", [BROKEN, FAILS_IN_TF], ids=["spec-error", "tensorflow-error"])
@pytest.mark.parametrize(("name", "template", "file"), COMMANDS, ids=[c[0] for c in COMMANDS])
def test_an_error_leaves_the_previous_file_intact(
    tmp_path: Path, name: str, template: list[str], file: str, broken: str
) -> None:
    spec = tmp_path / "broken.yaml"
    spec.write_text(broken, encoding="utf-8")
    out = tmp_path / "out" / file
    out.parent.mkdir()
    out.write_bytes(PREVIOUS)
    result = CliRunner().invoke(main, _args(template, str(spec), out))
    assert result.exit_code == ExitCode.USAGE, result.output
    assert out.read_bytes() == PREVIOUS
    assert _listing(out.parent) == [file]


def test_ctrl_c_while_writing_keeps_the_previous_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(_fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("gradscope._src.cli.common.os.fsync", interrupted)
    out = tmp_path / "report.json"
    out.write_bytes(PREVIOUS)
    result = CliRunner().invoke(main, ["inspect", SPEC, "--format", "json", "-o", str(out)])
    assert result.exit_code == ExitCode.INTERRUPTED
    assert "interrupted" in result.stderr
    assert out.read_bytes() == PREVIOUS
    assert _listing(tmp_path) == ["report.json"]


@pytest.fixture
def forks(drivers: Drivers) -> Driver:
    """Forks ``gradscope`` processes from a driver that imported TensorFlow once."""
    return drivers.cli(os.environ, tensorflow=True)


def _interrupt_at(
    args: list[str], phase: str, forks: Driver, seconds: float = 60
) -> tuple[int, str]:
    """Run ``gradscope ARGS`` with standard error on a terminal (so it shows its phases),
    send Ctrl-C's SIGINT once it shows ``phase``, and return its exit code and stderr.

    Ctrl-C during the import needs a process that imports TensorFlow: ``python -m
    gradscope``; any later phase is interrupted in a process forked after the import.
    """
    import pty
    import select

    leader, follower = pty.openpty()
    if phase == "importing TensorFlow":
        process = subprocess.Popen([sys.executable, "-m", "gradscope", *args], cwd=ROOT,
                                   stdout=subprocess.DEVNULL, stderr=follower)  # fmt: skip
        interrupt, wait, running = process.send_signal, process.wait, lambda: process.poll() is None
    else:  # the terminal stays open here until the child has ended: it opens it by name
        pid = forks.start(args, ROOT, os.environ, Path(os.devnull), Path(os.ttyname(follower)),
                          kill_after=60)  # fmt: skip
        interrupt, wait, running = (
            (lambda sig: os.kill(pid, sig)),
            (lambda: forks.finish()[0]),
            (lambda: _alive(pid)),
        )
    shown, sent = b"", False
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            if not sent and phase.encode() in shown:
                interrupt(signal.SIGINT)
                sent = True
            if select.select([leader], [], [], 0.1)[0]:
                shown += os.read(leader, 65536)
            elif not running():
                break
    finally:
        os.close(follower)
        os.close(leader)
        if not sent:  # it never showed the phase: stop it rather than wait for it
            interrupt(signal.SIGKILL)
    code = wait()
    assert sent, f"never showed {phase!r}: {shown[-300:]!r}"
    return code, shown.decode("utf-8", "replace")


def _alive(pid: int) -> bool:
    """Whether the forked process still runs (its driver reaps it the moment it ends)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


PHASES = ["importing TensorFlow", "building the model", "gradients for loss 2"]


def _long_chain(folder: Path) -> str:
    """A spec whose backward passes take a while (a chain of 400 nodes, three losses), so
    Ctrl-C lands while gradients are being built."""
    nodes = "".join(f"  - {{name: n{i}, op: sin, inputs: [n{i - 1}]}}\n" for i in range(1, 400))
    path = folder / "chain.yaml"
    path.write_text(
        "gradscope: 1\nvariables: {w: {shape: [3]}}\nnodes:\n"
        "  - {name: n0, op: sin, inputs: [w]}\n"
        + nodes
        + "losses: {loss_1: n399, loss_2: n398, loss_3: n397}\n",
        encoding="utf-8",
    )
    return str(path)


@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize(
    ("name", "template", "file"), COMMANDS[:3], ids=[c[0] for c in COMMANDS[:3]]
)
def test_sigint_mid_run_exits_130_and_keeps_the_previous_file(
    tmp_path: Path, name: str, template: list[str], file: str, phase: str, forks: Driver
) -> None:
    out = tmp_path / "out" / file
    out.parent.mkdir()
    out.write_bytes(PREVIOUS)
    spec = _long_chain(tmp_path) if phase.startswith("gradients") else SPEC
    args = [a for a in _args(template, spec, out) if a != "-q"]
    code, stderr = _interrupt_at(args, phase, forks)
    # A process that dies of SIGINT itself (-2) is what a shell also shows as 130.
    assert code in (ExitCode.INTERRUPTED, -signal.SIGINT), stderr[-500:]
    assert "gradscope: interrupted" in stderr and "Traceback" not in stderr
    assert out.read_bytes() == PREVIOUS
    assert _listing(out.parent) == [file]


def test_a_missing_output_directory_is_a_usage_error(tmp_path: Path) -> None:
    out = tmp_path / "missing" / "report.json"
    result = CliRunner().invoke(main, ["inspect", SPEC, "--format", "json", "-o", str(out)])
    assert result.exit_code == ExitCode.USAGE
    assert not out.parent.exists()
    assert os.listdir(tmp_path) == []


def test_a_swallowed_ctrl_c_still_keeps_the_previous_file(tmp_path: Path) -> None:
    """Ctrl-C caught and dropped somewhere (a finalizer, a library callback) must still
    stop the output file from being replaced."""
    from gradscope._src.cli.output import interrupts_noted, write_atomic

    out = tmp_path / "report.json"
    out.write_bytes(PREVIOUS)
    with interrupts_noted():
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)  # the handler runs at the next bytecode boundary
        except KeyboardInterrupt:
            pass  # swallowed, as a careless library would
        with pytest.raises(KeyboardInterrupt):
            write_atomic(str(out), "new report")
    assert out.read_bytes() == PREVIOUS
    assert _listing(tmp_path) == ["report.json"]
    write_atomic(str(out), "new report")  # outside a command, nothing is remembered
    assert out.read_text() == "new report"
