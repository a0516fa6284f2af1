"""docs/cluster.md's sharded-load numbers: `batchmark run` against the zero-delay server at 800, 1,600 and
2,400 req/s (128-token prompts, 16 output tokens, 10 s, Poisson), with 1 load-generator (the driver itself)
and 2 (--workers 2), interleaved over ROUNDS rounds, `uptime` before each run. Server and load generators
share this machine's cores.

    .venv/bin/python docs/cluster/zero_load.py [--rounds 2] [--executor ray] > zero-load.tsv
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

SPEC = """description = "zero-delay server load: 128-token prompts, 16 output tokens, Poisson"
seed = 0
duration_s = 10

[[tenants]]
name = "load"
rate = 800.0
arrival = { process = "poisson" }
input = { dist = "fixed", value = 128 }
output = { dist = "fixed", value = 16 }
"""


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--rates", default="800,1600,2400")
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--executor", default="local")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="zero-load-"))
    spec = tmp / "zero-load.toml"
    spec.write_text(SPEC)
    server = subprocess.Popen(
        [sys.executable, "-m", "engines.serve.zero_server", "--port", "0"], stdout=subprocess.PIPE, text=True
    )
    assert server.stdout is not None
    url = server.stdout.readline().split()[-1]
    print(
        "round\trate\tworkers\trequests\tachieved_rps\tttft_p50_ms\tttft_p99_ms\tlag_p99_ms\tworst_worker_lag_p99_ms\tuptime"
    )
    try:
        for r in range(args.rounds):
            for rate in args.rates.split(","):
                for workers in args.workers.split(","):
                    out = tmp / f"r{r}-{rate}-{workers}"
                    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
                    subprocess.run(
                        [
                            sys.executable,
                            "-m",
                            "harness.cli",
                            "run",
                            "--workload",
                            str(spec),
                            "--rate",
                            rate,
                            "--engine",
                            f"http:url={url}",
                            "--workers",
                            workers,
                            "--executor",
                            args.executor,
                            "--no-report",
                            "--out",
                            str(out),
                        ],
                        check=True,
                        capture_output=True,
                    )
                    run = json.loads((out / "metrics.json").read_text())["runs"][0]
                    s = run["summary"]
                    ttft = s["latency"]["ttft"]["percentiles"]
                    whole = s["throughput"]["whole_run"]["request_rate"]
                    lag = s["schedule_lag"]["percentiles"]["p99"]["value"] if s.get("schedule_lag") else None
                    worst = max((w["lag_p99_ms"] for w in run.get("workers", [])), default=None)
                    print(
                        f"{r}\t{rate}\t{workers}\t{s['requests']['total']}"
                        f"\t{whole:.1f}\t{ttft['p50']['value'] * 1e3:.2f}\t{ttft['p99']['value'] * 1e3:.2f}"
                        f"\t{'-' if lag is None else f'{lag * 1e3:.2f}'}\t{'-' if worst is None else f'{worst:.2f}'}"
                        f"\t{uptime}",
                        flush=True,
                    )
    finally:
        server.terminate()
        server.wait(10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
