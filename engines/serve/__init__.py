"""`batchmark serve`: an in-process engine behind an OpenAI-compatible HTTP API, and its zero-delay twin.

The server is part of the system under test: a load generator (batchmark's own HTTP engine, `vllm bench
serve`, GuideLLM) measures it from outside exactly as it measures any other server. `zero_server.py` is
the HTTP twin of `engines/zero_engine.py`: tokens cost nothing, so what is measured is the client.
Imports: aiohttp and `engines` only.
"""

from engines.serve.app import begin_shutdown, drain, make_app

__all__ = ["begin_shutdown", "drain", "make_app"]
