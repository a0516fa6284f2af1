"""`batchmark serve`: an OpenAI-compatible HTTP server around the in-process engines."""

from harness.server.app import begin_shutdown, drain, make_app

__all__ = ["begin_shutdown", "drain", "make_app"]
