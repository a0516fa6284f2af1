"""The fingerprint: same spec and seed => same hash; any change to seed, spec or requests => another."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

from workloads import Workload, load_workload, time_scale
from workloads.fingerprint import canonical_document, canonical_json

ROOT = Path(__file__).resolve().parents[2]


def test_same_seed_and_spec_same_fingerprint() -> None:
    for name, options in [
        ("noisy-neighbour", {}),
        ("azure-conv", {"rate": 8.0, "max_context": 2048}),
        ("mooncake-conv", {"jitter": True, "first": 200}),
    ]:
        assert load_workload(name, **options).fingerprint() == load_workload(name, **options).fingerprint()


def test_different_seed_or_spec_different_fingerprint() -> None:
    base = load_workload("chat-small")
    seen = {base.fingerprint()}
    for variant in (
        load_workload("chat-small", seed=1),
        load_workload("chat-small", requests=65),
        load_workload("chat-small", max_context=100),
        load_workload("chat-small", rate=2.5),
        time_scale(base, 1.5),
    ):
        seen.add(variant.fingerprint())
    assert len(seen) == 6
    # Even a trace replay without randomness records its seed: a different seed is a different run.
    assert load_workload("azure-code", seed=1).fingerprint() != load_workload("azure-code").fingerprint()


def test_fingerprint_covers_every_request_field_but_not_labels() -> None:
    base = load_workload("chat-small")
    changed = dataclasses.replace(base.requests[5], output_tokens=base.requests[5].output_tokens + 1)
    edited = Workload(base.name, [*base.requests[:5], changed, *base.requests[6:]], base.spec, base.notes)
    assert edited.fingerprint() != base.fingerprint()
    renamed = Workload("another-name", base.requests, {**base.spec, "name": "x", "description": "y"}, ["a note"])
    assert renamed.fingerprint() == base.fingerprint()


def test_fingerprint_is_sha256_of_the_canonical_document() -> None:
    import hashlib

    w = load_workload("chat-small")
    document = canonical_document(w)
    assert document["requests"][0][:2] == ["r000000", 0]  # id and arrival in integer microseconds
    assert json.loads(canonical_json(document)) == document
    assert hashlib.sha256(canonical_json(document)).hexdigest() == w.fingerprint()


def test_fingerprint_is_the_same_in_a_fresh_process() -> None:
    code = "from workloads import load_workload; print(load_workload('burst', rate=3.0).fingerprint())"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONHASHSEED": "123"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True, timeout=60
    ).stdout.strip()
    assert out == load_workload("burst", rate=3.0).fingerprint()


def test_an_empty_or_single_request_workload_still_describes() -> None:
    empty = Workload("empty", [], {"seed": 0}, []).describe()
    assert empty["requests"] == 0 and empty["input_tokens"]["p50"] is None and empty["mean_rate_rps"] is None
    one = load_workload("azure-conv", first=1).describe()
    assert one["requests"] == 1 and one["span_s"] == 0.0 and one["interarrival_cv"] is None
    assert one["output_tokens"]["p99"] == 44  # the first row of the conv trace
