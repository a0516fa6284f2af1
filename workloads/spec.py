"""Workload spec files (TOML): what to load or generate, and which transforms to apply.

A spec has either a `[trace]` table (a bundled trace or a file) or one or more `[[tenants]]` (synthetic),
plus optional `seed`, `[transforms]` and `[closed_loop]`. docs/workloads.md has the full format.
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from workloads.arrivals import ArrivalProcess, parse_arrival
from workloads.bundled import BUNDLED
from workloads.errors import WorkloadError, deepest_line
from workloads.lengths import Mixture, parse_length
from workloads.options import MAX_REQUESTS, MAX_SPAN_S, MAX_TOKENS, TRANSFORM_KEYS, Options, check_option
from workloads.readers.schemas import FORMATS, user_column_map
from workloads.sessions import MAX_FANOUT, SessionSource
from workloads.slo_targets import TARGET_FIELDS, ClassTargets, class_targets
from workloads.synthetic import TenantSpec

TOP_KEYS = {
    "name",
    "description",
    "seed",
    "requests",
    "duration_s",
    "trace",
    "tenants",
    "transforms",
    "closed_loop",
    "sessions",
    "slo_classes",
}
SESSION_KEYS = {
    "file",
    "format",
    "count",
    "rate",
    "turns",
    "first_tokens",
    "new_tokens",
    "output",
    "think_s",
    "shared_prefix_blocks",
    "tenant",
    "tool_ms",
    "fanout",
    "sub_tokens",
    "sub_output",
    "first_sessions",
}
SESSION_TRANSFORMS = {"seed", "max_context", "time_scale"}  # a session's turns depend on each other: no sampling
TRACE_KEYS = {"bundled", "path", "format", "columns", "time_unit"}
TENANT_KEYS = {
    "name",
    "count",
    "rate",
    "arrival",
    "input",
    "output",
    "priority",
    "start_s",
    "requests",
    "reasoning_tokens",
    "slo_class",
}


@dataclass(frozen=True)
class TraceSource:
    """A spec's [trace]: a bundled trace or a file, and how to read it."""

    bundled: str | None = None
    path: Path | None = None
    format: str = "auto"
    columns: dict[str, Any] | None = None
    time_unit: str | None = None


@dataclass(frozen=True)
class SyntheticSource:
    """A spec's [[tenants]], and how many requests or seconds to generate."""

    tenants: tuple[TenantSpec, ...]
    requests: int | None = None
    duration_s: float | None = None


@dataclass(frozen=True)
class WorkloadSpec:
    """A parsed spec file: its source, options and description."""

    name: str
    source: TraceSource | SyntheticSource | SessionSource
    options: Options = field(default_factory=Options)
    description: str = ""
    class_sources: dict[str, str] = field(default_factory=dict)  # `Workload.class_sources`, for a spec file
    slo_classes: tuple[ClassTargets, ...] = ()  # its [[slo_classes]] tables, in order (the first most urgent)


class SpecText:
    """Finds the line a field of a spec file is on, for error messages (tomllib keeps no positions)."""

    def __init__(self, display: str, text: str) -> None:
        self.display = display
        self.lines = text.splitlines()

    def line_of(self, field: str | None) -> int | None:
        if not field:
            return None
        start, keys = 0, []
        for part in re.findall(r"[A-Za-z_][A-Za-z0-9_]*(?:\[\d+\])?", field):
            name, _, index = part.partition("[")
            header = rf"^\s*\[\[\s*{name}\s*\]\]" if index else rf"^\s*\[\s*{name}\s*\]"
            hits = [i for i in range(start, len(self.lines)) if re.match(header, self.lines[i])]
            skip = int(index.rstrip("]")) if index else 0
            if len(hits) > skip:
                start = hits[skip]
            else:
                keys.append(name)
        # Prefer a line naming every key ("output = { ..., high = 1 }"), then one naming the last key, then its
        # parent's ("output = -3" is reported as output.value)
        for wanted in (keys, keys[-1:], keys[-2:-1]):
            patterns = [re.compile(rf"(^|[\s{{,]){re.escape(k)}\s*=") for k in wanted]
            for i in range(start, len(self.lines)):
                if wanted and all(p.search(self.lines[i]) for p in patterns):
                    return i + 1
        return start + 1

    def error(self, exc: WorkloadError) -> WorkloadError:
        return WorkloadError(exc.what, file=self.display, line=self.line_of(exc.field), field=exc.field)


