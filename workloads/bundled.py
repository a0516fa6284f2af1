"""The real traces shipped inside the package (see each folder's SOURCE.md and LICENSE.md)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from workloads.errors import WorkloadError

if TYPE_CHECKING:  # the readers load pandas: the command line lists these names without it
    from workloads.readers import TraceTable

TRACES_DIR = Path(__file__).resolve().parent / "traces"


@dataclass(frozen=True)
class BundledTrace:
    """A real trace shipped in workloads/traces, with its format and summary."""

    name: str
    relative_path: str  # under workloads/traces/
    format: str
    summary: str

    @property
    def path(self) -> Path:
        return TRACES_DIR / self.relative_path


BUNDLED: dict[str, BundledTrace] = {
    t.name: t
    for t in (
        BundledTrace(
            "azure-code",
            "azure_llm_2023/AzureLLMInferenceTrace_code.csv",
            "azure",
            "Azure LLM inference 2023, code completion: 8,819 requests in 57 min, very bursty",
        ),
        BundledTrace(
            "azure-conv",
            "azure_llm_2023/AzureLLMInferenceTrace_conv.csv",
            "azure",
            "Azure LLM inference 2023, conversation: 19,366 requests in 58 min, near Poisson",
        ),
        BundledTrace(
            "mooncake-conv",
            "mooncake/conversation_trace.jsonl",
            "mooncake",
            "Mooncake (Kimi) conversation: 12,031 long-prompt requests with shared prefix blocks",
        ),
        BundledTrace(
            "mooncake-synthetic",
            "mooncake/synthetic_trace.jsonl",
            "mooncake",
            "Mooncake synthetic: 3,993 requests, Poisson arrivals, multi-turn prefixes",
        ),
    )
}


def bundled_trace(name: str, where: str | None = None) -> BundledTrace:
    try:
        return BUNDLED[name]
    except KeyError:
        raise WorkloadError(
            f"unknown bundled trace {name!r}; expected one of {', '.join(BUNDLED)}", file=where, field="trace"
        ) from None


def read_bundled(name: str) -> TraceTable:
    from workloads.readers import read_trace

    trace = bundled_trace(name)
    return read_trace(trace.path, format=trace.format, display=f"workloads/traces/{trace.relative_path}")
