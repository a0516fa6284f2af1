"""The server series' summary when the scrape failed at some point (issue #33: "a scrape that fails mid-run is
recorded as a gap, never ends the run"): what its counter deltas cover is said, and a scrape that never answered
is n/a for that reason, never 0.0% and never "exposed no counters"."""

from __future__ import annotations

from typing import Any

import pytest

from harness.metrics.prefix_cache import hit_rate_said
from harness.metrics.server_series import WENT_BACKWARDS, as_step_frame, behind_router, server_summary
from harness.metrics.spec_decode import describe_spec_decode


def _ok(t: float, queries: float, hits: float) -> dict[str, Any]:
    return {"t": t, "ok": True, "running": 1.0, "waiting": 0.0, "prefix_queries": queries, "prefix_hits": hits}


def _gap(t: float) -> dict[str, Any]:
    return {"t": t, "ok": False, "error": "Cannot connect to host"}


@pytest.mark.parametrize(
    ("rows", "partial", "said"),
    [
        ([_ok(-0.1, 0, 0), _ok(1.0, 100, 50), _ok(2.0, 200, 100)], False, "50.0% (server counters: 100 of 200"),
        ([_ok(-0.1, 0, 0), _gap(1.0), _ok(2.0, 200, 100)], False, "50.0% (server counters: 100 of 200"),
        (  # the scrape target died mid-run: the deltas stop at its last answer, and the line says so
            [_ok(-0.1, 0, 0), _ok(1.0, 100, 50), _gap(2.0), _gap(3.0)],
            True,
            "50.0% (server counters: 50 of 100 prompt tokens) (only -0.1-1.0 s of the trial",
        ),
        ([_gap(-0.1), _ok(1.0, 100, 50), _ok(2.0, 200, 100)], True, "(only 1.0-2.0 s of the trial"),
    ],
)
def test_counter_deltas_say_the_span_they_cover(rows: list[dict[str, Any]], partial: bool, said: str) -> None:
    server = server_summary(rows)
    assert server["partial"] is partial and server["gaps"] == sum(not r["ok"] for r in rows)
    line = hit_rate_said({"server": server, "prefix_cache": None})
    assert line.startswith(said) or said in line
    assert ("only" in line) is partial


def test_a_scrape_that_never_answered_is_n_a_for_that_reason() -> None:
    server = server_summary([_gap(-0.1), _gap(0.2), _gap(0.5)])
    assert server == {"samples": 0, "gaps": 3}
    line = hit_rate_said({"server": server, "prefix_cache": None})
    assert line == "n/a (every one of the 3 scrapes of the server failed)"


def test_a_restart_mid_trial_leaves_the_counter_deltas_unknown_even_when_last_exceeds_first() -> None:
    """Issue #35: the server restarted at 1.5 s (its counters from 0 again) and then counted past where it began:
    last - first (60 of 150) is neither trial's figure. The gauges are still one server's at a time."""

    def row(t: float, queries: float, hits: float, drafts: float) -> dict[str, Any]:
        counted = {"spec_drafts": drafts, "spec_draft_tokens": 2 * drafts, "spec_accepted_tokens": drafts}
        return {**_ok(t, queries, hits), **counted, "preemptions": drafts}

    rows = [row(-0.1, 100, 50, 5), row(1.0, 200, 100, 9), row(1.5, 0, 0, 0), row(2.0, 250, 110, 12)]
    server = server_summary(rows)
    assert server["prefix_cache"] is None and server["preemptions"] is None and server["spec_decode"] is None
    assert server["unknown"] == dict.fromkeys(("preemptions", "prefix_cache", "spec_decode"), WENT_BACKWARDS)
    assert server["running_peak"] == 1.0
    summary = {"server": server, "prefix_cache": None, "spec_decode": None}
    assert hit_rate_said(summary) == f"n/a ({WENT_BACKWARDS})"
    assert describe_spec_decode("h", summary) == f"h: speculative decoding: n/a ({WENT_BACKWARDS})"


def test_a_routers_url_leaves_every_exposed_figure_unknown_and_feeds_no_warning() -> None:
    rows = [{**_ok(t, 100 * t, 10 * t), "router_replicas": 3} for t in (0.0, 1.0, 2.0)]
    server = server_summary(rows)
    assert server["unknown"] == dict.fromkeys(("running_peak", "waiting_peak", "prefix_cache"), behind_router(3))
    assert server["running_peak"] is None and server["prefix_cache"] is None
    assert hit_rate_said({"server": server, "prefix_cache": None}) == f"n/a ({behind_router(3)})"
    assert as_step_frame(rows) is None  # the replicas' queues, interleaved, are no one's queue
    assert as_step_frame([{k: v for k, v in r.items() if k != "router_replicas"} for r in rows]) is not None
