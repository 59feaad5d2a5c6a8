"""Small inline-SVG charts (no JavaScript, nothing fetched): horizontal bars, a cost waterfall, a line and a
reliability diagram.
Every value is escaped; sizes are in CSS pixels."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

__all__ = ["bars", "line", "reliability", "waterfall"]

_FONT = 'font-family="system-ui, sans-serif" font-size="12"'
GOOD, BAD, NEUTRAL = "#2e7d32", "#c62828", "#546e7a"


def _fmt(v: float) -> str:
    return f"{v:,.2f}"


def bars(items: Sequence[tuple[str, float]], width: int = 640, unit: str = "EUR", title: str = "") -> str:
    """One horizontal bar per (label, value); negative values grow left from the axis in red."""
    if not items:
        return f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="24"><text x="4" y="16" {_FONT}>' \
               'no data</text></svg>'
    row, left, right = 22, 180, 90
    lo = min(0.0, *(v for _, v in items))
    hi = max(0.0, *(v for _, v in items))
    span = (hi - lo) or 1.0
    plot = width - left - right
    zero = left + (0 - lo) / span * plot
    height = row * len(items) + 30
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
           f'aria-label="{escape(title)}"><title>{escape(title)}</title>']
    for i, (label, v) in enumerate(items):
        y = 20 + i * row
        x0, x1 = sorted((zero, left + (v - lo) / span * plot))
        out.append(f'<text x="{left - 6}" y="{y + 13}" text-anchor="end" {_FONT}>{escape(label)}</text>')
        out.append(f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 1):.1f}" height="{row - 6}" '
                   f'fill="{GOOD if v >= 0 else BAD}"><title>{escape(label)}: {_fmt(v)} {unit}</title></rect>')
        out.append(f'<text x="{x1 + 4:.1f}" y="{y + 13}" {_FONT}>{_fmt(v)}</text>')
    out.append(f'<line x1="{zero:.1f}" y1="14" x2="{zero:.1f}" y2="{height - 8}" stroke="#333"/>')
    out.append("</svg>")
    return "".join(out)


def waterfall(start: tuple[str, float], steps: Sequence[tuple[str, float]], end_label: str,
              width: int = 720, height: int = 260, title: str = "") -> str:
    """From the counterfactual, each cost steps down; the last bar is the net saving."""
    labels = [start[0], *(s[0] for s in steps), end_label]
    levels = [start[1]]
    for _, v in steps:
        levels.append(levels[-1] - v)
    top = max(start[1], *levels, 0.0) or 1.0
    bottom = min(0.0, *levels)
    span = top - bottom or 1.0
    n = len(labels)
    slot = (width - 40) / n
    base = 30.0
    plot = height - base - 40

    def y(v: float) -> float:
        return 20 + (top - v) / span * plot

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
           f'aria-label="{escape(title)}"><title>{escape(title)}</title>']
    bars_ = [(0.0, start[1], NEUTRAL)]
    for i in range(len(steps)):
        bars_.append((levels[i + 1], levels[i], BAD))
    bars_.append((0.0, levels[-1], GOOD if levels[-1] >= 0 else BAD))
    for i, ((a, b, colour), label) in enumerate(zip(bars_, labels, strict=True)):
        x = 20 + i * slot + slot * 0.15
        y0, y1 = sorted((y(a), y(b)))
        value = b - a if i not in (0, n - 1) else b
        out.append(f'<rect x="{x:.1f}" y="{y0:.1f}" width="{slot * 0.7:.1f}" height="{max(y1 - y0, 1):.1f}" '
                   f'fill="{colour}"><title>{escape(label)}: {_fmt(value)} EUR</title></rect>')
        out.append(f'<text x="{x + slot * 0.35:.1f}" y="{height - 22}" text-anchor="middle" {_FONT}>'
                   f'{escape(label)}</text>')
        out.append(f'<text x="{x + slot * 0.35:.1f}" y="{y0 - 4:.1f}" text-anchor="middle" {_FONT}>'
                   f'{_fmt(value)}</text>')
    out.append(f'<line x1="20" y1="{y(0):.1f}" x2="{width - 20}" y2="{y(0):.1f}" stroke="#333"/></svg>')
    return "".join(out)


def line(points: Sequence[tuple[str, float]], width: int = 720, height: int = 200, limit: float | None = None,
         limit_label: str = "", title: str = "") -> str:
    """A line over labelled x positions, with an optional horizontal limit (e.g. a declared tolerance)."""
    if not points:
        return f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="24"><text x="4" y="16" {_FONT}>' \
               'no data</text></svg>'
    values = [v for _, v in points] + ([limit] if limit is not None else [])
    peak = max(values)
    top = peak * 1.1 or 1.0
    n = len(points)
    step = (width - 80) / max(n - 1, 1)

    def xy(i: int, v: float) -> tuple[float, float]:
        return 50 + i * step, 10 + (1 - v / top) * (height - 40)

    path = " ".join(f"{'M' if i == 0 else 'L'}{xy(i, v)[0]:.1f},{xy(i, v)[1]:.1f}" for i, (_, v) in enumerate(points))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
           f'aria-label="{escape(title)}"><title>{escape(title)}</title>',
           f'<path d="{path}" fill="none" stroke="{NEUTRAL}" stroke-width="2"/>']
    for i, (label, v) in enumerate(points):
        x, yv = xy(i, v)
        out.append(f'<circle cx="{x:.1f}" cy="{yv:.1f}" r="3" fill="{NEUTRAL}"><title>{escape(label)}: '
                   f'{v:,.3f}</title></circle>')
    out.append(f'<text x="46" y="{xy(0, 0)[1] + 4:.1f}" text-anchor="end" {_FONT}>0</text>')
    if peak > 0:
        out.append(f'<text x="46" y="{xy(0, peak)[1] + 4:.1f}" text-anchor="end" {_FONT}>{peak:,.2f}</text>')
    for i in sorted({0, n // 2, n - 1}):
        out.append(f'<text x="{xy(i, 0)[0]:.1f}" y="{height - 8}" text-anchor="middle" {_FONT}>'
                   f'{escape(points[i][0])}</text>')
    if limit is not None:
        ly = xy(0, limit)[1]
        out.append(f'<line x1="50" y1="{ly:.1f}" x2="{width - 30}" y2="{ly:.1f}" stroke="{BAD}" '
                   f'stroke-dasharray="6 4"/><text x="{width - 30}" y="{ly - 4:.1f}" text-anchor="end" {_FONT} '
                   f'fill="{BAD}">{escape(limit_label)}</text>')
    out.append("</svg>")
    return "".join(out)


def reliability(bins: Sequence[tuple[float, float, float]], size: int = 320, title: str = "") -> str:
    """A reliability diagram: each bin's (mean forecast, observed share, weight) as a point against the diagonal a
    calibrated forecast lies on; both axes span 0 to the largest value shown (reclaim probabilities are small)."""
    if not bins:
        return f'<svg xmlns="http://www.w3.org/2000/svg" width="{size}" height="24"><text x="4" y="16" {_FONT}>' \
               'no data</text></svg>'
    top = max(max(p, o) for p, o, _ in bins) * 1.1 or 1.0
    pad, plot = 50, size - 70

    def xy(p: float, o: float) -> tuple[float, float]:
        return pad + p / top * plot, 10 + (1 - o / top) * plot

    x0, y0 = xy(0, 0)
    x1, y1 = xy(top, top)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{size}" height="{size}" role="img" '
           f'aria-label="{escape(title)}"><title>{escape(title)}</title>',
           f'<rect x="{x0:.1f}" y="{y1:.1f}" width="{plot}" height="{plot}" fill="none" stroke="#bbb"/>',
           f'<line x1="{x0:.1f}" y1="{y0:.1f}" x2="{x1:.1f}" y2="{y1:.1f}" stroke="#999" stroke-dasharray="4 4"/>']
    path = " ".join(f"{'M' if i == 0 else 'L'}{xy(p, o)[0]:.1f},{xy(p, o)[1]:.1f}" for i, (p, o, _) in enumerate(bins))
    out.append(f'<path d="{path}" fill="none" stroke="{NEUTRAL}" stroke-width="2"/>')
    for p, o, w in bins:
        x, y = xy(p, o)
        out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{NEUTRAL}"><title>forecast {p:.4f}, '
                   f'observed {o:.4f}, {w:,.0f} instances</title></circle>')
    out.append(f'<text x="{x0 - 4:.1f}" y="{y0 + 4:.1f}" text-anchor="end" {_FONT}>0</text>')
    out.append(f'<text x="{x0 - 4:.1f}" y="{y1 + 4:.1f}" text-anchor="end" {_FONT}>{top:.3f}</text>')
    out.append(f'<text x="{x1:.1f}" y="{size - 28}" text-anchor="end" {_FONT}>{top:.3f}</text>')
    out.append(f'<text x="{(x0 + x1) / 2:.1f}" y="{size - 12}" text-anchor="middle" {_FONT}>forecast P(reclaimed)'
               '</text>')
    out.append(f'<text x="12" y="{(y0 + y1) / 2:.1f}" text-anchor="middle" {_FONT} '
               f'transform="rotate(-90 12 {(y0 + y1) / 2:.1f})">observed share</text>')
    out.append("</svg>")
    return "".join(out)
