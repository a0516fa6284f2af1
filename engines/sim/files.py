"""The simulator's JSON inputs (model configs, fitted profiles): read as one object, or one line saying why not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from engines.errors import EngineInputError


def read_json_object(path: Path, what: str) -> dict[str, Any]:
    """The JSON object in `path`; unreadable, invalid or not an object is an EngineInputError naming `what`."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise EngineInputError(f"sim: cannot read {what} {path}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise EngineInputError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    except UnicodeDecodeError:
        raise EngineInputError(f"{path}: {what}: not UTF-8 text (a binary file?)") from None
    except RecursionError:  # json recurses per nesting level
        raise EngineInputError(f"{path}: {what}: nested too deeply") from None
    if not isinstance(data, dict):
        raise EngineInputError(f"{path}: a {what} holds one JSON object")
    return data
