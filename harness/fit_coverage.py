"""How much of its engines' feature space a fit run covered (issue 30, item 3): for each fitted engine, the
largest prefill tokens, decode sequences and held slots per step the fit saw against the engine's own limits
(max_batched_tokens, max_running, max_batch), and the longest request (prompt + output) against the model's
context. A limit the fit fell short of is where a twin on a busier or longer workload extrapolates."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.metrics.frame import read_jsonl
from harness.simulation import run_engines


def _limits(engine: Mapping[str, Any]) -> list[tuple[str, str, int | None]]:
    """(regressor, label, the engine's limit on it) for the engine's scheduler."""
    o = engine.get("options") or {}
    if engine.get("kind") == "static":
        batch = (o.get("static") or {}).get("max_batch", (o.get("static") or {}).get("max_batch_size"))
        return [
            ("decode_seqs", "decode sequences", batch),
            ("held_rows", "held slots", None if batch is None else batch - 1),
        ]
    cont = o.get("continuous") or {}
    return [
        ("prefill_tokens", "prefill tokens", cont.get("max_batched_tokens")),
        ("decode_seqs", "decode sequences", cont.get("max_running")),
    ]


def coverage_lines(
    run_dirs: Sequence[Path], engines: Sequence[str], ranges: Mapping[str, Any], max_context: int | None
) -> list[str]:
    """One line per fitted engine (fitted max / limit per step), and one for the context; '(short)' marks a
    limit the fit did not reach."""
    lines = []
    seen = set()
    for run_dir in run_dirs:
        for engine in run_engines(run_dir):
            name = engine.get("name")
            if name not in engines or name in seen:
                continue
            seen.add(name)
            parts = []
            for key, label, limit in _limits(engine):
                top = (ranges.get(key) or {}).get("max") or 0
                if limit:
                    parts.append(f"{label} {top:,.0f} of {limit:,}" + (" (short)" if top < limit else ""))
            if parts:
                lines.append(f"covers, {name}: {', '.join(parts)} per step")
    longest = 0
    for run_dir in run_dirs:
        if (run_dir / "requests.jsonl").is_file():
            rows, _ = read_jsonl(run_dir / "requests.jsonl")
            longest = max([longest, *(int(r.get("input_tokens", 0)) + int(r.get("output_tokens", 0)) for r in rows)])
    if max_context and longest:
        short = f" (short: {longest / max_context:.0%})" if longest < max_context else ""
        lines.append(f"covers, context: requests up to {longest:,} tokens of max_context {max_context:,}{short}")
    return lines
