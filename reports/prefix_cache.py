"""The prefix cache and the turns of multi-turn runs, as the console says them: each engine's measured hit
rate beside what an unbounded cache would reach on the same schedule, and TTFT by turn index. Rendered from
`harness.metrics.prefix_cache.PrefixCacheView` (computed there, once, for the console too)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.metrics.prefix_cache import PrefixCacheView
from reports import fmt
from reports.tables import _table

HOW = (
    "Measured: prompt tokens the engine took from its prefix cache over the prompt tokens of the requests that "
    "reported it (a server: its scraped counters). Predicted: what an unbounded cache of full blocks would "
    "reuse on this schedule if every earlier prompt were already computed (docs/prefix-caching.md); measured "
    "falls short when requests sharing a prefix are in flight together or blocks are evicted. TTFT by turn: "
    "p50 and p99 of the successful requests of each turn index (turn 0 opens a conversation; later turns "
    "resend its history)."
)
HIT_HEAD = ("engine", "prefix cache hit rate (measured)", "unbounded cache on this schedule (predicted)")


def _turn_indices(views: Sequence[PrefixCacheView]) -> list[int]:
    return sorted({t["turn"] for v in views for t in v.turns or []})


def _turn_cell(row: dict[str, Any] | None) -> tuple[str, str]:
    """(p50, detail) of one turn of one engine; '–' where the engine has no such turn."""
    if row is None:
        return "–", ""
    cached = row.get("cached_tokens_mean")
    detail = f"p99 {fmt.seconds(row['ttft_p99'])}, {row['succeeded']}/{row['requests']} ok"
    if cached is not None:
        detail += f", {cached:.0f} of {row['prompt_tokens_mean']:.0f} prompt tokens cached (mean)"
    return fmt.seconds(row["ttft_p50"]), detail


def _turn_rows(views: Sequence[PrefixCacheView]) -> tuple[list[int], list[tuple[str, list[tuple[str, str]]]]]:
    turns = _turn_indices(views)
    rows = []
    for v in views:
        if v.turns:
            by_turn = {t["turn"]: t for t in v.turns}
            rows.append((v.engine, [_turn_cell(by_turn.get(k)) for k in turns]))
    return turns, rows


def prefix_cache_html(views: Sequence[PrefixCacheView]) -> str:
    """The hit-rate table, then TTFT by turn (engines by turn index: p50, p99 and counts beneath)."""
    out = _table(HIT_HEAD, [[fmt.esc(v.engine), fmt.esc(v.measured), fmt.esc(v.predicted or "–")] for v in views])
    turns, rows = _turn_rows(views)
    if rows:
        body = [
            [fmt.esc(engine), *(f'{p50}<br><span class="ci">{fmt.esc(d)}</span>' for p50, d in cells)]
            for engine, cells in rows
        ]
        out += "<h3>TTFT by turn</h3>" + _table(["engine", *(f"turn {k}" for k in turns)], body)
    return out


def prefix_cache_text(views: Sequence[PrefixCacheView]) -> tuple[list[list[str]], list[str], list[list[str]]]:
    """The same two tables as plain-text cells: hit-rate rows, then TTFT-by-turn head and rows."""
    hits = [[v.engine, v.measured, v.predicted or "–"] for v in views]
    turns, rows = _turn_rows(views)
    cells = [[engine, *(f"{p50} ({d})" if d else p50 for p50, d in c)] for engine, c in rows]
    return hits, ["engine", *(f"turn {k}" for k in turns)], cells
