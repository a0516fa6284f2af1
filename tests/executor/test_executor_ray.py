"""On a Ray cluster this test module starts itself (2 CPUs on 127.0.0.1, shut down at the end): a
simulated sweep gives metrics identical to the local executor's, a run says which node ran each trial,
and sharded load from Ray actors against the zero-delay server loses and duplicates nothing.

Ray takes ~10 s to start, so the module is small and the cluster is shared by its tests."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.cli import main
from tests.executor.zero_server import zero_server

pytestmark = pytest.mark.slow  # heavy: scheduled first (tests/conftest.py)

# two rates and 16 requests: each rate point costs its fixed summary work, and equality needs no more
SWEEP = [
    "sweep",
    "--workload",
    "chat-small",
    "--first",
    "16",
    "--engine",
    "sim:scheduler=static",
    "--engine",
    "sim",
    "--rates",
    "4,64",
    "--no-report",
]


@pytest.fixture(scope="module")
def cluster():
    # imported here, not at collection: every worker collects every file, and Ray takes 1.3 s to import
    ray = pytest.importorskip("ray")
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
    for rate in ("4", "64"):
        assert _metrics(tmp_path / "local" / f"rate-{rate}") == _metrics(tmp_path / "ray" / f"rate-{rate}")


def test_a_simulated_study_on_ray_gives_the_local_verdict(cluster, tmp_path):
    study_dir = Path(__file__).parent.parent / "study"
    # the overturned plan on the fleet test's 20 s load (~50 requests, not calm-then-rush's ~180): a unit's cost
    # is mostly its summary, and the verdict's path is the same
    overturned = (study_dir / "overturned.toml").read_text()
    for old, new in (("calm-then-rush.toml", "fleet-load.toml"), ("[0, 15]", "[0, 10]"), ("[15, 30]", "[10, 20]")):
        assert old in overturned
        overturned = overturned.replace(old, new)
    (tmp_path / "overturned.toml").write_text(overturned)
    shutil.copy(study_dir / "fleet-load.toml", tmp_path / "fleet-load.toml")
    plan = str(tmp_path / "overturned.toml")
    assert main(["study", plan, "--sim", "--no-report", "--out", str(tmp_path / "local")]) == 0
    assert main(["study", plan, "--sim", "--no-report", "--executor", "ray", "--out", str(tmp_path / "ray")]) == 0
    local, remote = (json.loads((tmp_path / side / "study.json").read_text()) for side in ("local", "ray"))
    # the plan's one trial gives the judge no interval: its threshold cannot be told (docs/study.md)
    assert remote["verdict"] == local["verdict"] and remote["verdict"]["outcome"] == "cannot_tell"
    assert all(Path(u["run_dir"], "records.jsonl").exists() for u in remote["units"])  # files came back
    assert all("ray node" in u["node"] for u in remote["units"])  # each unit says where it ran


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
            [
                "run",
                "--workload",
                "chat-small",
                "--first",
                "16",
                "--rate",
                "100",
                "--engine",
                f"http:url={url}",
                "--engine",
                "zero",
                "--workers",
                "2",
                "--executor",
                "ray",
                "--no-report",
                "--out",
                str(out),
            ]
        )
    assert code == 0
    scheduled = sorted(json.loads(line)["request_id"] for line in (out / "requests.jsonl").read_text().splitlines())
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    for engine in ("http", "zero"):
        mine = [r for r in records if r["engine"] == engine]
        assert sorted(r["request_id"] for r in mine) == scheduled
        assert {r["worker"] for r in mine} == {0, 1}
    outcomes = json.loads((out / "manifest.json").read_text())["outcomes"]
    assert all(len(o["sharding"]["clock_offsets"]) == 2 for o in outcomes)


def test_a_simulated_cluster_grid_on_ray_equals_local(cluster, tmp_path):
    """Router policy x replica count, 2 x 2, as a run's engines; its trials are the Ray units. Locally, each trial
    runs as the same unit function in this process: its records are those the Ray run's metrics were computed from
    (a second whole run here would only compute the same eight summaries again)."""
    from harness.cli import args as shared
    from harness.cli import build_parser
    from harness.run import _prompts, replay_trial_unit

    replica = "replica=sim:model=llama-3.1-8b,hardware=h100"
    grid = [
        f"cluster:replicas={n},router={p},label={p}-{n},{replica}"
        for p in ("round_robin", "least_outstanding")
        for n in (2, 3)
    ]
    argv = ["run", "--workload", "chat-small", "--first", "8", "--repeat", "2", "--no-report", "--no-progress"]
    for spec in grid:
        argv += ["--engine", spec]
    assert main([*argv, "--executor", "ray", "--out", str(tmp_path / "ray")]) == 0
    remote = _metrics(tmp_path / "ray")
    assert len(remote["runs"]) == 8 and {o["node"] for o in _outcomes(tmp_path / "ray")} != {None}  # 4 x 2, on Ray
    args = build_parser().parse_args([*argv, "--out", str(tmp_path / "local")])
    specs = shared.engine_specs(args)
    workload, _ = shared.load_run_workload(args, specs)
    settings = shared.run_settings(args, workload)
    prompts = _prompts(workload, specs, None, settings)
    local = []
    for trial in (0, 1):
        (tmp_path / f"t{trial}").mkdir()
        replay_trial_unit(prompts, specs, settings, trial, out_dir=tmp_path / f"t{trial}")
        local += (tmp_path / f"t{trial}" / "records.jsonl").read_text().splitlines()
    served = (tmp_path / "ray" / "records.jsonl").read_text().splitlines()
    assert sorted(served) == sorted(local) and len(local) == 8 * 8  # records hold virtual times only: byte-equal
    assert {json.loads(line)["replica"] for line in served} == {0, 1, 2}  # the 3-replica engines used all three


def _outcomes(path):
    return json.loads((path / "manifest.json").read_text())["outcomes"]


def test_a_fleet_study_runs_its_variants_as_ray_units(cluster, tmp_path):
    """Router policy x replica count as a study's variants (tests/study/fleet.toml): every arm on every slice is a
    unit; each comes back from its Ray node with its records, each record naming the replica that served it."""
    study_dir = Path(__file__).parent.parent / "study"
    for name in ("fleet.toml", "fleet-load.toml"):
        shutil.copy(study_dir / name, tmp_path / name)
    argv = ["study", str(tmp_path / "fleet.toml"), "--no-report", "--executor", "ray", "--out", str(tmp_path / "ray")]
    assert main(argv) == 0
    units = json.loads((tmp_path / "ray" / "study.json").read_text())["units"]
    assert sorted({u["arm"] for u in units}) == ["baseline", "least-2", "least-3", "rr-3"] and len(units) == 8
    assert all("ray node" in u["node"] for u in units)
    for unit in units:
        lines = Path(unit["run_dir"], "records.jsonl").read_text().splitlines()
        served = {json.loads(line)["replica"] for line in lines}
        assert served <= set(range(3 if unit["arm"].endswith("3") else 2)) and served
