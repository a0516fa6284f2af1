"""The report in headless Chromium with networking off: it renders, every figure has data, no errors.

Screenshots (the whole page, the top, each section) are kept under test-artifacts/reports/ for a person
to look at.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reports import write_report

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def rendered(run_dir: Path, artifacts: Path, render) -> dict:
    page = write_report([run_dir], artifacts / "report.html")
    return render(page, artifacts / "screenshots")


def test_no_console_errors(rendered: dict) -> None:
    assert rendered["console_errors"] == []


def test_every_figure_rendered_with_data(rendered: dict) -> None:
    figures = rendered["figures"]
    assert len(figures) >= 10
    for fig in figures:
        assert fig["rendered"], fig
        assert fig["traces"] > 0, fig
        assert fig["points"] and max(fig["points"]) > 0, fig
        assert fig["marks"] > 0, fig


def test_summary_and_metric_tables_present(rendered: dict) -> None:
    assert rendered["metricRows"] > 30
    assert rendered["headlineRows"] >= 8
    assert "wins" in rendered["verdict"]


def test_nothing_left_the_file(rendered: dict) -> None:
    """Networking is off (proxy to a dead port, offline emulation); the page must not even try."""
    assert rendered["external"] == []
    assert all(u.startswith(("file:", "data:", "blob:", "about:")) for u in rendered["requests"]), rendered["requests"]
    assert not [r for r in rendered["resources"] if r.startswith(("http:", "https:"))]


def test_screenshots_kept(rendered: dict) -> None:
    shots = [Path(p) for p in rendered["screenshots"]]
    assert len(shots) >= 10
    for shot in shots:
        assert shot.exists() and shot.stat().st_size > 5_000, shot
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert rendered["page_height"] > 5_000
