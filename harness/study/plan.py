"""The acceptance plan: written before the run, it fixes what a study decides and how.

A TOML file (docs/study.md):

    decision = "Which queue order protects the light tenants on noisy-neighbour at twice capacity?"
    workload = "noisy-neighbour"          # a preset, spec file or trace
    trials = 3                            # each trial draws the workload with seed + trial
    slo_ttft_ms = 2000                    # the SLO (TTFT, TPOT) the metrics and admission control use
    pick = "ttft.p99"                     # the metric that picks the winner (default: the first)
    slo_classes = ["light:ttft_ms=1000"]  # optional: --slo-class values; per-class panels in the study

    [workload_options]                    # the workload override table's keys (rate, time_scale, ...)
    rate = 22.0

    [baseline]
    engine = "sim:policy=fcfs"            # an engine spec, as --engine takes it

    [[variants]]                          # each changes ONE assumption of the baseline (or of `base`)
    name = "fair"
    change = { policy = "fair" }

    [[metrics]]
    name = "ttft.p99"
    tenants = "light-*"                   # optional: these tenants only
    threshold = "<= -20%"                 # vs the baseline on the same slice and trial; or absolute: "<= 2.5"

    [slices]                              # disjoint windows of the trace, seconds from its start
    tuning = [0, 60]
    held_out = [60, 120]

The file's SHA-256 goes into the study's manifest, so a plan cannot be changed after its results are in.
Every problem is one line naming the file, line and field (exit 2).
"""

from __future__ import annotations

import hashlib
import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import HarnessInputError
from harness.gate.config import _find_key, _find_string, _find_table, _key_on_line, _line_from_message
from harness.study.metrics import Metric, metric_problem
from workloads.errors import deepest_line

# a study repeats every unit this many times at most: more is a typo (1e9 exhausted memory), not a plan
MAX_TRIALS = 1000
_THRESHOLD = re.compile(r"^\s*(<=|>=)\s*([+-]?\d+(?:\.\d+)?)\s*(%?)\s*$")
TOP_KEYS = (
    "decision",
    "workload",
    "trials",
    "seed",
    "slo_ttft_ms",
    "slo_tpot_ms",
    "slo_classes",
    "pick",
    "workload_options",
    "baseline",
    "variants",
    "metrics",
    "slices",
)


@dataclass(frozen=True)
class Threshold:
    """`op` "<=" or ">="; `value` absolute, or a relative change to the baseline when `relative`."""

    op: str
    value: float
    relative: bool

    def met(self, value: float | None, baseline: float | None) -> bool | None:
        """Whether `value` meets it (None: no data to say)."""
        if value is None or (self.relative and not baseline):
            return None
        x = (value / baseline - 1.0) * 100.0 if self.relative else value  # type: ignore[operator]
        return x <= self.value if self.op == "<=" else x >= self.value

    def text(self) -> str:
        return f"{self.op} {self.value:+g}%" if self.relative else f"{self.op} {self.value:g}"


@dataclass(frozen=True)
class PlannedMetric:
    metric: Metric
    threshold: Threshold | None


@dataclass(frozen=True)
class Variant:
    """A named engine configuration: one `change` (key -> value) applied to the baseline or to `base`."""

    name: str
    change: dict[str, Any]
    base: str | None = None  # another variant's name; None: the baseline
    reference: bool = False  # measured for comparison (e.g. a tenant alone), never picked


@dataclass(frozen=True)
class Slice:
    name: str
    start_s: float
    end_s: float


@dataclass(frozen=True)
class StudyPlan:
    """A parsed, checked acceptance plan (see the module docstring)."""

    path: Path
    sha256: str
    decision: str
    workload: str
    baseline: str  # engine spec text
    variants: tuple[Variant, ...]
    metrics: tuple[PlannedMetric, ...]
    slices: tuple[Slice, Slice]  # tuning, held-out
    pick: Metric
    trials: int = 1
    seed: int = 0
    slo_ttft_ms: float | None = None
    slo_tpot_ms: float | None = None
    workload_options: dict[str, Any] = field(default_factory=dict)
    slo_classes: tuple[str, ...] = ()  # `--slo-class` values, as written (checked when the plan is read)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "sha256": self.sha256,
            "decision": self.decision,
            "workload": self.workload,
            "workload_options": self.workload_options,
            "baseline": self.baseline,
            "variants": [
                {"name": v.name, "change": v.change, "base": v.base, "reference": v.reference} for v in self.variants
            ],
            "metrics": [
                {"metric": m.metric.label, "threshold": m.threshold.text() if m.threshold else None}
                for m in self.metrics
            ],
            "slices": {s.name: [s.start_s, s.end_s] for s in self.slices},
            "pick": self.pick.label,
            "trials": self.trials,
            "seed": self.seed,
            "slo_ttft_ms": self.slo_ttft_ms,
            "slo_tpot_ms": self.slo_tpot_ms,
            "slo_classes": list(self.slo_classes),
        }


