"""The report's fast run-directory reader gives the metrics loaders' frames, and bounded trace reads."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.errors import HarnessInputError
from harness.metrics import load_records, load_steps, summarize
from harness.metrics.frame import TruncatedLineWarning
from reports.load import load_run, load_runs, read_records
from reports.steps import read_trace
from tests.fixtures.run_dirs import SYNTHETIC_SLO


def test_fast_records_match_the_metrics_loader(run_dir: Path) -> None:
    slow = load_records(run_dir / "records.jsonl")
    fast, tokens = read_records(run_dir / "records.jsonl")
    assert list(fast.columns) == list(slow.columns)
    for col in slow.columns:
        if col == "token_times":
            continue
        pd.testing.assert_series_equal(fast[col], slow[col], check_dtype=True, obj=col)
    assert tokens.counts.tolist() == [len(v) for v in slow["token_times"]]
    assert np.array_equal(tokens.flat, np.concatenate([np.asarray(v) for v in slow["token_times"]]))


def test_summaries_from_the_fast_reader_equal_the_slow_path(run_dir: Path) -> None:
    """metrics.json of the synthetic runs is computed through the fast reader; it must not change a number."""
    slow = load_records(run_dir / "records.jsonl")
    run = load_run(run_dir)
    wall = {o["engine"]: o["wall_time_s"] for o in json.loads((run_dir / "manifest.json").read_text())["outcomes"]}
    for er in run.engine_runs:
        steps = load_steps(run_dir / "steps" / f"{er.engine}-t0.jsonl")
        kw = {"slo": SYNTHETIC_SLO, "n_boot": 200, "wall_time_s": wall[er.engine]}  # as the run command computes it
        expected = summarize(slow[slow["engine"] == er.engine], steps, **kw)
        got = summarize(er.materialise(), er.steps, **kw)
        assert json.dumps(got, sort_keys=True) == json.dumps(expected, sort_keys=True)
        assert json.dumps(er.summary, sort_keys=True) == json.dumps(expected, sort_keys=True)


def test_done_time_matches_the_metrics_definition(run_dir: Path) -> None:
    from harness.metrics.latency import done_time

    run = load_run(run_dir)
    slow = load_records(run_dir / "records.jsonl")
    for er in run.engine_runs:
        expected = done_time(slow[slow["engine"] == er.engine].reset_index(drop=True))
        np.testing.assert_allclose(er.done.to_numpy(), expected.to_numpy())


def test_truncated_last_line_falls_back_and_is_flagged(run_dir: Path, tmp_path: Path) -> None:
    import shutil

    broken = tmp_path / "broken"
    shutil.copytree(run_dir, broken, ignore=shutil.ignore_patterns("metrics.json"))
    text = (broken / "records.jsonl").read_text()
    (broken / "records.jsonl").write_text(text + '{"request_id": "r9", "engine": "st')
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TruncatedLineWarning)
        run = load_run(broken, n_boot=50)
    flags = [f["name"] for er in run.engine_runs for f in er.summary["validity"]["flags"]]
    assert "truncated_records" in flags


def test_bad_run_directories_are_user_errors(tmp_path: Path) -> None:
    with pytest.raises(HarnessInputError, match="not a run directory"):
        load_run(tmp_path / "missing")
    with pytest.raises(HarnessInputError, match=r"no records\.jsonl"):
        load_run(tmp_path)
    (tmp_path / "records.jsonl").write_text('{"request_id": "a"}\n{"request_id": "b"}\nnot json\n{}\n')
    with pytest.raises(HarnessInputError):
        load_run(tmp_path)


def test_labels_are_distinct(run_dir: Path) -> None:
    runs = load_runs([run_dir, run_dir])
    assert runs[0].label != runs[1].label
    assert {er.label.split("/")[0] for r in runs for er in r.engine_runs} == {runs[0].label, runs[1].label}


def test_sampled_trace_reads_runs_of_steps(run_dir: Path) -> None:
    path = run_dir / "steps" / "static-t0.jsonl"
    exact = read_trace(path)
    sampled = read_trace(path, full_read_bytes=path.stat().st_size // 4)
    assert exact.exact and not sampled.exact
    assert 0 < len(sampled.frame) < len(exact.frame)
    # Every sampled step is a real step, and the covered spans lie inside the trace.
    merged = sampled.frame.merge(exact.frame, on="step", suffixes=("", "_x"))
    assert len(merged) == len(sampled.frame)
    assert np.allclose(merged["t_start"], merged["t_start_x"])
    assert (merged["num_running"] == merged["num_running_x"]).all()
    assert sampled.spans[:, 0].min() >= exact.frame["t_start"].min()
    assert sampled.spans[:, 1].max() <= exact.frame["t_end"].max()
    # The windowed read bisects the file to the same steps the exact frame holds.
    t0 = float(exact.frame["t_start"].iloc[len(exact.frame) // 2])
    assert sampled.window(t0, 50)["step"].tolist() == exact.window(t0, 50)["step"].tolist()


def test_sampled_occupancy_is_close_to_exact(run_dir: Path) -> None:
    from reports.downsample import level_per_bin, steps_mean_per_bin, time_edges

    path = run_dir / "steps" / "continuous-t0.jsonl"
    exact = read_trace(path)
    sampled = read_trace(path, full_read_bytes=path.stat().st_size // 3)

    def mean_occupancy(trace) -> float:
        st, spans = trace.frame, trace.spans
        edges = time_edges(float(spans[:, 0].min()), float(spans[:, 1].max()), 20)
        area = steps_mean_per_bin(
            st["t_start"].to_numpy(), st["t_end"].to_numpy(), st["num_running"].to_numpy(dtype=float), edges
        )
        covered = level_per_bin(spans[:, 0], spans[:, 1], edges)
        return float(area.sum() / covered.sum())

    assert mean_occupancy(sampled) == pytest.approx(mean_occupancy(exact), rel=0.25)
