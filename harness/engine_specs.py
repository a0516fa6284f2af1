"""Engines from command-line specs: `KIND[:key=value,...]`, e.g. `continuous:policy=sjf,label=sjf`.

Keys are the options of the engine option table (`engines/options.py`), checked there. Flags such as
`--max-running` set defaults for every engine they apply to; a spec's own keys override them for that
engine, so two configurations of one engine can run side by side on the identical schedule.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from engines.api import Engine
from engines.model.embedded import EmbeddedModelConfig
from engines.options import (
    IN_PROCESS,
    KINDS,
    OPTIONS,
    SIMULATED,
    check_options,
    defaults,
    in_process_options,
    scrape_urls,
)
from harness.errors import HarnessInputError

EMBEDDED_CONTEXT = EmbeddedModelConfig().max_position_embeddings
# Admission control's forecast misses later arrivals a fair order serves first and outputs shorter than
# max_tokens; on noisy-neighbour at twice capacity a target at the SLO let admitted requests' p99 TTFT reach
# 1.4-1.5x it, a quarter of it 0.53-0.54x (docs/study.md, "Recovery controls"): so it aims at a quarter.
ADMISSION_HEADROOM = 0.25
CLUSTER = "cluster"  # simulated replicas behind a router (engines.sim.cluster): `replica=` is a sim spec
DISAGG = "disagg"  # simulated prefill and decode pools (engines.sim.disagg): `replica=` is a sim spec


def admission_target_ms(slo: Any) -> float:
    """The TTFT admission control aims at when `admission_slo_ms` is not given: a share of the run's SLO."""
    return slo.ttft_s * 1e3 * ADMISSION_HEADROOM


@dataclass
class EngineSpec:
    """One engine to run: its kind, its label in records and reports, and its checked options."""

    kind: str
    label: str
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def in_process(self) -> bool:
        return self.kind in IN_PROCESS

    @property
    def simulated(self) -> bool:
        return self.kind in SIMULATED or self.kind in (CLUSTER, DISAGG)

    @property
    def has_step_trace(self) -> bool:
        return self.in_process or self.simulated


def parse_engine_specs(texts: list[str], defaults: dict[str, Any]) -> list[EngineSpec]:
    """Specs from `--engine` texts over checked flag `defaults` (None: not given); labels made distinct."""
    specs: list[EngineSpec] = []
    for text in texts:
        kind, _, rest = text.partition(":")
        if kind in (CLUSTER, DISAGG):
            specs.append(_pooled_spec(kind, text, rest, defaults))
            continue
        if kind not in KINDS:
            raise HarnessInputError(
                f"--engine {text!r}: unknown engine {kind!r} (known: {', '.join(KINDS)}, cluster, disagg)"
            )
        given: dict[str, Any] = _key_values(text, rest)
        own = check_options(kind, given, f"--engine {text!r}")
        flags = {k: v for k, v in defaults.items() if v is not None and OPTIONS[k].applies_to(kind)}
        if kind in SIMULATED:
            flags.pop("model", None)  # the flag is the served model's name; a simulated model is named in its spec
        options = {**flags, **own}
        default_label = f"sim-{options.get('scheduler') or 'continuous'}" if kind in SIMULATED else kind
        label = options.pop("label", None) or default_label
        if kind == "http" and not options.get("url"):
            raise HarnessInputError(f"--engine {label}: http needs a url (--url or http:url=...)")
        if kind == "http" and (options.get("router") is None) != (options.get("replicas") is None):
            raise HarnessInputError(f"--engine {label}: router= and replicas= go together (the fleet at the URL)")
        if kind == "http" and options.get("scrape") not in (None, "off"):
            _check_scrape(label, options)
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
        if spec.simulated:  # building one costs a config read: every bad value is caught before any work starts
            build_engine(spec, None)
    return specs


def _check_scrape(label: str, options: dict[str, Any]) -> None:
    """Every URL of an explicit `scrape=` answers Prometheus text, and several of them are the fleet's replicas:
    as many as `replicas=` says when the spec names one (one URL is a router's, scraped as such)."""
    from engines.http.scraper import probe_problem

    urls = scrape_urls(options["scrape"])
    replicas = options.get("replicas")
    if len(urls) > 1 and replicas is not None and len(urls) != int(replicas):
        raise HarnessInputError(
            f"--engine {label}: --scrape: {len(urls)} URLs for replicas={replicas}: give every replica's "
            "/metrics, or one URL (then the fleet's scraped figures are n/a)"
        )
    headers = scrape_headers(options)
    for url in urls:
        if (problem := probe_problem(url, headers=headers)) is not None:
            raise HarnessInputError(f"--engine {label}: --scrape {url}: {problem}")


