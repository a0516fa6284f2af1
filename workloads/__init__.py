"""Workloads for batchmark: the sample library. Bundled real traces, readers for user traces, synthetic
generators, transforms, and prompts of exact token counts, with one override table (`options.py`).
Deterministic for a given spec and seed; no torch, no network. A workload may suggest a closed loop; the
scenario itself is the load generator's run setting. Imports: numpy, pandas, tokenizers and this package
only; nothing of `engines`, `harness` or `reports`.

    from workloads import load_workload
    w = load_workload("azure-conv", duration_s=600, time_scale=2.0)
    w.describe()["mean_rate_rps"], w.fingerprint()
"""

from __future__ import annotations

import importlib
from typing import Any

# name -> the module that defines it. Loaded on first use: reading the override table
# (`workloads.options`, for the command line's flags) must not load pandas with the readers.
_WHERE = {
    "load_workload": "build",
    "WorkloadError": "errors",
    "Workload": "model",
    "WorkloadRequest": "model",
    **dict.fromkeys(
        (
            "clip_to_context",
            "first_requests",
            "override_rate",
            "sample_requests",
            "spread_ties",
            "time_scale",
            "time_window",
            "to_closed_loop",
        ),
        "ops",
    ),
    "list_presets": "presets",
    "token_id_prompts": "prompts",
    **dict.fromkeys(("read_azure", "read_burstgpt", "read_mooncake", "read_trace"), "readers"),
    "text_prompts": "prompt_text",
    "TokenizerAdapter": "tokenizer",
    "as_tokenizer": "tokenizer",
}
__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'workloads' has no attribute {name!r}")
    return getattr(importlib.import_module(f"workloads.{_WHERE[name]}"), name)
