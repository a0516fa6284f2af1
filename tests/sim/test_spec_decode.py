import json
import random
from pathlib import Path

import pytest

from engines.errors import EngineInputError
from engines.http.scrape_names import parse_prometheus, server_fields
from engines.sim.spec_decode import histogram_from_json


def test_all_accepted_emits_k_plus_one_and_all_rejected_one():
    rng = random.Random(0)
    full = histogram_from_json({"k": 3, "accepted_counts": [0, 0, 0, 5]}, "t")
    none = histogram_from_json({"k": 3, "accepted_counts": [5, 0, 0, 0]}, "t")
    assert {full.draw_emitted(rng) for _ in range(50)} == {4}
    assert {none.draw_emitted(rng) for _ in range(50)} == {1}
    assert full.query_tokens_per_sequence() == 4


@pytest.mark.parametrize(
    "bad",
    [
        {},
        [],
        {"k": 0, "accepted_counts": [1]},
        {"k": 2, "accepted_counts": [1, 1]},
        {"k": 1, "accepted_counts": [0, 0]},
        {"k": True, "accepted_counts": [1, 1]},  # JSON true is a Python int (issue #33 audit)
        {"k": 2.0, "accepted_counts": [1, 1, 1]},
        {"k": 2, "accepted_counts": [1, 2.5, 3]},
        {"k": 2, "accepted_counts": [1, -1, 3]},
    ],
)
def test_bad_histogram_is_refused(bad):
    with pytest.raises(EngineInputError) as err:
        histogram_from_json(bad, "t")
    assert "\n" not in str(err.value) and str(err.value).startswith("t: ")


def _tokens_and_time(tmp_path, counts: list[int] | None) -> tuple[list[int], float, dict]:

    from engines.api import Request
    from harness.engine_specs import build_engine, parse_engine_specs
    from harness.loadgen import Scheduled
    from harness.loadgen.virtual import run_virtual_open_loop

    spec = "sim:max_running=4,prefix_caching=false,seed=3"
    if counts is not None:
        path = tmp_path / "hist.json"
        path.write_text(json.dumps({"k": len(counts) - 1, "accepted_counts": counts}))
        spec += f",spec_decode={path}"
    engine = build_engine(parse_engine_specs([spec], {})[0], None)
    schedule = [
        Scheduled(Request(f"r{i}", range(i << 40, (i << 40) + 128), 64, ignore_eos=True), 0.0) for i in range(4)
    ]
    records: list = []
    run_virtual_open_loop(engine, schedule, records.append, label="sim")
    return [r.output_tokens for r in records], max(r.t_finish for r in records), engine.describe()


def test_the_simulator_emits_accepted_drafts_and_says_what_its_figures_rest_on(tmp_path):
    plain_tokens, plain_s, _ = _tokens_and_time(tmp_path, None)
    all_tokens, all_s, described = _tokens_and_time(tmp_path, [0, 0, 0, 1])  # every draft accepted: 4 per step
    none_tokens, none_s, _ = _tokens_and_time(tmp_path, [1, 0, 0, 0])  # none accepted: verify cost, 1 token
    assert plain_tokens == all_tokens == none_tokens == [64] * 4  # exactly max_tokens, never past it
    assert all_s < plain_s < none_s  # 4x fewer steps beats their cost; rejecting every draft only costs
    assert described["spec_decode"]["mean_acceptance_length"] == 4.0
    assert "conditional" in described["spec_decode"]["conditional"]


def test_a_missing_or_bad_histogram_file_is_one_line(tmp_path):
    from harness.engine_specs import build_engine, parse_engine_specs

    with pytest.raises(EngineInputError, match=r"spec_decode.*no such file"):
        parse_engine_specs([f"sim:spec_decode={tmp_path / 'missing.json'}"], {})
    (tmp_path / "bad.json").write_text('{"k": 2,\n "accepted_counts": [1, 2 3]}')
    with pytest.raises(EngineInputError, match=r"bad.json:2: acceptance histogram is not JSON \(Expecting"):
        build_engine(parse_engine_specs([f"sim:spec_decode={tmp_path / 'bad.json'}"], {})[0], None)


