"""A realistic run directory from a model of the two batching styles, for tests, demos and benchmarks.

No engine runs: one Poisson schedule is replayed through two small step-level simulations that
reproduce the shapes the report must show.

- static: a batch forms when `slots` requests wait or the oldest waited `batch_timeout_s`; it runs
  until its longest member is done; finished members keep their slot (idle slots, pad rows), and
  requests arriving meanwhile queue behind the batch's slowest member.
- continuous: at every step waiting requests take free slots (FIFO) and a request leaves as soon as
  it is done, so slots stay full while work waits; a step that admits requests also computes their
  prompts and takes longer, which shows up as inter-token stalls for the others.

Step time is `STEP_BASE_S + STEP_PER_SEQ_S * slots computed + PREFILL_PER_TOKEN_S * prompt tokens`,
about the tiny CPU model's 3.4 ms at batch 1 and 8.3 ms at 32, times a little log-normal noise.
Tokens arrive at step ends, and the step trace has the fields of
`engines/engine_core.py::_trace_record`. The continuous simulation is one cheap loop iteration per
step, the static one per batch; everything else is numpy, so 100,000 requests take seconds.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from harness.metrics import SLO
from reports.load import load_run

STEP_BASE_S = 0.0034
STEP_PER_SEQ_S = 0.00016
PREFILL_PER_TOKEN_S = 0.00001
STEP_NOISE = 0.05  # sigma of the log-normal factor on every step's duration
TENANTS = ("alice", "bob", "carol")
SYNTHETIC_SLO = SLO(ttft_s=0.5, tpot_s=0.02)


def _step_s(computed: np.ndarray | int) -> np.ndarray | float:
    return STEP_BASE_S + STEP_PER_SEQ_S * np.asarray(computed, dtype=np.float64)


MEAN_PROMPT_TOKENS = 96 * np.exp(0.6**2 / 2)  # of the log-normal in `make_schedule` (before clipping)


def capacity_rps(slots: int, mean_output: float) -> float:
    """Requests/s a continuous engine with `slots` full slots sustains: its decode steps plus its prefill."""
    return 1.0 / (float(_step_s(slots)) * mean_output / slots + PREFILL_PER_TOKEN_S * MEAN_PROMPT_TOKENS)


def static_capacity_rps(slots: int, mean_output: float, seed: int = 0) -> float:
    """Requests/s static batching sustains with full batches: each lasts as long as its longest member."""
    s = make_schedule(slots * 200, rate=1.0, seed=seed, mean_output=mean_output)
    longest = s["output"].reshape(200, slots).max(axis=1).mean()
    prefill = PREFILL_PER_TOKEN_S * slots * float(np.percentile(s["prompt"], 95))
    return slots / (float(_step_s(slots)) * longest + prefill)


def make_schedule(
    requests: int, *, rate: float, seed: int = 0, tenants: Sequence[str] = TENANTS, mean_output: float = 40.0
) -> dict[str, np.ndarray]:
    """Poisson arrivals at `rate` req/s, log-normal prompt lengths, capped-geometric output lengths."""
    rng = np.random.default_rng(seed)
    arrival = np.cumsum(rng.exponential(1.0 / rate, requests))
    arrival -= arrival[0]
    prompt = np.clip(rng.lognormal(np.log(96), 0.6, requests), 8, 1024).astype(np.int64)
    output = np.clip(rng.geometric(1.0 / mean_output, requests), 2, int(6 * mean_output)).astype(np.int64)
    weights = np.array([0.5, 0.3, 0.2][: len(tenants)] + [0.1] * max(0, len(tenants) - 3))
    tenant = rng.choice(len(tenants), requests, p=weights / weights.sum())
    # The generator sends in order, a fraction of a millisecond late.
    sent = np.maximum.accumulate(arrival + rng.exponential(0.0002, requests))
    return {
        "request_id": np.array([f"r{i:06d}" for i in range(requests)]),
        "arrival": arrival,
        "sent": sent,
        "prompt": prompt,
        "output": output,
        "tenant": np.asarray(tenants)[tenant],
    }


def _simulate_continuous(s: dict[str, np.ndarray], slots: int, scale: float, rng: np.random.Generator) -> dict:
    sent, out, prompt = s["sent"], s["output"], s["prompt"]
    n = sent.size
    first_step = np.empty(n, dtype=np.int64)
    noise = (rng.lognormal(0.0, STEP_NOISE, int(out.sum()) + n + 16) * scale).tolist()
    base, per, pre = STEP_BASE_S, STEP_PER_SEQ_S, PREFILL_PER_TOKEN_S
    starts, durations, running_n, admitted_n, prompt_n = [], [], [], [], []
    heap: list[tuple[int, int]] = []  # (index of the request's last step, request)
    sent_l, out_l, prompt_l = sent.tolist(), out.tolist(), prompt.tolist()
    t, k, i = 0.0, 0, 0
    while i < n or heap:
        if not heap and sent_l[i] > t:
            t = sent_l[i]  # idle: the engine records no step until work arrives
        admitted, prompt_tokens = 0, 0
        while i < n and len(heap) < slots and sent_l[i] <= t:
            first_step[i] = k
            heapq.heappush(heap, (k + out_l[i] - 1, i))
            admitted += 1
            prompt_tokens += prompt_l[i]
            i += 1
        running = len(heap)
        dt = (base + per * running) * noise[k] + pre * prompt_tokens
        starts.append(t)
        durations.append(dt)
        running_n.append(running)
        admitted_n.append(admitted)
        prompt_n.append(prompt_tokens)
        while heap and heap[0][0] == k:
            heapq.heappop(heap)
        t += dt
        k += 1
    t_start, running_a, admitted_a = np.array(starts), np.array(running_n), np.array(admitted_n)
    steps = {
        "t_start": t_start, "t_end": t_start + np.array(durations),
        "phase": np.where(admitted_a == 0, "decode", np.where(admitted_a == running_a, "prefill", "mixed")),
        "batch_id": None, "num_running": running_a, "tokens_computed": running_a - admitted_a + np.array(prompt_n),
        "padded_tokens": np.zeros(k, dtype=np.int64), "idle_slots": np.zeros(k, dtype=np.int64),
        "empty_slots": slots - running_a, "admitted_n": admitted_a,
    }  # fmt: skip
    return {"first_step": first_step, "steps": steps, "scheduler": "continuous"}


def _simulate_static(
    s: dict[str, np.ndarray], slots: int, timeout: float, scale: float, rng: np.random.Generator
) -> dict:
    sent, out, prompt = s["sent"], s["output"], s["prompt"]
    n = sent.size
    first_step = np.empty(n, dtype=np.int64)
    parts: list[dict[str, np.ndarray]] = []
    free_at, i, k, batch_id = 0.0, 0, 0, 0
    while i < n:
        ready = max(free_at, min(sent[i] + timeout, sent[min(i + slots, n) - 1]))
        hi = max(i + 1, min(i + slots, int(np.searchsorted(sent, ready, side="right"))))
        b, outs, prompts = hi - i, out[i:hi], prompt[i:hi]
        longest = int(outs.max())
        # Every step computes all b rows: finished members compute pad rows until the batch ends.
        dur = float(_step_s(b)) * scale * rng.lognormal(0.0, STEP_NOISE, longest)
        dur[0] += PREFILL_PER_TOKEN_S * b * int(prompts.max())
        ends = ready + np.cumsum(dur)
        alive = b - np.searchsorted(np.sort(outs), np.arange(longest), side="right")
        first = np.arange(longest) == 0
        parts.append({
            "t_start": np.concatenate([[ready], ends[:-1]]), "t_end": ends,
            "phase": np.where(first, "prefill", "decode"), "batch_id": np.full(longest, batch_id),
            "num_running": alive, "tokens_computed": np.where(first, prompts.sum(), alive),
            "padded_tokens": np.where(first, int(prompts.max()) * b - prompts.sum(), b - alive),
            "idle_slots": b - alive, "empty_slots": np.full(longest, slots - b),
            "admitted_n": np.where(first, b, 0),
        })  # fmt: skip
        first_step[i:hi] = k
        free_at, i, k, batch_id = float(ends[-1]), hi, k + longest, batch_id + 1
    steps = {c: np.concatenate([p[c] for p in parts]) for c in parts[0]}
    return {"first_step": first_step, "steps": steps, "scheduler": "static"}


def _expand(starts: np.ndarray, spans: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(owner, position) for every element of the ranges [start, start + span): owner = range index."""
    owner = np.repeat(np.arange(starts.size), spans)
    pos = np.repeat(starts, spans) + (np.arange(owner.size) - np.repeat(np.cumsum(spans) - spans, spans))
    return owner, pos


