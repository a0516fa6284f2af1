"""Speculative decoding in the simulator, conditional on a MEASURED acceptance histogram (issue #33, item 4).

A verify step costs k+1 query tokens per sequence and emits 1 + A tokens, A drawn from the histogram.
There is no default acceptance rate: every figure the simulator gives with this option is conditional
on the histogram it was handed.

File format (JSON): {"k": 4, "accepted_counts": [c0, c1, ..., ck]} where c_a is how many verify steps
accepted exactly a draft tokens (a = 0..k), as counted on a real server; counts are non-negative
integers with a positive sum.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

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
    if not isinstance(data, dict) or not isinstance(data.get("k"), int) or data["k"] < 1:
        raise EngineInputError(f"{source}: expected {{'k': int >= 1, 'accepted_counts': [...]}}")
    k = data["k"]
    counts = data.get("accepted_counts")
    if not isinstance(counts, list) or len(counts) != k + 1:
        raise EngineInputError(f"{source}: accepted_counts must list k+1 = {k + 1} counts (0..k accepted)")
    if any(not isinstance(c, int) or isinstance(c, bool) or c < 0 for c in counts) or sum(counts) == 0:
        raise EngineInputError(f"{source}: accepted_counts must be non-negative integers with a positive sum")
    return AcceptanceHistogram(k=k, accepted_counts=tuple(counts), source=source)


def load_histogram(path: Path) -> AcceptanceHistogram:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise EngineInputError(f"{path}: cannot read acceptance histogram ({type(err).__name__})") from None
    return histogram_from_json(data, str(path))
