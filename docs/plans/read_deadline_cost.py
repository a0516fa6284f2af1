"""What the request read deadline costs a request (issue 32): docs/measurements/2026-12-06-read-deadline-cost.md.

Each server runs in a process of its own with the deadline on (30 s, the default) or off (None, which the code
API allows and the command line does not); the client, batchmark's HTTP engine, runs here. Pairs of trials, on then
off, the order alternating from pair to pair. Each trial: WARMUP streamed requests not counted, SEQUENTIAL
sequential ones (TTFT and E2E medians: no queueing), then CONCURRENT requests from CLIENTS concurrent senders over
as many connections (request throughput). Every request is small: a PROMPT-token prompt, TOKENS output tokens.

    PYTHONPATH=. python docs/plans/read_deadline_cost.py [--pairs N] [--offset K] [--server serve|zero ...]
    PYTHONPATH=. python docs/plans/read_deadline_cost.py --micro

`--offset K`: the first pair is pair K + 1 (the order keeps alternating across runs that continue one another).
`--summarize FILE`: the summaries again from the trial lines this script printed, found in FILE (the log quotes them
all), over every pair of every run in it.
`--micro`: the deadline's own steps timed alone, 5 runs of 200,000 calls: a request read whole in one read (the
clock never starts), one whose bytes span two reads (the clock starts and is cancelled), and the zero server's
extra step, ChunkSizes.feed, on one such request.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

from engines.api import FinishEvent, Request, TokenEvent
from engines.http import HttpEngine

WARMUP, SEQUENTIAL, CONCURRENT, CLIENTS = 50, 500, 2000, 8
PROMPT, TOKENS = 32, 8
ROOT = Path(__file__).resolve().parents[2]
KEYS = (("ttft_ms", "ms"), ("e2e_ms", "ms"), ("req_s", "req/s"))
TRIAL = re.compile(
    r"^(serve|zero) pair (\d+) (on|off) +load ([0-9.]+) +TTFT p50 ([0-9.]+) ms +E2E p50 ([0-9.]+) ms +([0-9.]+) req/s$"
)


async def _serve(server: str, deadline_s: float | None) -> None:
    """The server under test, in this process, until killed; its URL on stdout."""
    if server == "zero":
        from engines.serve.zero_server import start_zero_server

        zero = await start_zero_server(read_timeout_s=deadline_s)
        print(f"listening on http://127.0.0.1:{zero.sockets[0].getsockname()[1]}", flush=True)
        await asyncio.Event().wait()
    from transformers import AutoTokenizer

    from engines.model.embedded import TOKENIZER_DIR
    from engines.serve import make_app
    from engines.serve.runner import serve
    from engines.zero_engine import ZeroLatencyEngine

    tokenizer = AutoTokenizer.from_pretrained(str(TOKENIZER_DIR), local_files_only=True)
    app = make_app(ZeroLatencyEngine(), tokenizer, "zero", request_read_timeout_s=deadline_s)
    await serve(app, "127.0.0.1", 0, announce=lambda line: print(line, flush=True))


async def _one(engine: HttpEngine, name: str) -> tuple[float, float]:
    sent = time.perf_counter()
    first = None
    async for event in engine.generate(Request(name, list(range(3, 3 + PROMPT)), TOKENS, ignore_eos=True)):
        if first is None and isinstance(event, TokenEvent):
            first = event.time
        if isinstance(event, FinishEvent):
            assert event.reason == "length" and event.output_tokens == TOKENS, event
    assert first is not None
    return first - sent, time.perf_counter() - sent


async def _drive(url: str) -> dict[str, float]:
    engine = HttpEngine(url, "zero", connections=CLIENTS)
    await engine.start()
    try:
        for i in range(WARMUP):
            await _one(engine, f"w{i}")
        timings = [await _one(engine, f"s{i}") for i in range(SEQUENTIAL)]
        left = iter(range(CONCURRENT))

        async def sender() -> None:
            for i in left:
                await _one(engine, f"c{i}")

        started = time.perf_counter()
        await asyncio.gather(*(sender() for _ in range(CLIENTS)))
        wall = time.perf_counter() - started
    finally:
        await engine.stop()
    return {
        "ttft_ms": statistics.median(t for t, _ in timings) * 1e3,
        "e2e_ms": statistics.median(e for _, e in timings) * 1e3,
        "req_s": CONCURRENT / wall,
    }


def _trial(server: str, deadline: str) -> dict[str, float]:
    load = float(Path("/proc/loadavg").read_text().split()[0])
    command = [sys.executable, __file__, "--child", server, deadline]
    child = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        while "listening on " not in line:
            line = child.stdout.readline() or sys.exit(f"the {server} server did not start")
        url = line.split("listening on ", 1)[1].strip()
        return {"load": load, **asyncio.run(_drive(url))}
    finally:
        child.kill()
        child.wait()


def _micro() -> None:
    import timeit

    from engines.serve.chunk_sizes import ChunkSizes
    from engines.serve.read_deadline import ReadDeadline

    loop = asyncio.new_event_loop()
    deadline = ReadDeadline(loop, 30.0, lambda: None)

    def spanning() -> None:
        deadline.watch(1)
        deadline.watch(None)

    body = b'{"model":"zero","prompt":[%s],"max_tokens":%d,"stream":true}' % (
        ",".join(str(i) for i in range(3, 3 + PROMPT)).encode(),
        TOKENS,
    )
    request = (
        b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    )
    n = 200_000
    cases = {
        "one read (watch(None))": lambda: deadline.watch(None),
        "two reads (watch(1), watch(None))": spanning,
        f"ChunkSizes.feed, one {len(request)}-byte request": lambda: ChunkSizes(2**26).feed(request),
    }
    for name, call in cases.items():
        runs = sorted(timeit.timeit(call, number=n) / n * 1e6 for _ in range(5))
        print(f"{name}: median {statistics.median(runs):.3f} us (runs {runs[0]:.3f}-{runs[-1]:.3f})", flush=True)
    loop.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=6)
    parser.add_argument("--offset", type=int, default=0)
    parser.add_argument("--micro", action="store_true")
    parser.add_argument("--summarize", type=Path, metavar="FILE")
    parser.add_argument("--server", action="append", choices=("serve", "zero"))
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        server, deadline = args.child
        asyncio.run(_serve(server, None if deadline == "off" else float(deadline)))
        return
    if args.micro:
        _micro()
        return
    if args.summarize:
        summarize_file(args.summarize)
        return
    for server in args.server or ["serve", "zero"]:
        print(f"# {server}: {time.strftime('%H:%M:%S', time.gmtime())} UTC", flush=True)
        rows: dict[str, list[dict[str, float]]] = {"on": [], "off": []}
        for pair in range(args.offset, args.offset + args.pairs):
            order = ("on", "off") if pair % 2 == 0 else ("off", "on")
            for arm in order:
                row = _trial(server, "30" if arm == "on" else "off")
                rows[arm].append(row)
                print(
                    f"{server} pair {pair + 1} {arm:3s} load {row['load']:.2f}  TTFT p50 {row['ttft_ms']:.3f} ms  "
                    f"E2E p50 {row['e2e_ms']:.3f} ms  {row['req_s']:.0f} req/s",
                    flush=True,
                )
        summarize(server, rows)


def summarize(server: str, rows: dict[str, list[dict[str, float]]]) -> None:
    """Each arm's median of trials with its range, and the paired differences on - off."""
    for arm, trials in rows.items():
        cells = []
        for key, unit in KEYS:
            values = sorted(t[key] for t in trials)
            cells.append(f"{key} {statistics.median(values):.3f} {unit} ({values[0]:.3f}-{values[-1]:.3f})")
        print(f"{server} {arm:3s} median of {len(trials)} trials: " + "; ".join(cells), flush=True)
    for key, _ in KEYS:
        differences = sorted(on[key] - off[key] for on, off in zip(rows["on"], rows["off"], strict=True))
        print(
            f"{server} on - off, paired, {key}: median {statistics.median(differences):+.3f} "
            f"(pairs {differences[0]:+.3f} .. {differences[-1]:+.3f})",
            flush=True,
        )


def summarize_file(path: Path) -> None:
    """The trial lines in `path`, each server's pairs in order of their number, summarized."""
    found: dict[str, dict[int, dict[str, dict[str, float]]]] = {}
    for line in path.read_text().splitlines():
        if match := TRIAL.match(line.strip()):
            server, pair, arm, load, ttft, e2e, rate = match.groups()
            row = {"load": float(load), "ttft_ms": float(ttft), "e2e_ms": float(e2e), "req_s": float(rate)}
            found.setdefault(server, {}).setdefault(int(pair), {})[arm] = row
    for server, pairs in found.items():
        whole = [pairs[n] for n in sorted(pairs) if len(pairs[n]) == 2]
        loads = sorted(row["load"] for pair in whole for row in pair.values())
        print(f"# {server}: {len(whole)} pairs, 1-min load {loads[0]:.2f}-{loads[-1]:.2f}")
        summarize(server, {arm: [pair[arm] for pair in whole] for arm in ("on", "off")})


if __name__ == "__main__":
    main()
