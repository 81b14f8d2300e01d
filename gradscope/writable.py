"""Whether files can be written in a directory, asked before long work (a run, a fit) starts."""

from __future__ import annotations

import os
import tempfile


def unwritable(where: str) -> tuple[str, OSError] | None:
    """None when ``where`` (a directory to write in, or to make) exists or can be made and
    this process may write into it; else its nearest existing ancestor and why not.

    A file is made there and removed, which catches what permission bits do not: a read-only
    file system, ``/proc``, a full disk, running as root.
    """
    existing = os.path.abspath(where)
    while not os.path.exists(existing) and os.path.dirname(existing) != existing:
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        return existing, NotADirectoryError(f"{existing} is a file, not a directory")
    try:
        fd, probe = tempfile.mkstemp(prefix=".gradscope-probe-", dir=existing)
    except OSError as exc:
        return existing, exc
    os.close(fd)
    os.unlink(probe)
    return None
