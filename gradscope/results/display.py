"""What Jupyter and IPython show for a result: its HTML table in a notebook, its terminal
table in IPython (``report/notebook.py`` draws both; imported only when a result is shown)."""

from __future__ import annotations

import shutil
from typing import Any


class Displayed:
    """Mixed into every result type: ``_repr_html_`` and ``_repr_pretty_``."""

    __slots__ = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # IPython's printer takes a class's own __repr__ (a dataclass') over an inherited
        # _repr_pretty_: each result class carries its own
        cls._repr_pretty_ = Displayed._repr_pretty_  # type: ignore[method-assign]

    def _repr_html_(self) -> str:
        from gradscope.report import as_html

        return as_html(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        if cycle:
            printer.text(f"{type(self).__name__}(...)")
            return
        from gradscope.report import as_terminal_text

        printer.text(as_terminal_text(self, shutil.get_terminal_size((100, 24)).columns))
