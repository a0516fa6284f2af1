"""Reading a run directory (docs/run-directory.md) into what the report draws from.

Records are read as `harness.metrics.load_records` reads them (pyarrow's multithreaded reader, the same
columns and dtypes as `harness.metrics.records_frame`), but the token times stay one flat numpy array
(`TokenTimes`) instead of becoming a Python list per request. Anything pyarrow refuses (a truncated last
line, an unexpected type) falls back to the metrics loaders, which explain the problem.

Summaries come from the run's metrics.json when it has them (they are the numbers the run reported);
an engine run missing there is summarised here with `harness.metrics.summarize`.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from harness.metrics import SLO, load_records, request_latencies, summarize
from harness.metrics.arrow import ARROW_ERRORS, parse_records, read_json_lines
from harness.metrics.columns import RowError
from harness.metrics.frame import RECORD_COLUMNS, read_jsonl
from harness.metrics.server_series import read_series
from harness.metrics.summary import SUMMARY_SCHEMA_VERSION
from harness.records import RecordError
from reports.steps import StepTrace, read_trace


@dataclass
class TokenTimes:
    """Every output token time of a set of records, flat, with the row position each belongs to."""

    flat: np.ndarray
    owner: np.ndarray
    counts: np.ndarray

    @classmethod
    def from_lists(cls, lists: Any) -> TokenTimes:
        counts = np.fromiter((len(v) for v in lists), dtype=np.int64, count=len(lists))
        flat = np.concatenate([np.asarray(v, dtype=np.float64) for v in lists]) if len(lists) else np.empty(0)
        return cls(flat, np.repeat(np.arange(counts.size), counts), counts)

    def take(self, rows: np.ndarray) -> TokenTimes:
        """The token times of `rows` (positions), renumbered 0..len(rows)-1 in that order."""
        offsets = np.concatenate([[0], np.cumsum(self.counts)])
        counts = self.counts[rows]
        owner, pos = _expand(offsets[rows], counts)
        return TokenTimes(self.flat[pos], owner, counts)

    def lists(self) -> list[list[float]]:
        return [a.tolist() for a in np.split(self.flat, np.cumsum(self.counts)[:-1])] if self.counts.size else []


def _expand(starts: np.ndarray, spans: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    owner = np.repeat(np.arange(starts.size), spans)
    pos = np.repeat(starts, spans) + (np.arange(owner.size) - np.repeat(np.cumsum(spans) - spans, spans))
    return owner, pos


@dataclass
class EngineRun:
    """One engine's run (one trial) inside one run directory."""

    run_label: str
    engine: str
    trial: int
    records: pd.DataFrame  # records_frame columns; token_times holds lists only once `materialise` ran
    tokens: TokenTimes
    trace: StepTrace | None
    summary: dict[str, Any] = field(default_factory=dict)
    stopped_early: bool = False
    stop: dict[str, Any] | None = None  # metrics.json's stopped_early entry: the rule, its time, its evidence
    machine: dict[str, Any] | None = None  # harness.machine noise of the trial, when the run sampled it
    summary_source: str = "metrics.json"
    label: str = ""
    server: pd.DataFrame | None = None  # server/<engine>-t<trial>.jsonl: an HTTP target's scraped metrics
    _latencies: pd.DataFrame | None = None
    _done: pd.Series | None = None

    @property
    def steps(self) -> pd.DataFrame | None:
        """The step trace's rows: every step, or evenly spaced runs of steps for a long trace."""
        return None if self.trace is None else self.trace.frame

    @property
    def done(self) -> pd.Series:
        """`harness.metrics.latency.done_time`: finish, else last token, else send (cached)."""
        if self._done is None:
            counts = self.tokens.counts
            last = np.full(counts.size, np.nan)
            has = counts > 0
            last[has] = self.tokens.flat[np.cumsum(counts)[has] - 1]
            rec = self.records
            self._done = rec["t_finish"].fillna(pd.Series(last, index=rec.index)).fillna(rec["t_sent"])
        return self._done

    @property
    def latencies(self) -> pd.DataFrame:
        """`harness.metrics.request_latencies` of the records (cached)."""
        if self._latencies is None:
            self._latencies = request_latencies(self.records)
        return self._latencies

    def materialise(self) -> pd.DataFrame:
        """The records with token_times as Python lists, as every `harness.metrics` function expects."""
        if self.records["token_times"].map(len).sum() != self.tokens.flat.size:
            self.records["token_times"] = self.tokens.lists()
        return self.records


