"""On a Ray cluster this test module starts itself (2 CPUs on 127.0.0.1, shut down at the end): a
simulated sweep gives metrics identical to the local executor's, a run says which node ran each trial,
and sharded load from Ray actors against the zero-delay server loses and duplicates nothing.

Ray takes ~10 s to start, so the module is small and the cluster is shared by its tests."""

from __future__ import annotations

import json

import pytest

from harness.cli import main
from tests.executor.zero_server import zero_server

ray = pytest.importorskip("ray")

SWEEP = ["sweep", "--workload", "chat-small", "--engine", "sim:scheduler=static", "--engine", "sim",
         "--rates", "4,16,64", "--no-report"]  # fmt: skip


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", _node_ip_address="127.0.0.1")
    try:
        yield
    finally:
        ray.shutdown()


def _points(path):
    data = json.loads((path / "sweep.json").read_text())
    for point in data["points"]:
        point.pop("run_dir")
    return data


def _metrics(path):
    data = json.loads((path / "metrics.json").read_text())
    for run in data["runs"]:
        run.pop("node", None)
        run.pop("unit_seconds", None)
    return data


def test_simulated_sweep_on_ray_equals_local(cluster, tmp_path):
    assert main([*SWEEP, "--out", str(tmp_path / "local")]) == 0
    assert main([*SWEEP, "--executor", "ray", "--out", str(tmp_path / "ray")]) == 0
    local, remote = _points(tmp_path / "local"), _points(tmp_path / "ray")
    assert local["points"] == remote["points"] and local["capacity"] == remote["capacity"]
    for rate in ("4", "16", "64"):
        assert _metrics(tmp_path / "local" / f"rate-{rate}") == _metrics(tmp_path / "ray" / f"rate-{rate}")


def test_run_on_ray_names_the_node_of_every_trial(cluster, tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["run", "--workload", "chat-small", "--engine", "sim", "--repeat", "2", "--no-report", "--out", str(out)]
    assert main([*argv, "--executor", "ray"]) == 0
    assert "node " in capsys.readouterr().out
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["executor"]["kind"] == "ray" and len(manifest["executor"]["nodes"]) == 1
    nodes = {o["node"] for o in manifest["outcomes"]}
    assert len(nodes) == 1 and nodes <= set(manifest["nodes"])  # one run: every trial on one node
    node = nodes.pop()
    assert "hardware" in manifest["nodes"][node]
    from reports.report import where_it_ran

    assert where_it_ran(manifest) == f"node {node} ran sim-continuous t0, sim-continuous t1"  # the report's line
    assert sorted(p.name for p in (out / "steps").iterdir()) == ["sim-continuous-t0.jsonl", "sim-continuous-t1.jsonl"]


def test_sharded_load_from_ray_actors_loses_and_duplicates_nothing(cluster, tmp_path):
    out = tmp_path / "run"
    with zero_server() as url:
        code = main(
            ["run", "--workload", "chat-small", "--rate", "100", "--engine", f"http:url={url}", "--engine", "zero",
             "--workers", "2", "--executor", "ray", "--no-report", "--out", str(out)]
        )  # fmt: skip
    assert code == 0
    scheduled = sorted(json.loads(line)["request_id"] for line in (out / "requests.jsonl").read_text().splitlines())
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    for engine in ("http", "zero"):
        mine = [r for r in records if r["engine"] == engine]
        assert sorted(r["request_id"] for r in mine) == scheduled
        assert {r["worker"] for r in mine} == {0, 1}
    outcomes = json.loads((out / "manifest.json").read_text())["outcomes"]
    assert all(len(o["sharding"]["clock_offsets"]) == 2 for o in outcomes)
