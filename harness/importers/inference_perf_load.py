"""The load inference-perf ran, read from the files it writes beside its reports, as batchmark's scenario.

inference-perf 0.7.0 writes its whole run configuration as `config.yaml` (`ReportGenerator.generate_config_report`,
the `Config` model dumped) next to `per_request_lifecycle_metrics.json` and the per-stage Benchmark Reports
`inference-perf.partial.stage_N.yaml`, each name after the storage's `report_file_prefix`. Its `load`
(`inference_perf/config/loadgen/config.py`, `LoadConfig`): `type` is constant, poisson, concurrent, trace_replay or
trace_session_replay; `stages[i]` holds `rate` (req/s) and `duration` (s) for constant and poisson, `num_requests`
and `concurrency_level` for concurrent; `sweep` generates the stages at run time, which config.yaml does not hold.

How it offers them (`loadgen/load_timer.py`): constant sends rate x duration requests at exponential gaps scaled to
fill the duration; poisson draws a Poisson count for each second and spreads it so over that second; concurrent
keeps `concurrency_level` requests in flight until `num_requests` were sent. So constant and poisson are open loops
at the stage's rate and concurrent a closed loop of `concurrency_level` users.

`stage_N_lifecycle_metrics.json`'s `load_summary` holds inference-perf's own schedule delay (each request's send
minus its scheduled time), which the per-request file does not carry per request.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import Field

from harness.importers.common import Mapping, Reported, fail, text_of
from harness.importers.schema import Clock, Count, Doc, Positive, Seconds, Users, validated
from harness.importers.yaml_doc import read_yaml
from harness.loadgen.scenarios import Scenario

OPEN_TYPES = ("constant", "poisson")
UNKNOWN = "the loop it ran is unknown here, and 'open' is batchmark's default, not the tool's"


class Stage(Doc):
    rate: Positive | None = None
    duration: Seconds | None = None
    num_requests: Count | None = None
    concurrency_level: Users | None = None


class LoadConfig(Doc):
    type: str
    stages: list[Stage] = Field(default_factory=list)
    sweep: dict[str, Any] | None = None


class Config(Doc):
    load: LoadConfig


class Delay(Doc):
    """inference-perf's `summarize` of the schedule delays: a send can precede its schedule, so any sign."""

    mean: Clock | None = None
    median: Clock | None = None
    p90: Clock | None = None
    p95: Clock | None = None
    p99: Clock | None = None
    max: Clock | None = None


class LoadSummary(Doc):
    count: Count | None = None
    schedule_delay: Delay | None = None
    requested_rate: Positive | None = None
    achieved_rate: Seconds | None = None


class StageReport(Doc):
    load_summary: LoadSummary | None = None


@dataclass
class Load:
    """What the files beside an import say about its load: the scenario, the settings and why."""

    scenario: Scenario = field(default_factory=Scenario)
    settings: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    reported: dict[str, Reported] = field(default_factory=dict)  # inference-perf's own schedule delay


def beside(path: Path, own_name: str, stage: int | None) -> Load | None:
    """The load of the run whose file `path` is (named `<prefix><own_name>`), from `<prefix>config.yaml` beside it,
    for `stage` (None: every stage, as the per-request file holds them all); None when there is no config.yaml."""
    prefix = path.name[: len(path.name) - len(own_name)]
    config = path.with_name(f"{prefix}config.yaml")
    if not config.is_file():
        return None
    load = load_of(config, stage)
    stage_file = path.with_name(f"{prefix}stage_{0 if stage is None else stage}_lifecycle_metrics.json")
    if load.settings.get("stages") == 1 and stage_file.is_file():
        load.reported, note = schedule_delay(stage_file)
        load.notes += [note] if note else []
    return load


