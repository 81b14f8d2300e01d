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
{before}
class Cycle:
    finalized = False

    def __init__(self):
        self.me = self

    def __del__(self):
        Cycle.finalized = True


Cycle()  # garbage, in a cycle, made before gradscope imports TensorFlow
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
                  gc.isenabled(), Cycle.finalized]))
"""


def _imports(*args: str, own: bool = False, before: str = "") -> list[Any]:
    """``[matplotlib imported during the command, Keras' plots on, TensorFlow imported,
    objects frozen, collector enabled, garbage made before collected]`` after
    ``gradscope ARGS`` in a new process: called as a library caller calls ``main(ARGS)``, or,
    ``own``, as ``gradscope ARGS`` runs it; ``before``: the caller's code run first."""
    script = _SCRIPT.format(args=", ".join(repr(a) for a in args), before=before,
                            caller="" if own else "sys.argv[1:], ")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=True)  # fmt: skip
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def test_a_spec_run_imports_tensorflow_without_matplotlib() -> None:
    """A caller whose process had not imported TensorFlow: gradscope's import is the first,
    and what the process holds then (the modules the import made, and what the caller
    held, its garbage collected first) is frozen out of the cycle collector's walks, as in
    gradscope's own process; the collector still runs for what is made later."""
    during, keras_plots, tensorflow, frozen, collecting, collected = _imports(
        "inspect", "configs/multitask.yaml", "-q"
    )
    assert tensorflow and not during and not keras_plots
    assert frozen > 100_000 and collecting and collected


def test_a_caller_that_imported_tensorflow_keeps_its_collector_as_it_was() -> None:
    """What a process that imported TensorFlow itself holds may be its models: nothing is
    frozen, so the collector stays free to reclaim them."""
    _, _, tensorflow, frozen, collecting, _ = _imports(
        "inspect", "configs/multitask.yaml", "-q", before="import tensorflow"
    )
    assert tensorflow and frozen == 0 and collecting


def test_gradscopes_own_process_freezes_what_tensorflows_import_made() -> None:
    """``gradscope ...`` (``main()`` without arguments): the modules the import made are out
    of the cycle collector's reach; it still runs for what is made later."""
    during, _, tensorflow, frozen, collecting, _ = _imports(
        "inspect", "configs/multitask.yaml", "-q", own=True
    )
    assert tensorflow and not during
    assert frozen > 100_000 and collecting


def test_a_python_target_keeps_keras_plotting() -> None:
    """User code may plot with Keras: its TensorFlow import is the ordinary one."""
    target = "tests/frontends/python/data/loose_model.py:build"
    during, keras_plots, tensorflow, frozen, _, _ = _imports("inspect", target, "-q")
    assert tensorflow and during and keras_plots
    assert frozen > 100_000  # gradscope's import was the first; the target's module came after