@dataclass
class RunData:
    """One run directory as the report reads it: manifest, schedule, metrics and every engine run."""

    path: Path
    label: str
    manifest: dict[str, Any]
    schedule: pd.DataFrame | None
    metrics: dict[str, Any] | None
    engine_runs: list[EngineRun]
    notes: list[str] = field(default_factory=list)

    @property
    def fingerprint(self) -> str | None:
        workload = self.manifest.get("workload")
        fp = workload.get("fingerprint") if isinstance(workload, dict) else None
        return str(fp) if fp else None

    @property
    def workload_name(self) -> str:
        workload = self.manifest.get("workload")
        name = workload.get("name") if isinstance(workload, dict) else workload
        return str(name) if name else self.path.name

    def primary(self) -> list[EngineRun]:
        """One engine run per engine: its first trial (the one figures and tables show)."""
        seen: dict[str, EngineRun] = {}
        for er in sorted(self.engine_runs, key=lambda e: e.trial):
            seen.setdefault(er.engine, er)
        return list(seen.values())


def read_json(path: Path) -> dict[str, Any]:
    """The JSON object in `path` (a run's or study's own file); else one RecordError naming the file."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise RecordError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise RecordError(f"{path}: not valid JSON: {exc}") from exc
    except RecursionError:  # json recurses per nesting level
        raise RecordError(f"{path}: nested too deeply") from None
    if not isinstance(data, dict):
        raise RecordError(f"{path}: expected a JSON object")
    return data


def read_records(path: Path) -> tuple[pd.DataFrame, TokenTimes]:
    """records.jsonl as (frame with the `records_frame` dtypes but empty token_times, TokenTimes)."""
    try:
        frame, flat, counts = parse_records(path)
    except (*ARROW_ERRORS, OSError, RowError, UnicodeError):
        frame = load_records(path)  # raises a precise RecordError, or skips a truncated last line
        return frame, TokenTimes.from_lists(frame["token_times"])
    frame["token_times"] = [()] * len(frame)
    frame.attrs["skipped_lines"] = []
    return frame[list(RECORD_COLUMNS)], TokenTimes(flat, np.repeat(np.arange(counts.size), counts), counts)


def read_schedule(path: Path) -> pd.DataFrame | None:
    if not path.exists():
        return None
    try:
        return read_json_lines(path, None).to_pandas()
    except (pa.ArrowInvalid, OSError):  # the records' reader names the bad line, as for records and steps
        rows, _ = read_jsonl(path)
        return pd.DataFrame(rows)


def run_slo(manifest: dict[str, Any], metrics: dict[str, Any] | None) -> SLO:
    """The SLO the run was judged by: metrics.json's summaries, then the manifest, then the default."""
    for run in (metrics or {}).get("runs") or []:
        limits = ((run.get("summary") or {}).get("slo") or {}).get("slo")
        if isinstance(limits, dict):
            return SLO(**{k: limits.get(k) for k in ("ttft_s", "tpot_s", "e2e_s")})
    settings = manifest.get("settings") if isinstance(manifest.get("settings"), dict) else {}
    limits = settings.get("slo")
    if isinstance(limits, dict):
        return SLO(**{k: limits[k] for k in ("ttft_s", "tpot_s", "e2e_s") if k in limits})
    return SLO()


def _price(manifest: dict[str, Any]) -> dict[str, Any]:
    """The price the run was costed at (`settings.price_per_hour` of the manifest), else the default."""
    settings = manifest.get("settings")
    if isinstance(settings, dict) and isinstance(settings.get("price_per_hour"), int | float):
        return {"price_per_hour": float(settings["price_per_hour"])}
    return {}


def _summaries(metrics: dict[str, Any] | None) -> dict[tuple[str, int], dict[str, Any]]:
    out: dict[tuple[str, int], dict[str, Any]] = {}
    if not metrics:
        return out
    for run in metrics.get("runs") or []:
        summary = run.get("summary")
        if isinstance(summary, dict) and summary.get("schema_version") == SUMMARY_SCHEMA_VERSION:
            out[(str(run.get("engine")), int(run.get("trial") or 0))] = run
    if not out:
        for engine, summary in (metrics.get("engines") or {}).items():
            if isinstance(summary, dict) and summary.get("schema_version") == SUMMARY_SCHEMA_VERSION:
                out[(str(engine), int(summary.get("trial") or 0))] = {"summary": summary}
    return out


