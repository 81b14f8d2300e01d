"""Import TensorFlow once, without the oneDNN/absl/CUDA banners, keeping real errors."""

from __future__ import annotations

import contextlib
import gc
import os
import re
import sys
import tempfile
import warnings
from collections.abc import Iterator
from types import ModuleType
from typing import Any, BinaryIO

from gradscope._src.gcpause import paused

# NOTE: since TF 2.17 the banners below are written by absl before its logging is initialized,
# so TF_CPP_MIN_LOG_LEVEL does not hide them; the only reliable way is to catch file
# descriptor 2 while the import runs and drop the lines we know to be noise.
_NOISE = [
    re.compile(r"^WARNING: All log messages before absl::InitializeLog\(\) is called"),
    re.compile(r"^I\d{4} "),  # absl INFO lines (oneDNN notice, "could not find cuda drivers", ...)
    re.compile(r"^To enable the following instructions:"),  # continuation of the CPU-feature INFO
    re.compile(r"Unable to register cu(DNN|FFT|BLAS) factory"),
    re.compile(r"computation placer already registered"),
    re.compile(r"TF-TRT Warning: Could not find TensorRT"),
    re.compile(r"cuInit: UNKNOWN ERROR \(303\)"),
]

_tf: ModuleType | None = None
_own_process = False


def own_process() -> None:
    """Say this process is gradscope's own (its command line, a worker), not a user's that
    imported gradscope: after TensorFlow's import, what the process holds is frozen.

    ``gc.freeze()`` moves the objects alive then (TensorFlow's and Keras' modules, a few
    hundred thousand, alive until the process ends) out of the cycle collector's reach, so
    each later full collection walks only what was made after: ``gradscope run`` of a
    five-line program, 7.6 s of CPU -> 4.9 s, most of it the teardown of TensorFlow's heap
    at exit, which a frozen heap skips. Objects made later are collected as before. In a
    user's process (``gradscope.watch()``, ``gradscope.inspect``, a notebook) nothing is
    frozen, even when gradscope's import of TensorFlow is the process's first: ``gc.freeze()``
    takes every object alive, the user's too, and a user's object in a reference cycle that
    is dropped later is then never reclaimed nor finalized (tried and reverted: a 300 MB
    buffer in a cycle stayed after ``del`` and ``gc.collect()``, its ``__del__`` never ran).
    ``watch()`` therefore costs the ~1.5 s of that teardown that ``gradscope run`` does not.
    ``pytest --gradscope`` is the one exception, asked for on the command line: it freezes
    once a test file's import of TensorFlow is done, when what pytest holds (its own objects,
    the modules collected so far) lives for the session anyway.
    """
    global _own_process
    _own_process = True


@contextlib.contextmanager
def program_import() -> Iterator[None]:
    """Around the program's own first import of TensorFlow (``gradscope run`` leaves it to the
    program: Keras reads ``KERAS_BACKEND`` then): the cycle collector paused while it runs,
    as :func:`import_tensorflow` pauses it, and in gradscope's own process what is alive
    after it frozen (:func:`own_process`)."""
    quiet = _quiet() if _own_process else contextlib.nullcontext()
    with paused(), quiet:
        yield
        tf = sys.modules.get("tensorflow")
        if _own_process and tf is not None and hasattr(tf, "config"):
            # as import_tensorflow does: CUDA's probing logs come now, hidden, not at the
            # program's first op (the physical devices only: the program may still shape the
            # logical ones)
            tf.config.list_physical_devices()
    if _own_process:
        gc.freeze()


def _is_noise(line: str) -> bool:
    return any(p.search(line) for p in _NOISE)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """File descriptor 2 caught while the block runs; what it wrote, less the known banners
    (``_NOISE``), written back to standard error at its end, however it ends."""
    sys.stderr.flush()
    saved = os.dup(2)
    with _sink() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            _replay(sink.read().decode("utf-8", "replace"))


def _sink() -> BinaryIO:
    """A file that holds what standard error wrote: in memory where Linux allows it, so the
    program's temp folder is not written (``gradscope mcp``: nothing outside the working
    folder), else an unnamed temporary file."""
    if hasattr(os, "memfd_create"):
        with contextlib.suppress(OSError):
            return open(os.memfd_create("gradscope-stderr"), "w+b")
    return tempfile.TemporaryFile(mode="w+b")


def _replay(captured: str) -> None:
    kept = [line for line in captured.splitlines() if line.strip() and not _is_noise(line)]
    if kept:
        sys.stderr.write("\n".join(kept) + "\n")
        sys.stderr.flush()


def import_tensorflow(*, plots: bool = True) -> Any:
    """Return the ``tensorflow`` module, importing it quietly the first time.

    Later calls return the same module: gradscope never pays for the import twice. The cycle
    collector is paused while TensorFlow imports (:func:`gradscope._src.gcpause.paused`): it
    would walk the import's growing heap again and again for the few cycles it leaves
    (0.8 s of ~6 s of CPU here); in gradscope's own process, that heap is then frozen
    (:func:`own_process`).

    Args:
        plots: False when no user code will run in this process (a spec): Keras imports
            ``matplotlib.pyplot`` when it is installed, for one plotting helper, which is a
            fifth of the import (~0.5 s here); it is kept out while TensorFlow imports, and
            can be imported normally afterwards.
    """
    global _tf
    if _tf is not None:
        return _tf
    if not plots and "matplotlib" not in sys.modules:
        sys.modules["matplotlib"] = None  # type: ignore[assignment]  # ImportError for it
        try:
            return import_tensorflow()
        finally:
            if sys.modules.get("matplotlib", 0) is None:
                del sys.modules["matplotlib"]
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    with _quiet(), paused(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import keras  # noqa: F401  (Keras 3 registers itself on first import)
        import tensorflow as tf

        # Device discovery logs CUDA probing errors on machines without a GPU.
        tf.config.list_physical_devices()
    tf.get_logger().setLevel("ERROR")
    if _own_process:
        gc.freeze()
    _tf = tf
    return tf
