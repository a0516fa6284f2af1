"""An HTTP engine naming the fleet behind its URL (`router=`, `replicas=`): checked, and recorded."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from engines.api import REPLICA_HEADER
from engines.http.errors import ERROR_TYPES
from engines.serve.background import BackgroundServer
from harness.cli import main
from harness.engine_specs import build_engine, parse_engine_specs
from harness.errors import user_errors

URL = "http:url=http://127.0.0.1:9"


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        (",router=fastest,replicas=2", "fastest"),
        (",router=round_robin,replicas=0", "replicas"),
        (",router=round_robin,replicas=two", "replicas"),
        (",router=round_robin", "replicas="),
        (",replicas=2", "router="),
    ],
)
def test_bad_fleet_options_are_one_line_naming_the_field(extra: str, named: str) -> None:
    with pytest.raises(user_errors()) as caught:
        parse_engine_specs([URL + extra], {})
    assert named in str(caught.value) and "\n" not in str(caught.value)


def test_the_fleet_is_recorded_in_the_engine_description() -> None:
    (spec,) = parse_engine_specs([URL + ",router=power_of_two,replicas=2,label=p2"], {})
    options = build_engine(spec, None).describe()["options"]
    assert options["router"] == "power_of_two" and options["replicas"] == 2
    (plain,) = parse_engine_specs([URL], {})
    options = build_engine(plain, None).describe()["options"]
    assert options["router"] is None and options["replicas"] is None  # one server, as before


class Replica:
    """A zero-delay server in a process of its own (tokens `delay_ms` apart, named `name` on every completion), so
    the test can kill it."""

    def __init__(self, delay_ms: float, name: str) -> None:
        command = [
            sys.executable,
            "-m",
            "engines.serve.zero_server",
            "--port",
            "0",
            "--token-delay-ms",
            str(delay_ms),
            "--replica-id",
            name,
        ]
        self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().split("listening on ", 1)[1].strip()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)


def round_robin_router(replicas: list[str], routed: list[tuple[int, bool]], on_request=lambda n: None):
    """A tiny router as vllm-router forwards: each POST to the next replica, its stream passed through; a replica
    that refuses the connection is a 502; one that dies mid-stream cuts the client's stream. `routed` gets
    (replica, streamed to the end) per request; `on_request(n)` runs as the n-th request (from 0) arrives.
    The replicas' own x-batchmark-replica header is passed on, as vllm-router does: the client's records then say
    where each went."""
    turn = itertools.count()

    async def forward(request: web.Request) -> web.StreamResponse:
        n = next(turn)
        on_request(n)
        i = n % len(replicas)
        body = await request.read()
        whole = False
        try:
            async with (
                aiohttp.ClientSession() as session,
                session.post(
                    replicas[i] + request.path, data=body, headers={"Content-Type": "application/json"}
                ) as upstream,
            ):
                # as vllm-router 0.1.17 does: the backend's response headers passed on (docs/cluster.md)
                passed = {k: v for k, v in upstream.headers.items() if k.lower() == REPLICA_HEADER}
                response = web.StreamResponse(
                    status=upstream.status, headers={"Content-Type": "text/event-stream", **passed}
                )
                await response.prepare(request)
                async for chunk in upstream.content.iter_any():
                    await response.write(chunk)
                whole = True
        except aiohttp.ClientConnectorError:  # refused: the replica is gone
            return web.json_response({"error": {"message": f"replica {i} is down"}}, status=502)
        except aiohttp.ClientPayloadError:  # it died mid-stream
            pass
        finally:
            routed.append((i, whole))
        if not whole:  # the replica died mid-stream: cut the client's stream too
            request.transport.close()
            return response
        await response.write_eof()
        return response

    def app() -> web.Application:
        application = web.Application()
        application.router.add_post("/v1/completions", forward)
        return application

    return app


@pytest.mark.slow  # the CLI end to end: ~30 s on the busy 2-core machine, most of it imports
def test_a_replica_that_dies_mid_run_fails_its_requests_and_the_run_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    replicas = [Replica(20.0, f"replica-{i}") for i in range(2)]
    routed: list[tuple[int, bool]] = []
    try:
        # replica 1 dies as the 10th request arrives (0.5 s in): some of its requests are streaming then (each
        # takes 0.16-2.5 s), and every later one routed to it is refused
        kill = lambda n: replicas[1].kill() if n == 10 else None  # noqa: E731
        with BackgroundServer(round_robin_router([r.url for r in replicas], routed, kill)) as router:
            engine = f"http:url={router.url},router=round_robin,replicas=2,label=fleet"
            argv = [
                "run",
                "--workload",
                "chat-small",
                "--requests",
                "40",
                "--rate",
                "20",
                "--engine",
                engine,
                "--out",
                str(tmp_path / "run"),
                "--no-report",
                "--seed",
                "1",
            ]
            assert main(argv) == 0  # not every request failed: the run is a result
    finally:
        for replica in replicas:
            replica.kill()
    records = [json.loads(line) for line in (tmp_path / "run" / "records.jsonl").read_text().splitlines()]
    failed = [r for r in records if r["error_type"] is not None]
    assert len(records) == 40 == len(routed)
    assert all(r["error_type"] in ERROR_TYPES for r in failed)  # typed, never a crash
    # exactly the dead replica's requests failed, judged by the client's records (which replica answered each):
    # the router's own view of a live replica's stream can end in a write error after the client has its [DONE]
    # and hung up, which is not a failure of that request
    served = {name: [r for r in records if r["replica_id"] == name] for name in ("replica-0", "replica-1")}
    assert len(served["replica-0"]) == 20 and all(r["error_type"] is None for r in served["replica-0"]), failed
    refused = [r for r in records if r["replica_id"] is None]  # routed to the dead replica: the router's 502
    assert refused and all(r["error_type"] == "http_status" for r in refused), refused
    cut = [r for r in served["replica-1"] if r["error_type"] is not None]
    assert all(r["error_type"] == "disconnect" for r in cut), cut
    assert len(failed) == len(refused) + len(cut) == sum(i == 1 and not whole for i, whole in routed), routed
    out = capsys.readouterr().out
    assert f"fleet trial 0: {len(failed)} of 40 requests failed (" in out and f"the other {40 - len(failed)}" in out
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["engines"][0]["options"]["router"] == "round_robin"


@pytest.mark.slow  # the CLI end to end, as above
def test_each_request_records_the_replica_that_answered_and_metrics_count_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`batchmark serve --replica-id NAME` (default host:port) names itself on every completion; through a router
    that passes response headers on, the HTTP engine records the name per request and the run counts requests
    per replica and their imbalance, as a simulated cluster does."""
    from transformers import AutoTokenizer

    from engines.model.embedded import TOKENIZER_DIR
    from engines.serve import make_app
    from engines.zero_engine import ZeroLatencyEngine

    tokenizer = AutoTokenizer.from_pretrained(str(TOKENIZER_DIR), local_files_only=True)
    named = BackgroundServer(lambda: make_app(ZeroLatencyEngine(), tokenizer, "batchmark", replica_id="alpha"))
    default = BackgroundServer(lambda: make_app(ZeroLatencyEngine(), tokenizer, "batchmark"))
    with named, default:
        routed: list[tuple[int, bool]] = []
        with BackgroundServer(round_robin_router([named.url, default.url], routed)) as router:
            engine = f"http:url={router.url},router=round_robin,replicas=2,label=fleet"
            argv = [
                "run",
                "--workload",
                "chat-small",
                "--requests",
                "9",
                "--rate",
                "50",
                "--engine",
                engine,
                "--out",
                str(tmp_path / "run"),
                "--no-report",
                "--seed",
                "1",
            ]
            assert main(argv) == 0
    records = [json.loads(line) for line in (tmp_path / "run" / "records.jsonl").read_text().splitlines()]
    other = default.url.removeprefix("http://")  # the default name: where it listens
    by_replica = {"alpha": 0, other: 0}
    for record in records:
        by_replica[record["replica_id"]] += 1
    assert by_replica == {"alpha": 5, other: 4}  # round robin over 9 requests, first to the first replica
    replicas = json.loads((tmp_path / "run" / "metrics.json").read_text())["engines"]["fleet"]["replicas"]
    assert replicas == {
        "named_by": "server",
        "requests_per_replica": dict(sorted(by_replica.items())),
        "imbalance_max_over_mean": 5 / 4.5,
        "unattributed": 0,
    }
    assert f"fleet: requests per replica: {other} 4, alpha 5 (imbalance max/mean 1.11)" in capsys.readouterr().out
