"""Request bodies of `/v1/completions` and `/v1/chat/completions`, checked field by field.

Every rejection is a 400 naming the field. Accepted but ignored (the engines decode greedily, one
sequence per request): `temperature`, `top_p`, `seed`, `user`, `presence_penalty`,
`frequency_penalty`. Refused because batchmark cannot honour them: `n`/`best_of` above 1, stop
strings, `logprobs`, `echo`, several prompts in one request. batchmark's own field `reasoning_tokens` (an
integer >= 0): the first that many output tokens are streamed as reasoning (chat: `delta.reasoning_content`,
vLLM's field; completions: the choice's `reasoning_content`, its text empty), so a client's reasoning path can
be tested without a reasoning model. They count against max_tokens, as a reasoning model's do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from engines.serve.errors import ApiError, invalid

Api = Literal["completions", "chat"]
CHAT_ROLES = ("system", "developer", "user", "assistant", "tool")


@dataclass
class GenerationParams:
    """What a completions or chat request asks for, checked and with the server's defaults filled in."""

    api: Api
    max_tokens: int | None  # None: the server's default
    stream: bool = False
    include_usage: bool = False
    ignore_eos: bool = False
    stop_token_ids: tuple[int, ...] = ()
    return_token_ids: bool = False
    priority: int = 0  # vLLM's field: lower is sooner (served in that order under --policy priority)
    reasoning_tokens: int = 0
    prompt_ids: list[int] | None = None  # completions with a token-id prompt
    prompt_text: str | None = None  # completions with a text prompt
    messages: list[dict[str, str]] | None = None  # chat


def parse_completions(body: dict[str, Any], model_name: str) -> GenerationParams:
    params = _common(body, model_name, "completions", ("max_tokens",))
    prompt = body.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str | list):
        prompt = prompt[0]  # a batch of one
    if isinstance(prompt, str):
        if not prompt:
            raise invalid("prompt", "must not be empty")
        params.prompt_text = _unicode(prompt, "prompt")
    elif isinstance(prompt, list) and prompt and all(_is_int(t) for t in prompt):
        if any(t < 0 for t in prompt):
            raise invalid("prompt", "token ids must be >= 0")
        params.prompt_ids = list(prompt)
    elif prompt is None:
        raise invalid("prompt", "is required")
    elif isinstance(prompt, list) and len(prompt) > 1 and all(isinstance(p, str | list) for p in prompt):
        raise invalid("prompt", "several prompts in one request are not supported; send one request each")
    else:
        raise invalid("prompt", "must be a non-empty string or a non-empty list of token ids")
    if body.get("echo"):
        raise invalid("echo", "is not supported")
    logprobs = body.get("logprobs")
    if logprobs not in (None, False, 0):
        raise invalid("logprobs", "is not supported")
    return params


def parse_chat(body: dict[str, Any], model_name: str) -> GenerationParams:
    params = _common(body, model_name, "chat", ("max_completion_tokens", "max_tokens"))
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise invalid("messages", "must be a non-empty list of {role, content} objects")
    parsed: list[dict[str, str]] = []
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, dict):
            raise invalid(where, "must be an object with role and content")
        role = message.get("role")
        if role not in CHAT_ROLES:
            raise invalid(f"{where}.role", f"must be one of {', '.join(CHAT_ROLES)}")
        parsed.append({"role": role, "content": _content(message.get("content"), f"{where}.content")})
    params.messages = parsed
    if body.get("logprobs"):
        raise invalid("logprobs", "is not supported")
    return params


def _common(body: dict[str, Any], model_name: str, api: Api, max_keys: tuple[str, ...]) -> GenerationParams:
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise invalid("model", "is required (a string; see GET /v1/models)")
    if model != model_name:
        raise ApiError(
            404,
            f"model: {model!r} is not served here; this server serves {model_name!r}",
            param="model",
            code="model_not_found",
        )
    max_tokens = None
    for key in max_keys:
        value = body.get(key)
        if value is not None:
            if not _is_int(value) or value < 1:
                raise invalid(key, "must be an integer >= 1")
            max_tokens = value
            break
    stream = _bool(body, "stream")
    include_usage = False
    options = body.get("stream_options")
    if options is not None:
        if not isinstance(options, dict):
            raise invalid("stream_options", "must be an object")
        include_usage = _bool(options, "include_usage", "stream_options.include_usage")
    for key in ("n", "best_of"):
        value = body.get(key)
        if value is not None and (not _is_int(value) or value != 1):
            raise invalid(key, "only 1 is supported")
    stop = body.get("stop")
    if stop not in (None, [], ""):
        raise invalid("stop", "stop strings are not supported; use stop_token_ids")
    stop_ids = body.get("stop_token_ids") or []
    if not isinstance(stop_ids, list) or not all(_is_int(t) and t >= 0 for t in stop_ids):
        raise invalid("stop_token_ids", "must be a list of token ids")
    priority = body.get("priority", 0)
    if not _is_int(priority) or abs(priority) > 2**31:
        raise invalid("priority", "must be an integer (lower is served sooner)")
    reasoning = body.get("reasoning_tokens", 0)
    if not _is_int(reasoning) or reasoning < 0:
        raise invalid("reasoning_tokens", "must be an integer >= 0")
    for key in ("temperature", "top_p", "presence_penalty", "frequency_penalty"):
        value = body.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise invalid(key, "must be a number")
    return GenerationParams(
        api=api,
        max_tokens=max_tokens,
        stream=stream,
        include_usage=include_usage,
        ignore_eos=_bool(body, "ignore_eos"),
        stop_token_ids=tuple(stop_ids),
        return_token_ids=_bool(body, "return_token_ids"),
        priority=priority,
        reasoning_tokens=reasoning,
    )


def _content(content: Any, where: str) -> str:
    if isinstance(content, str):
        return _unicode(content, where)
    if isinstance(content, list):  # [{"type": "text", "text": ...}, ...]
        texts = []
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                raise invalid(where, "only text parts ({type: text, text}) are supported")
            texts.append(part["text"])
        return _unicode("".join(texts), where)
    raise invalid(where, "must be a string or a list of text parts")


def _unicode(text: str, where: str) -> str:
    """JSON may carry lone surrogates ("\\ud800"), which are not text a tokenizer can take: a 400, not a 500."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise invalid(where, f"is not valid Unicode: a lone surrogate at character {exc.start}") from None
    return text


def _bool(body: dict[str, Any], key: str, name: str | None = None) -> bool:
    value = body.get(key)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise invalid(name or key, "must be true or false")
    return value


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
