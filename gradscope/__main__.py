"""``python -m gradscope``: the same as the ``gradscope`` command."""

from __future__ import annotations

from gradscope._src.cli import main

main(prog_name="gradscope")