def test_per_request_counts_are_recorded_and_summarised_in_vllm_terms(tmp_path):
    """Each record carries its drafts, drafted and accepted tokens; emitted tokens = drafts + accepted (each
    verify step emits 1 + A), and the summary's figures are vLLM's: accepted / drafted, 1 + accepted / drafts."""
    from engines.api import Request
    from harness.engine_specs import build_engine, parse_engine_specs
    from harness.loadgen import Scheduled
    from harness.loadgen.virtual import run_virtual_open_loop
    from harness.metrics.frame import records_frame
    from harness.metrics.spec_decode import describe_spec_decode, spec_decode_summary

    path = tmp_path / "hist.json"
    path.write_text(json.dumps({"k": 3, "accepted_counts": [2, 1, 1, 4]}))
    spec = f"sim:max_running=4,prefix_caching=false,spec_decode={path}"
    engine = build_engine(parse_engine_specs([spec], {})[0], None)
    schedule = [Scheduled(Request(f"r{i}", range(i << 40, (i << 40) + 64), 40, ignore_eos=True), 0.0) for i in range(4)]
    records: list = []
    run_virtual_open_loop(engine, schedule, records.append, label="sim")
    for r in records:
        # the prefill step emits the first token; every later step is a verify step (a draft) emitting 1 + A,
        # but for a last step whose own token is the last one max_tokens allows (nothing left to draft)
        assert r.output_tokens == 40 and 40 - (1 + r.spec_drafts + r.spec_accepted_tokens) in (0, 1), r
        assert r.spec_accepted_tokens <= r.spec_draft_tokens <= 3 * r.spec_drafts
    summary = spec_decode_summary(records_frame(records))
    drafts = sum(r.spec_drafts for r in records)
    accepted = sum(r.spec_accepted_tokens for r in records)
    assert summary["drafts"] == drafts and summary["accepted_tokens"] == accepted and summary["requests"] == 4
    assert summary["mean_acceptance_length"] == pytest.approx(1 + accepted / drafts)
    assert summary["acceptance_rate"] == pytest.approx(accepted / sum(r.spec_draft_tokens for r in records))
    assert summary["per_request"]["mean_acceptance_length"]["n"] == 4
    line = describe_spec_decode("sim", {"spec_decode": summary, "server": None})
    assert f"{drafts} drafts" in line and "per request (4)" in line
    server_only = describe_spec_decode("http", {"spec_decode": None, "server": {"spec_decode": summary}})
    assert server_only.endswith("per trial only (server counters: the server returned no per-request counts)")
    assert describe_spec_decode("x", {"spec_decode": None, "server": None}) is None
    plain = build_engine(parse_engine_specs(["sim:max_running=4,prefix_caching=false"], {})[0], None)
    without: list = []
    run_virtual_open_loop(plain, schedule, without.append, label="sim")
    assert {r.spec_drafts for r in without} == {None}
    assert spec_decode_summary(records_frame(without)) is None  # no counts: no figure, never 0


_VLLM = Path(__file__).parents[1] / "fixtures" / "vllm_cpu"  # real vLLM 0.32.0 /metrics around one run (SOURCE.md)


def _series(tmp_path: Path, rows: list[dict]) -> Path:
    path = tmp_path / "http-t0.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _scraped(name: str, t: float) -> dict:
    return {"t": t, "ok": True, **server_fields(parse_prometheus((_VLLM / name).read_text()))}


def test_a_scraped_vllm_run_gives_its_histogram_exactly(tmp_path: Path) -> None:
    """Issue #33 item 4, "or one derived from a scraped run": vLLM's per-position accepted counts (260, 211, 198
    of 272 drafts in the repeat run) give the counts of drafts that accepted exactly 0..3 tokens, whose mean
    length is the run's 1 + 669 / 272; the sim engine takes the series file as its histogram."""
    from harness.engine_specs import build_engine, parse_engine_specs

    rows = [
        _scraped("spec-run-before-repeat.prom", -0.1),
        {"t": 0.2, "ok": False, "error": "gap"},
        _scraped("spec-run-after-repeat.prom", 9.0),
    ]
    path = _series(tmp_path, rows)
    engine = build_engine(parse_engine_specs([f"sim:spec_decode={path}"], {})[0], None)
    described = engine.describe()["spec_decode"]
    assert (described["k"], described["accepted_counts"]) == (3, [12, 49, 13, 198])
    assert described["mean_acceptance_length"] == pytest.approx(1 + 669 / 272)
    assert described["histogram"].endswith("(derived)")


