"""Does vllm-router pass a backend's response headers on? The check behind `replica_id` (docs/cluster.md).

Two `batchmark serve` apps (zero-latency engine, tokenizer only: no model), one named `alpha` and one left at
its default name (HOST:PORT), behind a real vllm-router with round_robin; two streamed and two plain completions
through it, each printing the `x-batchmark-replica` header the client received. Exit 1 if any lacks it.

    .venv/bin/python docs/cluster/replica_header.py [.venv/bin/vllm-router]   # needs the extra `router`

Not a test (no test imports vllm-router). Measured with vllm-router 0.1.17: stream -> alpha, plain ->
127.0.0.1:PORT, stream -> alpha, plain -> 127.0.0.1:PORT.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request

from transformers import AutoTokenizer

from engines.api import REPLICA_HEADER
from engines.model.embedded import TOKENIZER_DIR
from engines.serve import make_app
from engines.serve.background import BackgroundServer
from engines.zero_engine import ZeroLatencyEngine

PORT = 18931


def main(router_bin: str) -> int:
    tokenizer = AutoTokenizer.from_pretrained(str(TOKENIZER_DIR), local_files_only=True)
    named = BackgroundServer(lambda: make_app(ZeroLatencyEngine(), tokenizer, "zero", replica_id="alpha"))
    default = BackgroundServer(lambda: make_app(ZeroLatencyEngine(), tokenizer, "zero"))
    with named, default:
        command = [
            router_bin,
            "--host",
            "127.0.0.1",
            "--port",
            str(PORT),
            "--worker-urls",
            named.url,
            default.url,
            "--policy",
            "round_robin",
            "--log-level",
            "warning",
        ]
        router = subprocess.Popen(command)
        try:
            for _ in range(60):
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{PORT}/health", timeout=1).close()
                    break
                except OSError:
                    time.sleep(1)
            missing = 0
            for stream in (True, False, True, False):
                body = {"model": "zero", "prompt": "hi", "max_tokens": 3, "stream": stream}
                request = urllib.request.Request(
                    f"http://127.0.0.1:{PORT}/v1/completions",
                    data=json.dumps(body).encode(),
                    headers={"Content-Type": "application/json"},
                )
                with urllib.request.urlopen(request, timeout=10) as response:
                    response.read()
                    name = response.headers.get(REPLICA_HEADER)
                print("stream" if stream else "plain", "->", name)
                missing += name is None
        finally:
            router.terminate()
            router.wait()
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else ".venv/bin/vllm-router"))
