"""``gradscope.plot``: a timeline's picture, shown inline in a notebook."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gradscope._src.errors import UsageError


def plot(timeline: Any) -> TimelinePlot:
    """The gradient norms of a timeline over the steps, as ``gradscope plot`` draws them.

    A notebook shows the result inline (the picture, then the findings); ``picture(fmt)``
    gives its PNG, SVG or HTML bytes (``gradscope plot FILE -o`` writes them).

    Args:
        timeline: a timeline JSON file's path, the timeline as a dictionary, or a
            ``gradscope.keras.Monitor`` (its timeline so far).

    Returns:
        The picture.

    Raises:
        UsageError: a missing or unreadable file, or data that is not a timeline.
    """
    from gradscope._src.timeline.reader import checked, load

    if hasattr(timeline, "recorder") and hasattr(timeline, "timeline"):  # a Monitor
        timeline = timeline.timeline
    try:
        if isinstance(timeline, (str, os.PathLike)):
            data = load(os.fspath(timeline))
        elif isinstance(timeline, Mapping):
            data = checked(json.loads(json.dumps(dict(timeline))), "the timeline")
        else:
            raise UsageError(f"gradscope.plot: expected a timeline file, a timeline dict or a "
                             f"Monitor, saw {type(timeline).__name__}")  # fmt: skip
    except OSError as exc:
        raise UsageError(f"gradscope.plot: cannot read {timeline}: {exc.strerror}") from exc
    except ValueError as exc:  # not JSON, or not a timeline
        raise UsageError(f"gradscope.plot: {exc}") from exc
    return TimelinePlot(data)


@dataclass(frozen=True)
class TimelinePlot:
    """A timeline and its picture (drawn once, when first shown or saved); a notebook shows
    the picture and the findings, IPython the findings."""

    timeline: dict[str, Any]
    _drawn: dict[str, bytes] = field(default_factory=dict, repr=False, compare=False)

    def picture(self, fmt: str) -> bytes:
        """The picture as ``png``, ``svg`` or ``html`` bytes."""
        if fmt not in self._drawn:
            from gradscope._src.timeline.plot import render

            self._drawn[fmt] = render(self.timeline, fmt)
        return self._drawn[fmt]

    def svg(self) -> str:
        text = self.picture("svg").decode("utf-8")
        return text[text.index("<svg") :]  # inline: no XML prolog

    def _repr_png_(self) -> bytes:
        return self.picture("png")

    def _repr_html_(self) -> str:
        from gradscope._src.printable import shown
        from gradscope._src.report.notebook import timeline_html

        return timeline_html(shown(self.timeline), self.svg())

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        from gradscope._src.printable import shown
        from gradscope._src.report.notebook import timeline_text

        printer.text("TimelinePlot(...)" if cycle else timeline_text(shown(self.timeline)))
