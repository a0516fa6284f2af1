"""The systems under test: every engine behind the one interface of `engines/api.py`.

In-process static and continuous batching on a real model (`inprocess.py` over the engine loop
`engine_core.py`, the schedulers, the block manager and the model runner), the HTTP client for any
OpenAI-compatible server (`http/`), the zero-latency engine, and the OpenAI-compatible server that exposes
an in-process engine (`serve/`, with its zero-delay twin). Engines own what they emit (the step trace's
`StepRecord`) and their options (`options.py`). Imports: torch, transformers, aiohttp and this package
only; nothing of `harness`, `workloads` or `reports`.
"""
