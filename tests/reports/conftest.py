"""Fixtures for the report tests: synthetic run directories (no engine runs) and a headless Chromium.

Chromium is Debian's `chromium`; when it is missing the session installs it with apt-get (CI runs as
root where apt works) and skips the browser tests, saying why, only if that fails. The browser is
driven over its DevTools protocol (a websocket, via aiohttp) with networking disabled.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.run_dirs import write_synthetic_run

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts" / "reports"


@pytest.fixture(scope="session")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Static and continuous engines on one 600-request, three-tenant schedule; 1% of static's requests fail."""
    return write_synthetic_run(tmp_path_factory.mktemp("run") / "run", requests=600, slots=16, fail_share=0.01)


@pytest.fixture(scope="session")
def after_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same schedule with a 30% slower continuous scheduler: a before/after pair for `run_dir`."""
    return write_synthetic_run(
        tmp_path_factory.mktemp("after") / "after", requests=600, slots=16, fail_share=0.01, slow_continuous=1.3
    )


@pytest.fixture(scope="session")
def other_schedule_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Another seed: a different schedule, so comparisons with `run_dir` cannot be paired."""
    return write_synthetic_run(
        tmp_path_factory.mktemp("other") / "other", requests=500, slots=16, seed=5, engines=("continuous",)
    )


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


# ---------------------------------------------------------------------------------------------- Chromium


def _find_chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="session")
def chromium() -> str:
    path = _find_chromium()
    if path:
        return path
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    try:
        for cmd in (["apt-get", "update"], ["apt-get", "install", "-y", "chromium"]):
            subprocess.run(cmd, check=True, capture_output=True, timeout=900, env=env)
    except (OSError, subprocess.SubprocessError) as exc:
        detail = getattr(exc, "stderr", b"") or b""
        pytest.skip(
            f"chromium is missing and `apt-get install -y chromium` failed ({exc}): "
            f"{detail.decode(errors='replace')[-300:]}"
        )
    path = _find_chromium()
    if not path:
        pytest.skip("apt-get installed chromium but no `chromium` executable is on PATH")
    return path


