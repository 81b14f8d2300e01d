"""The README is short, honest about installing, and sends readers into the docs.

Its code blocks run in ``tests/test_docs.py``, as every page's do.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests import docblocks
from tests.conftest import ROOT

README = ROOT / "README.md"
TEXT = README.read_text(encoding="utf-8")


def test_readme_is_short() -> None:
    assert len(TEXT.splitlines()) <= 200


def test_readme_has_the_three_quick_starts_and_a_spec() -> None:
    headings = re.findall(r"^## (.+)$", TEXT, re.MULTILINE)
    assert [h for h in headings if h.startswith("Quick start")] == [
        "Quick start 1: your training script",
        "Quick start 2: the Keras Monitor",
        "Quick start 3: the CI gate",
    ]
    blocks = docblocks.blocks(README)
    commands = [c.text for b in blocks for c in b.commands]
    assert "gradscope run docs/examples/gan.py" in commands
    assert "gradscope check docs/examples/first.gradscope.yaml" in commands
    assert any(b.lang == "python" and "Monitor(" in b.text for b in blocks)
    spec = next(b for b in blocks if b.lang == "yaml")
    # the spec shown is the file the command checks
    shown = (ROOT / "docs" / "examples" / "first.gradscope.yaml").read_text(encoding="utf-8")
    assert spec.text == shown


def test_readme_install_is_honest() -> None:
    """Nothing is published: no `pip install gradscope-tf`, no placeholder URL."""
    assert "gradscope-tf" not in TEXT
    assert not re.search(r"<[^>]*(URL|url|repository)[^>]*>", TEXT)
    assert "pip install ." in TEXT


def _links(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    return [link for link in re.findall(r"\]\(([^)\s]+)\)", text) if "://" not in link]


def test_readme_links_lead_to_files() -> None:
    links = _links(README)
    assert len(links) >= 15
    for link in links:
        target = link.split("#")[0]
        assert (ROOT / target).exists(), f"README links to {link}, which does not exist"
