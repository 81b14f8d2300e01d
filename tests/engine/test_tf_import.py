"""Importing TensorFlow once, quietly, and without what a spec run never uses.

Each case needs a process whose first TensorFlow import is the one under test.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.tf

_SCRIPT = """
import json, sys
from gradscope._src.cli import main
try:
    main([{args}], standalone_mode=False)
except SystemExit:
    pass
during = "matplotlib" in sys.modules
from keras.src.visualization import plot_image_gallery
keras_plots = plot_image_gallery.plt is not None
import matplotlib.pyplot  # still importable afterwards
print(json.dumps([during, keras_plots, "tensorflow" in sys.modules]))
"""


def _imports(*args: str) -> list[bool]:
    script = _SCRIPT.format(args=", ".join(repr(a) for a in args))
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=True)  # fmt: skip
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def test_a_spec_run_imports_tensorflow_without_matplotlib() -> None:
    during, keras_plots, tensorflow = _imports("inspect", "configs/multitask.yaml", "-q")
    assert tensorflow and not during and not keras_plots


def test_a_python_target_keeps_keras_plotting() -> None:
    """User code may plot with Keras: its TensorFlow import is the ordinary one."""
    target = "tests/frontends/python/data/loose_model.py:build"
    during, keras_plots, tensorflow = _imports("inspect", target, "-q")
    assert tensorflow and during and keras_plots
