"""Errors an engine reports to its caller as one clear line (never a traceback)."""

from __future__ import annotations

# The error type of every request an in-process engine ends because its loop died (the requests in flight,
# and every later one): the load generator stops sending on the first one.
ENGINE_FAILURE = "engine_failure"


class EngineInputError(ValueError):
    """A request, option or model path the engine cannot serve; the message names the value."""


class ModelLoadError(EngineInputError):
    """A model directory that is missing, unreadable or not a supported causal LM."""
