"""How a chart's lines look: the palette, the dashes, and a scatter trace whose hover names what
each point is (a rollup tier's row or a window, ``dashboard.tiered``)."""

from __future__ import annotations

from dashboard.downsample import Series

__all__ = ["COLORS", "DASHES", "SERVER_COLORS", "hover", "trace"]

COLORS = [
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#ff7f0e",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#bcbd22",
    "#7f7f7f",
]
# A per-server chart has up to 20 servers: the ten above, then their lighter tints.
SERVER_COLORS = [
    *COLORS,
    "#aec7e8",
    "#ff9896",
    "#98df8a",
    "#ffbb78",
    "#c5b0d5",
    "#c49c94",
    "#f7b6d2",
    "#9edae5",
    "#dbdb8d",
    "#c7c7c7",
]
DASHES = ["solid", "dot", "dash", "dashdot"]


def trace(name: str, s: Series, color: str, dash: str, meta: dict[str, str]) -> dict:
    """One line: its points in ms for a date axis, gaps kept as gaps, markers when few."""
    return {
        "type": "scatter",
        "mode": "lines+markers" if s.points <= 300 else "lines",
        "name": name,
        "x": [x * 1000 for x in s.x],
        "y": s.y,
        "connectgaps": False,
        "marker": {"size": 4},
        "meta": meta,
        "legendgroup": meta.get("server", ""),
        "line": {"width": 1.5, "color": color, "dash": dash},
    }


def hover(line: dict, shows: list[str]) -> dict:
    """The hover names what each point is: a rollup tier's row or a window."""
    line["customdata"] = shows
    line["hovertemplate"] = "%{x}<br>%{y}<br>%{customdata}<extra>%{fullData.name}</extra>"
    return line
