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

                # one slot, six at once: the first is admitted; the rest would queue, and with no drain rate
                # measured yet the engine cannot promise them 50 ms
                first = await asyncio.gather(*(post(short) for _ in range(6)))
                await asyncio.sleep(0.5)
                alone = await post(short)  # a free slot and an empty queue: admitted
                long_body = {**short, "max_tokens": 400, "stream": True}
                async with session.post(url, json=long_body) as long:
                    await long.content.readline()  # its first token: the only slot is busy for 399 more steps
                    later = [await post({**short, "stream": stream}) for stream in (False, True)]
                    await long.read()
                    return [*first, alone, *later, (long.status, None, {})]

        results = asyncio.run(go())
    statuses = [status for status, _, _ in results]
    assert statuses[0] == 200 and statuses[6] == 200 and statuses[-1] == 200
    shed = [(retry, body) for status, retry, body in results if status == 429]
    assert len(shed) >= 4 and statuses[7:9] == [429, 429]  # behind the long request on the only slot
    assert all(body["error"]["code"] == "slo_shed" and int(retry) >= 1 for retry, body in shed)
    assert set(statuses) == {200, 429}