def load_of(config: Path, stage: int | None) -> Load:
    """config.yaml's load as batchmark's scenario (one line naming config.yaml and the field when it is malformed)."""
    cfg = validated(Config, _read(config), config).load
    picked = list(enumerate(cfg.stages))[stage : stage + 1] if stage is not None else list(enumerate(cfg.stages))
    settings: dict[str, Any] = {"config": config.name, "load_type": cfg.type, "stages": len(picked)}
    why = None
    if cfg.sweep is not None:  # checked first: a sweep's config.yaml may hold no stage at all
        why = "load.sweep: inference-perf generated its stages at run time, and config.yaml keeps only the configured"
    elif cfg.type not in (*OPEN_TYPES, "concurrent"):
        why = f"load.type {cfg.type!r}: a trace replay's timing comes from its trace, not from one rate or concurrency"
    if why:
        return Load(settings=settings, notes=[f"{config.name}'s {why}: {UNKNOWN}"])
    if stage is not None and not picked:
        raise fail(
            config, "field load.stages", f"no stage {stage} (the report is stage {stage}'s): {len(cfg.stages)} stage(s)"
        )
    if not picked:
        raise fail(config, "field load.stages", "no stage: inference-perf runs one or more")
    scenarios = {_scenario(config, cfg.type, i, s) for i, s in picked}
    settings.update(_stage_settings(cfg.type, picked))
    if len(scenarios) > 1:
        note = f"{config.name}: {len(picked)} concurrent stages of different concurrency in one file: {UNKNOWN}"
        return Load(settings=settings, notes=[note])
    scenario = scenarios.pop()
    return Load(scenario, settings, [_note(config.name, cfg.type, picked, scenario)])


def _scenario(config: Path, kind: str, i: int, stage: Stage) -> Scenario:
    need = "concurrency_level" if kind == "concurrent" else "rate"
    if getattr(stage, need) is None:
        raise fail(config, f"field load.stages[{i}].{need}", f"missing: a {kind} stage states its {need}")
    return Scenario("closed", users=stage.concurrency_level or 1) if kind == "concurrent" else Scenario("open")


def _stage_settings(kind: str, picked: list[tuple[int, Stage]]) -> dict[str, Any]:
    if len(picked) != 1:
        return {"stage_list": [s.model_dump(exclude_none=True) for _, s in picked]}
    i, s = picked[0]
    if kind == "concurrent":
        return {"stage": i, "concurrency": s.concurrency_level, "num_requests": s.num_requests}
    return {"stage": i, "rate_qps": s.rate, "duration_s": s.duration}


def _note(name: str, kind: str, picked: list[tuple[int, Stage]], scenario: Scenario) -> str:
    mixed = "the per-request file holds every stage's requests and says not which is whose"
    which = f"stage {picked[0][0]}" if len(picked) == 1 else f"all {len(picked)} stages ({mixed})"
    if scenario.kind == "closed":
        return f"the load from {name}: load.type concurrent, {which}, concurrency_level {scenario.users}: a closed loop"
    rates = ", ".join(f"{s.rate:g} req/s for {s.duration:g} s" for _, s in picked if s.rate and s.duration)
    how = (
        "a Poisson count each second, spread over it at exponential gaps"
        if kind == "poisson"
        else "rate x duration requests at exponential gaps scaled to fill the duration"
    )
    return f"the load from {name}: load.type {kind}, {which}, {rates}: an open loop ({how})"


def schedule_delay(stage_file: Path) -> tuple[dict[str, Reported], str | None]:
    """inference-perf's own schedule delay from `stage_N_lifecycle_metrics.json`, as reported schedule lag."""
    text = text_of(stage_file, "inference-perf writes the stage's load summary there")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise fail(stage_file, "file", f"not readable JSON ({exc})") from None
    summary = validated(StageReport, data, stage_file).load_summary
    delay = summary.schedule_delay if summary else None
    if summary is None or delay is None or delay.mean is None:
        return {}, None
    pct = {
        ours: v
        for ours, theirs in (("p50", "median"), ("p90", "p90"), ("p95", "p95"), ("p99", "p99"))
        if (v := getattr(delay, theirs)) is not None
    }
    mapping = Mapping(
        "schedule_lag",
        "load_summary.schedule_delay",
        "inference-perf's send minus its own scheduled time, per stage; the per-request file holds no "
        "scheduled time, so imported records take the send as the arrival",
    )
    reported = {"schedule_lag": Reported(mapping, "s", delay.mean, pct, summary.count)}
    rates = ""
    if summary.requested_rate is not None and summary.achieved_rate is not None:
        rates = f"; requested {summary.requested_rate:g} req/s, achieved {summary.achieved_rate:.4g} req/s"
    worst = f", max {delay.max * 1e3:.3g} ms" if delay.max is not None else ""
    return reported, (
        f"inference-perf's own schedule delay ({stage_file.name} load_summary.schedule_delay, send minus "
        f"its scheduled time): mean {delay.mean * 1e3:.3g} ms{worst}{rates}"
    )


def _read(config: Path) -> Any:
    data = read_yaml(config, text_of(config, "inference-perf writes its run's configuration there"))
    if not isinstance(data, dict):
        raise fail(config, "top level", f"expected a mapping (inference-perf's Config), got {type(data).__name__}")
    return data
