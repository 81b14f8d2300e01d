"""Pictures of a timeline: gradient norms over steps, one line per variable, grouped by layer.

Per site, three panels share the step axis. Gradient norms on a log scale, a variable's line
coloured by its layer (layers in model order along one colour map, so 100+ variables still
read as a gradient from the first layer to the last), kernels solid and other variables
dashed; findings are marked at their first step along the top and listed beside the panel.
Below it, each variable's share of exactly-zero gradient elements (a dying layer climbs to
1), then the loss. PNG and SVG come from matplotlib (Agg, no display needed); HTML is one
self-contained file with the SVG inline and the findings as a list.
"""

from __future__ import annotations

import html
import io
import math
from collections.abc import Mapping, Sequence
from typing import Any

from gradscope._src.errors import shorten
from gradscope._src.printable import shown

#: kind -> (marker, colour) of a finding's mark.
MARKS = {
    "nan": ("X", "#d62728"),
    "exploding": ("^", "#ff7f0e"),
    "dead": ("v", "#555555"),
    "vanishing": ("v", "#9467bd"),
    "none": ("s", "#000000"),
}
LEGEND_LAYERS = 12  # more layers than this: a colour bar instead of a legend entry each
CMAP = "viridis"  # first layer dark, last layer light; readable in grey and for colour blindness
LABELLED_GROUPS = 6  # findings (by kind and step) named in the picture; the rest are marked


def layer_of(variable: str) -> str:
    """The layer a variable belongs to: its path without the last part (``dense/kernel`` ->
    ``dense``)."""
    return variable.rpartition("/")[0] or variable


#: At most this many sites are drawn (the worst first, see :func:`drawn_sites`): each adds
#: 5.6 inches of panels, and 120 sites made a 90-megapixel PNG in 161 s and 2 GB.
MAX_SITES = 4
#: At most this many variables are drawn per site (those with findings first).
MAX_VARIABLES = 150
#: At most about this many records are drawn per site (every k-th, the last kept).
MAX_RECORDS = 2000
#: How bad a finding is, to pick the sites worth drawing (nan first).
SEVERITY = {"nan": 5, "exploding": 4, "none": 3, "dead": 2, "vanishing": 1}


def label(text: str) -> str:
    """``text`` as matplotlib draws it literally: every ``$`` escaped, so a name holding
    ``$...$`` is not math text (a lone ``$``, or ``$\\frac{$``, raised ValueError)."""
    return text.replace("$", r"\$")


def sites(timeline: Mapping[str, Any]) -> list[str]:
    """Every site of the timeline, in the order first recorded."""
    return list(dict.fromkeys(record["site"] for record in timeline["steps"]))


