"""`batchmark serve` against hostile bodies: bounded and off-loop tokenizing, 400s (never 500s), exact limits."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import aiohttp
import pytest
from test_http_server_contract import MODEL, call, engine_for

from engines.serve import make_app
from engines.serve.background import BackgroundServer


class WatchedTokenizer:
    """The embedded tokenizer, noting every text it is asked to encode and on which thread."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.calls: list[tuple[str, int]] = []

    def __call__(self, text: str, **kwargs: Any) -> Any:
        self.calls.append((threading.current_thread().name, len(text)))
        return self._inner(text, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@pytest.fixture(scope="module")
def watched(embedded):
    tokenizer = WatchedTokenizer(embedded.tokenizer)

    def app():
        return make_app(engine_for(embedded), tokenizer, MODEL, max_body_bytes=40 * 2**20)

    with BackgroundServer(app) as server:
        yield server, tokenizer


@pytest.mark.parametrize("megabytes", [3, 31])
def test_a_prompt_that_cannot_fit_is_refused_unread(watched, megabytes):
    # before: a 3 MB prompt held /health for 6.5 s; a 31 MB one took 98 s and 3 GB to earn its 400
    server, tokenizer = watched
    before = len(tokenizer.calls)
    status, _, out = call(
        server.url, "POST", "/v1/completions", {"model": MODEL, "prompt": "ab " * (megabytes * 2**20 // 3)}
    )
    assert (
        status == 400
        and out["error"]["param"] == "prompt"
        and "cannot fit the model context" in out["error"]["message"]
    )
    assert len(tokenizer.calls) == before  # never tokenized


def test_a_long_prompt_is_tokenized_off_the_event_loop(watched):
    server, tokenizer = watched
    text = "word " * 4000  # 20,000 characters: fits the bound, so it is tokenized, on the pool
    body = {"model": MODEL, "prompt": text, "max_tokens": 16000}  # then refused: prompt + max_tokens > context
    status, _, out = call(server.url, "POST", "/v1/completions", body)
    assert status == 400 and out["error"]["param"] == "max_tokens"
    threads = [name for name, chars in tokenizer.calls if chars == len(text)]
    assert threads and all(name.startswith("batchmark-tokenize") for name in threads)


@pytest.mark.parametrize(
    ("raw", "param"),
    [
        (b'{"model": "test-model", "prompt": "\\ud800\\udfff\\ud800"}', "prompt"),
        (b'{"model": "test-model", "messages": [{"role": "user", "content": "a\\udc00b"}]}', "messages[0].content"),
        (b"[" * 100_000, "body"),
        (b'{"model": "test-model", "prompt": ' + b"[" * 5000 + b"1" + b"]" * 5000 + b"}", "body"),
    ],
)
def test_lone_surrogates_and_deep_nesting_are_400s(watched, raw, param):
    server, _ = watched
    path = "/v1/chat/completions" if b"messages" in raw else "/v1/completions"
    status, _, out = call(server.url, "POST", path, raw=raw)
    assert status == 400, out
    assert out["error"]["param"] == param


def test_out_of_vocabulary_stop_token_ids_are_400(watched):
    server, _ = watched
    body = {"model": MODEL, "prompt": [5, 6], "max_tokens": 2, "stop_token_ids": [3, 10**6]}
    status, _, out = call(server.url, "POST", "/v1/completions", body)
    assert status == 400 and out["error"]["param"] == "stop_token_ids"


def test_max_waiting_is_exact_under_a_burst(embedded):
    # before: the place in the queue was taken only once the response was prepared, and preparing may
    # suspend (a full socket buffer, or any on_response_prepare hook such as a CORS or logging one), so a
    # burst passed the check together: `--max-waiting 50` admitted 51
    async def slow_prepare(request, response):
        await asyncio.sleep(0.05)

    def app():
        application = make_app(engine_for(embedded, max_running=1), embedded.tokenizer, MODEL, max_waiting=3)
        application.on_response_prepare.append(slow_prepare)
        return application

    long = {"model": MODEL, "prompt": [5, 6, 7], "max_tokens": 300, "ignore_eos": True, "stream": True}
    with BackgroundServer(app) as s:

        async def go():
            async with aiohttp.ClientSession() as session:
                posts = (session.post(s.url + "/v1/completions", json=long) for _ in range(12))
                responses = await asyncio.gather(*posts)
                statuses = sorted(r.status for r in responses)
                for r in responses:
                    r.close()
                return statuses

        statuses = asyncio.run(go())
    # one may already run and three wait: at most four get a stream, the rest are refused
    assert statuses.count(429) >= 8, statuses


def test_the_bearer_scheme_is_case_insensitive(embedded):
    app = lambda: make_app(engine_for(embedded), embedded.tokenizer, MODEL, api_key="s3cret")  # noqa: E731
    body = {"model": MODEL, "prompt": "a", "max_tokens": 1}
    with BackgroundServer(app) as s:
        for scheme in ("bearer", "BEARER", "Bearer"):
            assert call(s.url, "POST", "/v1/completions", body, headers={"Authorization": f"{scheme} s3cret"})[0] == 200
        assert call(s.url, "POST", "/v1/completions", body, headers={"Authorization": "Basic s3cret"})[0] == 401
        assert call(s.url, "POST", "/v1/completions", body, headers={"Authorization": "bearer\u00e9 x"})[0] == 401
