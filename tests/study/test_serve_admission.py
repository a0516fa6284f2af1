"""`batchmark serve` with SLO-aware admission: a request predicted to miss the TTFT SLO gets 429 with
Retry-After, streaming or not, before any 200 goes out; what is admitted is served as usual."""

from __future__ import annotations

import asyncio

import aiohttp

from engines.admission import AdmissionConfig
from engines.inprocess import EngineOptions, InProcessEngine, KVConfig
from engines.scheduler import ContinuousConfig
from engines.serve import make_app
from engines.serve.background import BackgroundServer

MODEL = "test-model"


def test_a_request_predicted_to_miss_the_slo_is_429_with_retry_after(embedded) -> None:
    guard = AdmissionConfig("shed", slo_s=0.05)
    options = EngineOptions(kv=KVConfig(memory_mb=8), continuous=ContinuousConfig(max_running=1, admission=guard))
    app = lambda: make_app(InProcessEngine(embedded, options), embedded.tokenizer, MODEL)  # noqa: E731
    short = {"model": MODEL, "prompt": [5, 6, 7], "max_tokens": 4, "ignore_eos": True}
    with BackgroundServer(app) as s:
        url = s.url + "/v1/completions"

        async def go() -> list[tuple[int, str | None, dict]]:
            async with aiohttp.ClientSession() as session:

                async def post(body: dict) -> tuple[int, str | None, dict]:
                    async with session.post(url, json=body) as r:
                        data = await r.json() if r.content_type == "application/json" else {}
                        return r.status, r.headers.get("Retry-After"), data

                # one slot, six at once: the queue drains one request at a time, which sets the rate
                first = await asyncio.gather(*(post(short) for _ in range(6)))
                long = asyncio.ensure_future(post({**short, "max_tokens": 48}))
                await asyncio.sleep(0.2)
                later = [await post({**short, "stream": stream}) for stream in (False, True, False, True)]
                return [*first, *later, await long]

        results = asyncio.run(go())
    assert all(status == 200 for status, _, _ in results[:6])  # no rate yet: admitted
    shed = [(retry, body) for status, retry, body in results if status == 429]
    assert len(shed) >= 2  # behind a 48-token request on the only slot, nothing can make 50 ms
    assert all(body["error"]["code"] == "slo_shed" and int(retry) >= 1 for retry, body in shed)
    assert results[-1][0] == 200
