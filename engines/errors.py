"""Errors an engine reports to its caller as one clear line (never a traceback)."""

from __future__ import annotations


class EngineInputError(ValueError):
    """A request, option or model path the engine cannot serve; the message names the value."""


class ModelLoadError(EngineInputError):
    """A model directory that is missing, unreadable or not a supported causal LM."""
