"""The value types every imported document is checked against, and the one-line error for a value that fails.

Each importer declares its tool's document as pydantic models built from these types (`vllm.VllmResult`,
`guidellm.Report`, `aiperf.Line`, ...) and validates the whole document before it builds a single record,
so a wrong type, a NaN, a negative or boolean number, a float where a count belongs, or a count too large
to rebuild in memory is refused with the file and the field's path in the document (`benchmarks[0].config`),
never a traceback or a silently wrong run. Models allow extra keys: the tools add fields between versions,
and only what an importer reads is checked.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.importers.common import UNITS, fail

# Output tokens one request may carry: each becomes a timestamp in memory, so 10^12 would exhaust it. 2^20 is
# above any model's output limit in 2026; the whole file's output tokens are bounded too (MAX_TOTAL_TOKENS).
MAX_OUTPUT_TOKENS = 2**20
MAX_TOTAL_TOKENS = 2**24
MAX_PROMPT_TOKENS = 2**27  # a count only (no memory per token), bounded so a typo of 10^12 is caught

# strict: a bool is not a number and a float is not a count (JSON `true` or `3.5` where a count belongs)
Seconds = Annotated[float, Field(strict=True, ge=0, allow_inf_nan=False)]  # a duration, or a non-negative figure
Clock = Annotated[float, Field(strict=True, allow_inf_nan=False)]  # a clock reading: any finite number
Positive = Annotated[float, Field(strict=True, gt=0, allow_inf_nan=False)]
Count = Annotated[int, Field(strict=True, ge=0, le=10**12)]
Nanoseconds = Annotated[int, Field(strict=True, ge=0)]
OutputTokens = Annotated[int, Field(strict=True, ge=0, le=MAX_OUTPUT_TOKENS)]
PromptTokens = Annotated[int, Field(strict=True, ge=0, le=MAX_PROMPT_TOKENS)]
# A closed loop's users (vLLM's --max-concurrency, GuideLLM's streams, llm-d's concurrency): at least one, and
# bounded because an import assigns each request a user slot and a typo of 10^12 would exhaust memory.
MAX_USERS = 2**20
Users = Annotated[int, Field(strict=True, ge=1, le=MAX_USERS)]
TimeUnit = Literal[tuple(UNITS)]  # type: ignore[valid-type]  # the units a time may be given in


class Doc(BaseModel):
    """A part of a tool's document: the fields an importer reads, typed; every other key allowed."""

    model_config = ConfigDict(extra="allow")


M = TypeVar("M", bound=BaseModel)


def validated(model: type[M], data: Any, path: Path, where: str = "") -> M:
    """`data` as `model`, or the one-line error naming the file, `where` (e.g. "line 4: ") and the field path."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        at = field_path(data, errors[0]["loc"])
        # a union (a number or "inf") fails once per member at the same place: say every expectation
        same = [e for e in errors if field_path(data, e["loc"]) == at]
        wanted = " or ".join(dict.fromkeys(_expected(e) for e in same))
        problem = "missing" if wanted == "required" else f"expected {wanted}, got {_shown(same[0])}"
        raise fail(path, f"{where}field {at or '(document)'}", problem) from None


def check_total_tokens(path: Path, where: str, total: int) -> None:
    """Refuse a file whose requests carry more output tokens than batchmark rebuilds in memory."""
    if total > MAX_TOTAL_TOKENS:
        raise fail(path, where, f"{total} output tokens in all: more than the {MAX_TOTAL_TOKENS} an import rebuilds")


def field_path(data: Any, loc: tuple[Any, ...]) -> str:
    """The error's location as a path in the document (`benchmarks[0].config.strategy`): pydantic's location
    also names union members and validators, which are not in the document, so it is walked along the data."""
    out, node = "", data
    for part in loc:
        if isinstance(part, int) and isinstance(node, list) and 0 <= part < len(node):
            out, node = f"{out}[{part}]", node[part]
        elif isinstance(part, str) and isinstance(node, dict):  # a missing key too: the path ends at it
            out, node = f"{out}.{part}" if out else part, node.get(part)
        else:
            break
    return out


def _expected(error: dict[str, Any]) -> str:
    if error["type"] == "missing":
        return "required"
    message = str(error["msg"]).removeprefix("Input should be ").removeprefix("Value error, ")
    message = message.split(" or instance of ")[0]  # "a valid dictionary or instance of Config": the JSON is a dict
    return message.replace("a valid integer", "an integer").replace("a valid ", "a ")


def _shown(error: dict[str, Any]) -> str:
    """The refused value as the document spells it (JSON: `true`, `NaN`), cut short."""
    try:
        text = json.dumps(error.get("input"))
    except (TypeError, ValueError):
        text = repr(error.get("input"))
    return text if len(text) <= 60 else text[:57] + "..."
