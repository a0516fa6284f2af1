"""The HTTP engine: any OpenAI-compatible server behind the one engine interface (aiohttp; imports `engines` only)."""

from engines.http.engine import HttpEngine, HttpEngineConfig
from engines.http.errors import ERROR_TYPES

__all__ = ["ERROR_TYPES", "HttpEngine", "HttpEngineConfig"]
