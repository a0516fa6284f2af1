"""One batchmark run against vLLM with speculative decoding, its acceptance counts checked three ways
(docs/measurements/2026-12-06-vllm-cpu-spec-decode.md).

Usage: python spec_decode_check.py BEFORE.prom AFTER.prom RUN_DIR

- vLLM's own /metrics, read here with a plain regex (not batchmark's parser): the spec-decode counters in a
  snapshot taken just before `batchmark run` and one just after, their deltas, and the per-position accepted
  counter summed over positions (it must equal the accepted-token counter);
- batchmark's `server.spec_decode` in metrics.json (its scrape's first-to-last counter deltas in the trial);
- batchmark's `spec_decode` in metrics.json (the records' per-request counts summed), and the sum of
  `records.jsonl`'s per-request fields done here.
Prints one Markdown row per source and exits 1 when any count differs from vLLM's own deltas.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

_SAMPLE = re.compile(r"^(vllm:spec_decode_num_\w+?)_total(?:\{[^}]*\})?\s+(\S+)", re.MULTILINE)
_COUNTS = ("drafts", "draft_tokens", "accepted_tokens")


def vllm_counters(path: Path) -> dict[str, float]:
    """The spec-decode counters of one /metrics snapshot, summed over label sets (engine, model, position)."""
    totals: dict[str, float] = {}
    for name, value in _SAMPLE.findall(path.read_text()):
        totals[name] = totals.get(name, 0.0) + float(value)
    return totals


def acceptance(drafts: float, draft_tokens: float, accepted: float) -> dict[str, float]:
    """vLLM's definitions: rate = accepted / draft tokens, mean acceptance length = 1 + accepted / drafts."""
    return {
        "drafts": drafts,
        "draft_tokens": draft_tokens,
        "accepted_tokens": accepted,
        "acceptance_rate": accepted / draft_tokens,
        "mean_acceptance_length": 1 + accepted / drafts,
    }


def main(before: Path, after: Path, run: Path) -> int:
    start, end = vllm_counters(before), vllm_counters(after)
    delta = {k: end.get(k, 0.0) - start.get(k, 0.0) for k in end}
    prefix = "vllm:spec_decode_num_"
    own = acceptance(*(delta[prefix + k] for k in _COUNTS))
    per_position = delta.get(prefix + "accepted_tokens_per_pos", float("nan"))
    metrics = json.loads((run / "metrics.json").read_text())
    rows = {"vLLM /metrics, deltas around the run (this script's regex)": own}
    for engine, summary in metrics["engines"].items():
        rows[f"{engine}: `server.spec_decode` (batchmark's scrape)"] = summary["server"]["spec_decode"]
        rows[f"{engine}: `spec_decode` (records, per request, summed)"] = summary["spec_decode"]
    records = [json.loads(line) for line in (run / "records.jsonl").read_text().splitlines()]
    counted = [r for r in records if r.get("spec_drafts") is not None]
    rows[f"records.jsonl summed here ({len(counted)} of {len(records)} records with counts)"] = acceptance(
        *(sum(r[f"spec_{k}"] for r in counted) for k in _COUNTS)
    )
    print("| source | drafts | draft tokens | accepted | acceptance rate | mean acceptance length |")
    print("|---|---|---|---|---|---|")
    mismatched = []
    for name, row in rows.items():
        print(
            f"| {name} | {row['drafts']:.0f} | {row['draft_tokens']:.0f} | {row['accepted_tokens']:.0f} | "
            f"{row['acceptance_rate']:.4f} | {row['mean_acceptance_length']:.4f} |"
        )
        mismatched += [name for k in _COUNTS if row[k] != own[k]]
    print(
        f"\nper-position accepted counter, delta summed over positions: {per_position:.0f} "
        f"(accepted-token counter delta {own['accepted_tokens']:.0f})"
    )
    if per_position != own["accepted_tokens"]:
        mismatched.append("per-position accepted counter")
    print("MISMATCH: " + "; ".join(sorted(set(mismatched))) if mismatched else "all counts equal vLLM's own deltas")
    return 1 if mismatched else 0


if __name__ == "__main__":
    paths = [Path(arg) for arg in sys.argv[1:]]
    missing = next((str(p) for p in paths if not p.exists()), None)
    if len(paths) != 3 or missing:
        print(f"{missing}: not found" if missing else __doc__.split("\n\n")[1], file=sys.stderr)
        sys.exit(2)
    sys.exit(main(*paths))