@pytest.mark.parametrize(
    ("rows", "said"),
    [
        ([{"t": 0, "ok": True, "running": 0.0}, {"t": 1, "ok": True, "running": 1.0}], "no two samples"),
        ([{"t": 0, "ok": True, "spec_drafts": 5.0, "spec_accepted_per_pos": [3.0]}], "no two samples"),
        (  # a server restarted mid-trial: its counters went back
            [
                {"t": 0, "ok": True, "spec_drafts": 50.0, "spec_accepted_per_pos": [40.0, 30.0]},
                {"t": 1, "ok": True, "spec_drafts": 10.0, "spec_accepted_per_pos": [8.0, 6.0]},
            ],
            "counters that went back",
        ),
        (  # restarted, then counted past where it began: last - first looks like a trial's counts
            [
                {"t": 0, "ok": True, "spec_drafts": 50.0, "spec_accepted_per_pos": [40.0]},
                {"t": 1, "ok": True, "spec_drafts": 10.0, "spec_accepted_per_pos": [8.0]},
                {"t": 2, "ok": True, "spec_drafts": 60.0, "spec_accepted_per_pos": [45.0]},
            ],
            "counters that went back",
        ),
        (  # issue #35: a router passed each scrape to one of its replicas
            [
                {"t": t, "ok": True, "spec_drafts": 5.0 * t, "spec_accepted_per_pos": [2.0 * t], "router_replicas": 2}
                for t in (0, 1)
            ],
            "scraped at a router's URL (each scrape reached one replica of 2)",
        ),
        (
            [
                {"t": 0, "ok": True, "spec_drafts": 0.0, "spec_accepted_per_pos": [0.0]},
                {"t": 1, "ok": True, "spec_drafts": 4.0, "spec_accepted_per_pos": [1.0, 0.0]},
            ],
            "draft positions changed",
        ),
        (  # a count that is no number: a hand-edited or foreign series
            [
                {"t": 0, "ok": True, "spec_drafts": "x", "spec_accepted_per_pos": [1.0]},
                {"t": 1, "ok": True, "spec_drafts": 5.0, "spec_accepted_per_pos": [2.0]},
            ],
            "not a count",
        ),
        (
            [
                {"t": 0, "ok": True, "spec_drafts": 0.0, "spec_accepted_per_pos": [None]},
                {"t": 1, "ok": True, "spec_drafts": 5.0, "spec_accepted_per_pos": [2.0]},
            ],
            "not a count",
        ),
    ],
)
def test_a_series_that_cannot_give_a_histogram_is_one_line(tmp_path: Path, rows: list[dict], said: str) -> None:
    from harness.engine_specs import build_engine, parse_engine_specs

    with pytest.raises(EngineInputError) as err:
        build_engine(parse_engine_specs([f"sim:spec_decode={_series(tmp_path, rows)}"], {})[0], None)
    assert said in str(err.value) and "\n" not in str(err.value) and str(err.value).startswith(str(tmp_path))


@pytest.mark.parametrize("name", ["histogram.json", "series.jsonl"])
def test_a_binary_histogram_or_series_is_one_line(tmp_path: Path, name: str) -> None:
    from harness.engine_specs import build_engine, parse_engine_specs

    (tmp_path / name).write_bytes(b"\x00\xf7\xfe binary, not UTF-8 \xff")
    with pytest.raises(EngineInputError) as err:
        build_engine(parse_engine_specs([f"sim:spec_decode={tmp_path / name}"], {})[0], None)
    assert "UnicodeDecodeError" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("bad", ['{"t": 1, "ok": tru', "[1]", "[" * 100_000], ids=["cut", "a list", "too deep"])
def test_a_series_line_that_is_not_json_is_one_line_naming_it(tmp_path: Path, bad: str) -> None:
    from harness.engine_specs import build_engine, parse_engine_specs

    path = tmp_path / "http-t0.jsonl"
    good = '{"t": 0, "ok": true, "spec_drafts": 5.0, "spec_accepted_per_pos": [3.0]}'
    path.write_text(f"{good}\n{bad}\n{good}\n")
    with pytest.raises(EngineInputError) as err:
        build_engine(parse_engine_specs([f"sim:spec_decode={path}"], {})[0], None)
    assert str(err.value).startswith(f"{path}:2: not a JSON object: ") and "\n" not in str(err.value), err.value
