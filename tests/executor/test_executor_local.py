"""The executor flags and sharded load generation without Ray: bad choices are one line and exit 2 before
anything starts; a schedule split over workers loses and duplicates nothing."""

from __future__ import annotations

import importlib.util
import json

import pytest

from engines.api import Request
from harness.cli import main
from harness.loadgen import Scenario, Scheduled
from harness.shards import measure_offset, split_schedule
from harness.shards.drive import clock_flag
from tests.executor.zero_server import zero_server


def _schedule(n: int, tenants: int = 1) -> list[Scheduled]:
    return [
        Scheduled(Request(f"r{i:03d}", [1, 2, 3], 4, tenant=f"t{i % tenants}", arrival_time=i / 10), i / 10)
        for i in range(n)
    ]


def test_split_by_position_tenant_and_closed_loop_user():
    items = _schedule(30)
    shards, by = split_schedule(items, 4, Scenario("open"))
    assert by.startswith("position")
    ids = [s.request.request_id for shard in shards for s in shard.schedule]
    assert sorted(ids) == [s.request.request_id for s in items]
    assert [len(shard.schedule) for shard in shards] == [8, 8, 7, 7]

    tenanted = _schedule(40, tenants=5)
    shards, by = split_schedule(tenanted, 2, Scenario("open"))
    assert by == "tenant"
    owners = [{s.request.tenant for s in shard.schedule} for shard in shards]
    assert not owners[0] & owners[1]  # a tenant's requests all leave from one worker
    assert sum(len(shard.schedule) for shard in shards) == 40

    shards, by = split_schedule(items, 2, Scenario("closed", users=5))
    assert by == "closed-loop users"
    assert [shard.scenario.users for shard in shards] == [3, 2]
    assert [len(shard.schedule) for shard in shards] == [18, 12]
    # each request keeps the user an unsharded closed loop gives it (request k -> user k % users), so a sharded
    # run pairs with an unsharded one on (request, user)
    position = {s.request.request_id: k for k, s in enumerate(items)}
    for shard in shards:
        for local, s in enumerate(shard.schedule):
            assert shard.first_user + local % shard.scenario.users == position[s.request.request_id] % 5


def test_sharded_load_against_the_zero_server_loses_and_duplicates_nothing(tmp_path):
    out = tmp_path / "run"
    with zero_server() as url:
        code = main(
            [
                "run",
                "--workload",
                "chat-small",
                "--rate",
                "100",
                "--engine",
                f"http:url={url}",
                "--workers",
                "2",
                "--no-report",
                "--out",
                str(out),
            ]
        )
    assert code == 0
    scheduled = [json.loads(line)["request_id"] for line in (out / "requests.jsonl").read_text().splitlines()]
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert sorted(r["request_id"] for r in records) == sorted(scheduled)  # none lost, none twice
    assert {r["worker"] for r in records} == {0, 1}
    assert all(r["error_type"] is None and r["output_tokens"] == r["max_tokens"] for r in records)
    run = json.loads((out / "metrics.json").read_text())["runs"][0]
    assert [w["worker"] for w in run["workers"]] == [0, 1]
    assert sum(w["requests"] for w in run["workers"]) == len(scheduled)
    assert all(w["offered_rps"] > 0 and w["achieved_rps"] > 0 for w in run["workers"])
    sharding = json.loads((out / "manifest.json").read_text())["outcomes"][0]["sharding"]
    assert sharding["workers"] == 2 and len(sharding["clock_offsets"]) == 2
    # one host: the offsets are within their own uncertainty of zero, which is far under the lag bound
    assert all(abs(c["offset_s"]) <= c["uncertainty_s"] + 1e-3 for c in sharding["clock_offsets"])


@pytest.mark.parametrize("command", ["run", "sweep", "calibrate"])
def test_unreachable_ray_address_is_one_line_and_nothing_starts(command, tmp_path, capsys):
    out = tmp_path / "never"
    extra = ["--rates", "1"] if command == "sweep" else []
    code = main(
        [command, "--engine", "sim", "--executor", "ray", "--ray-address", "127.0.0.1:1", "--out", str(out), *extra]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "127.0.0.1:1" in err[0] and "ray start --head" in err[0]
    assert not out.exists()


def test_ray_missing_is_one_line_and_nothing_starts(monkeypatch, tmp_path, capsys):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a))
    out = tmp_path / "never"
    code = main(["run", "--engine", "sim", "--executor", "ray", "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "Ray is not installed" in err[0]
    assert not out.exists()


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--engine", "sim", "--workers", "2"], "--workers 2: sharded load generation drives http and zero"),
        (["--engine", "zero", "--workers", "0"], "--workers 0: must be >= 1"),
        (["--engine", "sim", "--ray-address", "127.0.0.1:6379"], "needs --executor ray"),
    ],
)
def test_bad_executor_flags_are_one_line(argv, says, tmp_path, capsys):
    out = tmp_path / "never"
    assert main(["run", *argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0]
    assert not out.exists()


class _Answer:
    def __init__(self, value: float) -> None:
        self.value = value

    def get(self) -> float:
        return self.value


class _SkewedWorker:
    """A worker whose clock runs `skew_s` ahead and whose answers take `delay_s` to come back."""

    def __init__(self, skew_s: float, delay_s: float) -> None:
        self.skew_s, self.delay_s = skew_s, delay_s

    def submit(self, method: str) -> _Answer:
        import time

        assert method == "clock"
        time.sleep(self.delay_s / 2)
        value = time.time() + self.skew_s
        time.sleep(self.delay_s / 2)
        return _Answer(value)


def test_clock_offset_by_ping_pong_and_the_flag_past_the_lag_bound():
    near = measure_offset(0, _SkewedWorker(2.5, 0.0005), rounds=4)
    assert abs(near.offset_s - 2.5) <= near.uncertainty_s + 1e-3 and near.uncertainty_s < 0.005
    assert clock_flag([near], [0.9]) is None
    far = measure_offset(1, _SkewedWorker(-1.0, 0.030), rounds=2)  # a 30 ms round trip: +-15 ms
    assert abs(far.offset_s + 1.0) <= far.uncertainty_s + 1e-3 and far.uncertainty_s >= 0.015
    assert "more than the 5 ms schedule-lag bound" in clock_flag([near, far], [0.9, 0.9])
    assert "after the agreed start" in clock_flag([near], [-0.1])


def test_the_plugins_start_up_loads_no_engines_package():
    """pytest reads the executor option table through the plugin before it collects a test; a loaded
    `engines` package would then hide a suite's own `tests/engines` package."""
    import subprocess
    import sys

    code = "import sys, harness.pytest_plugin; print(sorted(m for m in sys.modules if m.split('.')[0] == 'engines'))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "[]\n"
