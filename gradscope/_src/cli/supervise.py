"""A crash in a Python target's code (a segfault in a C extension it calls) said in one line.

A signal that kills a process cannot be answered inside it: plain Python prints nothing and
the shell sees -11 (139). When a command runs a Python target (``inspect``, ``diff``,
``check`` or ``graph`` given ``file.py:function`` or ``module:function``), the ``gradscope``
process forks before doing anything else. The child runs the command as usual; the parent,
which has imported nothing but the command line, waits for it and:

- passes the child's exit code through (the report, exit code 5 for a target that called
  ``sys.exit`` or ``os._exit``, 130 for Ctrl-C);
- when the child was killed by a signal (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGKILL),
  prints one line naming the signal and the target's innermost line Python was running
  (``faulthandler`` writes its frames to a pipe the parent reads) and exits with 5
  (:attr:`~gradscope._src.errors.ExitCode.TARGET_ENDED`): never 0, 1 or 2;
- forwards SIGINT, SIGTERM and SIGHUP that another process sent (``kill``, ``timeout``, CI
  cancellation) to the child, then ends as the child did; one the terminal sent (Ctrl-C)
  reached the child already and is not sent twice. The child dies with the parent
  (``PR_SET_PDEATHSIG``) when the parent is killed outright.

Only a process gradscope owns is supervised (``gradscope ...``, ``python -m gradscope``), never a
caller that passes ``args`` to ``main`` (a test's CliRunner).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sys
from typing import NoReturn

#: The commands that may run a Python target's code in gradscope's process.
COMMANDS = frozenset({"inspect", "diff", "check", "graph"})
#: ``path/to/file.py:function`` or ``module.path:function`` (``resolve.py`` reads them).
_TARGET = re.compile(r"^(?:.+\.py|[A-Za-z_][\w.]*):[A-Za-z_][\w.]*$")
_FRAME = re.compile(r'File "([^"]+)", line (\d+)')
_CRASHES = {
    signal.SIGSEGV: "a segmentation fault",
    signal.SIGBUS: "a bus error",
    signal.SIGILL: "an illegal instruction",
    signal.SIGFPE: "a floating-point exception",
    signal.SIGABRT: "an abort",
    signal.SIGKILL: "killed outright: the out-of-memory killer, or kill -9",
}


def wanted(argv: list[str]) -> str | None:
    """The command to supervise in ``argv`` (``gradscope``'s arguments), or None: a command
    of :data:`COMMANDS` one of whose arguments is a Python target."""
    words = [a for a in argv if not a.startswith("-")]
    if not words or words[0] not in COMMANDS:
        return None
    return words[0] if any(_TARGET.match(w) for w in words[1:]) else None


def supervise(command: str) -> None:
    """Fork; return in the child (which runs the command); the parent never returns."""
    # Blocked before the fork, so none is lost (or kills the parent) in between; the parent
    # takes them with sigtimedwait, the child unblocks them.
    signal.pthread_sigmask(signal.SIG_BLOCK, WATCHED)
    try:
        read, write = os.pipe()
        pid = os.fork()
    except OSError:  # no fork here (a limit on processes): run unsupervised
        signal.pthread_sigmask(signal.SIG_UNBLOCK, WATCHED)
        return
    if pid == 0:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, WATCHED)
        os.close(read)
        _child(write)
        return
    os.close(write)
    _parent(pid, read, command)


def _child(write: int) -> None:
    import faulthandler

    _die_with_parent()
    faulthandler.enable(file=os.fdopen(write, "w", closefd=False), all_threads=False)


def _die_with_parent() -> None:
    """Linux: the kernel kills this child with SIGKILL when the parent dies."""
    parent = os.getppid()
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # it died before the call
        os._exit(128 + int(signal.SIGKILL))


#: Signals the parent takes: those it forwards, and the child's end.
WATCHED = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD}
#: ``si_code`` of a signal the kernel sent (a terminal's Ctrl-C or hang-up): it reached the
#: child's process group too, so it is not sent again.
_SI_KERNEL = 0x80


def _parent(pid: int, read: int, command: str) -> NoReturn:
    """Wait for the child; pass on SIGINT, SIGTERM and SIGHUP another process sent (``kill``,
    ``timeout``); then end as the child ended (the module docstring)."""
    while True:
        info = signal.sigtimedwait(WATCHED, 0.5)
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if info is None or info.si_signo == signal.SIGCHLD or info.si_code == _SI_KERNEL:
            continue
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, info.si_signo)
    if os.WIFEXITED(status):
        os._exit(os.WEXITSTATUS(status))
    signum = os.WTERMSIG(status)
    if signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)  # end as the child did, as one process would
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signum})
        os.kill(os.getpid(), signum)
    said = _message(command, signum, _frames(read))
    sys.stderr.write(said + "\n")
    sys.stderr.flush()
    from gradscope._src import failure

    failure.said("target-ended", said, 5, command)  # --format json: the failure as data
    os._exit(5)  # ExitCode.TARGET_ENDED (not imported: the parent stays light)


def _frames(read: int) -> str:
    """What faulthandler wrote (nothing when the crash was not a fatal signal it handles)."""
    os.set_blocking(read, False)  # a grandchild may hold the pipe open: never wait
    chunks = []
    try:
        while chunk := os.read(read, 65536):
            chunks.append(chunk)
    except (BlockingIOError, OSError):
        pass
    return b"".join(chunks).decode("utf-8", "replace")


def _message(command: str, signum: int, frames: str) -> str:
    """``gradscope inspect: target.py:21: the target's code crashed the process: SIGSEGV (a
    segmentation fault); gradscope checked nothing (exit code 5)``."""
    try:
        known: signal.Signals | None = signal.Signals(signum)
    except ValueError:
        known = None
    name = known.name if known is not None else f"signal {signum}"
    what = _CRASHES.get(known) if known is not None else None
    where = _user_line(frames)
    return (
        f"gradscope {command}: {where + ': ' if where else ''}the target's code crashed the "
        f"process: {name}{f' ({what})' if what else ''}; gradscope checked nothing (exit code 5)"
    )


def _user_line(frames: str) -> str:
    """The innermost ``FILE:LINE`` of faulthandler's frames that is not Python's library,
    an installed package or gradscope (most recent call first), relative to the current
    directory when below it."""
    import sysconfig

    skipped = tuple(
        os.path.realpath(p) + os.sep
        for p in {
            *sysconfig.get_paths().values(),
            os.path.dirname(os.path.dirname(os.path.dirname(__file__))),
        }
    )
    for path, line in _FRAME.findall(frames):
        generated = "__autograph_generated_file" in path  # the user's code, converted
        if path.startswith("<") or generated or os.path.realpath(path).startswith(skipped):
            continue
        shown = os.path.relpath(path) if not os.path.relpath(path).startswith("..") else path
        return f"{shown}:{line}"
    return ""
