"""Number formatting shared by the HTML tables, the verdict and the Markdown summary."""

from __future__ import annotations

import html
import math
from typing import Any


def missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and not math.isfinite(v))


def seconds(v: Any, digits: int = 3) -> str:
    """0.0123 -> "12.3 ms", 1.5 -> "1.50 s", 2e-5 -> "20.0 µs"."""
    if missing(v):
        return "–"
    v = float(v)
    a = abs(v)
    if a >= 1.0:
        return f"{v:.{digits}g} s" if a < 1000 else f"{v:,.0f} s"
    if a >= 1e-3 or a == 0:
        return f"{v * 1e3:.{digits}g} ms"
    return f"{v * 1e6:.{digits}g} µs"


def number(v: Any, digits: int = 4) -> str:
    if missing(v):
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    v = float(v)
    if v != 0 and (abs(v) >= 1e6 or abs(v) < 1e-3):
        return f"{v:.{digits - 1}e}"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.{digits}g}"


def rate(v: Any, reason: str | None = None, *, html_title: bool = False) -> str:
    """A rate, or "n/a" where the run says why it is undefined (never a 0.0 standing in for no data)."""
    if missing(v) and reason:
        return f'<span title="{esc(reason)}">n/a</span>' if html_title else "n/a"
    return number(v)


def share(v: Any, digits: int = 1) -> str:
    return "–" if missing(v) else f"{float(v) * 100:.{digits}f}%"


def usd(v: Any) -> str:
    if missing(v):
        return "–"
    v = float(v)
    return f"${v:,.2f}" if abs(v) >= 1 else f"${v:.4g}"


def pvalue(p: Any) -> str:
    if missing(p):
        return "–"
    p = float(p)
    if p < 1e-300:
        return "< 1e-300"
    return f"{p:.2g}" if p < 0.001 else f"{p:.3f}"


def unresolved(count: Any, label: str) -> str | None:
    """Why percentile `label` ("p99") of `count` values is no resolved percentile (the judge's bound), or None:
    a p99 of 64 values is about their maximum, and its bootstrap interval would look tight."""
    if missing(count) or not label.startswith("p"):
        return None
    from harness.judge.verdict import tail_is_resolved, values_to_resolve

    q = float(label[1:]) / 100.0
    if int(count) == 0 or tail_is_resolved(int(count), q):
        return None
    return f"≈ the extreme of {int(count)} values: unresolved, {label} needs {values_to_resolve(q)}"


def ci(low: Any, high: Any, fmt=seconds) -> str:
    if missing(low) or missing(high):
        return ""
    return f"[{fmt(low)}, {fmt(high)}]"


def esc(v: Any) -> str:
    return html.escape(str(v), quote=True)
