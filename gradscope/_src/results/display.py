"""What Jupyter, IPython and rich show for a result: its HTML table in a notebook, its terminal
table in IPython, its rich table in a rich console.

Results are plain data and import no renderer: the report layer fills ``DRAW`` when it is
imported (``gradscope._src.report``, which ``import gradscope`` imports), so the drawing is one
layer up and results stay at the bottom.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable


class Drawers:
    """How the report layer draws any result: ``html(result)`` the notebook's HTML,
    ``text(result, width)`` IPython's text, ``rich(result)`` a rich renderable. (A plain
    class: ``import gradscope`` imports this module, and a dataclass would cost it the
    import of ``dataclasses``.)"""

    html: Callable[[Any], str] | None = None
    text: Callable[[Any, int], str] | None = None
    rich: Callable[[Any], Any] | None = None


#: Filled by ``gradscope._src.report`` when it is imported.
DRAW = Drawers()


def rich_renderable(result: Any) -> Any:
    """What a rich console prints for ``result`` (its ``__rich__``): its table, or its repr
    when no report layer was imported."""
    return repr(result) if DRAW.rich is None else DRAW.rich(result)


class Displayed:
    """Mixed into every result type: ``_repr_html_`` and ``_repr_pretty_``; ``str()`` and
    ``repr()`` are the terminal table (``print(report)``, the plain REPL), so a result
    never prints as a dump of its fields (its classes are dataclasses with ``repr=False``).
    """

    __slots__ = ()

    def __str__(self) -> str:
        import shutil

        return self._text(shutil.get_terminal_size((100, 24)).columns)

    def __repr__(self) -> str:
        return self.__str__()

    def _text(self, width: int) -> str:
        if DRAW.text is None:  # no report layer imported: the type, never a dump
            return f"<{type(self).__module__}.{type(self).__name__}>"
        return DRAW.text(self, width)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # IPython's printer takes a class's own __repr__ (a dataclass') over an inherited
        # _repr_pretty_: each result class carries its own
        cls._repr_pretty_ = Displayed._repr_pretty_  # type: ignore[method-assign]

    def _repr_html_(self) -> str | None:
        # None: IPython falls back to the text form
        return None if DRAW.html is None else DRAW.html(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        if cycle:
            printer.text(f"{type(self).__name__}(...)")
            return
        printer.text(str(self))