def load_run(path: str | Path, label: str | None = None, *, n_boot: int = 1000, seed: int = 0) -> RunData:
    """Everything the report needs from one run directory."""
    path = Path(path)
    if not path.is_dir():
        raise RecordError(f"{path}: not a run directory")
    records_path = path / "records.jsonl"
    if not records_path.exists():
        raise RecordError(f"{path}: no records.jsonl (is this a batchmark run directory?)")
    manifest = read_json(path / "manifest.json") if (path / "manifest.json").exists() else {}
    metrics = read_json(path / "metrics.json") if (path / "metrics.json").exists() else None
    notes: list[str] = []
    if not manifest:
        notes.append("no manifest.json: lineage unknown")
    frame, tokens = read_records(records_path)
    schedule = read_schedule(path / "requests.jsonl")
    # ids as lists, as `harness.metrics.compare.paired_deltas` reads them
    scheduled = (
        set(schedule["request_id"].astype(str).tolist()) if schedule is not None and "request_id" in schedule else None
    )
    known = _summaries(metrics)
    if frame.empty and not known:
        raise RecordError(f"{records_path}: no records")
    slo = run_slo(manifest, metrics)
    run_label = label or path.resolve().name
    engine_runs: list[EngineRun] = []
    for (engine, trial), rows in frame.groupby(["engine", "trial"], sort=True).indices.items():
        rows = np.sort(rows)
        records = frame.iloc[rows].reset_index(drop=True)
        records.attrs["skipped_lines"] = frame.attrs.get("skipped_lines", [])
        trace_path = path / "steps" / f"{engine}-t{trial}.jsonl"
        trace = read_trace(trace_path) if trace_path.exists() else None
        er = EngineRun(run_label, str(engine), int(trial), records, tokens.take(rows), trace)
        server_path = path / "server" / f"{engine}-t{trial}.jsonl"
        if server_path.exists():
            er.server = pd.DataFrame(read_series(server_path))
        entry = known.get((str(engine), int(trial)))
        if scheduled is not None:
            never = len(scheduled - set(records["request_id"].tolist()))
            if never:
                if entry is None:
                    why = "the run was killed or crashed first"
                else:
                    why = "a stop rule ended it" if entry.get("stopped_early") else "the run ended before them"
                notes.append(
                    f"{engine} trial {trial}: {never} of {len(scheduled)} scheduled requests were never "
                    f"sent ({why}); rates and percentiles cover the {len(records)} that were"
                )
        if entry is not None:
            er.summary = entry["summary"]
            er.stopped_early = bool(entry.get("stopped_early"))
            er.stop = entry.get("stopped_early") if isinstance(entry.get("stopped_early"), dict) else None
            er.machine = entry.get("machine") if isinstance(entry.get("machine"), dict) else None
        else:
            er.summary_source = "computed by the report (not in metrics.json)"
            steps = None
            if trace is not None:
                steps = trace.frame if trace.exact else read_trace(trace_path, full_read_bytes=1 << 62).frame
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                er.summary = summarize(er.materialise(), steps, slo=slo, n_boot=n_boot, seed=seed, **_price(manifest))
            notes.append(f"{engine} trial {trial}: summary computed by the report (metrics.json lacks it)")
        engine_runs.append(er)
    for (engine, trial), entry in known.items():  # summaries without records: another tool's aggregates only
        if not any(er.engine == engine and er.trial == trial for er in engine_runs):
            empty = frame.iloc[0:0].reset_index(drop=True)
            er = EngineRun(run_label, engine, trial, empty, tokens.take(np.empty(0, dtype=np.int64)), None)
            er.summary, er.summary_source = entry["summary"], "metrics.json (aggregates only, no records)"
            engine_runs.append(er)
    return RunData(path, run_label, manifest, schedule, metrics, engine_runs, notes)


def load_runs(paths: list[Path], labels: list[str] | None = None) -> list[RunData]:
    """Load several run directories with distinct labels; series labels are "engine" for one run and
    "run/engine" for several."""
    labels = list(labels or [])
    runs: list[RunData] = []
    used: set[str] = set()
    for i, p in enumerate(paths):
        label = labels[i] if i < len(labels) else Path(p).resolve().name
        base, n = label, 2
        while label in used:
            label, n = f"{base}#{n}", n + 1
        used.add(label)
        runs.append(load_run(p, label))
    for run in runs:
        trials = {er.engine: 0 for er in run.engine_runs}
        for er in run.engine_runs:
            trials[er.engine] += 1
        for er in run.engine_runs:
            name = er.engine if trials[er.engine] == 1 else f"{er.engine} t{er.trial}"
            er.label = name if len(runs) == 1 else f"{run.label}/{name}"
    return runs
