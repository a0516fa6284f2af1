"""`sim fidelity` on a run against a router over replicas (http: router=, replicas=): the cluster twin."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.cli import main
from harness.cli.sim import simulate_twin

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "sim_fidelity"
PROFILE = FIXTURE / "profile.json"


def router_run(tmp_path: Path, policy: str, replicas: int = 2) -> Path:
    """The chat-small fixture re-labelled as if measured through a router: an http engine naming its fleet,
    with the continuous engine's measured summary as its own."""
    run = tmp_path / f"run-{policy}"
    shutil.copytree(FIXTURE / "chat-small", run)
    manifest = json.loads((run / "manifest.json").read_text())
    options = {"url": "http://127.0.0.1:30000", "router": policy, "replicas": replicas}
    manifest["engines"] = [{"name": "fleet", "kind": "http", "options": options}]
    (run / "manifest.json").write_text(json.dumps(manifest))
    metrics = json.loads((run / "metrics.json").read_text())
    metrics["engines"] = {"fleet": metrics["engines"]["continuous"]}
    (run / "metrics.json").write_text(json.dumps(metrics))
    return run


@pytest.mark.parametrize(
    ("policy", "twin"), [("round_robin", "round_robin"), ("sticky_least_loaded", "session_sticky")]
)
def test_the_twin_is_the_recorded_fleet(tmp_path: Path, policy: str, twin: str) -> None:
    run = router_run(tmp_path, policy)
    described: list[dict] = []
    summary = simulate_twin(
        run, json.loads((run / "manifest.json").read_text())["engines"][0], PROFILE, noise=False, described=described
    )
    (cluster,) = described
    assert cluster["kind"] == "cluster" and cluster["replicas"] == 2 and cluster["router"]["policy"] == twin
    requests = len((run / "requests.jsonl").read_text().splitlines())
    assert sum(cluster["router"]["requests_per_replica"]) == requests
    assert min(cluster["router"]["requests_per_replica"]) > 0  # both replicas served
    # the replicas are `batchmark serve`'s continuous engine on the profile's KV pool
    assert cluster["replica"]["options"]["continuous"]["max_batched_tokens"] == 2048
    assert summary["requests"]["succeeded"] == requests


def test_fidelity_prints_the_table_for_the_fleet(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = router_run(tmp_path, "power_of_two")
    out = tmp_path / "table.json"
    assert main(["sim", "fidelity", str(run), "--profile", str(PROFILE), "--seeds", "2", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    (entry,) = json.loads(out.read_text())
    assert entry["engine"] == "fleet" and entry["seeds"] == 2
    metrics = {row["metric"] for row in entry["rows"]}
    assert {"TTFT p50", "TTFT p99", "TPOT p99", "E2E p50", "output tok/s"} <= metrics, metrics
    assert all(row["simulated"] is not None for row in entry["rows"] if row["real"] is not None)
    assert text.count("fleet") >= len(entry["rows"])


def test_a_policy_without_a_simulated_counterpart_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = router_run(tmp_path, "consistent_hash")
    assert main(["sim", "fidelity", str(run), "--profile", str(PROFILE), "--no-noise"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "consistent_hash" in err and "Traceback" not in err, err


def test_a_fleet_of_one_is_the_serve_replica_twin(tmp_path: Path) -> None:
    """replicas=1: the router has nothing to decide, so the cluster twin predicts what the twin of one
    `batchmark serve` replica (the continuous engine at serve's defaults, on the profile's pool) predicts."""
    from harness.cluster_twin import replica_description

    run = router_run(tmp_path, "round_robin", replicas=1)
    fleet = json.loads((run / "manifest.json").read_text())["engines"][0]
    one = simulate_twin(run, fleet, PROFILE, noise=False)
    alone = simulate_twin(run, {**replica_description(PROFILE), "name": "fleet"}, PROFILE, noise=False)
    for metric in ("ttft", "tpot", "e2e"):
        assert one["latency"][metric]["percentiles"]["p50"]["value"] == pytest.approx(
            alone["latency"][metric]["percentiles"]["p50"]["value"], rel=1e-9
        ), metric