def _lists(values: pa.Array, which: np.ndarray, key: np.ndarray, size: int) -> pa.ListArray:
    """A list per k in 0..size-1 holding values[which[j]] for every j whose key[j] is k (in j order)."""
    order = np.argsort(key, kind="stable")
    offsets = np.concatenate([[0], np.cumsum(np.bincount(key, minlength=size)[:size])]).astype(np.int32)
    return pa.ListArray.from_arrays(pa.array(offsets), pc.take(values, pa.array(which[order])))


def _array(values: Any) -> pa.Array:
    arr = values if isinstance(values, pa.Array) else pa.array(values)
    return arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr


def _empty_lists(size: int) -> pa.ListArray:
    return pa.ListArray.from_arrays(pa.array(np.zeros(size + 1, dtype=np.int32)), pa.array([], pa.string()))


def _steps_columns(s: dict[str, np.ndarray], sim: dict, slots: int, running_ids: bool) -> dict[str, Any]:
    st = sim["steps"]
    size = st["t_start"].size
    waiting = np.maximum(np.searchsorted(s["sent"], st["t_start"], side="right") - np.cumsum(st["admitted_n"]), 0)
    blocked = "batch_running" if sim["scheduler"] == "static" else "no_slot"
    zeros = np.zeros(size, dtype=np.int64)
    running = admitted = finished = _empty_lists(size)
    if running_ids:
        ids, out, first = _array(s["request_id"]), s["output"], sim["first_step"]
        owner, k = _expand(first, out)
        everyone = np.arange(out.size)
        running = _lists(ids, owner, k, size)
        admitted = _lists(ids, everyone, first, size)
        finished = _lists(ids, everyone, first + out - 1, size)
    return {
        "step": np.arange(size), "scheduler": np.full(size, sim["scheduler"]),
        "t_start": np.round(st["t_start"], 9), "t_end": np.round(st["t_end"], 9), "phase": st["phase"],
        "batch_id": st["batch_id"] if st["batch_id"] is not None else pa.nulls(size, pa.int64()),
        "running_ids": running, "num_running": st["num_running"], "max_slots": np.full(size, slots),
        "tokens_computed": st["tokens_computed"], "padded_tokens": st["padded_tokens"], "idle_slots": st["idle_slots"],
        "empty_slots": st["empty_slots"], "admitted": admitted, "finished": finished, "preempted": _empty_lists(size),
        "waiting": waiting, "blocked_reason": pa.array(np.where(waiting > 0, blocked, None), pa.string()),
        "kv_blocks_used": zeros, "kv_blocks_free": zeros, "kv_blocks_total": zeros,
    }  # fmt: skip


