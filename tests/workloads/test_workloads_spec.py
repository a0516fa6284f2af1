"""Spec files (TOML): every feature reachable from a file, and errors that name the line."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from workloads import WorkloadError, load_workload

Write = Callable[[str, str], Path]

FULL_SPEC = """\
name = "two-tenants"
seed = 9
duration_s = 120.0

[[tenants]]
name = "chat"
rate = 3.0
priority = 1
arrival = { process = "gamma", cv = 2.0 }
input = { dist = "empirical", trace = "azure-conv" }
output = { dist = "mixture", components = [
    { weight = 0.9, dist = "uniform", low = 8, high = 64 },
    { weight = 0.1, dist = "fixed", value = 700 },
] }

[[tenants]]
name = "batch"
count = 2
rate = 0.5
input = { dist = "lognormal", median = 300, sigma = 0.5, max = 900 }
output = 256

[transforms]
time_scale = 2.0
max_context = 1024
"""


def test_a_full_spec_file(write: Write) -> None:
    w = load_workload(str(write("mine.toml", FULL_SPEC)))
    assert w.name == "two-tenants" and w.spec["seed"] == 9
    assert set(w.describe()["tenants"]) == {"chat", "batch-1", "batch-2"}
    assert max(r.arrival_s for r in w.requests) < 60.0  # 120 s generated, replayed twice as fast
    assert all(r.input_tokens + r.output_tokens <= 1024 for r in w.requests)
    assert {r.priority for r in w.requests if r.tenant == "chat"} == {1}
    assert [s["op"] for s in w.spec["transforms"]] == ["time_scale", "clip"]
    assert w.spec["source"]["tenants"][0]["arrival"] == {"process": "gamma", "cv": 2.0}
    # Options given to load_workload (the CLI's flags) override the file.
    assert load_workload(str(write("mine.toml", FULL_SPEC)), seed=10).spec["seed"] == 10


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            'seed = 1\n[[tenants]]\nrate = 1.0\ninput = 5\noutput = { dist = "uniform", low = 9, high = 3 }\n',
            r"bad.toml:5: tenants\[0\].output.high: high \(3\) is below low \(9\)",
        ),
        (
            "requests = 5\n[[tenants]]\nrate = 1.0\ninput = 5\noutput = 5\n\n[[tenants]]\nrate = -1.0\ninput = 5\n"
            "output = 5\n",
            r"bad.toml:8: tenants\[1\].rate: must be > 0, found -1.0",
        ),
        (
            '[trace]\nbundled = "azure-conv"\n[transforms]\nrate = 2.0\nspeed = 3\n',
            r"bad.toml:5: transforms.speed: unknown key; expected one of",
        ),
        (
            '[trace]\nbundled = "azure-conv"\n[transforms]\nmax_context = "big"\n',
            r"bad.toml:4: transforms.max_context: expected an integer, found 'big'",
        ),
        ('[trace]\nbundled = "azure-conv"\nrequests = 5\n', r"bad.toml:3: trace.requests: unknown key"),
        (
            '[trace]\npath = "x.csv"\ncolumns = { arrival = "t", input_tokens = "a" }\n',
            r"bad.toml:3: trace.columns: the mapping needs a column name for 'output_tokens'",
        ),
        ('[trace]\nbundled = "nope"\n', r"bad.toml:2: trace.bundled: unknown bundled trace 'nope'"),
        ("[[tenants]]\nrate = 1.0\ninput = 5\n", r"bad.toml:1: tenants\[0\].output: missing 'output'"),
        ('name = "x"\n', r"bad.toml:1: trace: a spec needs one of a \[trace\] table, \[\[tenants\]\] tables or a"),
        ("seed = \n", r"bad.toml:1: toml: Invalid value"),
        (
            '[closed_loop]\nthink_time_s = 1.0\n[trace]\nbundled = "azure-conv"\n',
            r"bad.toml:1: closed_loop.users: missing 'users'",
        ),
    ],
)
def test_spec_errors_name_file_line_and_field(write: Write, text: str, expected: str) -> None:
    path = write("bad.toml", text)
    with pytest.raises(WorkloadError, match=rf"^{path.parent}/{expected}") as info:
        load_workload(str(path))
    assert "\n" not in str(info.value)


def test_spec_closed_loop_over_a_trace(write: Write) -> None:
    text = '[trace]\nbundled = "azure-code"\n[transforms]\nfirst = 40\n[closed_loop]\nusers = 3\nthink_time_s = 2\n'
    w = load_workload(str(write("loop.toml", text)))
    assert (len(w.requests), w.closed_loop_users, w.think_time_s) == (40, 3, 2.0)
    assert w.spec["closed_loop"] == {"users": 3, "think_time_s": 2.0}


def test_presets_are_spec_files() -> None:
    w = load_workload("mooncake-conv", first=10)
    assert w.spec["source"] == {
        "kind": "trace",
        "bundled": "mooncake-conv",
        "format": "mooncake",
        "sha256": "b8cbb061a85206d729d91cdc2981f43c9e0d99209dce588d3af5f7934408b9df",
    }
