"""How long a run will take, said before it starts, and whether an engine can carry the load it is offered.

A replay's wall time is set by two things: the schedule (its arrival span, after `--time-scale` and
`--rate`) and how fast each engine works through it. An engine that keeps up finishes soon after the last
arrival; one that is offered more than it can serve runs until it has worked through its queue, which on
the README's old example meant 45-60 minutes of static batching drowning. So before a run:

- **in-process engines** (static, continuous): the work is priced at a speed, prompt tokens per second
  (prefill) and output tokens per second (decode at a batch), as `batchmark demo` measures them. The last
  demo calibration on this machine for the same model is used when there is one (`save_speed` writes it);
  otherwise a conservative default for the embedded model, stated as such. Static batching computes every
  member of a batch for as many steps as its longest member (`padded_outputs`), which the estimate charges;
- **zero** is instant: the arrival span; **http** has an unknown speed: at least the arrival span;
- **sim** runs in virtual time: its span is not wall time, and the simulator's own cost is not estimated.

The estimate is a forecast, printed as one: a shared machine moves by 2x within a minute (harness/demo.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from engines.kernels import cache_root
from engines.options import OPTIONS

# Conservative speeds of the embedded model when no calibration is saved: at or below the low end of what the
# demo's calibration measured on the shared 2-core development machine (prefill 690-1,790 prompt tok/s, decode
# 780-855 tok/s at batch 16, load average 2-7, 2026-12-04), so that the forecast errs long rather than short.
DEFAULT_PREFILL_TOK_S = 700.0
DEFAULT_DECODE_TOK_S = 600.0
OVERLOAD = 1.5  # work above this multiple of the arrival span: the queue grows for the whole run; warn
DRAIN_S = 10.0  # the --stop-run-s suggested: the arrival span plus this, as the demo does (harness/demo.py)


@dataclass(frozen=True)
class EngineSpeed:
    prefill_tok_s: float
    decode_tok_s: float
    source: str  # where the figures come from, printed with the estimate


@dataclass(frozen=True)
class EngineEstimate:
    label: str
    seconds: float | None  # wall time of one trial; None: cannot tell (the line says why)
    load: float | None  # work / arrival span: above 1 the engine falls behind
    line: str


def speed_cache(model: str | None, dtype: str) -> Path:
    """Where the demo's last calibration for `model` is kept (beside the attention kernel's build cache)."""
    root = cache_root()
    key = "embedded" if model is None else Path(model).resolve().as_posix().strip("/").replace("/", "_")
    return root / f"speed-{key}-{dtype}.json"


def save_speed(model: str | None, dtype: str, prefill_tok_s: float, decode_tok_s: float) -> None:
    """Keep a calibration for the next run's estimate; a cache that cannot be written only loses the forecast."""
    path = speed_cache(model, dtype)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"prefill_tok_s": prefill_tok_s, "decode_tok_s": decode_tok_s}))
    except OSError:
        pass


def load_speed(model: str | None, dtype: str) -> EngineSpeed | None:
    """The saved calibration, else the embedded model's conservative default, else None (another model)."""
    path = speed_cache(model, dtype)
    try:
        saved = json.loads(path.read_text())
        prefill, decode = float(saved["prefill_tok_s"]), float(saved["decode_tok_s"])
        if prefill > 0 and decode > 0 and np.isfinite([prefill, decode]).all():
            return EngineSpeed(prefill, decode, f"the last `batchmark demo` calibration here ({path})")
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        pass
    if model is None:
        return EngineSpeed(
            DEFAULT_PREFILL_TOK_S,
            DEFAULT_DECODE_TOK_S,
            "a conservative default for the embedded model on 2 cores (run `batchmark demo` once to calibrate)",
        )
    return None


def padded_outputs(outputs: np.ndarray, batch: int) -> float:
    """Output slots static batching computes: each group of `batch` arrivals runs as long as its longest."""
    groups = [outputs[i : i + batch] for i in range(0, outputs.size, batch)]
    return float(sum(g.size * g.max() for g in groups if g.size))


