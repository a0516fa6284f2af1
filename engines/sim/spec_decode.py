"""Speculative decoding in the simulator, conditional on a MEASURED acceptance histogram (issue #33, item 4).

A verify step costs k+1 query tokens per sequence and emits 1 + A tokens, A drawn from the histogram.
There is no default acceptance rate: every figure the simulator gives with this option is conditional
on the histogram it was handed.

File format (JSON): {"k": 4, "accepted_counts": [c0, c1, ..., ck]} where c_a is how many verify steps
accepted exactly a draft tokens (a = 0..k), as counted on a real server; counts are non-negative
integers with a positive sum.

Or a scraped server series (`server/<engine>-t<trial>.jsonl` of a run against vLLM, docs/run-directory.md):
the histogram is then derived from the trial's counter deltas, exactly, since vLLM counts accepted tokens per
draft position and acceptance stops at the first rejection: with D drafts and d_i drafts that accepted position
i, c_0 = D - d_0, c_a = d_(a-1) - d_a, c_k = d_(k-1). Its k is the number of positions (vLLM's
`num_speculative_tokens`); drafts that proposed fewer tokens (an n-gram drafter finding a short match) are
costed as k-token drafts here.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

from engines.errors import EngineInputError


@dataclass(frozen=True)
class AcceptanceHistogram:
    k: int
    accepted_counts: tuple[int, ...]
    source: str

    def query_tokens_per_sequence(self) -> int:
        """Tokens one verify step puts through the model per sequence: the last token plus k drafts."""
        return self.k + 1

    def mean_acceptance_length(self) -> float:
        """vLLM's definition: 1 + accepted / drafts steps, i.e. the mean tokens a verify step emits."""
        total = sum(self.accepted_counts)
        return 1 + sum(a * c for a, c in enumerate(self.accepted_counts)) / total

    def describe(self) -> dict[str, object]:
        return {
            "histogram": self.source,
            "k": self.k,
            "accepted_counts": list(self.accepted_counts),
            "mean_acceptance_length": self.mean_acceptance_length(),
            "conditional": "every figure of this engine is conditional on this measured acceptance histogram",
        }

    def draw_emitted(self, rng: random.Random) -> int:
        """Tokens one verify step emits for one sequence: the bonus/corrected token plus A accepted."""
        accepted = rng.choices(range(self.k + 1), weights=self.accepted_counts)[0]
        return 1 + accepted


def histogram_from_json(data: object, source: str) -> AcceptanceHistogram:
    k_value = data.get("k") if isinstance(data, dict) else None
    # JSON true is a Python int: refused, or `"k": true` would simulate one draft token
    if not isinstance(k_value, int) or isinstance(k_value, bool) or k_value < 1:
        raise EngineInputError(f"{source}: expected {{'k': int >= 1, 'accepted_counts': [...]}}")
    k = data["k"]
    counts = data.get("accepted_counts")
    if not isinstance(counts, list) or len(counts) != k + 1:
        raise EngineInputError(f"{source}: accepted_counts must list k+1 = {k + 1} counts (0..k accepted)")
    if any(not isinstance(c, int) or isinstance(c, bool) or c < 0 for c in counts) or sum(counts) == 0:
        raise EngineInputError(f"{source}: accepted_counts must be non-negative integers with a positive sum")
    return AcceptanceHistogram(k=k, accepted_counts=tuple(counts), source=source)


def histogram_from_series(rows: list[dict[str, object]], source: str) -> AcceptanceHistogram:
    """The acceptance histogram of a scraped trial: counter deltas between its first and last sample that hold
    the drafts and the per-position counts (module docstring)."""
    ok = [r for r in rows if r.get("ok") and "spec_drafts" in r and isinstance(r.get("spec_accepted_per_pos"), list)]
    if len(ok) < 2:
        raise EngineInputError(
            f"{source}: no two samples with vLLM's spec_decode_num_drafts and _accepted_tokens_per_pos counters "
            "(a run against vLLM with speculative decoding, scraped)"
        )
    if (replicas := ok[0].get("router_replicas")) is not None:  # harness/server_scrape.py marks a fleet's series
        raise EngineInputError(
            f"{source}: scraped at a router's URL (each scrape reached one replica of {replicas}): "
            "no one server's counts"
        )
    if len(named := {r.get("replica") for r in ok}) > 1:  # a fleet scraped replica by replica (scrape=URL|URL)
        raise EngineInputError(
            f"{source}: {len(named)} replicas' series in one file: the per-position counts are one server's "
            "(scrape that replica alone)"
        )
    first, last = ok[0], ok[-1]
    before, after = first["spec_accepted_per_pos"], last["spec_accepted_per_pos"]
    if len(before) != len(after):
        raise EngineInputError(
            f"{source}: the draft positions changed during the trial ({len(before)} -> {len(after)})"
        )
    try:
        drafts = round(float(last["spec_drafts"]) - float(first["spec_drafts"]))  # type: ignore[arg-type]
        reached = [round(float(b) - float(a)) for a, b in zip(before, after, strict=True)]
        # a restart between the ends can count past where it began: every step must count up
        back = any(float(b["spec_drafts"]) < float(a["spec_drafts"]) for a, b in pairwise(ok))  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):  # a count that is no finite number ("x", null, inf)
        raise EngineInputError(
            f"{source}: spec_drafts or spec_accepted_per_pos holds a value that is not a count"
        ) from None
    counts = [drafts - reached[0], *(reached[a - 1] - reached[a] for a in range(1, len(reached))), reached[-1]]
    if back or drafts <= 0 or any(c < 0 for c in counts):
        raise EngineInputError(f"{source}: no drafts in the trial, or counters that went back (a server restart?)")
    return histogram_from_json({"k": len(reached), "accepted_counts": counts}, f"{source} (derived)")


def load_histogram(path: Path) -> AcceptanceHistogram:
    if path.suffix == ".jsonl":  # a scraped server series: derive the histogram from its counters
        return histogram_from_series(_series_rows(path), str(path))
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise EngineInputError(f"{path}:{err.lineno}: acceptance histogram is not JSON ({err.msg})") from None
    except (OSError, UnicodeDecodeError, RecursionError) as err:  # unreadable, binary, or nested past json's reach
        raise EngineInputError(f"{path}: cannot read acceptance histogram ({type(err).__name__})") from None
    return histogram_from_json(data, str(path))


def _series_rows(path: Path) -> list[dict[str, Any]]:
    """A server series' rows; a line that is no JSON object is one error naming it (engines/ cannot use the
    harness's records reader, which says it in the same words)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:  # UnicodeDecodeError: a binary file
        raise EngineInputError(f"{path}: cannot read a server series ({type(err).__name__})") from None
    rows = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except (ValueError, RecursionError) as err:  # RecursionError: nested past the parser's limit
            raise EngineInputError(f"{path}:{number}: not a JSON object: {err}") from None
        if not isinstance(row, dict):
            raise EngineInputError(f"{path}:{number}: not a JSON object: found {type(row).__name__}")
        rows.append(row)
    return rows
