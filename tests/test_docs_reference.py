"""docs/ pages are reference; dated measurement logs live under docs/measurements/, one file per measurement
named YYYY-MM-DD-subject.md, each linked from the page that keeps the current figures."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MEASUREMENTS = ROOT / "docs" / "measurements"
PAGES = [*(ROOT / "docs").glob("*.md"), ROOT / "README.md"]
# a time of day in UTC, a range of them, an `uptime` stamp, or an ISO date outside a link to a measurement
DATED = re.compile(
    r"\b[0-2]\d:[0-5]\d(?::[0-5]\d)? UTC|\b[0-2]\d:[0-5]\d-[0-2]\d:[0-5]\d\b|\buptime (?:at start )?[0-2]\d:"
    r"|(?<![/\[])\b20\d\d-[01]\d-[0-3]\d\b(?!-[a-z])"
)


def test_reference_pages_hold_no_dated_logs() -> None:
    lines = [(p.name, n, line) for p in PAGES for n, line in enumerate(p.read_text().splitlines(), 1)]
    found = [f"{name}:{n}" for name, n, line in lines if DATED.search(line)]
    assert not found, f"times of day in reference pages (move the log to docs/measurements/): {found}"


def test_every_measurement_is_named_by_date_and_linked() -> None:
    files = sorted(MEASUREMENTS.glob("*"))
    assert len(files) >= 10
    text = "".join(p.read_text() for p in PAGES)
    for f in files:
        assert re.fullmatch(r"20\d\d-[01]\d-[0-3]\d-[a-z0-9-]+\.md", f.name), f.name
        assert f.read_text().startswith("# "), f.name
        assert f"measurements/{f.name}" in text, f"{f.name} is linked from no page"
