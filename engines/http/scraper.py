"""Sampling a server's Prometheus `/metrics` during a trial: the engine's own view of an HTTP target.

A sample every `interval_s` on the records' clock (`time.perf_counter()`; the caller shifts the rows to seconds
from the trial's t0 when it knows it). A scrape that fails is a row with `ok: false` and the reason (a gap in the
series), never the end of the run. Rows: docs/run-directory.md (`server/<engine>-t<trial>.jsonl`).

Several URLs (each replica of a fleet behind a router, `scrape=URL|URL`): each tick samples every replica at
once, each row labelled with its `replica` (its URL's HOST:PORT, `batchmark serve`'s default replica id; the
whole URL where two share one) and the tick's number (`tick`), so a reader sums the replicas tick by tick.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import aiohttp

from engines.http.scrape_names import ScrapeParseError, parse_prometheus, server_fields
from engines.options import SCRAPE_SEPARATOR

DEFAULT_INTERVAL_S = 0.25
_SCRAPE_TIMEOUT_S = 5.0


async def probe(url: str, *, headers: dict[str, str] | None = None, timeout_s: float = _SCRAPE_TIMEOUT_S) -> str | None:
    """Why `url` cannot be scraped (unreachable, not 200, not Prometheus text), or None."""
    try:
        async with (
            aiohttp.ClientSession(headers=headers) as session,
            session.get(url, timeout=aiohttp.ClientTimeout(total=timeout_s)) as response,
        ):
            if response.status != 200:
                return f"HTTP {response.status}"
            parse_prometheus(await response.text())
    except (aiohttp.ClientError, TimeoutError) as exc:
        return f"unreachable ({type(exc).__name__})"
    except (ScrapeParseError, UnicodeDecodeError) as exc:
        return f"not Prometheus text ({exc})"
    return None


def probe_problem(url: str, *, headers: dict[str, str] | None = None) -> str | None:
    """`probe`, blocking: to validate an explicit `--scrape` before any work."""
    return asyncio.run(probe(url, headers=headers))


def own_metrics_url(url: str) -> str:
    """The target's own /metrics at its root (where vLLM, SGLang, TGI and batchmark serve keep it)."""
    parts = urlsplit(url)
    root = parts.path.split("/v1", 1)[0].rstrip("/")
    return urlunsplit((parts.scheme, parts.netloc, root + "/metrics", "", ""))


def replica_labels(urls: Sequence[str]) -> list[str]:
    """Each scraped replica's name in the series: its HOST:PORT, or its whole URL where two share one."""
    hosts = [urlsplit(url).netloc.rsplit("@", 1)[-1] for url in urls]  # never credentials
    return [host if hosts.count(host) == 1 else url for host, url in zip(hosts, urls, strict=True)]


class ServerScraper:
    """`start()` a background task sampling `url` (or each of several: a fleet's replicas); `stop()` returns the
    rows (times absolute, perf_counter)."""

    def __init__(
        self, url: str | Sequence[str], interval_s: float = DEFAULT_INTERVAL_S, headers: dict[str, str] | None = None
    ):
        self.urls = [url] if isinstance(url, str) else list(url)
        self.url = SCRAPE_SEPARATOR.join(self.urls)  # as given: one URL, or the replicas' in order
        # label -> URL; None for one server, whose rows carry no label (as before fleets were scraped)
        self.replicas = dict(zip(replica_labels(self.urls), self.urls, strict=True)) if len(self.urls) > 1 else None
        self.interval_s = interval_s
        self._headers = headers
        self.rows: list[dict[str, Any]] = []
        self._task: asyncio.Task | None = None
        self._tick = 0

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> list[dict[str, Any]]:
        if self._task is not None:
            await asyncio.sleep(0)  # let a sample in progress land before the last one below
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
            async with aiohttp.ClientSession(headers=self._headers) as session:
                await self._sample(session)  # the trial's end: counter deltas cover all of it
        return self.rows

    async def _run(self) -> None:
        async with aiohttp.ClientSession(headers=self._headers) as session:
            next_at = time.perf_counter()
            while True:
                await self._sample(session)
                next_at += self.interval_s
                await asyncio.sleep(max(0.0, next_at - time.perf_counter()))

    async def _sample(self, session: aiohttp.ClientSession) -> None:
        if self.replicas is None:
            self.rows.append(await self._one(session, self.url))
            return
        tick, self._tick = self._tick, self._tick + 1
        rows = await asyncio.gather(*(self._one(session, url) for url in self.replicas.values()))
        for label, row in zip(self.replicas, rows, strict=True):
            self.rows.append({**row, "replica": label, "tick": tick})

    async def _one(self, session: aiohttp.ClientSession, url: str) -> dict[str, Any]:
        t = time.perf_counter()
        try:
            timeout = aiohttp.ClientTimeout(total=max(self.interval_s * 4, 1.0))
            async with session.get(url, timeout=timeout) as response:
                if response.status != 200:
                    raise _Gap(f"HTTP {response.status}")
                fields = server_fields(parse_prometheus(await response.text()))
        except (aiohttp.ClientError, TimeoutError, ScrapeParseError, UnicodeDecodeError, _Gap) as exc:
            return {"t": t, "ok": False, "error": str(exc) or type(exc).__name__}
        return {"t": t, "ok": True, **fields}


class _Gap(Exception):
    pass