def parse_threshold(text: Any) -> Threshold | None:
    m = _THRESHOLD.match(str(text)) if isinstance(text, str) else None
    if m is None:
        return None
    return Threshold(m.group(1), float(m.group(2)), m.group(3) == "%")


def load_plan(path: Path) -> StudyPlan:
    """Read and check a plan file; a HarnessInputError `FILE:LINE: field NAME: problem` if it is bad."""
    from harness.study.variants import change_problem

    try:
        source = path.read_bytes()
    except OSError as exc:
        raise HarnessInputError(f"{path}: cannot read the plan ({exc.strerror})") from None
    text = source.decode("utf-8", errors="replace")
    lines = text.splitlines()

    def fail(line: int | None, name: str, problem: str) -> HarnessInputError:
        return HarnessInputError(f"{path}:{line or '?'}: field {name}: {problem}")

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        problem = re.sub(r"\s*\(at line.*", "", str(exc))
        raise fail(_line_from_message(str(exc)), "?", f"not valid TOML: {problem}") from None
    except RecursionError:  # tomllib recurses per nested array or inline table
        line = deepest_line(text)
        raise fail(line, _key_on_line(lines, line), "nested too deeply") from None
    unknown = sorted(set(data) - set(TOP_KEYS))
    if unknown:
        raise fail(_find_table(lines, unknown[0]), unknown[0], f"unknown key (known: {', '.join(TOP_KEYS)})")
    for key in ("decision", "workload"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise fail(_find_key(lines, key), key, "required: a non-empty string")
    baseline = data.get("baseline")
    base_spec = baseline.get("engine") if isinstance(baseline, dict) else None
    raw_metrics = data.get("metrics") or []
    if not isinstance(raw_metrics, list) or not raw_metrics:
        raise fail(_find_table(lines, "metrics"), "metrics", "required: at least one [[metrics]] entry")
    metrics: list[PlannedMetric] = []
    for i, entry in enumerate(raw_metrics):
        where = f"metrics[{i}]"
        line = _find_table(lines, "metrics", i)
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise fail(line, f"{where}.name", "required: a metric name")
        problem = metric_problem(entry["name"])
        if problem:
            raise fail(_find_string(lines, entry["name"]) or line, f"{where}.name", problem)
        extra = sorted(set(entry) - {"name", "tenants", "threshold"})
        if extra:
            raise fail(
                _find_key(lines, extra[0], line or 0),
                f"{where}.{extra[0]}",
                "unknown key (known: name, tenants, threshold)",
            )
        threshold = None
        if "threshold" in entry:
            threshold = parse_threshold(entry["threshold"])
            if threshold is None:
                raise fail(
                    _find_key(lines, "threshold", line or 0),
                    f"{where}.threshold",
                    f"expected '<= X', '>= X' or a change to the baseline '<= -20%', got {entry['threshold']!r}",
                )
            if not isinstance(base_spec, str):
                raise fail(
                    _find_key(lines, "threshold", line or 0),
                    f"{where}.threshold",
                    'a threshold needs a baseline to judge against: add [baseline] engine = "..."',
                )
        tenants = entry.get("tenants")
        if tenants is not None and not isinstance(tenants, str):
            raise fail(_find_key(lines, "tenants", line or 0), f"{where}.tenants", "expected a glob string")
        metrics.append(PlannedMetric(Metric(entry["name"], tenants), threshold))
    if not isinstance(base_spec, str):
        raise fail(_find_table(lines, "baseline"), "baseline.engine", "required: the engine spec the variants change")
    variants: list[Variant] = []
    names = {"baseline"}
    raw_variants = data.get("variants") or []
    if not isinstance(raw_variants, list):
        raise fail(_find_key(lines, "variants"), "variants", f"expected [[variants]] entries, got {raw_variants!r}")
    for i, entry in enumerate(raw_variants):
        where = f"variants[{i}]"
        line = _find_table(lines, "variants", i)
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not entry["name"]:
            raise fail(line, f"{where}.name", "required: a name")
        name = entry["name"]
        if name in names:
            raise fail(_find_string(lines, name) or line, f"{where}.name", f"{name!r} is already taken")
        base = entry.get("base")
        if base is not None and base not in names:
            raise fail(_find_key(lines, "base", line or 0), f"{where}.base", f"no variant {base!r} before this one")
        change = entry.get("change")
        if not isinstance(change, dict) or len(change) != 1:
            raise fail(
                _find_key(lines, "change", line or 0),
                f"{where}.change",
                "change exactly one assumption: change = { key = value }",
            )
        problem = change_problem(base_spec, change)
        if problem:
            raise fail(_find_key(lines, "change", line or 0), f"{where}.change", problem)
        reference = entry.get("reference", False)
        if not isinstance(reference, bool):
            raise fail(_find_key(lines, "reference", line or 0), f"{where}.reference", "expected true or false")
        unknown_keys = sorted(set(entry) - {"name", "base", "change", "reference"})
        if unknown_keys:
            raise fail(
                _find_key(lines, unknown_keys[0], line or 0),
                f"{where}.{unknown_keys[0]}",
                "unknown key (known: name, base, change, reference)",
            )
        variants.append(Variant(name, dict(change), None if base in (None, "baseline") else base, reference))
        names.add(name)
    if not variants:
        raise fail(_find_table(lines, "variants"), "variants", "required: at least one [[variants]] entry")
    slices = data.get("slices")
    if not isinstance(slices, dict) or set(slices) != {"tuning", "held_out"}:
        raise fail(_find_table(lines, "slices"), "slices", "required: [slices] with tuning = [start, end] and held_out")
    parsed: list[Slice] = []
    for key in ("tuning", "held_out"):
        window = slices[key]
        ok = (
            isinstance(window, list)
            and len(window) == 2
            and all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in window)
        )
        if not ok or not 0 <= window[0] < window[1]:
            raise fail(
                _find_key(lines, key),
                f"slices.{key}",
                f"expected [start_s, end_s] with 0 <= start < end, got {window!r}",
            )
        parsed.append(Slice(key, float(window[0]), float(window[1])))
    tuning, held = parsed
    if tuning.start_s < held.end_s and held.start_s < tuning.end_s:
        raise fail(
            _find_key(lines, "held_out"),
            "slices.held_out",
            f"overlaps the tuning slice ({tuning.start_s:g}-{tuning.end_s:g} s and "
            f"{held.start_s:g}-{held.end_s:g} s): a held-out slice must be unseen",
        )
    pick_name = data.get("pick", metrics[0].metric.label)
    pick = next((m.metric for m in metrics if m.metric.label == pick_name), None)
    if pick is None:
        raise fail(
            _find_key(lines, "pick"),
            "pick",
            f"not one of the plan's metrics ({', '.join(m.metric.label for m in metrics)})",
        )
    trials = data.get("trials", 1)
    if not isinstance(trials, int) or isinstance(trials, bool) or not 1 <= trials <= MAX_TRIALS:
        raise fail(_find_key(lines, "trials"), "trials", f"expected an integer 1..{MAX_TRIALS}, got {trials!r}")
    seed = data.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**32:
        # a float seed would be truncated silently (1.5 -> 1): refused, like any other wrong type
        raise fail(_find_key(lines, "seed"), "seed", f"expected an integer 0..2**32-1, got {seed!r}")
    options = data.get("workload_options", {})
    if not isinstance(options, dict):
        raise fail(_find_table(lines, "workload_options"), "workload_options", "expected a table")
    for key in ("slo_ttft_ms", "slo_tpot_ms"):
        value = data.get(key)
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if value is not None and not (number and 0 < value < math.inf):
            raise fail(_find_key(lines, key), key, f"expected a finite number > 0, got {value!r}")
    classes = _slo_classes(
        data.get("slo_classes", []), lambda problem: fail(_find_key(lines, "slo_classes"), "slo_classes", problem)
    )
    return StudyPlan(
        path=path,
        sha256=hashlib.sha256(source).hexdigest(),
        decision=data["decision"],
        workload=_beside(path, data["workload"]),
        baseline=base_spec,
        variants=tuple(variants),
        metrics=tuple(metrics),
        slices=(tuning, held),
        pick=pick,
        trials=trials,
        seed=seed,
        slo_ttft_ms=data.get("slo_ttft_ms"),
        slo_tpot_ms=data.get("slo_tpot_ms"),
        workload_options=dict(options),
        slo_classes=classes,
    )


def _slo_classes(value: Any, fail: Any) -> tuple[str, ...]:
    """The plan's `slo_classes`: `--slo-class` values, each parsed now so a bad one stops the study before a unit."""
    from harness.metrics.slo_classes import parse_slo_class

    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise fail(f"expected a list of NAME:ttft_ms=...,tpot_ms=... strings, got {value!r}")
    names = []
    for text in value:
        try:
            names.append(parse_slo_class(text).name)
        except HarnessInputError as exc:
            raise fail(str(exc)) from None
    if len(set(names)) != len(names):
        raise fail(f"a class named twice: {names}")
    return tuple(value)


def _beside(plan: Path, workload: str) -> str:
    """A workload file named relative to the plan is read from beside it; a preset name stays as it is."""
    candidate = plan.parent / workload
    return (
        str(candidate)
        if Path(workload).suffix and not Path(workload).is_absolute() and candidate.exists()
        else workload
    )