def _key_values(text: str, rest: str) -> dict[str, str]:
    given: dict[str, str] = {}
    for item in filter(None, rest.split(",")):
        key, eq, raw = item.partition("=")
        if not eq:
            raise HarnessInputError(f"--engine {text!r}: expected key=value, got {item!r}")
        given[key.strip()] = raw.strip()
    return given


def _pooled_spec(kind: str, text: str, rest: str, flags: dict[str, Any]) -> EngineSpec:
    """`cluster:...` or `disagg:...`: the pools' keys, then `replica=` and the replicas' sim spec."""
    from engines.sim.cluster import cluster_config
    from engines.sim.disagg import disagg_config

    own, sep, replica = rest.partition("replica=")
    if not sep:
        replica = "sim"
    given = _key_values(text, own)
    label = given.pop("label", None)
    if not replica.startswith("sim"):
        raise HarnessInputError(f"--engine {text!r}: replica= must be a sim spec, got {replica!r}")
    (inner,) = parse_engine_specs([replica], flags)
    if kind == CLUSTER:
        cluster = cluster_config(given, f"--engine {text!r}")
        label = label or f"cluster-{cluster.replicas}x-{cluster.router.policy}"
        return EngineSpec(kind, label, {"cluster": cluster, **inner.options})
    disagg = disagg_config(given, f"--engine {text!r}")
    label = label or f"disagg-{disagg.prefill}p{disagg.decode}d"
    return EngineSpec(kind, label, {"disagg": disagg, **inner.options})  # built once at the end: pools checked


def build_engine(spec: EngineSpec, loaded: Any) -> Engine:
    """The engine a spec describes; in-process engines run on `loaded` (a `LoadedModel`)."""
    if spec.kind == CLUSTER:
        from engines.sim.build import build_sim_cluster

        return build_sim_cluster(spec.options, spec.label)  # type: ignore[return-value]
    if spec.kind == DISAGG:
        from engines.sim.build import build_sim_disagg

        return build_sim_disagg(spec.options, spec.label)  # type: ignore[return-value]
    if spec.kind == "zero":
        from engines.zero_engine import ZeroLatencyEngine

        return ZeroLatencyEngine(spec.label)
    if spec.kind == "http":
        from engines.http import HttpEngine

        o = {**defaults("http"), **spec.options}
        api_key = os.environ.get(o["api_key_env"]) if o.get("api_key_env") else None
        return HttpEngine(
            o["url"],
            o["model"] or "batchmark",
            name=spec.label,
            api_key=api_key,
            api=o["api"],
            timeout_s=o["timeout_s"],
            read_timeout_s=o["read_timeout_s"],
            connections=o["connections"],
            class_header=o["class_header"],
            think_tags=o["think_tags"],
            return_token_ids=o["return_token_ids"],
            router=o["router"],
            replicas=o["replicas"],
        )
    if spec.kind in SIMULATED:
        from engines.sim.build import build_sim_engine

        return build_sim_engine(spec.options, spec.label)  # type: ignore[return-value]
    from engines.inprocess import InProcessEngine

    return InProcessEngine(loaded, in_process_options(spec.kind, spec.options), name=spec.label)


def scrape_headers(options: dict[str, Any]) -> dict[str, str] | None:
    """The API key for the scrape too: a server that guards its routes guards /metrics."""
    key = os.environ.get(options["api_key_env"]) if options.get("api_key_env") else None
    return {"Authorization": f"Bearer {key}"} if key else None


def load_for_engines(source: str, specs: list[Any], model_path: str | None, **overrides: Any) -> tuple[Any, dict]:
    """The workload to replay against `specs`, and the overrides it was loaded with. With an in-process
    engine on the embedded model, trace rows longer than its context are clipped (the notes say so)."""
    from workloads import load_workload

    if overrides.get("max_context") is None and any(s.in_process for s in specs) and model_path is None:
        overrides["max_context"] = EMBEDDED_CONTEXT
    return load_workload(source, **overrides), overrides
