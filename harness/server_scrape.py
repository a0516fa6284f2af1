"""The server series of an HTTP engine's trial: `server/<engine>-t<trial>.jsonl` (docs/run-directory.md).

The scrape runs beside the replay; its rows are written at the trial's end with times on the records' clock
(seconds from the trial's t0), so that the report overlays them on the request timeline. When the engine spec
names a fleet (`router=`, `replicas=`) and the scrape one URL, every row carries `router_replicas`: each sample
came from whichever replica the router picked, so no per-server figure can be read from the series
(harness/metrics/server_series.py). With every replica's URL (`scrape=URL|URL`) each row names its `replica`
instead, and the fleet's figures are the replicas' summed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engines.options import scrape_urls
from harness.engine_specs import EngineSpec, scrape_headers

if TYPE_CHECKING:  # the scraper brings aiohttp: imported by the trials that scrape, not by every run
    from engines.http.scraper import ServerScraper


@dataclass
class TrialScrape:
    path: Path
    scraper: ServerScraper
    origin: list[float] = field(default_factory=lambda: [0.0])
    router_replicas: int | None = None  # the one URL is a router's over this many replicas

    def describe(self) -> dict[str, Any]:
        return {
            "url": self.scraper.url,
            "interval_ms": self.scraper.interval_s * 1000,
            "file": str(self.path.name),
            "replicas": self.scraper.replicas,
        }

    def set_origin(self, start: float) -> None:
        self.origin[0] = start

    async def finish(self) -> None:
        rows = await self.scraper.stop()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fleet = {} if self.router_replicas is None else {"router_replicas": self.router_replicas}
        with self.path.open("w") as out:
            for row in rows:
                out.write(json.dumps({**row, **fleet, "t": round(row["t"] - self.origin[0], 6)}) + "\n")


async def start_scrape(spec: EngineSpec, out_dir: Path, trial: int) -> TrialScrape | None:
    """A running scrape for an http engine's trial, or None: not http, `scrape=off`, or no --scrape given and
    the target's own /metrics does not answer Prometheus text (an explicit URL was probed before any work)."""
    if spec.kind != "http" or spec.options.get("scrape") == "off":
        return None
    from engines.http.scraper import ServerScraper, own_metrics_url, probe

    headers = scrape_headers(spec.options)
    given = spec.options.get("scrape")
    if given is None:
        urls = [own_metrics_url(spec.options["url"])]
        if await probe(urls[0], headers=headers, timeout_s=2.0) is not None:
            return None
    else:
        urls = scrape_urls(given)  # checked when the spec was read: every one answers, one per replica
    interval_s = float(spec.options.get("scrape_interval_ms") or 250.0) / 1000
    scraper = ServerScraper(urls, interval_s, headers)
    await scraper.start()
    replicas = spec.options.get("replicas")
    path = out_dir / "server" / f"{spec.label}-t{trial}.jsonl"
    # one URL for a fleet reaches one replica per sample; every replica's URL is each replica's own series
    router = None if replicas is None or len(urls) > 1 else int(replicas)
    return TrialScrape(path, scraper, router_replicas=router)