def _fail(what: str, field: str) -> WorkloadError:
    return WorkloadError(what, field=field)


def _opt(option: str, value: Any, field: str) -> Any:
    """check_option, but the error names the field as written in the file."""
    try:
        return check_option(option, value)
    except WorkloadError as exc:
        raise _fail(exc.what, field) from None


def _table(value: Any, field: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(f"expected a table, found {value!r}", field)
    return value


def _no_unknown(table: dict[str, Any], allowed: set[str], field: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        prefix = f"{field}." if field else ""
        raise _fail(f"unknown key; expected one of {', '.join(sorted(allowed))}", f"{prefix}{unknown[0]}")


def _trace(table: dict[str, Any], base: Path) -> TraceSource:
    _no_unknown(table, TRACE_KEYS, "trace")
    if ("bundled" in table) == ("path" in table):
        raise _fail("give exactly one of bundled = NAME or path = FILE", "trace")
    if "bundled" in table and table["bundled"] not in BUNDLED:
        raise _fail(
            f"unknown bundled trace {table['bundled']!r}; expected one of {', '.join(BUNDLED)}", "trace.bundled"
        )
    fmt = table.get("format", "auto")
    if fmt not in FORMATS:
        raise _fail(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}", "trace.format")
    columns = _table(table["columns"], "trace.columns") if "columns" in table else None
    if columns is not None:
        try:  # check the mapping now, so its error points into this file
            user_column_map(columns, table.get("time_unit"))
        except WorkloadError as exc:
            raise _fail(exc.what, f"trace.{exc.field}") from None
    path = base / table["path"] if isinstance(table.get("path"), str) else None
    if "path" in table and path is None:
        raise _fail(f"expected a file name, found {table['path']!r}", "trace.path")
    return TraceSource(table.get("bundled"), path, fmt, columns, table.get("time_unit"))


def _tenants(entries: Any) -> tuple[TenantSpec, ...]:
    if not isinstance(entries, list) or not entries:
        raise _fail("expected one or more [[tenants]] tables", "tenants")
    out: list[TenantSpec] = []
    for i, entry in enumerate(entries):
        where = f"tenants[{i}]"
        t = _table(entry, where)
        _no_unknown(t, TENANT_KEYS, where)
        for key in ("rate", "input", "output"):
            if key not in t:
                raise _fail(f"missing {key!r}", f"{where}.{key}")
        name = t.get("name", f"tenant-{i}")
        count = _opt("requests", t["count"], f"{where}.count") if "count" in t else 1
        base = TenantSpec(
            name=str(name),
            rate=_opt("rate", t["rate"], f"{where}.rate"),
            input=parse_length(t["input"], f"{where}.input"),
            output=parse_length(t["output"], f"{where}.output"),
            arrival=parse_arrival(t["arrival"], f"{where}.arrival") if "arrival" in t else ArrivalProcess(),
            priority=_priority(t.get("priority", 0), where),
            start_s=_opt("start_s", t.get("start_s", 0.0), f"{where}.start_s"),
            requests=_opt("requests", t["requests"], f"{where}.requests") if "requests" in t else None,
            # 0 reasoning tokens is a plain request: one tenant may mix plain and reasoning requests
            reasoning=parse_length(t["reasoning_tokens"], f"{where}.reasoning_tokens", least=0)
            if "reasoning_tokens" in t
            else None,
            slo_class=_class_name(t["slo_class"], f"{where}.slo_class") if "slo_class" in t else None,
        )
        names = [base.name] if count == 1 else [f"{base.name}-{k + 1}" for k in range(count)]
        out += [replace(base, name=n) for n in names]
    return tuple(out)


def _sessions(table: dict[str, Any], base: Path) -> SessionSource:
    _no_unknown(table, SESSION_KEYS, "sessions")
    given: dict[str, Any] = {}
    if "file" in table:
        if not isinstance(table["file"], str):
            raise _fail(f"expected a file name, found {table['file']!r}", "sessions.file")
        given["file"] = base / table["file"]
    if table.get("format", "auto") not in ("auto", "sessions", "sharegpt", "weka"):
        raise _fail(f"unknown format {table['format']!r}; expected auto, sessions, sharegpt or weka", "sessions.format")
    given["format"] = table.get("format", "auto")
    for key in ("turns", "first_tokens", "new_tokens", "output", "tool_ms", "fanout", "sub_tokens", "sub_output"):
        if key in table:
            given[key] = parse_length(table[key], f"sessions.{key}")
    if "fanout" in given and not _largest(given["fanout"]) <= MAX_FANOUT:  # a turn of 10^6 branches filled memory
        raise _fail(f"draws must stay <= {MAX_FANOUT} branches (set max)", "sessions.fanout")
    # bounded above too: NaN passed `v < low`, and a NaN rate or 1e300 s think time broke the schedule
    for key, kind, low, high in (
        ("count", int, 1, MAX_REQUESTS),
        ("shared_prefix_blocks", int, 0, MAX_TOKENS),
        ("rate", float, 0.0, 1e6),
        ("think_s", float, 0.0, MAX_SPAN_S),
        ("first_sessions", int, 1, MAX_REQUESTS),
    ):
        if key in table:
            v = table[key]
            ok = isinstance(v, int) if kind is int else isinstance(v, int | float)
            if isinstance(v, bool) or not ok or not low <= v <= high or (key == "rate" and v <= 0):
                raise _fail(
                    f"expected a number {'>' if key == 'rate' else '>='} {low:g} and <= {high:g}, found {v!r}",
                    f"sessions.{key}",
                )
            given[key] = kind(v)
    if "tenant" in table:
        given["tenant"] = str(table["tenant"])
    if "first_sessions" in given and "file" not in given:
        raise _fail(
            "keeps the first sessions of a file; generated sessions are sized by count", "sessions.first_sessions"
        )
    return SessionSource(**given)


def _largest(dist: Any) -> float:
    """The largest value a length distribution can draw (infinity where it has no bound)."""
    if isinstance(dist, Mixture):
        return max(_largest(c) for c in dist.components)
    for name in ("value", "high", "max"):
        if getattr(dist, name, None) is not None:
            return float(getattr(dist, name))
    return math.inf


def check_session_options(values: dict[str, Any]) -> None:
    """Sampling, windows and closed loops would cut sessions apart: a session workload takes only a few options."""
    extra = sorted(k for k, v in values.items() if v is not None and k not in SESSION_TRANSFORMS)
    if extra:
        only = ", ".join(sorted(SESSION_TRANSFORMS))
        raise _fail(f"does not apply to sessions (their turns depend on each other); only {only} do", extra[0])


def _class_name(value: Any, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _fail(f"expected an SLO class name, found {value!r}", field)
    return value.strip()


def class_sources(spec: WorkloadSpec, data: dict[str, Any], located: SpecText) -> dict[str, str]:
    """Where the spec names each SLO class: "FILE:LINE: tenants[i].slo_class" (the first tenant naming it)."""
    out: dict[str, str] = {}
    if isinstance(spec.source, SyntheticSource):
        for i, entry in enumerate(data["tenants"]):
            if "slo_class" in entry:  # parsed already: a non-empty string
                field = f"tenants[{i}].slo_class"
                out.setdefault(entry["slo_class"].strip(), f"{located.display}:{located.line_of(field)}: {field}")
    return out


def _slo_classes(entries: Any) -> tuple[ClassTargets, ...]:
    """A spec's [[slo_classes]]: each a `name` and any of the target fields (workloads/slo_targets.py)."""
    if not isinstance(entries, list) or not entries:
        raise _fail("expected one or more [[slo_classes]] tables", "slo_classes")
    out: list[ClassTargets] = []
    for i, entry in enumerate(entries):
        where = f"slo_classes[{i}]"
        table = _table(entry, where)
        _no_unknown(table, {"name", *TARGET_FIELDS}, where)
        if "name" not in table:
            raise _fail("missing 'name'", f"{where}.name")
        name = _class_name(table["name"], f"{where}.name")
        if any(c.name == name for c in out):
            raise _fail(f"class {name!r} given twice", f"{where}.name")
        try:
            out.append(class_targets(name, [(k, v) for k, v in table.items() if k != "name"], source=where))
        except WorkloadError as exc:
            raise _fail(exc.what, f"{where}.{exc.field}") from None
    return tuple(out)


def _priority(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(f"expected an integer, found {value!r}", f"{where}.priority")
    return value


def parse_spec(data: dict[str, Any], name: str, base: Path) -> WorkloadSpec:
    """A WorkloadSpec from parsed TOML; errors carry field names only (see `load_spec_file` for lines)."""
    _no_unknown(data, TOP_KEYS, "")
    if sum(key in data for key in ("trace", "tenants", "sessions")) != 1:
        raise _fail("a spec needs one of a [trace] table, [[tenants]] tables or a [sessions] table", "trace")
    values: dict[str, Any] = {"seed": _opt("seed", data.get("seed", 0), "seed")}
    transforms = _table(data.get("transforms", {}), "transforms")
    _no_unknown(transforms, TRANSFORM_KEYS, "transforms")
    values.update({k: _opt(k, v, f"transforms.{k}") for k, v in transforms.items()})
    loop = _table(data.get("closed_loop", {}), "closed_loop")
    _no_unknown(loop, {"users", "think_time_s"}, "closed_loop")
    if loop:
        if "users" not in loop:
            raise _fail("missing 'users'", "closed_loop.users")
        values["closed_loop_users"] = _opt("closed_loop_users", loop["users"], "closed_loop.users")
        values["think_time_s"] = _opt("think_time_s", loop.get("think_time_s", 0.0), "closed_loop.think_time_s")
    options = Options(**values)
    source: TraceSource | SyntheticSource | SessionSource
    if "sessions" in data:
        check_session_options(values)
        for key in ("requests", "duration_s"):  # was read by nothing: `duration_s = inf` passed in silence
            if key in data:
                raise _fail(f"top-level {key} is for synthetic workloads; sessions are sized by [sessions] count", key)
        source = _sessions(_table(data["sessions"], "sessions"), base)
    elif "trace" in data:
        for key in ("requests", "duration_s"):
            if key in data:
                raise _fail(f"top-level {key} is for synthetic workloads; put it under [transforms]", key)
        source = _trace(_table(data["trace"], "trace"), base)
    else:
        requests = _opt("requests", data["requests"], "requests") if "requests" in data else None
        duration = _opt("duration_s", data["duration_s"], "duration_s") if "duration_s" in data else None
        source = SyntheticSource(_tenants(data["tenants"]), requests, duration)
    description = data.get("description", "")
    classes = _slo_classes(data["slo_classes"]) if "slo_classes" in data else ()
    return WorkloadSpec(str(data.get("name", name)), source, options, str(description), slo_classes=classes)


def load_spec_file(path: Path, display: str | None = None) -> WorkloadSpec:
    display = display or str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise WorkloadError("no such file", file=display, field="file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise WorkloadError(f"cannot read: {exc}", file=display, field="file") from None
    located = SpecText(display, text)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        match = re.search(r"\(at line (\d+), column \d+\)", str(exc))
        what = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc)) or "invalid TOML"
        raise WorkloadError(what, file=display, line=int(match.group(1)) if match else 1, field="toml") from None
    except RecursionError:  # tomllib recurses per nested array or inline table
        raise WorkloadError("nested too deeply", file=display, line=deepest_line(text), field="toml") from None
    try:
        spec = parse_spec(data, path.stem, path.parent)
    except WorkloadError as exc:
        if exc.file is not None:
            raise
        raise located.error(exc) from None
    # each class's targets say where they were given: "FILE:LINE" of its table
    classes = tuple(replace(c, source=f"{display}:{located.line_of(c.source)}") for c in spec.slo_classes)
    return replace(spec, class_sources=class_sources(spec, data, located), slo_classes=classes)
