"""The sweep's console table: one row per (rate, engine), the throughput-latency curve in text."""

from __future__ import annotations

from typing import Any

HEADER = ("rate", "engine", "achieved r/s", "out tok/s", "TTFT", "TPOT", "E2E", "SLO met", "goodput r/s", "")


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v * 1e3:.0f} ms" if v < 10 else f"{v:.1f} s"


def _num(v: float | None, fmt: str = ".2f") -> str:
    return "-" if v is None else f"{v:{fmt}}"


def format_table(data: dict[str, Any]) -> str:
    pct = f"p{data['plan']['percentile']:g}"
    header = [*HEADER[:4], f"TTFT {pct}", f"TPOT {pct}", f"E2E {pct}", *HEADER[7:]]
    rows = []
    for p in sorted((p for p in data["points"] if p["phase"] != "probe"), key=lambda p: (p["rate"], p["engine"])):
        rows.append(
            [
                f"{p['rate']:g}",
                p["engine"],
                _num(p["achieved_rps"]),
                _num(p["output_tok_s"], ".0f"),
                _ms(p["ttft_s"]),
                _ms(p["tpot_s"]),
                _ms(p["e2e_s"]),
                "-" if p["attainment"] is None else f"{p['attainment']:.0%}",
                _num(p["goodput_rps"]),
                "ok" if p["meets"] else f"breaks: {p['why']}",
            ]
        )
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join(lines)
