"""The HTTP engine: any OpenAI-compatible server behind the one engine interface (aiohttp; imports `engines` only).

The package's names load on first use: a module of it that needs no aiohttp (`scrape_names`, which every run's
metrics import) must not pay for importing it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engines.http.engine import HttpEngine, HttpEngineConfig
    from engines.http.errors import ERROR_TYPES

__all__ = ["ERROR_TYPES", "HttpEngine", "HttpEngineConfig"]
_HOMES = {
    "HttpEngine": "engines.http.engine",
    "HttpEngineConfig": "engines.http.engine",
    "ERROR_TYPES": "engines.http.errors",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
