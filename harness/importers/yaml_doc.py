"""A result file written as YAML (inference-perf writes its Benchmark Report so), read safely.

Plain data only: `yaml.SafeLoader` builds no objects, and aliases (`*name`) are refused outright, since a
result file has none and nested aliases expand without bound when the document is walked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from harness.importers.common import fail

YAML_SUFFIXES = (".yaml", ".yml")


class _PlainLoader(yaml.SafeLoader):
    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.events.AliasEvent):
            raise yaml.MarkedYAMLError(
                problem="an alias (*name): a result file has none", problem_mark=self.peek_event().start_mark
            )
        return super().compose_node(parent, index)


def read_yaml(path: Path, text: str) -> Any:
    """`text` parsed, or one line naming the file and the line where it went wrong."""
    try:
        return yaml.load(text, Loader=_PlainLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}" if mark is not None else "file"
        raise fail(path, where, f"not valid YAML, truncated? ({exc.problem or exc.context})") from None
    except (yaml.YAMLError, RecursionError) as exc:
        raise fail(path, "file", f"not valid YAML ({type(exc).__name__})") from None
