"""A loss's gradient-flow picture as plain data: boxes, links and what crosses each link."""

from __future__ import annotations

from dataclasses import dataclass

from gradscope._src.results.cut import CutPoint

__all__ = ["CUT", "GRADIENT", "LOSS", "OP", "VALUE", "VARIABLE", "Box", "Link", "Picture"]

#: Link flows: gradient passes; value passes but no gradient comes back; the gradient is cut.
GRADIENT = "gradient"
VALUE = "value"
CUT = "cut"

#: Box kinds.
VARIABLE = "variable"
OP = "op"
LOSS = "loss"


@dataclass(frozen=True)
class Box:
    """One box: a variable, a spec node (or layer, or op), or the loss.

    ``index`` is the variable's index in the model for variable boxes. ``cuts`` are cut points
    inside the box that no link shows (a ``stop_gradient`` a layer applies to its own input).
    """

    id: str
    kind: str
    name: str
    op: str = ""
    source: str = ""
    scope: str = ""
    index: int = -1
    cuts: tuple[CutPoint, ...] = ()
    members: tuple[str, ...] = ()  # a reduced picture's group: the variables or boxes it holds


@dataclass(frozen=True)
class Link:
    """Value flows forward from ``src`` to ``dst``; the gradient flows back as ``flow`` says."""

    src: str
    dst: str
    flow: str
    sparse: bool = False
    nan: bool = False
    cuts: tuple[CutPoint, ...] = ()


@dataclass(frozen=True)
class Picture:
    """Every box on a forward path from a variable to ``loss``, and the links between them.

    Links have a ``flow``: ``GRADIENT`` passes; ``VALUE`` passes forward but no gradient
    comes back; ``CUT``: the gradient reaches the link's end and stops there.
    """

    loss: str
    boxes: tuple[Box, ...]
    links: tuple[Link, ...]
    off_path: tuple[str, ...] = ()  # variables with no forward path to the loss
    expanded: bool = False
    reduced: int = 0  # a big model's picture reduced (report/prune.py): the boxes it had

    def box(self, name: str, kind: str | None = None) -> Box:
        """The first box called ``name`` (of ``kind``, when given)."""
        for b in self.boxes:
            if b.name == name and (kind is None or b.kind == kind):
                return b
        raise KeyError(name)

    def link(self, src: str, dst: str) -> Link:
        """The link from the box named ``src`` to the box named ``dst``."""
        a, b = self.box(src).id, self.box(dst).id
        for link in self.links:
            if link.src == a and link.dst == b:
                return link
        raise KeyError((src, dst))

    @property
    def cut_boxes(self) -> set[str]:
        """Ids of boxes that hold a cut point: a red link ends there, or it cuts inside."""
        return {link.dst for link in self.links if link.flow == CUT} | {
            b.id for b in self.boxes if b.cuts
        }