def _records_columns(s: dict[str, np.ndarray], sim: dict, engine: str, fail_share: float, seed: int) -> dict:
    n = s["arrival"].size
    out = s["output"]
    failed = np.random.default_rng(seed + 7).random(n) < fail_share
    n_out = np.where(failed, np.maximum(1, out // 2), out)  # a timed-out request got half its tokens
    t_end = np.round(sim["steps"]["t_end"], 9)
    _, pos = _expand(sim["first_step"], n_out)
    flat = t_end[pos]
    offsets = np.concatenate([[0], np.cumsum(n_out)])
    first, last = flat[offsets[:-1]], flat[offsets[1:] - 1]
    nulls = pa.array(np.where(failed, "x", None), pa.string())  # only for their null mask
    return {
        "request_id": s["request_id"], "engine": np.full(n, engine), "tenant": s["tenant"],
        "priority": np.zeros(n, dtype=np.int64), "max_tokens": out, "ignore_eos": np.ones(n, dtype=bool),
        "prompt_tokens": s["prompt"], "t_scheduled": np.round(s["arrival"], 9), "t_sent": np.round(s["sent"], 9),
        "t_admitted": np.round(sim["steps"]["t_start"][sim["first_step"]], 9), "t_first_token": first,
        "t_finish": pa.array(last, mask=failed), "token_times": pa.ListArray.from_arrays(
            pa.array(offsets.astype(np.int32)), pa.array(flat)),
        "output_tokens": n_out, "engine_prompt_tokens": s["prompt"],
        "engine_output_tokens": pa.array(n_out, mask=failed), "finish_reason": np.where(failed, "error", "length"),
        "error_type": pc.if_else(pc.is_null(nulls), pa.scalar(None, pa.string()), "timeout"),
        "error_message": pc.if_else(pc.is_null(nulls), pa.scalar(None, pa.string()), "synthetic timeout"),
        "preemptions": np.zeros(n, dtype=np.int64), "trial": np.zeros(n, dtype=np.int64),
    }  # fmt: skip


def _json_text(col: pa.Array) -> pa.Array:
    """The JSON text of each value (null as null). Strings are quoted, not escaped: the generator only
    writes identifiers."""
    kind = col.type
    if pa.types.is_list(kind):
        inner = pa.ListArray.from_arrays(col.offsets, _json_text(col.values))
        text = pc.binary_join_element_wise("[", pc.binary_join(inner, ","), "]", "")
    elif pa.types.is_string(kind):
        text = pc.binary_join_element_wise('"', col, '"', "")
    else:
        text = pc.cast(col, pa.string())
    return pc.fill_null(text, "null")


def _write_jsonl(path: Path, columns: dict[str, Any]) -> None:
    """One JSON object per line, built column-wise by Arrow (json.dumps per row is 10x slower)."""
    parts: list[Any] = []
    for i, (name, values) in enumerate(columns.items()):
        arr = _array(values)
        parts += [pa.scalar(("{" if i == 0 else ",") + f'"{name}":'), _json_text(arr)]
    lines = pc.binary_join_element_wise(*parts, pa.scalar("}\n"), "")
    with path.open("wb") as f:
        for chunk in lines.chunks if isinstance(lines, pa.ChunkedArray) else [lines]:
            offsets = np.frombuffer(chunk.buffers()[1], dtype=np.int32)[chunk.offset : chunk.offset + len(chunk) + 1]
            f.write(memoryview(chunk.buffers()[2])[offsets[0] : offsets[-1]])


def write_synthetic_run(
    out: str | Path,
    *,
    requests: int = 400,
    engines: Sequence[str] = ("static", "continuous"),
    rate: float | None = None,
    slots: int = 16,
    seed: int = 0,
    mean_output: float = 40.0,
    batch_timeout_s: float = 0.05,
    fail_share: float = 0.0,
    running_ids: bool = True,
    with_metrics: bool = True,
    slow_continuous: float = 1.0,
    n_boot: int = 200,
    workload_name: str = "synthetic-chat",
) -> Path:
    """Write manifest.json, requests.jsonl, records.jsonl, steps/*.jsonl and (optionally) metrics.json.

    `rate` defaults to 90% of what static batching sustains (continuous batching sustains several
    times more: pass a higher rate to see static batching overloaded). An engine label containing
    "static" is simulated as static batching, anything else as continuous; `slow_continuous`
    stretches the continuous engines' steps (a regressed scheduler, for before/after comparisons on
    the same schedule); `fail_share` of the static engine's requests time out. `running_ids=False`
    leaves the step trace's id lists empty (smaller, faster files). metrics.json is computed as the
    run command does, with `harness.metrics.summarize`.
    """
    out = Path(out)
    (out / "steps").mkdir(parents=True, exist_ok=True)
    rate = 0.9 * static_capacity_rps(slots, mean_output, seed) if rate is None else rate
    s = make_schedule(requests, rate=rate, seed=seed, mean_output=mean_output)
    frames = []
    for j, engine in enumerate(engines):
        rng = np.random.default_rng([seed, j])
        static = "static" in engine
        if static:
            sim = _simulate_static(s, slots, batch_timeout_s, 1.0, rng)
        else:
            sim = _simulate_continuous(s, slots, slow_continuous, rng)
        frames.append(_records_columns(s, sim, engine, fail_share if static else 0.0, seed))
        _write_jsonl(out / "steps" / f"{engine}-t0.jsonl", _steps_columns(s, sim, slots, running_ids))
    merged = {k: pa.concat_arrays([_array(f[k]) for f in frames]) for k in frames[0]}
    _write_jsonl(out / "records.jsonl", merged)
    schedule = {
        "request_id": s["request_id"], "arrival_s": np.round(s["arrival"], 9), "input_tokens": s["prompt"],
        "output_tokens": s["output"], "tenant": s["tenant"], "priority": np.zeros(s["arrival"].size, dtype=np.int64),
    }  # fmt: skip
    _write_jsonl(out / "requests.jsonl", schedule)
    manifest = _manifest(engines, requests, rate, slots, seed, mean_output, batch_timeout_s, workload_name)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    if with_metrics:
        write_metrics(out, n_boot=n_boot, seed=seed)
    return out


def write_metrics(run_dir: str | Path, *, n_boot: int = 200, seed: int = 0) -> Path:
    """metrics.json of a run directory in the layout of docs/run-directory.md (one trial per engine):
    `harness.metrics.summarize` per engine run with the SLO and price of the manifest, fed by the
    report's fast loader (tests check it gives the same summary as `harness.metrics.load_records`)."""
    run_dir = Path(run_dir)
    path = run_dir / "metrics.json"
    path.unlink(missing_ok=True)
    run = load_run(run_dir, n_boot=n_boot, seed=seed)
    runs = [{"engine": er.engine, "trial": er.trial, "summary": er.summary, "stopped_early": False}
            for er in run.engine_runs]  # fmt: skip
    metrics = {
        "schema_version": 1,
        "runs": runs,
        "engines": {r["engine"]: r["summary"] for r in runs if r["trial"] == 0},
        "repeat": {},
        "comparison": {},
    }
    path.write_text(json.dumps(metrics, allow_nan=False) + "\n", encoding="utf-8")
    return path


def _manifest(engines, requests, rate, slots, seed, mean_output, timeout, name) -> dict[str, Any]:
    def engine(e: str) -> dict[str, Any]:
        if "static" in e:
            return {"name": e, "kind": "static", "options": {"max_batch_size": slots, "batch_timeout_s": timeout}}
        return {"name": e, "kind": "continuous", "options": {"max_running": slots, "chunked_prefill": True}}

    return {
        "command": ["batchmark", "run", "--workload", name, *[a for e in engines for a in ("--engine", e)]],
        "git_commit": "0000000000000000000000000000000000000000",
        "packages": {"batchmark": "0.1.0", "numpy": np.__version__},
        "model": {"name": "synthetic (no model ran)"},
        "workload": {
            "name": name,
            "spec": {
                "source": "synthetic",
                "requests": requests,
                "rate_rps": round(rate, 3),
                "mean_output_tokens": mean_output,
                "seed": seed,
            },
            "fingerprint": f"synthetic-{requests}-{seed}-{rate:.6f}",
        },
        "engines": {e: engine(e) for e in engines},
        "hardware": {"cpu": "synthetic", "cores": 2},
        "seeds": {"workload": seed},
        "slo": SYNTHETIC_SLO.to_json(),
        "price_per_hour": 2.0,
        "started_at": "2026-01-01T00:00:00Z",
        "synthetic": True,
    }
