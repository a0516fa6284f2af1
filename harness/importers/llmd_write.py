"""A batchmark run directory as llm-d Benchmark Reports v0.2, one per engine run (`batchmark export --format llm-d-br`).

The schema is the one `harness.importers.llmd` reads (llm-d/llm-d-benchmark `benchmark_report/schema_v0_2.py`
@ 093eecc2a566926f4fccc2d2f50af5d9105bb6ed). What a report carries from batchmark's summary:
- `requests`: total, failures (failed requests), input and output length statistics (successful requests);
- `latency`: `time_to_first_token` and `request_latency` are batchmark's `ttft_sent` and `e2e_sent` (from the
  send, as the other tools writing this schema time them), `time_per_output_token` its TPOT ((finish - first
  token) / (n - 1); inference-perf's ends at the last content chunk instead),
  `inter_token_latency` its per-token ITL; mean, min, max and p50 ... p99.9 in ms;
- `throughput`: the whole-run rates (count / duration, as the other tools define throughput);
- `scenario.load`: batchmark as the tool, the lengths, and `rate_qps` (an open loop's offered rate) or
  `concurrency` (a closed loop's users; infinity for offline); `native.args` the command line.
What it cannot carry is left out, never written as 0: confidence intervals, the arrival-based TTFT and E2E,
the steady-window rates, SLO attainment and goodput, fairness, cost and validity flags. A statistic with no
mean (no successful request, or one censored by a stopped run) is left out whole.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from engines.sim.files import read_json_object
from harness.errors import HarnessInputError
from harness.importers.llmd import DISTRIBUTIONS, LENGTHS, PERCENTILES, RATES, VERSION
from harness.metrics import describe, load_records
from harness.metrics.latency import succeeded

# batchmark's summary name -> the report's units and the factor from seconds
UNITS = {"ttft_sent": ("ms", 1e3), "e2e_sent": ("ms", 1e3), "tpot": ("ms/token", 1e3), "itl": ("ms/token", 1e3)}
RATE_UNITS = {"request_rate": "queries/s", "output_token_rate": "tokens/s", "total_token_rate": "tokens/s"}


def export_run(run_dir: Path, out: Path) -> list[Path]:
    """One report per engine run of `run_dir`, written as `out/<engine>-trial<k>.json`; returns the paths."""
    for name in ("metrics.json", "manifest.json"):
        if not (run_dir / name).is_file():
            raise HarnessInputError(f"{run_dir}: not a run directory (no {name})")
    metrics = read_json_object(run_dir / "metrics.json", "run's metrics")
    manifest = read_json_object(run_dir / "manifest.json", "run's manifest")
    runs = [r for r in metrics.get("runs") or [] if isinstance(r, dict) and isinstance(r.get("summary"), dict)]
    if not runs:
        raise HarnessInputError(f"{run_dir / 'metrics.json'}: field runs: no engine run with a summary to export")
    records = load_records(run_dir / "records.jsonl") if (run_dir / "records.jsonl").is_file() else None
    reports = {}  # every report built before any is written: a bad summary leaves nothing behind
    for i, run in enumerate(runs):
        mine = None
        if records is not None and not records.empty:
            mine = records[(records["engine"] == run.get("engine")) & (records["trial"] == run.get("trial", 0))]
        try:
            name = f"{run['engine']}-trial{run.get('trial', 0)}.json"
            reports[name] = report(run, manifest, mine, run_dir.name)
        except (KeyError, TypeError, AttributeError) as exc:  # a summary of another shape than summarize writes
            where = f"{run_dir / 'metrics.json'}: field runs[{i}]"
            raise HarnessInputError(f"{where}: not a batchmark run ({exc!r})") from None
    out.mkdir(parents=True, exist_ok=True)
    for name, data in reports.items():
        (out / name).write_text(json.dumps(data, indent=2) + "\n")
    return [out / name for name in reports]


def report(run: dict[str, Any], manifest: dict[str, Any], records: Any, name: str) -> dict[str, Any]:
    """The Benchmark Report v0.2 of one engine run (`run`: an entry of metrics.json `runs`)."""
    summary = run["summary"]
    counts = summary["requests"]
    requests: dict[str, Any] = {"total": int(counts["total"]), "failures": int(counts["failed"])}
    lengths = _lengths(records)
    requests.update(lengths)
    latency = {
        m.theirs: stats
        for m in DISTRIBUTIONS
        if m.ours in UNITS and (stats := _statistics(summary["latency"].get(m.ours), *UNITS[m.ours])) is not None
    }
    whole = summary["throughput"].get("whole_run") or {}
    throughput = {
        theirs: {"units": RATE_UNITS[ours], "mean": whole[ours]}
        for ours, theirs, _, _ in RATES
        if whole.get(ours) is not None
    }
    out: dict[str, Any] = {
        "version": VERSION,
        "run": _run(manifest, name, run, whole),
        "results": {
            "request_performance": {"aggregate": {"requests": requests, "latency": latency, "throughput": throughput}}
        },
    }
    load = _load(manifest, summary, lengths)
    if load is not None:
        out["scenario"] = {"load": load}
    return out


def _statistics(dist: dict[str, Any] | None, units: str, scale: float) -> dict[str, Any] | None:
    if not dist or dist.get("mean") is None:
        return None
    out = {"units": units, "mean": dist["mean"] * scale}
    for key in ("min", "max"):
        if dist.get(key) is not None:
            out[key] = dist[key] * scale
    for ours, theirs in PERCENTILES.items():
        value = ((dist.get("percentiles") or {}).get(ours) or {}).get("value")
        if value is not None:
            out[theirs] = value * scale
    return out


def _lengths(records: Any) -> dict[str, Any]:
    """Input and output length statistics of the successful requests (none without records)."""
    if records is None or records.empty:
        return {}
    ok = records[succeeded(records)]
    out = {}
    for column, theirs in LENGTHS:
        stats = _statistics(describe(ok[column].to_numpy(dtype=float), n_boot=0), "count", 1.0)
        if stats is not None:
            out[theirs] = stats
    return out


def _run(manifest: dict[str, Any], name: str, run: dict[str, Any], whole: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"uid": f"{name}/{run['engine']}/trial{run.get('trial', 0)}", "eid": name}
    time: dict[str, Any] = {}
    if manifest.get("started_at"):
        time["start"] = manifest["started_at"]
    if whole.get("duration_s") is not None:
        time["duration"] = f"PT{whole['duration_s']:.6f}S"  # ISO 8601
    if time:
        out["time"] = time
    return out


def _load(manifest: dict[str, Any], summary: dict[str, Any], lengths: dict[str, Any]) -> dict[str, Any] | None:
    """scenario.load, when the run has the input length the schema requires (>= 1 token)."""
    inputs = lengths.get("input_length")
    if inputs is None or inputs["mean"] < 1:
        return None
    from importlib.metadata import PackageNotFoundError, version

    try:
        tool_version = version("batchmark")
    except PackageNotFoundError:
        tool_version = "unknown"
    standardized: dict[str, Any] = {
        "tool": "batchmark",
        "tool_version": tool_version,
        "source": "random",
        "input_seq_len": _length(inputs),
    }
    if "output_length" in lengths and lengths["output_length"]["mean"] >= 1:
        standardized["output_seq_len"] = _length(lengths["output_length"])
    scenario = (manifest.get("settings") or {}).get("scenario") or {}
    if scenario.get("kind") == "closed":
        standardized["concurrency"] = int(scenario.get("users") or 1)
    elif scenario.get("kind") == "offline":
        standardized["concurrency"] = math.inf  # every request at once: the schema's ".inf"
    elif (summary.get("load") or {}).get("offered_rate_rps"):
        standardized["rate_qps"] = summary["load"]["offered_rate_rps"]
    workload = (manifest.get("workload") or {}).get("name")
    return {
        "metadata": {"schema_version": "0.0.1", **({"description": str(workload)} if workload else {})},
        "standardized": standardized,
        "native": {"args": {"argv": manifest.get("command") or []}},
    }


def _length(stats: dict[str, Any]) -> dict[str, Any]:
    """A SequenceLength: the distribution of lengths the run had (`other`: batchmark's come from a workload)."""
    out = {"distribution": "other", "value": stats["mean"]}
    if "min" in stats:
        out["min"] = int(stats["min"])
    if "max" in stats:
        out["max"] = max(1, int(stats["max"]))
    return out
