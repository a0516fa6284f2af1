"""Column layouts of the trace formats batchmark reads, and how a file's header picks one.

Every reader is the same reader with a different `ColumnMap`: Azure (2023 and the 2024 week-long files share
the columns), BurstGPT, Mooncake, SplitwiseSim, batchmark's own canonical layout, or a mapping the user gives.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from workloads.errors import WorkloadError

# Seconds per unit of the arrival column; "datetime" means ISO-8601 date-time strings.
TIME_UNITS: dict[str, float | None] = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "datetime": None}
# one column each, if any
OPTIONAL_KEYS = ("priority", "prompt_text", "prefix_hash_ids", "reasoning_tokens", "slo_class")
MAPPING_KEYS = ("arrival", "input_tokens", "output_tokens", "tenant", *OPTIONAL_KEYS)


@dataclass(frozen=True)
class ColumnMap:
    """Which columns of a trace hold arrival, lengths, tenant, priority and prompt text."""

    arrival: str
    input_tokens: str
    output_tokens: str
    time_unit: str = "s"
    tenant: tuple[str, ...] = ()  # several columns are joined with "/" (BurstGPT: Model/Log Type)
    priority: str | None = None
    prompt_text: str | None = None
    prefix_hash_ids: str | None = None
    reasoning_tokens: str | None = None  # of the output tokens, how many lead as reasoning
    slo_class: str | None = None  # the request's SLO class (empty: none named; classed by its tenant)
    # Built-in layouts name optional columns that a given file may lack; a user's mapping means every name.
    extras_optional: bool = False
    # Why a row with 0 output tokens exists in this format, for the note that reports dropping it.
    zero_output_reason: str = "nothing to generate"

    def required(self) -> list[str]:
        names = [self.arrival, self.input_tokens, self.output_tokens]
        if not self.extras_optional:
            names += [*self.tenant, *(c for c in (getattr(self, k) for k in OPTIONAL_KEYS) if c)]
        return names

    def present(self, header: Iterable[str]) -> ColumnMap:
        """This map restricted to the optional columns the header actually has."""
        if not self.extras_optional:
            return self
        have = set(header)
        keep = tuple(c for c in self.tenant if c in have)
        return ColumnMap(
            self.arrival,
            self.input_tokens,
            self.output_tokens,
            self.time_unit,
            tenant=keep if len(keep) == len(self.tenant) else (),
            **{k: getattr(self, k) if getattr(self, k) in have else None for k in OPTIONAL_KEYS},
            extras_optional=True,
            zero_output_reason=self.zero_output_reason,
        )

    def to_spec(self) -> dict[str, Any]:
        mapping: dict[str, Any] = {
            "arrival": self.arrival,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
        }
        if self.tenant:
            mapping["tenant"] = list(self.tenant)
        for key in OPTIONAL_KEYS:
            if getattr(self, key):
                mapping[key] = getattr(self, key)
        return {"columns": mapping, "time_unit": self.time_unit}


AZURE = ColumnMap("TIMESTAMP", "ContextTokens", "GeneratedTokens", time_unit="datetime")
BURSTGPT = ColumnMap(
    "Timestamp",
    "Request tokens",
    "Response tokens",
    time_unit="s",
    tenant=("Model", "Log Type"),
    extras_optional=True,
    zero_output_reason="failed in source",
)
MOONCAKE = ColumnMap(
    "timestamp",
    "input_length",
    "output_length",
    time_unit="ms",
    prefix_hash_ids="hash_ids",
    extras_optional=True,
)
# SplitwiseSim's request traces (github.com/Mutinifni/splitwise-sim, README "Request Traces"): arrival in seconds;
# request_id, request_type and batch_size are not read.
SPLITWISE = ColumnMap(
    "arrival_timestamp",
    "prompt_size",
    "token_size",
    time_unit="s",
    tenant=("application_id",),
    extras_optional=True,
)
CANONICAL = ColumnMap(
    "arrival_s",
    "input_tokens",
    "output_tokens",
    time_unit="s",
    tenant=("tenant",),
    priority="priority",
    prompt_text="prompt_text",
    prefix_hash_ids="prefix_hash_ids",
    reasoning_tokens="reasoning_tokens",
    slo_class="slo_class",
    extras_optional=True,
)

# format name -> (layout, file kind); "csv" and "jsonl" alone mean "sniff, or use the given mapping".
KNOWN_FORMATS: dict[str, tuple[ColumnMap, str]] = {
    "azure": (AZURE, "csv"),
    "burstgpt": (BURSTGPT, "csv"),
    "mooncake": (MOONCAKE, "jsonl"),
    "splitwise": (SPLITWISE, "csv"),
    "canonical-csv": (CANONICAL, "csv"),
    "canonical-jsonl": (CANONICAL, "jsonl"),
    # Alibaba ServeGen's client files: distributions drawn into requests (workloads/readers/servegen.py)
    "servegen": (CANONICAL, "servegen"),
}
FORMATS = ("auto", "csv", "jsonl", *KNOWN_FORMATS)


def sniff(header: Iterable[str], kind: str) -> tuple[str, ColumnMap] | None:
    """The built-in layout whose required columns the header has, if any."""
    have = set(header)
    for name, (cmap, cmap_kind) in KNOWN_FORMATS.items():
        if cmap_kind == kind and set(cmap.required()) <= have:
            return name, cmap.present(have)
    return None


def user_column_map(columns: Mapping[str, Any], time_unit: str | None, where: str | None = None) -> ColumnMap:
    """A ColumnMap from a user's mapping {arrival: ..., input_tokens: ..., output_tokens: ..., ...}."""
    unknown = sorted(set(columns) - set(MAPPING_KEYS))
    if unknown:
        raise WorkloadError(
            f"unknown key {unknown[0]!r}; expected {', '.join(MAPPING_KEYS)}", file=where, field="columns"
        )
    for key in ("arrival", "input_tokens", "output_tokens"):
        if not isinstance(columns.get(key), str) or not columns[key]:
            raise WorkloadError(f"the mapping needs a column name for {key!r}", file=where, field="columns")
    tenant = columns.get("tenant", ())
    tenant = (tenant,) if isinstance(tenant, str) else tuple(tenant)
    if not all(isinstance(t, str) for t in tenant):
        raise WorkloadError("tenant must be a column name or a list of names", file=where, field="columns")
    unit = time_unit or "s"
    if unit not in TIME_UNITS:
        raise WorkloadError(
            f"unknown time unit {unit!r}; expected one of {', '.join(TIME_UNITS)}", file=where, field="time_unit"
        )
    return ColumnMap(
        columns["arrival"],
        columns["input_tokens"],
        columns["output_tokens"],
        time_unit=unit,
        tenant=tenant,
        **{k: columns.get(k) for k in OPTIONAL_KEYS},
    )