def estimate_engine(
    spec: Any, requests: list[Any], span_s: float, offline: bool, speed: EngineSpeed | None, stop_run_s: float | None
) -> EngineEstimate:
    """One trial of one engine: its wall time and its load (work over the arrival span)."""
    label = spec.label
    if spec.simulated:
        return EngineEstimate(label, None, None, f"{label}: simulated, {span_s:,.0f} s of virtual time (not wall time)")
    if spec.kind == "zero":
        return EngineEstimate(label, span_s, 0.0, f"{label}: instant tokens, the arrival span {_t(span_s)}")
    if spec.kind == "http" or speed is None:
        why = "the server's speed is unknown" if spec.kind == "http" else "no calibration for this model"
        return EngineEstimate(label, None, None, f"{label}: at least the arrival span {_t(span_s)} ({why})")
    prompts = np.array([r.input_tokens for r in requests], dtype=float)
    outputs = np.array([r.output_tokens for r in requests], dtype=float)
    if spec.kind == "static":
        batch = int(spec.options.get("max_batch") or OPTIONS["max_batch"].default)
        decoded = padded_outputs(outputs, batch)
    else:
        decoded = float(outputs.sum())
    work = float(prompts.sum()) / speed.prefill_tok_s + decoded / speed.decode_tok_s
    delay = float(spec.options.get("step_delay_ms") or 0.0) / 1e3
    work += delay * (decoded / max(int(spec.options.get("max_running") or 32), 1))  # a step per batch of tokens
    seconds = work if offline else max(span_s, work)
    load = None if offline or span_s <= 0 else work / span_s
    stopped = stop_run_s is not None and stop_run_s < seconds
    if stopped:
        seconds = float(stop_run_s)
    shown = f"{label}: about {_t(seconds)}" + (" (--stop-run-s)" if stopped else "")
    if load is not None:
        shown += f", load {load:.2f}x what it can serve"
    return EngineEstimate(label, seconds, load, shown)


def estimate_run(
    workload: Any, specs: list[Any], scenario: str, repeat: int, stop_run_s: float | None, speed: EngineSpeed | None
) -> list[str]:
    """The console lines said before a run: its total, each engine's share, and any overload warning."""
    requests = list(workload.requests)
    if not requests:
        return []
    span, per = _engines(requests, specs, scenario, stop_run_s, speed)
    known = [e.seconds for e in per if e.seconds is not None]
    total = repeat * sum(known)
    unknown = [e.label for e in per if e.seconds is None]
    head = f"estimate: {len(specs)} engine(s) x {repeat} trial(s), arrival span {_t(span)} each"
    if known:
        head += f": about {_t(total)} of replay" + (f", plus {', '.join(unknown)}" if unknown else "")
        head += " (and the engines' start-up)"
    else:
        head += ": cannot tell the wall time (see below)"
    lines = [head]
    lines += [f"  {e.line}" for e in per]
    if speed is not None and any(s.in_process for s in specs):
        lines.append(
            f"  speed: prefill {speed.prefill_tok_s:,.0f} prompt tok/s, decode {speed.decode_tok_s:,.0f} "
            f"tok/s, from {speed.source}"
        )
    for e in per:
        if e.load is not None and e.load > OVERLOAD:
            rate = len(requests) / span / e.load if span > 0 else 0.0
            stop = "" if stop_run_s is not None else f"add --stop-run-s {span + DRAIN_S:.0f} or "
            lines.append(
                f"  ! {e.label} is offered {e.load:.1f}x what it can serve: its queue grows for the whole run; "
                f"{stop}lower the load (--rate {rate:.2g}, or a smaller --time-scale)"
            )
    return lines


def _engines(
    requests: list[Any], specs: list[Any], scenario: str, stop_run_s: float | None, speed: EngineSpeed | None
) -> tuple[float, list[EngineEstimate]]:
    """The arrival span and each engine's estimate for one trial."""
    arrivals = np.array([r.arrival_s for r in requests], dtype=float)
    span = float(arrivals.max() - arrivals.min())
    offline = scenario in ("offline", "closed")  # no schedule to follow: the engine's speed alone decides
    return span, [estimate_engine(s, requests, span, offline, speed, stop_run_s) for s in specs]


def estimate_sweep(
    workloads: list[Any], specs: list[Any], repeat: int, stop_run_s: float | None, speed: EngineSpeed | None
) -> str:
    """One line before a sweep of given rates (one workload per rate): the replay time of all its runs.
    Overload is not warned of here: past capacity is where a sweep looks on purpose."""
    total, unknown = 0.0, set()
    for workload in workloads:
        if workload.requests:
            per = _engines(list(workload.requests), specs, "open", stop_run_s, speed)[1]
            total += repeat * sum(e.seconds for e in per if e.seconds is not None)
            unknown |= {e.label for e in per if e.seconds is None}
    head = f"estimate: {len(workloads)} rate(s) x {len(specs)} engine(s) x {repeat} trial(s)"
    if len(unknown) == len(specs):
        return head + ": cannot tell the wall time of simulated or http engines"
    plus = f", plus {', '.join(sorted(unknown))}" if unknown else ""
    return head + f": about {_t(total)} of replay{plus} (and the engines' start-up)"


def _t(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
