"""Results of other benchmark tools as batchmark run directories, so buyers can put the numbers they
already have beside batchmark's: `vllm bench serve` result JSON (with `--save-detailed` per-request data
when present), GuideLLM's benchmarks JSON, AIPerf's profile export (JSONL per request, or the JSON
aggregates), llm-d's Benchmark Report v0.2 / v0.2.1 (inference-perf's and llm-d-benchmark's result schema;
JSON, or YAML as inference-perf writes it) and inference-perf's `per_request_lifecycle_metrics.json` (a list: per
request `start_time` as the send and arrival, `chunk_times` as the streamed chunks, `end_time` as the finish, the
server's `completion_tokens` as the output count). inference-perf states its load only in the `config.yaml` it
writes beside its files, which the import of either of its files reads: `concurrent` is a closed loop of
`concurrency_level` users, `constant` and `poisson` an open loop at the stage's rate.

Each importer maps the tool's metrics to batchmark's dictionary (docs/metrics.md, "Results from other
tools") and says where definitions differ: GuideLLM's TPOT includes the first token; vLLM's and
AIPerf's chunk gaps are per chunk, not per token; AIPerf's "inter-token latency" is batchmark's TPOT; AIPerf and
inference-perf re-tokenize the streamed text to count output tokens, the records take the server's count.

```python
from harness.importers import import_file
run_dir = import_file(Path("vllm-result.json"), Path("runs/vllm"))
```
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.importers import aiperf, guidellm, inference_perf, llmd, vllm
from harness.importers.common import Imported, fail, text_of
from harness.importers.rundir import write_run_dir
from harness.importers.yaml_doc import YAML_SUFFIXES, read_yaml
from harness.metrics import SLO

FORMATS = ("auto", "vllm", "guidellm", "aiperf", "llm-d-br", "inference-perf")


def read(path: Path, fmt: str = "auto", label: str | None = None) -> Imported:
    """Parse a result file of one of the known tools (`fmt` "auto": told apart by their shapes)."""
    if fmt not in FORMATS:
        raise fail(path, "--format", f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")
    text = text_of(path, "a result file holds a JSON document or JSON lines")
    if path.suffix.lower() in YAML_SUFFIXES:  # inference-perf writes its Benchmark Report as YAML
        return _document(path, read_yaml(path, text), fmt, label)
    lines = _jsonl(path, text)
    if lines and (len(lines) > 1 or aiperf.looks_like_jsonl(lines[0][1])):
        if fmt not in ("auto", "aiperf") or not aiperf.looks_like_jsonl(lines[0][1]):
            raise fail(
                path,
                "line 1",
                "a JSON-lines file; only AIPerf's profile_export.jsonl is read as JSONL "
                "(records with metadata and metrics)",
            )
        return aiperf.parse_jsonl(path, lines, label)
    return _document(path, _json(path, text, "line {}"), fmt, label)


def _document(path: Path, data: Any, fmt: str, label: str | None) -> Imported:
    """One parsed document (JSON or YAML) handed to the tool whose shape it has."""
    if isinstance(data, list) and fmt in ("auto", "inference-perf"):
        if not data:
            raise fail(path, "top level", "an empty list: inference-perf's per-request file with no request in it")
        if inference_perf.looks_like(data) or fmt == "inference-perf":
            return inference_perf.parse(data, path, label)
    if not isinstance(data, dict):
        listed = isinstance(data, list)
        hint = " (inference-perf's per-request file is a list of objects with start_time)" if listed else ""
        raise fail(path, "top level", f"expected a JSON object, got {type(data).__name__}{hint}")
    for name, looks, parse in (
        ("llm-d-br", llmd.looks_like, llmd.parse),
        ("guidellm", guidellm.looks_like, guidellm.parse),
        ("vllm", vllm.looks_like, vllm.parse),
        ("aiperf", aiperf.looks_like_json, aiperf.parse_json),
    ):
        if fmt in ("auto", name) and looks(data):
            return parse(data, path, label)
    wanted = "a known tool's result" if fmt == "auto" else f"a {fmt} result"
    raise fail(
        path,
        "top level",
        f"not {wanted}: expected GuideLLM's benchmarks list, vLLM's ttfts / mean_ttft_ms, "
        "AIPerf's metric blocks (time_to_first_token: {unit, avg, ...}) or an llm-d Benchmark Report "
        '(version "0.2", run, results)',
    )


def import_file(
    path: Path,
    out: Path,
    *,
    fmt: str = "auto",
    label: str | None = None,
    slo: SLO | None = None,
    argv: list[str] | None = None,
) -> Path:
    """Read `path` and write it as a run directory `out`; returns `out`."""
    imported = read(path, fmt, label)
    return write_run_dir(imported, out, slo=slo or SLO(), argv=argv or [])


def _jsonl(path: Path, text: str) -> list[tuple[int, dict[str, Any]]] | None:
    """The lines as objects when the file is JSON lines (more than one top-level value), else None."""
    rows = [(i + 1, line) for i, line in enumerate(text.splitlines()) if line.strip()]
    if len(rows) < 1 or not rows[0][1].lstrip().startswith("{"):
        return None
    try:
        first = json.loads(rows[0][1])
    except (ValueError, RecursionError):
        return None  # a pretty-printed JSON document: its first line is not a whole object
    out = [(rows[0][0], first)]
    for n, line in rows[1:]:
        obj = _json(path, line, f"line {n}")
        if not isinstance(obj, dict):
            raise fail(path, f"line {n}", "not a JSON object")
        out.append((n, obj))
    return out if isinstance(first, dict) else None


def _json(path: Path, text: str, where: str) -> Any:
    """`text` parsed, or the one-line error: `where` names the line ("line {}": the parser's own line)."""
    try:
        return json.loads(text)
    except ValueError as exc:
        line = getattr(exc, "lineno", "?")
        raise fail(path, where.format(line), f"not valid JSON, truncated? ({exc})") from None
    except RecursionError:  # json recurses per nesting level
        raise fail(path, where.format(1), "JSON nested too deeply to be a result file") from None
