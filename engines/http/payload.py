"""Request bodies for the OpenAI completions and chat APIs, and the reading of their stream chunks."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Literal

from engines.api import SERVER_TIMING_FIELD, Request, SpecDecodeCounts
from engines.http.errors import INVALID_REQUEST, MALFORMED_EVENT, SERVER_ERROR, RequestFailure

Api = Literal["completions", "chat"]
PromptFormat = Literal["auto", "ids", "text"]
PATHS: dict[str, str] = {"completions": "/completions", "chat": "/chat/completions"}


def endpoint_url(base: str, api: Api) -> str:
    """`base` may be the server root, its `/v1`, or the full endpoint URL."""
    base = base.rstrip("/")
    path = PATHS[api]
    if base.endswith(path):
        return base
    if base.endswith("/v1"):
        return base + path
    return base + "/v1" + path


def prompt_text(request: Request, tokenizer: Any | None) -> str | None:
    if request.prompt_text is not None:
        return request.prompt_text
    if tokenizer is not None and request.prompt_token_ids:
        return tokenizer.decode(list(request.prompt_token_ids))
    return None


def build_body(
    request: Request,
    *,
    api: Api,
    model: str,
    use_ids: bool,
    tokenizer: Any | None,
    include_usage: bool,
    return_token_ids: bool,
    extra: dict[str, Any],
) -> dict[str, Any]:
    """The JSON body; raises RequestFailure(invalid_request) when the prompt cannot be sent."""
    body: dict[str, Any] = {"model": model, "max_tokens": request.max_tokens, "stream": True, "temperature": 0.0}
    if api == "completions" and use_ids and request.prompt_token_ids:
        ids = request.prompt_token_ids
        body["prompt"] = ids if type(ids) is list else list(ids)  # numpy ints are converted by `encode_body`
    else:
        text = prompt_text(request, tokenizer)
        if text is None:
            raise RequestFailure(
                INVALID_REQUEST,
                f"request {request.request_id}: the {api} API needs prompt text: set Request.prompt_text "
                "or give the engine a tokenizer",
            )
        if api == "chat":
            body["messages"] = [{"role": "user", "content": text}]
        else:
            body["prompt"] = text
    if include_usage:
        body["stream_options"] = {"include_usage": True}
    # vLLM/SGLang extensions: sent only when they matter, since strict servers reject unknown fields
    if request.ignore_eos:
        body["ignore_eos"] = True
    if request.stop_token_ids:
        body["stop_token_ids"] = list(request.stop_token_ids)
    if request.slo_class is not None:
        # vLLM's priority (lower = sooner; it answers 400 unless started with --scheduling-policy priority),
        # sent only for a classed request: its class's rank (harness/loadgen/classes.py)
        body["priority"] = request.priority
    if return_token_ids:
        body["return_token_ids"] = True
    if request.reasoning_tokens:  # batchmark serve emits that many reasoning tokens first; others ignore it
        body["reasoning_tokens"] = request.reasoning_tokens
    body.update(extra)
    return body


def encode_body(body: dict[str, Any]) -> bytes:
    try:
        return json.dumps(body, separators=(",", ":")).encode()
    except TypeError:  # token ids that are numpy integers: convert once, only when needed
        if isinstance(body.get("prompt"), list):
            body["prompt"] = [int(t) for t in body["prompt"]]
        return json.dumps(body, separators=(",", ":"), default=str).encode()


@dataclass(slots=True)
class ChunkInfo:
    """What one stream chunk says: how many new tokens, their ids when given, finish and usage."""

    tokens: int = 0
    token_ids: list[int] | None = None
    finish_reason: str | None = None
    usage_prompt: int | None = None
    usage_completion: int | None = None
    usage_cached: int | None = None  # usage.prompt_tokens_details.cached_tokens (OpenAI, vLLM)
    cumulative: bool = False  # usage arrived with choices: a running total (vLLM continuous_usage_stats)
    reasoning: bool = False  # the tokens are reasoning: reasoning text (REASONING_KEYS) and no content text
    content: str | None = None  # the content text, for `think.ThinkTags` to split
    spec_decode: SpecDecodeCounts | None = None  # vLLM's per-request `metrics.speculative_decoding`, if sent
    server_timing: ServerTiming | None = None  # `batchmark serve`'s own timing of the request, if sent


def is_plain_token_chunk(data: bytes, chat: bool) -> bool:
    """True only when `data` is certainly a compact-JSON chunk of one choice with non-empty content and
    nothing else (no finish, usage, token ids or error): one token, no JSON parse needed.

    Sound because a key with its quotes (`"usage"`) cannot occur inside a JSON string, where quotes
    are escaped. Anything unusual (spaces after colons, several choices) falls back to `read_chunk`.
    """
    if data.count(b'"finish_reason"') != 1 or b'"finish_reason":null' not in data:
        return False
    if b'"usage"' in data or b'"token_ids"' in data or b'"error"' in data:
        return False
    key = _CONTENT_KEY if chat else _TEXT_KEY
    at = data.find(key) + len(key)
    return at >= len(key) and data[at] != 0x22 and data[0] == 0x7B and data[-1] == 0x7D  # not `""`; {...}


_TEXT_KEY = b'"text":"'
_CONTENT_KEY = b'"content":"'


def read_chunk(data: bytes, chat: bool) -> ChunkInfo:
    try:
        obj = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise RequestFailure(MALFORMED_EVENT, f"chunk is not JSON ({exc}): {data[:120]!r}") from None
    if not isinstance(obj, dict):
        raise RequestFailure(MALFORMED_EVENT, f"chunk is not a JSON object: {data[:120]!r}")
    error = obj.get("error")
    if error:
        message = error.get("message", error) if isinstance(error, dict) else error
        raise RequestFailure(SERVER_ERROR, f"server error in stream: {message}")
    info = ChunkInfo()
    choices = obj.get("choices")
    if choices:
        if not isinstance(choices, list) or not isinstance(choices[0], dict):
            raise RequestFailure(MALFORMED_EVENT, f"chunk 'choices' is not a list of objects: {data[:120]!r}")
        choice = choices[0]  # one prompt, n=1: there is only one
        ids = choice.get("token_ids")
        if ids is not None:  # the server says exactly which tokens (possibly none) this chunk carries
            if not isinstance(ids, list) or not all(_is_count(t) for t in ids):
                raise RequestFailure(MALFORMED_EVENT, f"chunk 'token_ids' is not a list of ids: {data[:120]!r}")
            info.token_ids = ids
            info.tokens = len(ids)
        # chat: the delta holds content and reasoning; completions: the choice does (batchmark serve's extension)
        holder = choice.get("delta") if chat else choice
        text = holder.get("content" if chat else "text") if isinstance(holder, dict) else None
        # a reasoning key with a string, even "" (a token whose bytes end a character later), and no content text
        thought = (
            next((v for k in REASONING_KEYS if isinstance(v := holder.get(k), str)), None)
            if isinstance(holder, dict)
            else None
        )
        if isinstance(text, str):
            info.content = text
        info.reasoning = thought is not None and not text  # a chunk with both is content: the answer has begun
        # one chunk = one token unless the server says how many; a reasoning key even with "" is a token (batchmark
        # serve names a reasoning token's channel before its text is complete: it was counted only from usage)
        if ids is None and (text or thought is not None):
            info.tokens = 1
        reason = choice.get("finish_reason")
        if reason is not None and not isinstance(reason, str):
            raise RequestFailure(MALFORMED_EVENT, f"chunk 'finish_reason' is not a string: {data[:120]!r}")
        info.finish_reason = reason
    usage = obj.get("usage")
    if isinstance(usage, dict):
        completion = usage.get("completion_tokens")
        prompt = usage.get("prompt_tokens")
        info.usage_completion = completion if _is_count(completion) else None
        info.usage_prompt = prompt if _is_count(prompt) else None
        details = usage.get("prompt_tokens_details")
        cached = details.get("cached_tokens") if isinstance(details, dict) else None
        info.usage_cached = cached if _is_count(cached) else None
        info.cumulative = bool(choices)
    elif usage is not None:
        raise RequestFailure(MALFORMED_EVENT, f"chunk 'usage' is not an object: {data[:120]!r}")
    info.spec_decode = spec_decode_counts(obj.get("metrics"))
    timing = obj.get(SERVER_TIMING_FIELD)
    if timing is not None:
        info.server_timing = server_timing(timing)
    return info


@dataclass(frozen=True, slots=True)
class ServerTiming:
    """What a server said of its own time on a request (`engines.api.SERVER_TIMING_FIELD`), checked: seconds
    from the request reaching it to its first token, and to its first compute (None: not said). `problem` names
    a value that was not seconds; then both are None (a field the client cannot trust is ignored, the request
    stands: the tokens were fine)."""

    ttft_s: float | None
    queue_s: float | None = None
    problem: str | None = None


def server_timing(value: Any) -> ServerTiming:
    if not isinstance(value, dict):
        return ServerTiming(None, None, f"{SERVER_TIMING_FIELD} is not an object: {value!r:.60}")
    seconds: list[float | None] = []
    for key in ("ttft_s", "queue_s"):
        v = value.get(key)
        if v is None and key == "queue_s":  # the engine may not see its admissions
            seconds.append(None)
        elif isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < 0:
            return ServerTiming(None, None, f"{SERVER_TIMING_FIELD}.{key} is not seconds >= 0: {v!r:.60}")
        else:
            seconds.append(float(v))
    return ServerTiming(*seconds)


def spec_decode_counts(metrics: Any) -> SpecDecodeCounts | None:
    """vLLM's per-request spec-decode counts (`vllm serve --per-request-spec-decode-metrics summary`, vLLM 0.32:
    `metrics.speculative_decoding` on the final usage chunk of a stream, which needs `include_usage`):
    `num_spec_steps` verify steps, `num_draft_tokens`, `num_accepted_draft_tokens`. None when absent or not counts
    (the field is experimental in vLLM: a shape it does not have is ignored, never a failed request)."""
    spec = metrics.get("speculative_decoding") if isinstance(metrics, dict) else None
    if not isinstance(spec, dict):
        return None
    values = [spec.get(k) for k in ("num_spec_steps", "num_draft_tokens", "num_accepted_draft_tokens")]
    if not all(_is_count(v) for v in values):
        return None
    return SpecDecodeCounts(*values)


# Where servers put reasoning text: vLLM's and SGLang's `reasoning_content`, vLLM's newer `reasoning` (and
# OpenRouter's); DeepSeek's API uses `reasoning_content` too.
REASONING_KEYS = ("reasoning_content", "reasoning")


def _is_count(value: Any) -> bool:
    return type(value) is int and value >= 0
