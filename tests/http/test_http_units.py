"""Unit tests: SSE decoding across arbitrary splits, chunk reading, URLs, detokenization, histograms."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engines.http.errors import MALFORMED_EVENT, SERVER_ERROR, RequestFailure
from engines.http.payload import endpoint_url, is_plain_token_chunk, read_chunk
from engines.http.sse import SSEDecoder, SSEError, SSEEvent
from engines.serve.chat import FALLBACK_GENERATION_PROMPT, fallback_template
from engines.serve.detokenize import IncrementalDetokenizer
from engines.serve.errors import ApiError
from engines.serve.prometheus import Histogram
from engines.serve.protocol import parse_completions

payloads = st.lists(
    st.text(alphabet=st.characters(blacklist_characters="\r\n", blacklist_categories=["Cs"]), max_size=40),
    min_size=1,
    max_size=12,
)


def encode(events: list[str], newline: str) -> bytes:
    return "".join(f"data: {e}{newline}{newline}" for e in events).encode()


def decode_in_pieces(data: bytes, cuts: list[int]) -> list[SSEEvent]:
    decoder = SSEDecoder()
    out: list[SSEEvent] = []
    previous = 0
    for cut in [*sorted(cuts), len(data)]:
        out.extend(decoder.feed(data[previous:cut]))
        previous = cut
    return out + decoder.close()


@settings(max_examples=150, deadline=None)
@given(events=payloads, newline=st.sampled_from(["\n", "\r\n"]), cuts=st.lists(st.integers(0, 2000), max_size=20))
def test_sse_any_split_gives_the_same_events(events, newline, cuts):
    data = encode(events, newline)
    cuts = [c % (len(data) + 1) for c in cuts]
    got = decode_in_pieces(data, cuts)
    assert [e.data.decode() for e in got] == events
    assert all(e.event == "message" for e in got)


def test_sse_fields_comments_multiline_and_names():
    data = b": ping\n\nevent: error\ndata: a\ndata: b\nid: 7\n\ndata:no-space\n\nretry: 5\n\n"
    events = SSEDecoder().feed(data)
    assert events == [SSEEvent("error", b"a\nb"), SSEEvent("message", b"no-space")]


def test_sse_event_without_final_blank_line_counts_at_close():
    decoder = SSEDecoder()
    assert decoder.feed(b"data: [DONE]") == []
    assert decoder.close() == [SSEEvent("message", b"[DONE]")]


def test_sse_oversized_event_is_an_error():
    decoder = SSEDecoder(max_event_bytes=100)
    with pytest.raises(SSEError):
        decoder.feed(b"data: " + b"x" * 200)


@pytest.mark.parametrize("newline", [b"\n", b"\r\n"])
def test_sse_event_limit_holds_for_many_lines_and_crlf(newline):
    # an 80 MiB event of 1 MiB data lines and no blank line: refused at the 64 MiB limit, never buffered whole
    line = b"data: " + b"x" * 2**20 + newline
    decoder = SSEDecoder()
    fed = 0
    with pytest.raises(SSEError):
        for _ in range(80):
            decoder.feed(line)
            fed += 1
    assert fed <= 64


def _completion_chunk(text: str, finish=None, **extra) -> bytes:
    choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": finish, **extra}
    return json.dumps({"id": "c", "object": "text_completion", "choices": [choice]}, separators=(",", ":")).encode()


def _chat_chunk(delta: dict, finish=None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return json.dumps({"id": "c", "choices": [choice]}, separators=(",", ":")).encode()


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(max_size=8),
    finish=st.sampled_from([None, "stop", "length"]),
    ids=st.one_of(st.none(), st.lists(st.integers(0, 9), max_size=3)),
    chat=st.booleans(),
    spaced=st.booleans(),
)
def test_fast_path_agrees_with_the_parser(text, finish, ids, chat, spaced):
    extra = {} if ids is None else {"token_ids": ids}
    if chat:
        data = _chat_chunk({"content": text}, finish) if not extra else _completion_chunk(text, finish, **extra)
    else:
        data = _completion_chunk(text, finish, **extra)
    if spaced:  # servers that pretty-print must take the slow path and get the same answer
        data = json.dumps(json.loads(data)).encode()
    chat = chat and not extra
    info = read_chunk(data, chat)
    if is_plain_token_chunk(data, chat):
        assert info.tokens == 1 and info.finish_reason is None and info.token_ids is None
        assert info.usage_completion is None


def test_read_chunk_errors_and_usage():
    with pytest.raises(RequestFailure) as exc:
        read_chunk(b"{oops", False)
    assert exc.value.error_type == MALFORMED_EVENT
    with pytest.raises(RequestFailure) as exc:
        read_chunk(b'{"choices": {"a": 1}}', False)
    assert exc.value.error_type == MALFORMED_EVENT
    with pytest.raises(RequestFailure) as exc:
        read_chunk(b'{"error": {"message": "out of memory"}}', False)
    assert exc.value.error_type == SERVER_ERROR and "out of memory" in str(exc.value)
    info = read_chunk(b'{"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 9}}', False)
    assert (info.usage_prompt, info.usage_completion, info.cumulative, info.tokens) == (5, 9, False, 0)
    running = read_chunk(_completion_chunk("x")[:-1] + b',"usage":{"completion_tokens":4}}', False)
    assert running.cumulative and running.usage_completion == 4


@pytest.mark.parametrize(
    ("base", "api", "expected"),
    [
        ("http://h:1", "completions", "http://h:1/v1/completions"),
        ("http://h:1/", "chat", "http://h:1/v1/chat/completions"),
        ("http://h:1/v1", "completions", "http://h:1/v1/completions"),
        ("http://h:1/v1/chat/completions", "chat", "http://h:1/v1/chat/completions"),
        ("http://h:1/openai/v1/", "completions", "http://h:1/openai/v1/completions"),
    ],
)
def test_endpoint_url(base, api, expected):
    assert endpoint_url(base, api) == expected


def test_incremental_detokenizer_matches_whole_decode():
    from transformers import AutoTokenizer

    from engines.model.embedded import TOKENIZER_DIR

    tok = AutoTokenizer.from_pretrained(str(TOKENIZER_DIR), local_files_only=True)
    text = "naïve café — 東京 🚀 def f(x):\n    return x ** 2"
    ids = tok(text, add_special_tokens=False)["input_ids"]
    detok = IncrementalDetokenizer(tok)
    pieces = [detok.step(t) for t in ids]
    pieces.append(detok.flush())
    assert "".join(pieces) == tok.decode(ids, skip_special_tokens=True)
    assert not any("\ufffd" in p for p in pieces)  # no half characters on the wire


def test_fallback_chat_template_is_documented_shape():
    text = fallback_template([{"role": "system", "content": "s"}, {"role": "user", "content": "u"}])
    assert text == "<|system|>\ns\n<|user|>\nu\n" + FALLBACK_GENERATION_PROMPT


def test_histogram_buckets_are_cumulative_and_le():
    h = Histogram("h", "help", [0.1, 1.0])
    for v in (0.05, 0.1, 0.5, 2.0):
        h.observe(v)
    lines = dict(line.rsplit(" ", 1) for line in h.render() if not line.startswith("#"))
    assert lines == {
        'h_bucket{le="0.1"}': "2",
        'h_bucket{le="1"}': "3",
        'h_bucket{le="+Inf"}': "4",
        "h_sum": "2.65",
        "h_count": "4",
    }


def test_batch_of_one_prompt_is_accepted():
    assert parse_completions({"model": "m", "prompt": [[1, 2, 3]]}, "m").prompt_ids == [1, 2, 3]
    assert parse_completions({"model": "m", "prompt": ["hi"]}, "m").prompt_text == "hi"
    with pytest.raises(ApiError):
        parse_completions({"model": "m", "prompt": [[1], [2]]}, "m")