def drawn_sites(timeline: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """The sites to draw (at most :data:`MAX_SITES`, the worst: by their worst finding, then
    how many findings, then how many records; in the order first recorded) and those left
    out."""
    every = sites(timeline)
    if len(every) <= MAX_SITES:
        return every, []
    worst: dict[str, list[int]] = {site: [0, 0, 0] for site in every}
    for f in timeline.get("findings", []):
        if f.get("site") in worst:
            score = worst[f["site"]]
            score[0] = max(score[0], SEVERITY.get(f.get("kind", ""), 0))
            score[1] += 1
    for record in timeline["steps"]:
        worst[record["site"]][2] += 1
    order = {site: i for i, site in enumerate(every)}
    ranked = sorted(every, key=lambda site: (*(-n for n in worst[site]), order[site]))
    kept = set(ranked[:MAX_SITES])
    return [s for s in every if s in kept], [s for s in every if s not in kept]


def figure(timeline: Mapping[str, Any], title: str | None = None) -> Any:
    """The matplotlib figure of a timeline: its worst :data:`MAX_SITES` sites, the figure
    saying which it left out. Names are drawn as written (:func:`label`: a ``$`` in a name
    is a dollar sign)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with matplotlib.rc_context({"text.usetex": False}):
        return _figure(plt, with_all_findings(timeline), title)


def with_all_findings(timeline: Mapping[str, Any]) -> Mapping[str, Any]:
    """The timeline with the findings its records show added to the file's, as ``check
    --timeline`` reads them: a picture marks what the gate fails on."""
    from gradscope._src.timeline.check import all_findings

    return {**timeline, "findings": all_findings(timeline)[0]}


def _figure(plt: Any, timeline: Mapping[str, Any], title: str | None) -> Any:
    names, left_out = drawn_sites(timeline)
    names = names or ["(no steps recorded)"]
    fig = plt.figure(figsize=(11, 5.6 * len(names) + 1.2), layout="constrained")
    grid = fig.add_gridspec(
        3 * len(names), 2, height_ratios=[4, 1.3, 1] * len(names), width_ratios=[4, 1]
    )
    by_site: dict[str, list[Mapping[str, Any]]] = {site: [] for site in names}
    for record in timeline["steps"]:
        if record["site"] in by_site:
            by_site[record["site"]].append(record)
    for i, site in enumerate(names):
        norms = fig.add_subplot(grid[3 * i, 0])
        zeros = fig.add_subplot(grid[3 * i + 1, 0], sharex=norms)
        loss = fig.add_subplot(grid[3 * i + 2, 0], sharex=norms)
        side = fig.add_subplot(grid[3 * i : 3 * i + 3, 1])
        side.axis("off")
        findings = [f for f in timeline.get("findings", []) if f.get("site") == site]
        records, thinned = _thin(by_site[site])
        records, hidden = _fewer_variables(records, findings)
        _norms(fig, norms, side, records)
        _zero_fractions(zeros, records)
        _findings(norms, side, findings)
        _loss(loss, records)
        left = [f"every {thinned}th record drawn"] if thinned > 1 else []
        left += [f"{hidden} more variables not drawn"] if hidden else []
        more = f" ({'; '.join(left)})" if left else ""
        norms.set_title(label(f"gradient norms at {site}{more}"), loc="left", fontsize=10)
    heading = title or f"gradscope timeline: {timeline.get('program', '')}"
    if left_out:
        shown = ", ".join(shorten(s, 60) for s in left_out[:3]) + (
            ", ..." if len(left_out) > 3 else ""
        )
        total = len(names) + len(left_out)
        heading += (
            f"\nthe {len(names)} sites of {total} with the worst findings; not drawn: {shown}"
        )
    fig.suptitle(label(heading), x=0.01, ha="left")
    return fig


def _thin(records: Sequence[Mapping[str, Any]]) -> tuple[list[Mapping[str, Any]], int]:
    """At most about :data:`MAX_RECORDS` records (every k-th, the last kept), and k."""
    every = -(-len(records) // MAX_RECORDS)  # ceiling division
    if every <= 1:
        return list(records), 1
    kept = list(records[::every])
    if kept[-1] is not records[-1]:
        kept.append(records[-1])
    return kept, every


def _fewer_variables(
    records: Sequence[Mapping[str, Any]], findings: Sequence[Mapping[str, Any]]
) -> tuple[list[Mapping[str, Any]], int]:
    """The records holding at most :data:`MAX_VARIABLES` variables (those with findings first,
    then in model order), and how many were left out."""
    variables = list(dict.fromkeys(v for record in records for v in record["variables"]))
    if len(variables) <= MAX_VARIABLES:
        return list(records), 0
    known = set(variables)
    flagged = [str(f.get("variable")) for f in findings if f.get("variable") in known]
    keep = set(list(dict.fromkeys(flagged + variables))[:MAX_VARIABLES])
    kept: list[Mapping[str, Any]] = [
        {**record, "variables": {k: v for k, v in record["variables"].items() if k in keep}}
        for record in records
    ]
    return kept, len(variables) - len(keep)


def _palette(records: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[str], dict[str, Any]]:
    """Variables and layers in model order, and each layer's colour along the colour map."""
    import matplotlib.pyplot as plt

    variables = list(dict.fromkeys(v for record in records for v in record["variables"]))
    layers = list(dict.fromkeys(layer_of(v) for v in variables))
    cmap = plt.get_cmap(CMAP)
    return (
        variables,
        layers,
        {layer: cmap(0.9 * i / max(len(layers) - 1, 1)) for i, layer in enumerate(layers)},
    )


def _norms(fig: Any, ax: Any, side: Any, records: Sequence[Mapping[str, Any]]) -> None:
    import matplotlib.pyplot as plt
    from matplotlib.colors import Normalize
    from matplotlib.lines import Line2D

    variables, layers, color = _palette(records)
    cmap = plt.get_cmap(CMAP)
    thin = 0.8 if len(variables) > 40 else 1.4
    for name in variables:
        steps = [r["step"] for r in records if name in r["variables"]]
        ys = [_positive(r["variables"][name]["norm"]) for r in records if name in r["variables"]]
        kernel = name.endswith(("kernel", "embeddings", "/w", "weight"))
        ax.plot(
            steps,
            ys,
            color=color[layer_of(name)],
            linewidth=thin if kernel else thin * 0.7,
            linestyle="-" if kernel else "--",
            alpha=0.9 if kernel else 0.6,
        )
    _zeros(ax, records, variables, color)
    ax.set_yscale("log")
    ax.set_ylabel("gradient norm (log)")
    ax.grid(True, which="major", alpha=0.25)
    if len(layers) <= LEGEND_LAYERS:
        handles = [Line2D([], [], color=color[layer], label=label(layer)) for layer in layers]
        handles.append(Line2D([], [], color="grey", linestyle="--", label="bias and others"))
        handles.append(
            Line2D([], [], color="grey", marker="|", linestyle="none", label="gradient exactly 0")
        )
        side.add_artist(
            side.legend(
                handles=handles,
                fontsize=7,
                loc="upper left",
                frameon=False,
                title="layer",
                title_fontsize=8,
            )
        )
    elif layers:
        mappable = plt.cm.ScalarMappable(cmap=cmap, norm=Normalize(0, 0.9))
        bar = fig.colorbar(
            mappable,
            ax=side,
            ticks=[0, 0.9],
            location="left",
            fraction=0.1,
            shrink=0.6,
            anchor=(0.0, 1.0),
        )
        ends = [label(f"{layers[0]}\n(first)"), label(f"{layers[-1]}\n(last)")]
        bar.ax.set_yticklabels(ends, fontsize=7)
        bar.set_label(f"{len(layers)} layers, {len(variables)} variables", fontsize=8)


def _zeros(
    ax: Any,
    records: Sequence[Mapping[str, Any]],
    variables: Sequence[str],
    color: Mapping[str, Any],
) -> None:
    """A tick along the bottom of the panel where a gradient is exactly 0 (log scales have no
    0), in its layer's colour."""
    bottom = ax.get_xaxis_transform()
    for name in variables:
        steps = [r["step"] for r in records if r["variables"].get(name, {}).get("status") == "zero"]
        if steps:
            ax.plot(
                steps,
                [0.02] * len(steps),
                marker="|",
                markersize=9,
                linestyle="none",
                color=color[layer_of(name)],
                transform=bottom,
                clip_on=False,
            )


def _zero_fractions(ax: Any, records: Sequence[Mapping[str, Any]]) -> None:
    """Share of exactly-zero gradient elements per variable (dead units show as a climb to 1)."""
    variables, _, color = _palette(records)
    for name in variables:
        points = [
            (r["step"], r["variables"][name].get("zero_fraction"))
            for r in records
            if name in r["variables"]
        ]
        ys = [math.nan if z is None else z for _, z in points]
        ax.plot([s for s, _ in points], ys, color=color[layer_of(name)], linewidth=0.9, alpha=0.8)
    ax.set_ylim(-0.05, 1.05)
    ax.set_ylabel("zero share", fontsize=8)
    ax.grid(True, alpha=0.25)
    ax.tick_params(labelbottom=False)


def _positive(value: float | None) -> float:
    return value if value is not None and value > 0 and math.isfinite(value) else math.nan


def _findings(ax: Any, side: Any, findings: Sequence[Mapping[str, Any]]) -> None:
    """A mark per finding at its first step along the top of the panel, the variables named
    beside it (the first few groups), and a legend by kind."""
    if not findings:
        return
    from matplotlib.lines import Line2D

    top = ax.get_xaxis_transform()  # x in steps, y in axes fraction
    groups: dict[tuple[str, int], list[str]] = {}
    for f in findings:
        groups.setdefault((f["kind"], int(f["from_step"])), []).append(str(f["variable"]))
    for i, ((kind, step), names) in enumerate(groups.items()):
        marker, colour = MARKS.get(kind, ("o", "black"))
        ax.axvline(step, color=colour, linewidth=0.6, linestyle=":", alpha=0.7)
        ax.plot(
            [step],
            [1.0],
            marker=marker,
            color=colour,
            markersize=8,
            transform=top,
            clip_on=False,
            linestyle="none",
        )
        if i < LABELLED_GROUPS:
            more = f" +{len(names) - 1}" if len(names) > 1 else ""
            ax.text(
                step,
                0.96,
                label(f"{kind}: {names[0]}{more} "),
                transform=top,
                rotation=90,
                ha="right",
                va="top",
                fontsize=7,
                color=colour,
                bbox={"facecolor": "white", "alpha": 0.85, "edgecolor": "none", "pad": 1.5},
            )
    kinds = list(dict.fromkeys(kind for kind, _ in groups))
    handles = [
        Line2D(
            [],
            [],
            marker=MARKS[k][0],
            color=MARKS[k][1],
            linestyle="none",
            label=f"{k} ×{sum(1 for f in findings if f['kind'] == k)}, from step "
            f"{min(step for kind, step in groups if kind == k)}",
        )
        for k in kinds
    ]
    side.add_artist(
        side.legend(
            handles=handles,
            fontsize=7,
            loc="lower left",
            frameon=False,
            title="findings",
            title_fontsize=8,
        )
    )


def _loss(ax: Any, records: Sequence[Mapping[str, Any]]) -> None:
    steps = [r["step"] for r in records]
    values = [r.get("loss") for r in records]
    positive = all(v is None or v > 0 for v in values)
    ax.plot(steps, [math.nan if v is None else v for v in values], color="black", linewidth=1)
    if positive and any(v is not None for v in values):
        ax.set_yscale("log")
    ax.set_ylabel("loss", fontsize=8)
    ax.set_xlabel("step")
    ax.grid(True, alpha=0.25)


def render(timeline: Mapping[str, Any], fmt: str) -> bytes:
    """The picture as ``png``, ``svg`` or ``html`` bytes."""
    import matplotlib
    import matplotlib.pyplot as plt

    timeline = shown(with_all_findings(timeline))  # a name's newline drawn as \n, one line
    fig = figure(timeline)
    try:
        buffer = io.BytesIO()
        with matplotlib.rc_context({"text.usetex": False}):
            fig.savefig(
                buffer,
                format="svg" if fmt == "html" else fmt,
                dpi=110,
                metadata={"Date": None} if fmt in ("svg", "html") else None,
            )
    finally:
        plt.close(fig)
    data = buffer.getvalue()
    if fmt == "png":
        return _palette_png(data)
    return page(timeline, data.decode("utf-8")).encode("utf-8") if fmt == "html" else data


def _palette_png(data: bytes) -> bytes:
    """The PNG with 256 colours: a line chart loses nothing visible and shrinks 3-4 times."""
    from PIL import Image

    out = io.BytesIO()
    Image.open(io.BytesIO(data)).convert("RGB").quantize(256).save(out, "png", optimize=True)
    return out.getvalue()


def page(timeline: Mapping[str, Any], svg: str) -> str:
    """A self-contained HTML page: the SVG inline, then the findings."""
    svg = svg[svg.index("<svg") :]  # drop the XML prolog and doctype
    items = (
        "\n".join(
            f"<li><b>{html.escape(f['kind'])}</b> at step {int(f['from_step'])} "
            f"<code>{html.escape(str(f['site']))}</code>: {html.escape(str(f['message']))}</li>"
            for f in timeline.get("findings", [])
        )
        or "<li>none: every gradient looked healthy</li>"
    )
    title = html.escape(f"gradscope timeline: {timeline.get('program', '')}")
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title>\n'
        "<style>body{font:14px system-ui,sans-serif;margin:1.5em;max-width:1200px}"
        "svg{max-width:100%;height:auto}code{font-size:12px}</style></head><body>\n"
        f"<h1>{title}</h1>\n{svg}\n<h2>Findings</h2>\n<ul>\n{items}\n</ul>\n</body></html>\n"
    )
