"""The docs state each record schema's fields as the schemas do: the tables in docs/run-directory.md list
exactly the dataclass fields, in order, and mark the required ones."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

import pytest

from engines.step_record import StepRecord
from harness.records import RequestRecord

DOC = Path(__file__).resolve().parent.parent / "docs" / "run-directory.md"


def _table(heading: str) -> list[tuple[str, str]]:
    text = DOC.read_text(encoding="utf-8")
    section = text.split(heading, 1)[1].split("\n### ", 1)[0]
    return re.findall(r"^\| `(\w+)` \| ([^|]+) \|", section, flags=re.M)


@pytest.mark.parametrize(
    ("schema", "heading"), [(RequestRecord, "### Request record"), (StepRecord, "### Step record")]
)
def test_the_run_directory_doc_lists_the_schema(schema, heading):
    rows = _table(heading)
    assert [name for name, _ in rows] == [f.name for f in fields(schema)]
    documented = {name for name, kind in rows if "required" in kind}
    assert documented == {f.name for f in fields(schema) if f.metadata.get("required")}
