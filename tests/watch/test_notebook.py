"""The example notebook, executed in a real Jupyter kernel (nbclient + ipykernel), and its
outputs checked: the magic's report, watch()'s report, the inline timeline picture."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.tf, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "examples" / "notebooks" / "gradscope-in-a-notebook.ipynb"


@pytest.fixture(scope="module")
def executed(tmp_path_factory: pytest.TempPathFactory) -> Any:
    import nbclient  # the dev extra installs it, with ipykernel and nbformat
    import nbformat

    notebook = nbformat.read(NOTEBOOK, as_version=4)
    here = tmp_path_factory.mktemp("notebook")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))  # fmt: skip
    client = nbclient.NotebookClient(
        notebook, timeout=300, startup_timeout=120, kernel_name="python3",
        resources={"metadata": {"path": str(here)}},
    )  # fmt: skip
    client.execute(env=env)  # starts the kernel, and shuts it down on every path
    return notebook


def _cell(notebook: Any, starts: str) -> Any:
    return next(c for c in notebook.cells if c.cell_type == "code" and c.source.startswith(starts))


def _bundles(cell: Any) -> list[dict[str, str]]:
    return [o["data"] for o in cell.outputs if o.output_type in ("display_data", "execute_result")]


def test_the_install_note_installs_what_exists() -> None:
    """gradscope is not on PyPI yet: the notebook installs a wheel made from a clone, never
    ``gradscope-tf`` from a registry."""
    import nbformat

    notebook = nbformat.read(NOTEBOOK, as_version=4)
    first, install = notebook.cells[0], notebook.cells[1]
    assert "In Colab" in first.source and "pip wheel --no-deps -w dist ." in first.source
    assert "%pip install --quiet gradscope_tf-*.whl" in install.source
    code = "\n".join(c.source for c in notebook.cells)
    assert "pip install gradscope-tf" not in code and "install --quiet gradscope-tf" not in code
    assert all(
        not c.get("outputs") for c in notebook.cells if c.cell_type == "code"
    )  # shipped clean


def test_cell_magic_shows_the_report_as_html_and_text(executed: Any) -> None:
    cell = _cell(executed, "%%gradscope")
    assert not [o for o in cell.outputs if o.output_type == "error"]
    (bundle,) = _bundles(cell)  # one report, shown once
    page, text = bundle["text/html"], bundle["text/plain"]
    # the second head's variables: no gradient, and why (as bare Keras warns: no loss reads it)
    for shown in (page, text):
        assert "aux/kernel" in shown and "none:disconnected" in shown
        assert "reaches only output 'aux', which no loss reads" in shown.replace("&#x27;", "'")
        # the site is the cell, numbered as the notebook shows it (IPython 9 counts a cell
        # before it runs it: ``execution_count`` is the next one's)
        assert set(re.findall(r"In\[\d+\]", shown)) == {f"In[{cell.execution_count}]"}
    assert "<table" in page and "unexpected-none" in page
    assert "score/kernel" in text and " ok " in text
    assert "2 problems" in text


def test_watch_report_of_a_model_trained_before(executed: Any) -> None:
    cell = _cell(executed, "with gradscope.watch(")
    (bundle,) = _bundles(cell)
    assert "aux/kernel" in bundle["text/html"] and "0 problems" in bundle["text/plain"]
    shown = set(re.findall(r"In\[\d+\]", bundle["text/plain"]))
    assert shown == {f"In[{cell.execution_count}]"}


def test_plot_shows_inline(executed: Any) -> None:
    cell = _cell(executed, "monitor = ")
    (bundle,) = _bundles(cell)
    assert bundle["image/png"]  # base64 PNG
    assert "<svg" in bundle["text/html"] and "finding" in bundle["text/html"]
