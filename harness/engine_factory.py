"""Engines from command-line specs: `KIND[:key=value,...]`, e.g. `continuous:policy=sjf,label=sjf`.

Flags such as `--max-running` set the defaults; a spec's own keys override them for that engine, so
two configurations of one engine can run side by side on the identical schedule.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engines.api import Engine
from engines.options import ENGINE_OPTIONS
from harness.errors import HarnessInputError

IN_PROCESS = ("static", "continuous")
SIMULATED = ("sim",)
KINDS = (*IN_PROCESS, "zero", "http", *SIMULATED)
OPTION_TYPES: dict[str, type] = {
    "label": str, "policy": str, "max_batch": int, "batch_timeout_ms": float, "max_running": int,
    "max_batched_tokens": int, "chunked_prefill": bool, "kv_memory_mb": float, "kv_blocks": int,
    "block_size": int, "step_delay_ms": float, "url": str, "model": str, "api": str, "timeout_s": float,
    "connections": int, "api_key_env": str, "slowdown": float,
}  # fmt: skip
OPTION_TYPES.update({o.name: o.type for o in ENGINE_OPTIONS if o.applies_to("sim")})  # the simulator's, from the table


@dataclass
class EngineSpec:
    kind: str
    label: str
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def in_process(self) -> bool:
        return self.kind in IN_PROCESS

    @property
    def simulated(self) -> bool:
        return self.kind in SIMULATED

    @property
    def has_step_trace(self) -> bool:
        return self.in_process or self.simulated


def _convert(key: str, raw: str, text: str) -> Any:
    kind = OPTION_TYPES.get(key)
    if kind is None:
        raise HarnessInputError(f"--engine {text!r}: unknown option {key!r} (known: {', '.join(OPTION_TYPES)})")
    if kind is bool:
        if raw.lower() not in ("true", "false", "1", "0", "yes", "no"):
            raise HarnessInputError(f"--engine {text!r}: {key}={raw!r} is not true/false")
        return raw.lower() in ("true", "1", "yes")
    try:
        return kind(raw)
    except ValueError:
        raise HarnessInputError(f"--engine {text!r}: {key}={raw!r} is not a {kind.__name__}") from None


def parse_engine_specs(texts: list[str], defaults: dict[str, Any]) -> list[EngineSpec]:
    specs: list[EngineSpec] = []
    for text in texts:
        kind, _, rest = text.partition(":")
        if kind not in KINDS:
            raise HarnessInputError(f"--engine {text!r}: unknown engine {kind!r} (known: {', '.join(KINDS)})")
        options = {k: v for k, v in defaults.items() if v is not None}
        if kind == "sim":
            options.pop("model", None)  # the flags' model is the served one; a simulated model is named in the spec
        for item in filter(None, rest.split(",")):
            key, eq, raw = item.partition("=")
            if not eq:
                raise HarnessInputError(f"--engine {text!r}: expected key=value, got {item!r}")
            options[key.strip()] = _convert(key.strip(), raw.strip(), text)
        default_label = f"sim-{options.get('scheduler', 'continuous')}" if kind == "sim" else kind
        label = options.pop("label", None) or default_label
        specs.append(EngineSpec(kind, label, options))
    labels = [s.label for s in specs]
    seen: dict[str, int] = {}
    for spec in specs:  # the same kind twice without labels (an A/A pair): number them apart
        if labels.count(spec.label) > 1:
            seen[spec.label] = seen.get(spec.label, 0) + 1
            spec.label = f"{spec.label}-{seen[spec.label]}"
    if len({s.label for s in specs}) != len(specs):
        raise HarnessInputError(f"--engine: labels must be distinct, got {[s.label for s in specs]}")
    for spec in specs:
        if spec.simulated:  # building one costs a config read: catch every bad value before any work starts
            build_engine(spec, None)
    return specs


def build_engine(spec: EngineSpec, loaded: Any) -> Engine:
    o = spec.options
    if spec.kind == "zero":
        from engines.zero_engine import ZeroLatencyEngine

        return ZeroLatencyEngine(spec.label)
    if spec.kind == "http":
        return _build_http(spec)
    if spec.kind == "sim":
        from engines.sim.build import build_sim_engine

        return build_sim_engine(o, spec.label)  # type: ignore[return-value]
    from engines.inprocess import EngineOptions, InProcessEngine, KVConfig
    from engines.scheduler import ContinuousConfig
    from engines.static_scheduler import StaticConfig

    kv = KVConfig(block_size=o.get("block_size", 16), memory_mb=o.get("kv_memory_mb", 256.0), blocks=o.get("kv_blocks"))
    static = StaticConfig(max_batch_size=o.get("max_batch", 32), batch_timeout_s=o.get("batch_timeout_ms", 50.0) / 1e3)
    continuous = ContinuousConfig(
        max_running=o.get("max_running", 32),
        max_batched_tokens=o.get("max_batched_tokens", 512),
        chunked_prefill=o.get("chunked_prefill", True),
    )
    if min(static.max_batch_size, continuous.max_running, continuous.max_batched_tokens, kv.block_size) < 1:
        raise HarnessInputError(f"--engine {spec.label}: batch sizes, token budget and block size must be >= 1")
    if min(o.get("slowdown", 0.0), o.get("step_delay_ms", 0.0)) < 0:
        raise HarnessInputError(f"--engine {spec.label}: slowdown and step_delay_ms must be >= 0")
    options = EngineOptions(kind=spec.kind, policy=o.get("policy", "fcfs"), kv=kv, static=static,  # type: ignore[arg-type]
                            continuous=continuous, step_delay_s=o.get("step_delay_ms", 0.0) / 1e3,
                            slowdown=o.get("slowdown", 0.0))  # fmt: skip
    return InProcessEngine(loaded, options, name=spec.label)


def _build_http(spec: EngineSpec) -> Engine:
    import os

    try:
        from engines.http import HttpEngine
    except ImportError:
        raise HarnessInputError("--engine http: the HTTP engine is not available in this build") from None
    o = spec.options
    if not o.get("url"):
        raise HarnessInputError(f"--engine {spec.label}: http needs a url (--url or http:url=...)")
    api_key = os.environ.get(o["api_key_env"]) if o.get("api_key_env") else None
    kwargs = {k: o[k] for k in ("api", "timeout_s", "connections") if k in o}
    return HttpEngine(o["url"], o.get("model", "batchmark"), name=spec.label, api_key=api_key, **kwargs)
