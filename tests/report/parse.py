"""Read gradscope's DOT and Mermaid pictures back into nodes and edges, so tests can check their
structure (not their text layout)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_DOT_ATTR = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|[^,\]\s]+)')
_DOT_NODE = re.compile(r"^\s*(\w+) \[(.*)\];$")
_DOT_EDGE = re.compile(r"^\s*(\w+) -> (\w+) \[(.*)\];$")


@dataclass
class Drawing:
    """Nodes (id -> attributes) and edges ((src, dst) -> attributes) of one picture."""

    nodes: dict[str, dict[str, str]] = field(default_factory=dict)
    edges: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)

    def node(self, name: str) -> tuple[str, dict[str, str]]:
        """The node whose label's first line is ``name``."""
        for node_id, attrs in self.nodes.items():
            if attrs["label"].split("\n")[0] == name:
                return node_id, attrs
        raise KeyError(name)

    def names(self) -> list[str]:
        return [a["label"].split("\n")[0] for a in self.nodes.values()]

    def edge(self, src: str, dst: str) -> dict[str, str]:
        """The edge between the nodes named ``src`` and ``dst`` (the loss node is ``loss``)."""
        a = "loss" if src == "loss" else self.node(src)[0]
        b = "loss" if dst == "loss" else self.node(dst)[0]
        return self.edges[(a, b)]


def _dot_value(raw: str) -> str:
    if raw.startswith('"'):
        raw = raw[1:-1]
        raw = re.sub(r"\\(.)", lambda m: "\n" if m.group(1) in "nl" else m.group(1), raw)
    return raw


def dot(text: str) -> Drawing:
    """Nodes and edges of gradscope's DOT (one statement per line, as it writes them)."""
    drawing = Drawing()
    for line in text.splitlines():
        if edge := _DOT_EDGE.match(line):
            attrs = {k: _dot_value(v) for k, v in _DOT_ATTR.findall(edge.group(3))}
            drawing.edges[(edge.group(1), edge.group(2))] = attrs
        elif (node := _DOT_NODE.match(line)) and node.group(1) not in ("graph", "node", "edge"):
            attrs = {k: _dot_value(v) for k, v in _DOT_ATTR.findall(node.group(2))}
            drawing.nodes[node.group(1)] = attrs
    return drawing


_MMD_NODE = re.compile(r'^\s{2,4}(\w+)(\(\["|\["|\(")(.*?)("\]\)|"\]|"\))$')
_MMD_SUBGRAPH = re.compile(r'^\s{2}subgraph (\w+)\["(.*)"\]$')
_MMD_LINK = re.compile(r'^\s{2}(\w+) (-->|-\.->)(?:\|"(.*?)"\|)? (\w+)$')
_MMD_STYLE = re.compile(r"^\s{2}linkStyle ([\d,]+) (.*)$")
_MMD_CLASS = re.compile(r"^\s{2}class ([\w,]+) (\w+)$")


def mermaid(text: str) -> Drawing:
    """Nodes and links of gradscope's Mermaid flowchart: ``shape``, ``label`` and ``class``
    per node; ``arrow``, ``label`` and the ``style`` of its ``linkStyle`` per link."""
    drawing = Drawing()
    order: list[tuple[str, str]] = []
    subgraph = ""
    for line in text.splitlines():
        if group := _MMD_SUBGRAPH.match(line):
            subgraph = group.group(1)
        elif line.strip() == "end":
            subgraph = ""
        elif node := _MMD_NODE.match(line):
            label = node.group(3).replace("<br/>", "\n")
            for code, char in (("#quot;", '"'), ("#lt;", "<"), ("#gt;", ">"), ("#35;", "#")):
                label = label.replace(code, char)
            drawing.nodes[node.group(1)] = {
                "shape": node.group(2),
                "label": label,
                "class": "",
                "subgraph": subgraph,
            }
        elif link := _MMD_LINK.match(line):
            key = (link.group(1), link.group(4))
            order.append(key)
            drawing.edges[key] = {"arrow": link.group(2), "label": link.group(3) or ""}
        elif style := _MMD_STYLE.match(line):
            for index in style.group(1).split(","):
                drawing.edges[order[int(index)]]["style"] = style.group(2)
        elif cls := _MMD_CLASS.match(line):
            for node_id in cls.group(1).split(","):
                drawing.nodes[node_id]["class"] = (
                    drawing.nodes[node_id]["class"] + " " + cls.group(2)
                ).strip()
    return drawing
