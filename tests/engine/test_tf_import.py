"""Importing TensorFlow once, quietly, and without what a spec run never uses.

Each case needs a process whose first TensorFlow import is the one under test.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.tf

_SCRIPT = """
import gc, json, sys
from gradscope._src.cli import main
sys.argv[1:] = [{args}]
try:
    main({caller}standalone_mode=False)
except SystemExit:
    pass
during = "matplotlib" in sys.modules
from keras.src.visualization import plot_image_gallery
keras_plots = plot_image_gallery.plt is not None
import matplotlib.pyplot  # still importable afterwards
print(json.dumps([during, keras_plots, "tensorflow" in sys.modules, gc.get_freeze_count(),
                  gc.isenabled()]))
"""


def _imports(*args: str, own: bool = False) -> list[Any]:
    """``[matplotlib imported during the command, Keras' plots on, TensorFlow imported,
    objects frozen, collector enabled]`` after ``gradscope ARGS`` in a new process: called as
    a library caller calls ``main(ARGS)``, or, ``own``, as ``gradscope ARGS`` runs it."""
    script = _SCRIPT.format(args=", ".join(repr(a) for a in args),
                            caller="" if own else "sys.argv[1:], ")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=True)  # fmt: skip
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def test_a_spec_run_imports_tensorflow_without_matplotlib() -> None:
    during, keras_plots, tensorflow, frozen, collecting = _imports(
        "inspect", "configs/multitask.yaml", "-q"
    )
    assert tensorflow and not during and not keras_plots
    assert frozen == 0 and collecting  # a caller's objects: the collector as it was


def test_gradscopes_own_process_freezes_what_tensorflows_import_made() -> None:
    """``gradscope ...`` (``main()`` without arguments): the modules the import made are out
    of the cycle collector's reach; it still runs for what is made later."""
    during, _, tensorflow, frozen, collecting = _imports(
        "inspect", "configs/multitask.yaml", "-q", own=True
    )
    assert tensorflow and not during
    assert frozen > 100_000 and collecting


def test_a_python_target_keeps_keras_plotting() -> None:
    """User code may plot with Keras: its TensorFlow import is the ordinary one."""
    target = "tests/frontends/python/data/loose_model.py:build"
    during, keras_plots, tensorflow, frozen, _ = _imports("inspect", target, "-q")
    assert tensorflow and during and keras_plots and frozen == 0