class DevTools:
    """A minimal DevTools-protocol client: commands by id, events collected as they come."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    async def send(self, method: str, params: dict[str, Any] | None = None, timeout: float = 60) -> dict[str, Any]:
        self.next_id += 1
        my_id = self.next_id
        await self.ws.send_str(json.dumps({"id": my_id, "method": method, "params": params or {}}))
        deadline = time.monotonic() + timeout
        while True:
            msg = await asyncio.wait_for(self.ws.receive_json(), max(0.1, deadline - time.monotonic()))
            if msg.get("id") == my_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    async def wait_event(self, method: str, timeout: float = 60) -> dict[str, Any]:
        for e in self.events:
            if e["method"] == method:
                return e
        deadline = time.monotonic() + timeout
        while True:
            msg = await asyncio.wait_for(self.ws.receive_json(), max(0.1, deadline - time.monotonic()))
            if "method" in msg:
                self.events.append(msg)
                if msg["method"] == method:
                    return msg

    async def evaluate(self, expression: str) -> Any:
        result = await self.send(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True}
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"JS error: {result['exceptionDetails']}")
        return result["result"].get("value")


CHECK_JS = """
(() => {
  const plots = [...document.querySelectorAll('.js-plotly-plot')];
  const figures = plots.map(p => ({
    id: p.id,
    traces: (p.data || []).length,
    points: (p._fullData || []).map(t => t._length ?? ((t.x || t.y || []).length || 0)),
    rendered: !!p._fullLayout && !!p.querySelector('svg.main-svg'),
    marks: p.querySelectorAll('g.trace, g.point, path.js-line, path.point').length,
  }));
  const external = [...document.querySelectorAll('[src],[href]')]
    .map(e => e.getAttribute('src') || e.getAttribute('href'))
    .filter(u => /^(https?:)?\\/\\//i.test(u));
  const table = document.querySelector('table.metric-table');
  return {
    figures,
    external,
    metricRows: table ? table.querySelectorAll('tbody tr').length : 0,
    headlineRows: document.querySelectorAll('table.headline-table tbody tr').length,
    verdict: (document.querySelector('#verdict-summary') || {}).innerText || '',
    resources: performance.getEntriesByType('resource').map(r => r.name),
    sections: [...document.querySelectorAll('section')].map(s => {
      const r = s.getBoundingClientRect();
      return {id: s.id, y: r.top + window.scrollY, height: r.height};
    }),
  };
})()
"""

READY_JS = """
(() => {
  const plots = [...document.querySelectorAll('.js-plotly-plot')];
  const divs = document.querySelectorAll('.plotly-graph-div').length;
  return divs > 0 && plots.length === divs && plots.every(p => p._fullLayout && p.querySelector('svg.main-svg'));
})()
"""


async def _render(chromium: str, page: Path, shots: Path, width: int) -> dict[str, Any]:
    import aiohttp

    profile = Path(tempfile.mkdtemp(prefix="batchmark-chromium-"))
    cmd = [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-extensions",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        "--mute-audio",
        f"--user-data-dir={profile}",
        "--remote-debugging-port=0",
        "--proxy-server=127.0.0.1:9",
        "--proxy-bypass-list=<-loopback>",
        f"--window-size={width},1000",
        "about:blank",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not (port_file.exists() and len(port_file.read_text().splitlines()) >= 2):
            if proc.poll() is not None or time.monotonic() > deadline:
                err = proc.stderr.read().decode(errors="replace")[-800:] if proc.stderr else ""
                raise RuntimeError(f"chromium did not start its DevTools endpoint: {err}")
            await asyncio.sleep(0.1)
        port = int(port_file.read_text().splitlines()[0])
        async with aiohttp.ClientSession(trust_env=False) as http:
            async with http.get(f"http://127.0.0.1:{port}/json/list") as resp:
                targets = await resp.json()
            target = next(t for t in targets if t.get("type") == "page")
            async with http.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0) as ws:
                return await _drive(DevTools(ws), page, shots, width)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(profile, ignore_errors=True)


async def _drive(dt: DevTools, page: Path, shots: Path, width: int) -> dict[str, Any]:
    for domain in ("Runtime", "Log", "Network", "Page"):
        await dt.send(f"{domain}.enable")
    await dt.send(
        "Network.emulateNetworkConditions",
        {"offline": True, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1},
    )
    await dt.send("Page.navigate", {"url": page.resolve().as_uri()})
    await dt.wait_event("Page.loadEventFired", timeout=90)
    deadline = time.monotonic() + 60
    while not await dt.evaluate(READY_JS):
        if time.monotonic() > deadline:
            break
        await asyncio.sleep(0.25)
    await asyncio.sleep(0.5)  # let responsive relayouts settle before the screenshots
    checks = await dt.evaluate(CHECK_JS)
    shots.mkdir(parents=True, exist_ok=True)
    metrics = await dt.send("Page.getLayoutMetrics")
    height = int(metrics["cssContentSize"]["height"])
    saved = []
    for name, clip in (
        [("full", {"x": 0, "y": 0, "width": width, "height": height})]
        + [(s["id"], {"x": 0, "y": s["y"], "width": width, "height": max(1, s["height"])}) for s in checks["sections"]]
        + [("top", {"x": 0, "y": 0, "width": width, "height": 1000})]
    ):
        shot = await dt.send(
            "Page.captureScreenshot",
            {"format": "png", "captureBeyondViewport": True, "clip": {**clip, "scale": 1}},
            timeout=120,
        )
        path = shots / f"{name}.png"
        path.write_bytes(base64.b64decode(shot["data"]))
        saved.append(path)
    checks["screenshots"] = [str(p) for p in saved]
    checks["page_height"] = height
    checks["console_errors"] = [
        e["params"]
        for e in dt.events
        if (e["method"] == "Runtime.consoleAPICalled" and e["params"].get("type") in ("error", "assert"))
        or e["method"] == "Runtime.exceptionThrown"
        or (e["method"] == "Log.entryAdded" and e["params"]["entry"].get("level") == "error")
    ]
    sent = [e for e in dt.events if e["method"] == "Network.requestWillBeSent"]
    checks["requests"] = [e["params"]["request"]["url"] for e in sent]
    return checks


@pytest.fixture(scope="session")
def render(chromium: str):
    """render(html_path, shots_dir, width=1400) -> dict of checks from the loaded page (see CHECK_JS)."""

    def _run(page: Path, shots: Path, width: int = 1400) -> dict[str, Any]:
        with contextlib.suppress(Exception):
            asyncio.get_event_loop_policy()
        return asyncio.run(asyncio.wait_for(_render(chromium, page, shots, width), timeout=240))

    return _run
